/**
 * @file xdp_tool.cc
 * @brief uroce_xdp from the command line, for tests/xdp/host_mode.sh (no DPDK).
 *
 *   xdp_tool attached IF   "XDP id=N name=S mode=M ours=0|1" (id 0: none); exit 1 on error
 *   xdp_tool counts IF     "COUNTS redirected=N passed=N unbound=N"
 *   xdp_tool reap IF       reap_stale(): "REAP <none|removed|in-use|foreign|error>: <message>";
 *                          exit 0 unless foreign or error
 *   xdp_tool doctor IF     doctor_checks(), one "CHECK <ok|FAIL> what: detail" line each
 *   xdp_tool foreign IF    attaches a program named not_uroce (passes every frame) natively
 *   xdp_tool object        object_path()
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "xdp/xdp.h"

namespace {

const char* kind(uroce::xdp::Outcome::Kind k) {
  using O = uroce::xdp::Outcome;
  switch (k) {
    case O::kNone: return "none";
    case O::kRemoved: return "removed";
    case O::kInUse: return "in-use";
    case O::kForeign: return "foreign";
    case O::kError: return "error";
  }
  return "?";
}

int foreign(const char* ifname) {
  const bpf_insn pass[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "not_uroce", "GPL", pass, 2, nullptr);
  const int ifindex = static_cast<int>(if_nametoindex(ifname));
  if (fd < 0 || ifindex == 0 ||
      bpf_xdp_attach(ifindex, fd, XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE, nullptr)) {
    std::fprintf(stderr, "xdp_tool: cannot attach a program to %s\n", ifname);
    return 1;
  }
  return 0;  // the attachment outlives the process (netlink XDP, no link fd)
}

}  // namespace

int main(int argc, char** argv) {
  namespace x = uroce::xdp;
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "object") {
    std::printf("%s\n", x::object_path().c_str());
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: xdp_tool attached|counts|reap|doctor|foreign IFNAME | object\n");
    return 2;
  }
  const char* ifname = argv[2];
  std::string err;
  if (cmd == "attached") {
    auto a = x::attached(ifname, &err);
    if (!a) {
      std::fprintf(stderr, "xdp_tool: %s\n", err.c_str());
      return 1;
    }
    std::printf("XDP id=%u name=%s mode=%s ours=%d\n", a->id,
                a->name.empty() ? "-" : a->name.c_str(), x::to_string(a->mode), a->ours() ? 1 : 0);
    return 0;
  }
  if (cmd == "counts") {
    auto c = x::counts(ifname, &err);
    if (!c) {
      std::fprintf(stderr, "xdp_tool: %s\n", err.c_str());
      return 1;
    }
    std::printf("COUNTS redirected=%llu passed=%llu unbound=%llu\n",
                static_cast<unsigned long long>(c->redirected),
                static_cast<unsigned long long>(c->passed),
                static_cast<unsigned long long>(c->unbound));
    return 0;
  }
  if (cmd == "reap") {
    auto o = x::reap_stale(ifname);
    std::printf("REAP %s: %s\n", kind(o.kind), o.message.c_str());
    return o.ok() ? 0 : 1;
  }
  if (cmd == "doctor") {
    bool ok = true;
    for (const auto& c : x::doctor_checks(ifname)) {
      std::printf("CHECK %s %s: %s\n", c.ok ? "ok" : "FAIL", c.what.c_str(), c.detail.c_str());
      ok &= c.ok;
    }
    return ok ? 0 : 1;
  }
  if (cmd == "foreign") return foreign(ifname);
  std::fprintf(stderr, "xdp_tool: unknown command %s\n", cmd.c_str());
  return 2;
}
