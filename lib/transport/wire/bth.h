/**
 * @file bth.h
 * @brief InfiniBand Base Transport Header (IBA Vol 1 §9.2), 12 bytes, network byte order.
 *
 * Units: none. Sub-byte fields (SE, M, PadCnt, TVer, FECN, BECN, AckReq, 24-bit DestQP and PSN)
 * are reached through the masked accessors; the mask constants carry the spec's names.
 */
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"
#include "common/types.h"

namespace uroce::wire {

enum class Opcode : uint8_t;

// Byte 1: SE(7) M(6) PadCnt(5:4) TVer(3:0).
inline constexpr uint8_t kBthSeMask = 0x80;      ///< solicited event
inline constexpr uint8_t kBthMigReqMask = 0x40;  ///< migration request (M)
inline constexpr uint8_t kBthPadCntMask = 0x30;  ///< pad bytes before the ICRC, 0..3
inline constexpr uint8_t kBthPadCntShift = 4;
inline constexpr uint8_t kBthTverMask = 0x0f;  ///< transport header version, 0
// Bytes 4..7: FECN(31) BECN(30) Resv6(29:24) DestQP(23:0).
inline constexpr uint32_t kBthFecnMask = 0x80000000;
inline constexpr uint32_t kBthBecnMask = 0x40000000;
inline constexpr uint32_t kBthResv6Mask = 0x3f000000;
inline constexpr uint32_t kBthQpnMask = 0x00ffffff;
// Bytes 8..11: AckReq(31) Resv7(30:24) PSN(23:0).
inline constexpr uint32_t kBthAckReqMask = 0x80000000;
inline constexpr uint32_t kBthResv7Mask = 0x7f000000;
inline constexpr uint32_t kBthPsnMask = 0x00ffffff;

/// Byte offset of FECN|BECN|Resv6 inside the BTH; masked to 0xFF in the ICRC (docs/dcqcn-pfc.md
/// §3.1).
inline constexpr size_t kBthFecnByteOffset = 4;

/// Default partition key (full membership, default partition).
inline constexpr uint16_t kDefaultPkey = 0xffff;

/// Base Transport Header.
struct Bth {
  uint8_t opcode_raw;     ///< OpCode (IBA 9.2.1); typed access through opcode()
  uint8_t se_m_pad_tver;  ///< SE(7) M(6) PadCnt(5:4) TVer(3:0)
  Be16 pkey;              ///< partition key
  Be32 fecn_becn_qpn;     ///< FECN(31) BECN(30) Resv6(29:24) DestQP(23:0)
  Be32 ackreq_psn;        ///< AckReq(31) Resv7(30:24) PSN(23:0)

  constexpr Opcode opcode() const { return static_cast<Opcode>(opcode_raw); }
  constexpr void set_opcode(Opcode op) { opcode_raw = static_cast<uint8_t>(op); }
  constexpr bool se() const { return (se_m_pad_tver & kBthSeMask) != 0; }
  constexpr bool migreq() const { return (se_m_pad_tver & kBthMigReqMask) != 0; }
  constexpr uint8_t padcnt() const {
    return static_cast<uint8_t>((se_m_pad_tver & kBthPadCntMask) >> kBthPadCntShift);
  }
  constexpr uint8_t tver() const { return se_m_pad_tver & kBthTverMask; }
  /// Writes SE, M, PadCnt and TVer at once.
  constexpr void set_flags(bool se, bool migreq, uint8_t padcnt, uint8_t tver = 0) {
    se_m_pad_tver = static_cast<uint8_t>((se ? kBthSeMask : 0) | (migreq ? kBthMigReqMask : 0) |
                                         ((padcnt << kBthPadCntShift) & kBthPadCntMask) |
                                         (tver & kBthTverMask));
  }
  constexpr void set_padcnt(uint8_t padcnt) {
    se_m_pad_tver = static_cast<uint8_t>((se_m_pad_tver & ~kBthPadCntMask) |
                                         ((padcnt << kBthPadCntShift) & kBthPadCntMask));
  }
  constexpr bool fecn() const { return (fecn_becn_qpn.load() & kBthFecnMask) != 0; }
  constexpr bool becn() const { return (fecn_becn_qpn.load() & kBthBecnMask) != 0; }
  constexpr Qpn dest_qpn() const { return Qpn(fecn_becn_qpn.load() & kBthQpnMask); }
  constexpr void set_fecn_becn_qpn(bool fecn, bool becn, Qpn qpn) {
    fecn_becn_qpn.store((fecn ? kBthFecnMask : 0) | (becn ? kBthBecnMask : 0) | qpn.value());
  }
  constexpr bool ackreq() const { return (ackreq_psn.load() & kBthAckReqMask) != 0; }
  constexpr Psn psn() const { return Psn(ackreq_psn.load() & kBthPsnMask); }
  constexpr void set_ackreq_psn(bool ackreq, Psn psn) {
    ackreq_psn.store((ackreq ? kBthAckReqMask : 0) | psn.value());
  }
};
static_assert(sizeof(Bth) == 12 && alignof(Bth) == 1 && std::is_trivially_copyable_v<Bth>);

}  // namespace uroce::wire
