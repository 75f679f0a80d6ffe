/**
 * @file sr_ext.h
 * @brief uroce's selective-repeat extension of RoCEv2 (docs/loss-recovery.md), used only on RC
 * QPs whose two ends agreed to it. A frame that carries it sets BTH bit 30 (kBthUroceExtMask,
 * the top bit of Resv7 in the AckReq/PSN word; IBA senders leave it zero) and places one
 * extension header right after the IBA extended headers, where the payload would start:
 *
 *   RC SEND / RDMA WRITE request packets: SRETH, 16 bytes
 *     recv_seq  (32)  the message's index among the QP's receive-consuming messages (SEND,
 *                     WRITE with immediate), counted from 0 at RTS; which receive WQE it fills
 *     rkey      (32)  WRITE: the R_Key of the message; SEND: 0
 *     place     (64)  WRITE: the remote VA of this packet's first byte; SEND: the byte offset of
 *                     this packet's payload in the message
 *   RC Acknowledge: SACKETH, 4 + 4 x nwords bytes (8..68)
 *     nwords    (8)   bitmap words that follow, 1..16
 *     base      (24)  the PSN of the first bit: the ACK's PSN + 2 (the first above the hole)
 *     bitmap    nwords x 32 bits, most significant bit first: bit j set = the responder holds
 *                     PSN base + j
 *
 * With the SRETH every packet can be placed where it belongs without its predecessors; the
 * SACKETH tells the requester which PSNs after the cumulative ACK arrived. Units: bytes, PSNs.
 */
#pragma once

#include <array>
#include <cstdint>

#include "common/byteorder.h"
#include "common/types.h"
#include "transport/wire/ext_headers.h"

namespace uroce::wire {

/// BTH Resv7 bit that announces a uroce extension header (IBA leaves Resv7 zero).
inline constexpr uint32_t kBthUroceExtMask = 0x40000000;

/// Selective-repeat request header, 16 bytes.
struct Sreth {
  Be32 recv_seq;
  Be32 rkey;
  Be64 place;
};
UROCE_WIRE_ASSERT_LAYOUT(Sreth, 16);

struct SrethValue {
  uint32_t recv_seq = 0;
  uint32_t rkey = 0;
  uint64_t place = 0;  ///< WRITE: VA of this packet's first byte; SEND: offset in the message
  friend constexpr bool operator==(const SrethValue&, const SrethValue&) = default;
};

/// Most bitmap words of a SACKETH (512 PSNs, the largest selective-repeat window).
inline constexpr int kSackMaxWords = 16;

/// Selective acknowledgement header: a word with the number of bitmap words (top 8 bits) and
/// the base PSN (low 24 bits), then that many 32-bit bitmap words, 8..68 bytes.
inline constexpr uint32_t kSackWordsShift = 24;

struct SackValue {
  Psn base;            ///< the PSN of bit 0 (the ACK's PSN + 2: the first above the hole)
  uint8_t nwords = 0;  ///< 1..kSackMaxWords
  /// Bit j of word k (most significant first) stands for PSN base + 32k + j.
  std::array<uint32_t, kSackMaxWords> bits{};
  constexpr bool has(uint32_t i) const { return (bits[i / 32] >> (31 - i % 32)) & 1u; }
  constexpr void set(uint32_t i) { bits[i / 32] |= 1u << (31 - i % 32); }
  friend constexpr bool operator==(const SackValue&, const SackValue&) = default;
};

/// Which extension header a frame carries.
enum class UroceExt : uint8_t { kNone, kSreth, kSack };

}  // namespace uroce::wire
