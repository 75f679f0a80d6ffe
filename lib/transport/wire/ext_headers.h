/**
 * @file ext_headers.h
 * @brief BTH extended transport headers (IBA Vol 1 §9.3): RETH, AETH, AtomicETH, AtomicAckETH,
 * ImmDt, IETH, DETH, XRCETH, FETH (IBA 1.5 Annex A19, FLUSH), and the 16 reserved bytes of a RoCEv2
 * CNP (Annex 17 §9.3, per docs/dcqcn-pfc.md §3.1).
 *
 * Units: bytes for lengths, virtual addresses in bytes. Each wire struct has a decoded "value"
 * twin (RethValue, ...) in host order, which ParsedPacket and FrameSpec carry.
 */
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"
#include "common/types.h"

namespace uroce::wire {

#define UROCE_WIRE_ASSERT_LAYOUT(T, size)                                                  \
  static_assert(sizeof(T) == (size) && alignof(T) == 1 && std::is_trivially_copyable_v<T>, \
                "wire struct " #T " must be packed, " #size " bytes")

// ---------------------------------------------------------------------------------------------
/// RDMA Extended Transport Header (IBA 9.3.3), 16 bytes: WRITE first/only, READ request.
struct Reth {
  Be64 va;       ///< remote virtual address
  Be32 rkey;     ///< remote key
  Be32 dma_len;  ///< total length of the DMA operation, bytes
};
UROCE_WIRE_ASSERT_LAYOUT(Reth, 16);

struct RethValue {
  uint64_t va = 0;       ///< remote virtual address
  uint32_t rkey = 0;     ///< remote key
  uint32_t dma_len = 0;  ///< bytes
  friend constexpr bool operator==(const RethValue&, const RethValue&) = default;
};

// ---------------------------------------------------------------------------------------------
// FLUSH Extended Transport Header (IBA 1.5 Annex A19; the layout Linux rxe's rxe_hdr.h gives):
// bits 31:6 reserved, 5:4 selectivity level, 3:0 placement type.
inline constexpr uint32_t kFethPlacementMask = 0x0000000f;
inline constexpr uint32_t kFethSelectivityMask = 0x00000030;
inline constexpr uint32_t kFethSelectivityShift = 4;

/// FETH, 4 bytes: RC FLUSH, before its RETH.
struct Feth {
  Be32 bits;
};
UROCE_WIRE_ASSERT_LAYOUT(Feth, 4);

struct FethValue {
  uint8_t placement = 0;    ///< bit 0 global visibility, bit 1 persistence
  uint8_t selectivity = 0;  ///< 0: the RETH's range of the region, 1: the whole region
  friend constexpr bool operator==(const FethValue&, const FethValue&) = default;
};

// ---------------------------------------------------------------------------------------------
// AETH syndrome (IBA 9.3.5, table 44): bits 7 reserved(0), 6:5 type, 4:0 value.
inline constexpr uint8_t kAethTypeMask = 0x60;
inline constexpr uint8_t kAethValueMask = 0x1f;
inline constexpr uint8_t kAethTypeAck = 0x00;     ///< value = credit count
inline constexpr uint8_t kAethTypeRnrNak = 0x20;  ///< value = RNR timer code
inline constexpr uint8_t kAethTypeNak = 0x60;     ///< value = NAK code below
inline constexpr uint8_t kAethNakPsnSeqError = 0;
inline constexpr uint8_t kAethNakInvalidRequest = 1;
inline constexpr uint8_t kAethNakRemoteAccessError = 2;
inline constexpr uint8_t kAethNakRemoteOperationalError = 3;
inline constexpr uint8_t kAethNakInvalidRdRequest = 4;
inline constexpr uint8_t kAethCreditInvalid = 0x1f;  ///< "no credit information" (9.7.5.1)
inline constexpr uint32_t kAethMsnMask = 0x00ffffff;

/// ACK Extended Transport Header (IBA 9.3.5), 4 bytes.
struct Aeth {
  Be32 syndrome_msn;  ///< Syndrome(31:24) MSN(23:0)

  constexpr uint8_t syndrome() const { return static_cast<uint8_t>(syndrome_msn.load() >> 24); }
  constexpr Msn msn() const { return Msn(syndrome_msn.load() & kAethMsnMask); }
  constexpr void set(uint8_t syndrome, Msn msn) {
    syndrome_msn.store((uint32_t{syndrome} << 24) | msn.value());
  }
};
UROCE_WIRE_ASSERT_LAYOUT(Aeth, 4);

struct AethValue {
  uint8_t syndrome = 0;  ///< raw syndrome byte; decoded by type() and value()
  Msn msn;               ///< message sequence number
  constexpr uint8_t type() const { return syndrome & kAethTypeMask; }
  constexpr uint8_t value() const { return syndrome & kAethValueMask; }
  constexpr bool is_ack() const { return type() == kAethTypeAck; }
  constexpr bool is_rnr_nak() const { return type() == kAethTypeRnrNak; }
  constexpr bool is_nak() const { return type() == kAethTypeNak; }
  friend constexpr bool operator==(const AethValue&, const AethValue&) = default;
};

/// Builds a syndrome byte: type (kAethType*) | value (credit, RNR timer or NAK code).
constexpr uint8_t aeth_syndrome(uint8_t type, uint8_t value) {
  return static_cast<uint8_t>((type & kAethTypeMask) | (value & kAethValueMask));
}

// ---------------------------------------------------------------------------------------------
/// Atomic Extended Transport Header (IBA 9.3.4), 28 bytes: CMP_SWAP, FETCH_ADD.
struct AtomicEth {
  Be64 va;        ///< remote virtual address (8-byte aligned)
  Be32 rkey;      ///< remote key
  Be64 swap_add;  ///< swap value (CMP_SWAP) or add value (FETCH_ADD)
  Be64 compare;   ///< compare value (CMP_SWAP only)
};
UROCE_WIRE_ASSERT_LAYOUT(AtomicEth, 28);

struct AtomicEthValue {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  friend constexpr bool operator==(const AtomicEthValue&, const AtomicEthValue&) = default;
};

/// Atomic ACK Extended Transport Header (IBA 9.3.6), 8 bytes: the original remote value.
struct AtomicAckEth {
  Be64 orig;  ///< value at the address before the atomic operation
};
UROCE_WIRE_ASSERT_LAYOUT(AtomicAckEth, 8);

/// Immediate Data Extended Transport Header (IBA 9.3.7), 4 bytes. The value is the big-endian
/// field read as a number: bytes 11 22 33 44 give 0x11223344 (ibv_wc.imm_data = htobe32 of it).
struct ImmDt {
  Be32 imm;
};
UROCE_WIRE_ASSERT_LAYOUT(ImmDt, 4);

/// Invalidate Extended Transport Header (IBA 9.3.8), 4 bytes: the R_Key to invalidate.
struct Ieth {
  Be32 rkey;
};
UROCE_WIRE_ASSERT_LAYOUT(Ieth, 4);

inline constexpr uint32_t kXrcSrqnMask = 0x00ffffff;

/// XRC Extended Transport Header (IBA 9.3.9), 4 bytes: every XRC request packet, right after
/// the BTH. Resv8(31:24) XRCSRQ(23:0): the XRC SRQ at the responder that the message is for.
struct XrcEth {
  Be32 resv_srqn;
};
UROCE_WIRE_ASSERT_LAYOUT(XrcEth, 4);

inline constexpr uint32_t kDethSrcQpnMask = 0x00ffffff;

/// Datagram Extended Transport Header (IBA 9.3.2), 8 bytes: UD.
struct Deth {
  Be32 qkey;        ///< queue key
  Be32 resv_srcqp;  ///< Resv8(31:24) SrcQP(23:0)

  constexpr Qpn src_qpn() const { return Qpn(resv_srcqp.load() & kDethSrcQpnMask); }
};
UROCE_WIRE_ASSERT_LAYOUT(Deth, 8);

struct DethValue {
  uint32_t qkey = 0;
  Qpn src_qpn;
  friend constexpr bool operator==(const DethValue&, const DethValue&) = default;
};

/// The 16 reserved bytes that follow the BTH of a CNP (Annex 17 §9.3, per docs/dcqcn-pfc.md §3.1);
/// all zero.
struct CnpReserved {
  std::array<uint8_t, 16> reserved;
};
UROCE_WIRE_ASSERT_LAYOUT(CnpReserved, 16);

}  // namespace uroce::wire
