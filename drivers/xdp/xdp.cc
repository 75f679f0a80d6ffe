/**
 * @file xdp.cc
 * @brief uroce's XDP program on a netdev: queries and removal through libbpf's netlink calls,
 * ownership through flock(2) on a per-netdev lock file (xdp.h).
 */
#include "xdp/xdp.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <link.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/run_path.h"

namespace uroce::xdp {

namespace {

std::string errno_text(int e) { return std::strerror(e < 0 ? -e : e); }

/// The file this code was loaded from: the shared library that links uroce_xdp
/// (libibverbs.so.1), or the program itself.
std::string this_module() {
  static const char anchor = 0;
  Dl_info info{};
  link_map* lm = nullptr;
  if (dladdr1(&anchor, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) != 0 && lm &&
      lm->l_name && lm->l_name[0]) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::canonical(lm->l_name, ec);
    return ec ? std::string(lm->l_name) : p.string();
  }
  // The main program has no name in its link map.
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

/// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

/// libbpf's warnings (the kernel's extack message among them) collected while one call runs.
class LibbpfLog {
 public:
  LibbpfLog() {
    text_ = &buf_;
    old_ = libbpf_set_print(&LibbpfLog::print);
  }
  ~LibbpfLog() {
    libbpf_set_print(old_);
    text_ = nullptr;
  }
  LibbpfLog(const LibbpfLog&) = delete;
  LibbpfLog& operator=(const LibbpfLog&) = delete;
  /// The kernel's message if libbpf printed one, else the last line, else "".
  std::string reason() const {
    const std::string key = "Kernel error message: ";
    if (auto at = buf_.rfind(key); at != std::string::npos)
      return buf_.substr(at + key.size(), buf_.find('\n', at) - at - key.size());
    std::string s = buf_;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  }

