/**
 * @file rdma_ns.cc
 * @brief `uroce rdma-ns` (rdma_ns.h): report the kernel RDMA files UCX looks for, or run a
 * command in a private mount namespace where they exist for the uroce devices.
 *
 * How the namespace gets them without touching the host: /dev (a devtmpfs) and /sys (sysfs)
 * are shared with the host, and sysfs takes no new files at all. Instead, in a new mount
 * namespace (unshare(CLONE_NEWNS), mounts made private), an overlay is mounted on /dev and one
 * on /sys/class, each with the real folder as its lower layer and a small tmpfs as its upper
 * layer. Mounts that lived below the folder (/dev/shm, /dev/pts, ...) are bound aside first and
 * moved back on top of the overlay, so shared memory and terminals stay the host's. The sysfs
 * files are written into the upper layer before mounting; the device nodes are made in the
 * merged /dev afterwards (so an existing node is seen and kept). The temporary folder is then
 * detached and removed.
 */
#include "rdma_ns.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace uroce::tool {

namespace {

constexpr const char* kDevDir = "/dev/infiniband";
constexpr const char* kSysDir = "/sys/class/infiniband";
constexpr unsigned kNullMajor = 1, kNullMinor = 3;  ///< /dev/null

/// UCX's test: a character device this process may read and write.
bool usable(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && access(p.c_str(), R_OK | W_OK) == 0;
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

/// "0000:0000:0000:0000:0000:ffff:c612:0001", as the kernel writes ports/N/gids/I.
std::string gid_text(const Gid& g) {
  std::string s;
  char b[8];
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(b, sizeof b, "%s%02x%02x", i ? ":" : "", g.raw[i], g.raw[i + 1]);
    s += b;
  }
  return s;
}

/// Undoes the octal escapes of /proc/self/mountinfo (\040 for a space, ...).
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// Mount points strictly below `dir`, outermost only (each is bound with its own submounts).
std::vector<std::string> submounts(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, point;
    f >> id >> parent >> majmin >> root >> point;
    point = unescape(point);
    if (point.rfind(dir + "/", 0) == 0) all.push_back(point);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<std::string> outer;
  for (const auto& p : all) {
    bool nested = std::any_of(outer.begin(), outer.end(),
                              [&](const std::string& o) { return p.rfind(o + "/", 0) == 0; });
    if (!nested) outer.push_back(p);
  }
  return outer;
}

/// The prefix of error lines: the command that runs ("uroce rdma-ns", "uroce run").
const char* g_who = "uroce rdma-ns";

int fail(const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", g_who, what.c_str(), std::strerror(errno));
  std::fprintf(stderr,
               "%s: this needs root (CAP_SYS_ADMIN, CAP_MKNOD); or create the device nodes on "
               "the host once: see `uroce rdma-ns`\n",
               g_who);
  return 1;
}

/// mkdir -p; a failure shows in the mount or write that follows (fail() reports errno there).
void make_dirs(const std::string& path) {
  std::error_code ignored;
  std::filesystem::create_directories(path, ignored);
}

/// Builds the private namespace (file comment). t: the temporary folder (a tmpfs is mounted
/// on it). Returns 0, or fail()'s status.
class PrivateView {
 public:
  explicit PrivateView(std::string t) : t_(std::move(t)) {}

