/**
 * @file ts_ext.h
 * @brief uroce's timestamp extension of RoCEv2 (docs/loss-recovery.md, "Peer timestamps"),
 * used only on RC QPs whose two ends agreed to it: round trips for the delay-based congestion
 * control measured from timestamps the peers carry, without the time the responder held the
 * request before it answered (the endpoint delay Swift separates from the fabric's). A frame
 * that carries it sets BTH bit 29 (kBthUroceTsMask, the second bit of Resv7; IBA senders leave
 * it zero) and places the TSETH after the selective-repeat header if there is one, else right
 * after the IBA extended headers, before the payload:
 *
 *   RC request packets with AckReq: TSETH, 4 bytes
 *     stamp  (32)  the requester's clock when the packet left, ns modulo 2^32
 *   RC Acknowledge (ACK or NAK): TSETH, 8 bytes
 *     echo   (32)  the stamp of the newest request packet with a TSETH the responder received
 *     hold   (32)  ns from that packet's arrival at the responder to this ACK's departure
 *
 * The requester's sample is its clock now - echo - hold (modulo 2^32): the fabric round trip
 * of the echoed packet, exact for a resent packet too (each copy carries its own stamp).
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::wire {

/// BTH Resv7 bit that announces a TSETH (IBA leaves Resv7 zero).
inline constexpr uint32_t kBthUroceTsMask = 0x20000000;

/// TSETH lengths: on a request, and on an RC Acknowledge.
inline constexpr size_t kTsethRequestLen = 4;
inline constexpr size_t kTsethAckLen = 8;

/// A request's TSETH has stamp only; an acknowledgement's echo (in stamp) and hold.
struct TsethValue {
  uint32_t stamp = 0;  ///< request: the requester's clock (ns mod 2^32); ACK: the echo
  uint32_t hold = 0;   ///< ACK: ns the responder held the echoed request
  friend constexpr bool operator==(const TsethValue&, const TsethValue&) = default;
};

}  // namespace uroce::wire