 private:
  static int print(libbpf_print_level level, const char* fmt, va_list ap) {
    if (level == LIBBPF_DEBUG || !text_) return 0;
    char line[512];
    std::vsnprintf(line, sizeof line, fmt, ap);
    *text_ += line;
    return 0;
  }
  static inline thread_local std::string* text_ = nullptr;
  std::string buf_;
  libbpf_print_fn_t old_ = nullptr;
};

uint32_t mode_flag(Mode m) {
  switch (m) {
    case Mode::kGeneric: return XDP_FLAGS_SKB_MODE;
    case Mode::kOffload: return XDP_FLAGS_HW_MODE;
    default: return XDP_FLAGS_DRV_MODE;
  }
}

std::string describe(std::string_view ifname, const Attached& a) {
  return "XDP program " + (a.name.empty() ? std::string("(unnamed)") : a.name) + " (id " +
         std::to_string(a.id) + ", " + to_string(a.mode) + ") on " + std::string(ifname);
}

/// Removes program a from ifname, only if it is still the one attached (XDP_FLAGS_REPLACE).
bool detach(std::string_view ifname, const Attached& a, std::string* err) {
  const unsigned ifindex = if_nametoindex(std::string(ifname).c_str());
  if (ifindex == 0) {
    *err = "no netdev " + std::string(ifname);
    return false;
  }
  Fd prog(bpf_prog_get_fd_by_id(a.id));
  bpf_xdp_attach_opts opts{};
  opts.sz = sizeof opts;
  opts.old_prog_fd = prog.fd;
  LibbpfLog log;
  int rc =
      bpf_xdp_detach(static_cast<int>(ifindex), mode_flag(a.mode), prog.fd >= 0 ? &opts : nullptr);
  if (rc != 0) {
    std::string why = log.reason();
    *err = "cannot remove " + describe(ifname, a) + ": " + (why.empty() ? errno_text(rc) : why);
    return false;
  }
  return true;
}

/// reap_stale() and detach_if_last(): uroce's program goes when nobody holds the lock; why
/// ends the one-line message.
Outcome remove_unused(std::string_view ifname, const char* why) {
  std::string err;
  auto a = attached(ifname, &err);
  if (!a) return {Outcome::kError, err};
  if (a->id == 0) return {Outcome::kNone, "no XDP program on " + std::string(ifname)};
  if (!a->ours())
    return {Outcome::kForeign, describe(ifname, *a) +
                                   " is not uroce's; host mode needs the netdev's XDP hook, "
                                   "remove it first (ip link set dev " +
                                   std::string(ifname) + " xdp off)"};
  const std::string path = lock_path(ifname);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  Fd lock(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.fd < 0) return {Outcome::kError, "cannot open " + path + ": " + errno_text(errno)};
  if (::flock(lock.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return {Outcome::kInUse, describe(ifname, *a) + " is in use by a uroce process"};
    return {Outcome::kError, "flock " + path + ": " + errno_text(errno)};
  }
  if (!detach(ifname, *a, &err)) return {Outcome::kError, err};
  return {Outcome::kRemoved, "removed " + describe(ifname, *a) + ": " + why};
}

}  // namespace

std::vector<std::string> object_candidates(const std::string& module) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(module).parent_path();
  const char* name = "roce_steer.bpf.o";
  return {(dir / name).lexically_normal(),            // installed library: <prefix>/lib/uroce/
          (dir / "uroce" / name).lexically_normal(),  // library in the build tree: build/lib/
          (dir / ".." / "lib" / "uroce" / name).lexically_normal()};  // program: bin/
}

std::string object_path() {
  if (const char* env = std::getenv("UROCE_XDP_PROG"); env && *env) return env;
  std::error_code ec;
  const std::vector<std::string> near = object_candidates(this_module());
  for (const std::string& c : near)
    if (std::filesystem::exists(c, ec)) return c;
#ifdef UROCE_XDP_OBJECT
  if (std::filesystem::exists(UROCE_XDP_OBJECT, ec)) return UROCE_XDP_OBJECT;
#endif
  return near.back();  // not found: the error names where a program looks first
}

const char* to_string(Mode m) {
  switch (m) {
    case Mode::kNone: return "none";
    case Mode::kNative: return "native";
    case Mode::kGeneric: return "generic";
    case Mode::kOffload: return "offload";
    case Mode::kMulti: return "multi";
  }
  return "?";
}

std::optional<Attached> attached(std::string_view ifname, std::string* err) {
  const unsigned ifindex = if_nametoindex(std::string(ifname).c_str());
  if (ifindex == 0) {
    *err = "no netdev " + std::string(ifname) + " in this network namespace";
    return std::nullopt;
  }
  bpf_xdp_query_opts q{};
  q.sz = sizeof q;
  if (int rc = bpf_xdp_query(static_cast<int>(ifindex), 0, &q); rc != 0) {
    *err = "XDP query on " + std::string(ifname) + ": " + errno_text(rc);
    return std::nullopt;
  }
  Attached a;
  switch (q.attach_mode) {
    case XDP_ATTACHED_NONE: return a;
    case XDP_ATTACHED_DRV: a.mode = Mode::kNative, a.id = q.drv_prog_id; break;
    case XDP_ATTACHED_SKB: a.mode = Mode::kGeneric, a.id = q.skb_prog_id; break;
    case XDP_ATTACHED_HW: a.mode = Mode::kOffload, a.id = q.hw_prog_id; break;
    default:  // several at once: name the native one, else the generic one
      a.mode = Mode::kMulti;
      a.id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id ? q.skb_prog_id : q.hw_prog_id;
  }
  if (a.id == 0) a.id = q.prog_id;
  // Without its name a program of ours would pass for a foreign one: that is an error.
  Fd prog(bpf_prog_get_fd_by_id(a.id));
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  if (prog.fd < 0 || bpf_obj_get_info_by_fd(prog.fd, &info, &len) != 0) {
    *err = "cannot read XDP program id " + std::to_string(a.id) + " on " + std::string(ifname) +
           " (needs CAP_SYS_ADMIN or CAP_BPF): " + errno_text(errno);
    return std::nullopt;
  }
  a.name = info.name;
  return a;
}

namespace {

/// The map named `name` of uroce's program on ifname, opened; -1 with *err.
int attached_map(std::string_view ifname, std::string_view name, std::string* err) {
  auto a = attached(ifname, err);
  if (!a) return -1;
  if (!a->ours()) {
    *err = "uroce's XDP program is not on " + std::string(ifname);
    return -1;
  }
  Fd prog(bpf_prog_get_fd_by_id(a->id));
  if (prog.fd < 0) {
    *err = "program id " + std::to_string(a->id) + ": " + errno_text(errno);
    return -1;
  }
  uint32_t ids[16] = {};
  bpf_prog_info info{};
  info.nr_map_ids = 16;
  info.map_ids = reinterpret_cast<uintptr_t>(ids);
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(prog.fd, &info, &len) != 0) {
    *err = "program info: " + errno_text(errno);
    return -1;
  }
  for (uint32_t i = 0; i < info.nr_map_ids && i < 16; ++i) {
    Fd map(bpf_map_get_fd_by_id(ids[i]));
    bpf_map_info mi{};
    uint32_t mlen = sizeof mi;
    if (map.fd >= 0 && bpf_obj_get_info_by_fd(map.fd, &mi, &mlen) == 0 && mi.name == name)
      return std::exchange(map.fd, -1);
  }
  *err = "no map " + std::string(name) + " in the program on " + std::string(ifname);
  return -1;
}

}  // namespace

