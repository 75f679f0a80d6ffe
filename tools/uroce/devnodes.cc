/**
 * @file devnodes.cc
 * @brief `uroce devnodes` (devnodes.h): report the /dev/infiniband nodes UCX needs, or run a
 * command in a private mount namespace where they exist.
 *
 * How the namespace gets its nodes without touching the host: /dev is a devtmpfs shared with
 * the host, so a directory made in it would be seen everywhere. Instead, in a new mount
 * namespace (unshare(CLONE_NEWNS), mounts made private), an overlay is mounted on /dev with the
 * real /dev as its lower layer and a small tmpfs as its upper layer; the mounts that lived
 * below /dev (/dev/shm, /dev/pts, ...) are bound aside first and moved back on top of the
 * overlay, so shared memory and terminals stay the host's. The missing nodes are then made in
 * the overlay (they land in the tmpfs), and the temporary folder is detached and removed.
 */
#include "devnodes.h"

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
#include <fstream>
#include <sstream>

#include "config/config.h"

namespace uroce::tool {

namespace {

constexpr const char* kDir = "/dev/infiniband";
constexpr unsigned kNullMajor = 1, kNullMinor = 3;  ///< /dev/null

bool is_char_device(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

/// UCX's test: a character device this process may read and write.
bool usable(const std::string& p) {
  return is_char_device(p) && access(p.c_str(), R_OK | W_OK) == 0;
}

/// Devices of the configuration (UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml, built-in).
int configured_devices(std::string* err) {
  auto cfg = config::load(err);
  return cfg ? static_cast<int>(cfg->devices.size()) : -1;
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

/// Mount points strictly below /dev, outermost only (each is bound with its own submounts).
std::vector<std::string> dev_submounts() {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, point;
    f >> id >> parent >> majmin >> root >> point;
    point = unescape(point);
    if (point.rfind("/dev/", 0) == 0) all.push_back(point);
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

int fail(const std::string& what) {
  std::fprintf(stderr, "uroce devnodes: %s: %s\n", what.c_str(), std::strerror(errno));
  std::fprintf(stderr,
               "uroce devnodes: this needs root (CAP_SYS_ADMIN, CAP_MKNOD); or create the nodes "
               "on the host once: see `uroce devnodes`\n");
  return 1;
}

/// Makes `paths` exist in a private mount namespace of this process (file comment).
int make_private_nodes(const std::vector<std::string>& paths) {
  if (unshare(CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWNS)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail("making mounts private");
  char tmpl[] = "/tmp/uroce-devnodes.XXXXXX";
  if (!mkdtemp(tmpl)) return fail("mkdtemp /tmp/uroce-devnodes.*");
  const std::string t = tmpl;
  // On any failure: detach and remove the temporary folder, then report.
  auto cleanup = [&] {
    umount2(t.c_str(), MNT_DETACH);
    rmdir(t.c_str());
  };
  auto bail = [&](const std::string& what) {
    int e = errno;
    cleanup();
    errno = e;
    return fail(what);
  };
  if (mount("uroce-devnodes", t.c_str(), "tmpfs", 0, "mode=0755,size=1m") != 0)
    return bail("mounting a tmpfs on " + t);
  const std::vector<std::string> subs = dev_submounts();
  for (const std::string d : {"/upper", "/work", "/keep"}) mkdir((t + d).c_str(), 0755);
  for (size_t i = 0; i < subs.size(); ++i) {
    std::string keep = t + "/keep/" + std::to_string(i);
    mkdir(keep.c_str(), 0755);
    if (mount(subs[i].c_str(), keep.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return bail("binding " + subs[i] + " aside");
  }
  std::string opts = "lowerdir=/dev,upperdir=" + t + "/upper,workdir=" + t + "/work";
  if (mount("uroce-devnodes", "/dev", "overlay", 0, opts.c_str()) != 0)
    return bail("mounting an overlay on /dev");
  for (size_t i = 0; i < subs.size(); ++i) {
    std::string keep = t + "/keep/" + std::to_string(i);
    if (mount(keep.c_str(), subs[i].c_str(), nullptr, MS_MOVE, nullptr) != 0)
      return bail("moving " + subs[i] + " back");
  }
  if (mkdir(kDir, 0755) != 0 && errno != EEXIST) return bail(std::string("mkdir ") + kDir);
  for (const auto& p : paths) {
    if (usable(p)) continue;
    if (mknod(p.c_str(), S_IFCHR | 0666, makedev(kNullMajor, kNullMinor)) != 0)
      return bail("mknod " + p);
    chmod(p.c_str(), 0666);  // whatever the umask
  }
  // The overlay keeps its upper layer alive; the folder itself can go.
  cleanup();
  return 0;
}

}  // namespace

std::vector<std::string> devnode_paths(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(std::string(kDir) + "/uverbs" + std::to_string(i));
  return out;
}

int devnodes(const DevnodesOptions& o) {
  int count = o.count;
  if (count < 0) {
    std::string err;
    count = configured_devices(&err);
    if (count < 0) {
      std::fprintf(stderr, "uroce devnodes: %s\n", err.c_str());
      return 1;
    }
  }
  const std::vector<std::string> paths = devnode_paths(count);
  std::vector<std::string> missing;
  for (const auto& p : paths)
    if (!usable(p)) missing.push_back(p);

  if (o.argv.empty()) {
    for (const auto& p : paths)
      std::printf("%s %s\n", usable(p) ? "ok     " : "missing", p.c_str());
    if (!missing.empty()) {
      std::printf(
          "UCX lists a uroce device only when its node exists (a character device it may read "
          "and write).\nRun a program with them: uroce devnodes -- PROGRAM ARGS...\n"
          "or create them on this host (as root; gone at reboot):\n  mkdir -p %s\n",
          kDir);
      for (const auto& p : missing)
        std::printf("  mknod -m 666 %s c %u %u\n", p.c_str(), kNullMajor, kNullMinor);
    }
    return 0;
  }
  if (!missing.empty()) {
    if (int r = make_private_nodes(paths)) return r;
  }
  std::vector<char*> args;
  for (const auto& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "uroce devnodes: %s: %s\n", args[0], std::strerror(errno));
  return 127;
}

}  // namespace uroce::tool
