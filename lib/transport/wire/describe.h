/**
 * @file describe.h
 * @brief One-line text form of a parsed RoCEv2 packet, for logs, tools and test messages.
 *
 * Example: "RC_RDMA_WRITE_FIRST 198.18.0.1:49443 > 198.18.0.2 dqpn=0x000abc psn=1193046 A
 * pkey=0xffff dscp=26 ecn=2 RETH(va=0x1122334455667788 rkey=0xaabbccdd len=4096) payload=8".
 * Units: bytes (payload), PSN in decimal, QPN and keys in hex.
 */
#pragma once

#include <string>

#include "transport/wire/parse.h"

namespace uroce::wire {

/// Describes p (which parse() accepted) on one line.
std::string describe(const ParsedPacket& p);

}  // namespace uroce::wire
