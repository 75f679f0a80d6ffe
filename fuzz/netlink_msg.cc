/**
 * @file netlink_msg.cc
 * @brief libFuzzer target: arbitrary bytes as rtnetlink messages read from a socket, applied
 * to a netdev state (drivers/netlink/message.h). apply_message() must never crash or trip a
 * sanitizer, must leave the ifindex alone, and must keep the GID list free of duplicates and
 * in rxe order (link-local, IPv4-mapped, other IPv6). Seeds: real kernel notifications
 * (fuzz/make_netlink_seeds.py); in them the veth under test has ifindex 2 or 3.
 */
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "netlink/message.h"
#include "netlink/netdev.h"

namespace {

using namespace uroce;
using namespace uroce::netlink;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

Gid gid(const char* text) {
  Gid g;
  check(Gid::parse(text, &g));
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (int ifindex : {2, 3}) {
    NetdevState st;
    st.ifindex = ifindex;
    st.name = "va";
    st.mtu = 1500;
    st.up = true;
    st.gids = {gid("fe80::1"), gid("198.18.0.1"), gid("2001:2::1")};
    apply_message(&st, std::span<const uint8_t>(data, size));
    check(st.ifindex == ifindex);
    for (size_t i = 0; i < st.gids.size(); ++i) {
      if (i > 0) check(gid_group(st.gids[i - 1]) <= gid_group(st.gids[i]));
      for (size_t j = i + 1; j < st.gids.size(); ++j) check(!(st.gids[i] == st.gids[j]));
    }
  }
  return 0;
}