  /// Mounts an overlay on `dir` with upper layer t/<name>, keeping the mounts below dir.
  int overlay(const std::string& dir, const std::string& name) {
    const std::string upper = t_ + "/" + name + "-upper", work = t_ + "/" + name + "-work";
    make_dirs(upper);
    make_dirs(work);
    const std::vector<std::string> subs = submounts(dir);
    std::vector<std::string> keep;
    for (size_t i = 0; i < subs.size(); ++i) {
      keep.push_back(t_ + "/" + name + "-keep" + std::to_string(i));
      make_dirs(keep.back());
      if (mount(subs[i].c_str(), keep.back().c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        return fail("binding " + subs[i] + " aside");
    }
    std::string opts = "lowerdir=" + dir + ",upperdir=" + upper + ",workdir=" + work;
    if (mount("uroce-rdma-ns", dir.c_str(), "overlay", 0, opts.c_str()) != 0)
      return fail("mounting an overlay on " + dir);
    for (size_t i = 0; i < subs.size(); ++i)
      if (mount(keep[i].c_str(), subs[i].c_str(), nullptr, MS_MOVE, nullptr) != 0)
        return fail("moving " + subs[i] + " back");
    return 0;
  }

  /// Writes the sysfs files of devices that have none yet into the /sys/class upper layer.
  int write_sysfs(const std::vector<config::Device>& devices) {
    for (const auto& d : devices) {
      if (exists(std::string(kSysDir) + "/" + d.name)) continue;
      std::optional<netlink::NetdevState> host;
      if (!d.netdev.empty()) {
        std::string err;
        host = netlink::query(d.netdev, &err);
        if (!host) {
          std::fprintf(stderr, "%s: device %s: %s\n", g_who, d.name.c_str(), err.c_str());
          return 1;
        }
      }
      for (const auto& [rel, text] : sysfs_files(d, host ? &*host : nullptr)) {
        const std::string path = t_ + "/sys-upper/infiniband/" + rel;
        make_dirs(path.substr(0, path.rfind('/')));
        std::ofstream f(path);
        f << text;
        if (!f) return fail("writing " + path);
      }
      for (const auto& [rel, target] : sysfs_links(d, host ? &*host : nullptr)) {
        const std::string path = t_ + "/sys-upper/infiniband/" + rel;
        make_dirs(path.substr(0, path.rfind('/')));
        if (symlink(target.c_str(), path.c_str()) != 0) return fail("symlink " + path);
      }
    }
    return 0;
  }

 private:
  std::string t_;
};

int make_private_view(const std::vector<config::Device>& devices) {
  if (unshare(CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWNS)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail("making mounts private");
  // $TMPDIR as mktemp(1) reads it, /tmp without it.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/uroce-rdma-ns.XXXXXX";
  if (!mkdtemp(tmpl.data())) return fail("mkdtemp " + tmpl);
  const std::string t = tmpl;
  // Detach and remove the temporary folder on every way out: the overlays keep their layers.
  struct Cleanup {
    const std::string& t;
    ~Cleanup() {
      umount2(t.c_str(), MNT_DETACH);
      rmdir(t.c_str());
    }
  } cleanup{t};
  if (mount("uroce-rdma-ns", t.c_str(), "tmpfs", 0, "mode=0755,size=1m") != 0)
    return fail("mounting a tmpfs on " + t);
  PrivateView v(t);
  if (int r = v.write_sysfs(devices)) return r;
  if (int r = v.overlay("/sys/class", "sys")) return r;
  if (int r = v.overlay("/dev", "dev")) return r;
  if (mkdir(kDevDir, 0755) != 0 && errno != EEXIST) return fail(std::string("mkdir ") + kDevDir);
  for (const auto& p : devnode_paths(static_cast<int>(devices.size()))) {
    if (usable(p)) continue;
    if (mknod(p.c_str(), S_IFCHR | 0666, makedev(kNullMajor, kNullMinor)) != 0)
      return fail("mknod " + p);
    chmod(p.c_str(), 0666);  // whatever the umask
  }
  return 0;
}

}  // namespace

std::vector<std::string> devnode_paths(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i)
    out.push_back(std::string(kDevDir) + "/uverbs" + std::to_string(i));
  return out;
}

std::vector<std::pair<std::string, std::string>> sysfs_files(const config::Device& d,
                                                             const netlink::NetdevState* host) {
  std::vector<Gid> gids;
  if (host) {
    gids = host->gids;
  } else {
    for (const auto& a : d.addresses) gids.push_back(a.gid);
  }
  // [device] roce_v1: the RoCE v1 entries after the RoCEv2 ones, as the device's table has them
  // (gid_table()); the kernel names the two types "RoCE v2" and "IB/RoCE v1".
  const size_t v1_base = d.roce_v1 ? gids.size() : SIZE_MAX;
  gids = gid_table(gids, d.roce_v1);
  const std::string port = d.name + "/ports/1/";
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < gids.size(); ++i) {
    const std::string n = std::to_string(i);
    const bool v1 = gid_type_at(i, v1_base) == GidType::kRoceV1;
    out.emplace_back(port + "gids/" + n, gid_text(gids[i]) + "\n");
    out.emplace_back(port + "gid_attrs/types/" + n, v1 ? "IB/RoCE v1\n" : "RoCE v2\n");
    if (host) out.emplace_back(port + "gid_attrs/ndevs/" + n, host->name + "\n");
  }
  out.emplace_back(port + "link_layer", "Ethernet\n");
  if (host) {
    // As rxe reports its port: active with the link up while the netdev is up and running.
    out.emplace_back(port + "state", host->up ? "4: ACTIVE\n" : "1: DOWN\n");
    out.emplace_back(port + "phys_state", host->up ? "5: LinkUp\n" : "3: Disabled\n");
    out.emplace_back(d.name + "/parent", host->name + "\n");
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> sysfs_links(const config::Device& d,
                                                             const netlink::NetdevState* host) {
  if (!host) return {};
  return {{d.name + "/device/net/" + host->name, "/sys/class/net/" + host->name}};
}

namespace {

/// The configuration, its device nodes, and whether every node and sysfs folder exists.
struct Present {
  config::Config cfg;
  std::vector<std::string> nodes;
  bool complete = true;
};

std::optional<Present> look(const char* who) {
  std::string err;
  auto cfg = config::load(&err);
  if (!cfg) {
    std::fprintf(stderr, "%s: %s\n", who, err.c_str());
    return std::nullopt;
  }
  Present p{std::move(*cfg), {}, true};
  p.nodes = devnode_paths(static_cast<int>(p.cfg.devices.size()));
  for (const auto& n : p.nodes) p.complete &= usable(n);
  for (const auto& d : p.cfg.devices) p.complete &= exists(std::string(kSysDir) + "/" + d.name);
  return p;
}

int exec_program(const std::vector<std::string>& argv, const char* who) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "%s: %s: %s\n", who, args[0], std::strerror(errno));
  return 127;
}

}  // namespace

int exec_with_rdma_files(const std::vector<std::string>& argv, const char* who,
                         bool unprivileged_ok) {
  g_who = who;
  std::optional<Present> p = look(who);
  if (!p) return 1;
  if (!p->complete) {
    if (unprivileged_ok && geteuid() != 0) {
      std::fprintf(stderr,
                   "%s: not root: running without the kernel RDMA files UCX reads (see `uroce "
                   "rdma-ns`); verbs and RDMA CM programs do not need them\n",
                   who);
    } else if (int r = make_private_view(p->cfg.devices)) {
      return r;
    }
  }
  return exec_program(argv, who);
}

int rdma_ns(const RdmaNsOptions& o) {
  if (!o.argv.empty()) return exec_with_rdma_files(o.argv, "uroce rdma-ns", false);
  std::optional<Present> p = look("uroce rdma-ns");
  if (!p) return 1;
  for (const auto& n : p->nodes)
    std::printf("%s %s\n", usable(n) ? "ok     " : "missing", n.c_str());
  for (const auto& d : p->cfg.devices) {
    const std::string s = std::string(kSysDir) + "/" + d.name;
    std::printf("%s %s\n", exists(s) ? "ok     " : "missing", s.c_str());
  }
  if (!p->complete) {
    std::printf(
        "UCX lists a uroce device only when its node exists (a character device it may read "
        "and write),\nand reads its GIDs' RoCE version from sysfs (without it: RoCE v1).\n"
        "Run a program with both: uroce rdma-ns -- PROGRAM ARGS...\n"
        "or create the nodes on this host (as root; gone at reboot; sysfs cannot be "
        "written):\n  mkdir -p %s\n",
        kDevDir);
    for (const auto& n : p->nodes)
      if (!usable(n)) std::printf("  mknod -m 666 %s c %u %u\n", n.c_str(), kNullMajor, kNullMinor);
  }
  return 0;
}

}  // namespace uroce::tool