std::optional<Counts> counts(std::string_view ifname, std::string* err) {
  Fd map(attached_map(ifname, kCountsMap, err));
  if (map.fd < 0) return std::nullopt;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) {
    *err = "libbpf_num_possible_cpus: " + errno_text(ncpu);
    return std::nullopt;
  }
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpu));
  uint64_t* slot[3];
  Counts c;
  slot[0] = &c.redirected, slot[1] = &c.passed, slot[2] = &c.unbound;
  for (uint32_t k = 0; k < 3; ++k) {
    if (bpf_map_lookup_elem(map.fd, &k, per_cpu.data()) != 0) continue;
    for (uint64_t v : per_cpu) *slot[k] += v;
  }
  return c;
}

bool detach_ours(std::string_view ifname, std::string* err) {
  auto a = attached(ifname, err);
  if (!a) return false;
  if (a->id == 0) return true;
  if (!a->ours()) {
    *err = describe(ifname, *a) + " is not uroce's";
    return false;
  }
  return detach(ifname, *a, err);
}

bool bind_socket(std::string_view ifname, uint32_t queue, int xsk_fd, std::string* err) {
  Fd map(attached_map(ifname, kSocketsMap, err));
  if (map.fd < 0) return false;
  if (bpf_map_update_elem(map.fd, &queue, &xsk_fd, 0) != 0) {
    *err = "queue " + std::to_string(queue) + " into " + std::string(kSocketsMap) + ": " +
           errno_text(errno);
    return false;
  }
  return true;
}

std::string lock_path(std::string_view ifname) {
  return netdev_run_path("netdev", ifname) + ".lock";
}

std::unique_ptr<NetdevUse> NetdevUse::acquire(std::string_view ifname, std::string* err) {
  const std::string path = lock_path(ifname);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = "cannot open " + path + ": " + errno_text(errno);
    return nullptr;
  }
  // Shared: waits only while a reaper holds it exclusively, for the time of one detach.
  if (::flock(fd, LOCK_SH) != 0) {
    *err = "flock " + path + ": " + errno_text(errno);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<NetdevUse>(new NetdevUse(std::string(ifname), fd));
}

NetdevUse::~NetdevUse() { ::close(fd_); }

Outcome reap_stale(std::string_view ifname) {
  return remove_unused(ifname, "stale, no uroce process holds its lock");
}

Outcome detach_if_last(std::unique_ptr<NetdevUse> use) {
  if (!use) return {Outcome::kError, "detach_if_last: no NetdevUse"};
  const std::string ifname = use->ifname();
  use.reset();  // our own shared lock would keep the exclusive one from being taken
  return remove_unused(ifname, "the last uroce process closed it");
}

std::vector<Check> doctor_checks(std::string_view ifname) {
  std::vector<Check> out;
  const std::string name(ifname);
  const unsigned ifindex = if_nametoindex(name.c_str());
  if (ifindex == 0) {
    out.push_back({"netdev", false, "no netdev " + name + " in this network namespace"});
    return out;
  }
  out.push_back({"netdev", true, name + " ifindex " + std::to_string(ifindex)});

  Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name.c_str());
  if (sock.fd >= 0 && ::ioctl(sock.fd, SIOCGIFFLAGS, &ifr) == 0) {
    const bool up = ifr.ifr_flags & IFF_UP, running = ifr.ifr_flags & IFF_RUNNING;
    std::string detail = up ? (running ? "up, carrier" : "up, no carrier") : "down";
    if (::ioctl(sock.fd, SIOCGIFMTU, &ifr) == 0) detail += ", MTU " + std::to_string(ifr.ifr_mtu);
    out.push_back({"link", up && running, detail});
  } else {
    out.push_back({"link", false, "SIOCGIFFLAGS: " + errno_text(errno)});
  }

  std::string addrs;
  if (ifaddrs* list = nullptr; ::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || name != i->ifa_name) continue;
      char buf[INET6_ADDRSTRLEN] = {};
      const int fam = i->ifa_addr->sa_family;
      if (fam == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      else if (fam == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, buf,
                  sizeof buf);
      else
        continue;
      if (!addrs.empty()) addrs += ' ';
      addrs += buf;
    }
    ::freeifaddrs(list);
  }
  out.push_back({"address", !addrs.empty(), addrs.empty() ? "no IP address" : addrs});

  std::string err;
  auto a = attached(ifname, &err);
  if (!a) {
    out.push_back({"xdp program", false, err});
    return out;
  }
  if (a->id != 0) {
    if (!a->ours()) {
      out.push_back({"xdp program", false, describe(ifname, *a) + " is not uroce's"});
      return out;
    }
    // A shared lock taken without waiting tells whether a reaper could take it exclusively.
    Fd lock(::open(lock_path(ifname).c_str(), O_RDWR | O_CLOEXEC));
    const bool live = lock.fd >= 0 && ::flock(lock.fd, LOCK_EX | LOCK_NB) != 0;
    out.push_back({"xdp program", a->mode == Mode::kNative,
                   describe(ifname, *a) + (live ? ", in use" : ", stale (no uroce process)")});
    return out;
  }
  out.push_back({"xdp program", true, "none on " + name});

  // Try the hook: a program that passes every frame, attached natively as the PMD does.
  const bpf_insn pass[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LibbpfLog log;
  Fd prog(bpf_prog_load(BPF_PROG_TYPE_XDP, "uroce_probe", "GPL", pass, 2, nullptr));
  if (prog.fd < 0) {
    out.push_back({"native xdp", false, "cannot load a BPF program: " + errno_text(errno)});
    return out;
  }
  const int ifi = static_cast<int>(ifindex);
  int rc = bpf_xdp_attach(ifi, prog.fd, XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE, nullptr);
  if (rc != 0) {
    std::string why = log.reason();
    if (why.empty()) why = errno_text(rc);
    out.push_back({"native xdp", false, std::string("the kernel refused: ").append(why)});
    return out;
  }
  bpf_xdp_attach_opts opts{};
  opts.sz = sizeof opts;
  opts.old_prog_fd = prog.fd;
  rc = bpf_xdp_detach(ifi, XDP_FLAGS_DRV_MODE, &opts);
  out.push_back({"native xdp", rc == 0,
                 rc == 0 ? "a test program attached and removed"
                         : "the test program could not be removed: " + errno_text(rc)});
  return out;
}

}  // namespace uroce::xdp
