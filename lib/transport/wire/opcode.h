/**
 * @file opcode.h
 * @brief BTH opcodes and the constexpr opcode table (IBA Vol 1 §9.2.1, §9.3; Annex 17 §9.3 as
 * docs/dcqcn-pfc.md §3.1 gives it).
 *
 * Everything is generated from opcodes.def: the Opcode enum, and kOpcodeTable, 256 rows giving
 * per opcode which extended headers follow the BTH, their byte offsets from the start of the BTH,
 * the header length (BTH + extended headers), whether payload follows, and classification
 * flags. Header sets (HdrMask) and classification sets (OpFlags) are distinct types, neither
 * converts from Opcode or from an integer, so mixing them up does not compile.
 * Units: bytes.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "transport/wire/bth.h"
#include "transport/wire/ext_headers.h"

namespace uroce::wire {

/// Every known BTH opcode. Values are the wire values.
enum class Opcode : uint8_t {
#define X(name, value, str, hdrs, flags) k##name = value,
#include "transport/wire/opcodes.def"
#undef X
};

/// Extended headers in their wire order after the BTH (IBA 9.2: RDETH, DETH, XRCETH, RETH,
/// AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, payload; FLUSH's FETH comes before its RETH, IBA
/// 1.5 Annex A19 as Linux rxe lays it out). kPayload marks where the payload starts.
enum class ExtHdr : uint8_t {
  kDeth,
  kXrcEth,
  kFeth,
  kReth,
  kAtomicEth,
  kAeth,
  kAtomicAckEth,
  kImmDt,
  kIeth,
  kCnpReserved,
  kPayload,
};
inline constexpr size_t kExtHdrCount = 11;

/// Wire size of each ExtHdr, bytes (kPayload: 0).
inline constexpr std::array<uint8_t, kExtHdrCount> kExtHdrSize = {sizeof(Deth),
                                                                  sizeof(XrcEth),
                                                                  sizeof(Feth),
                                                                  sizeof(Reth),
                                                                  sizeof(AtomicEth),
                                                                  sizeof(Aeth),
                                                                  sizeof(AtomicAckEth),
                                                                  sizeof(ImmDt),
                                                                  sizeof(Ieth),
                                                                  sizeof(CnpReserved),
                                                                  0};

/// A set of ExtHdr. Not constructible from an integer or an Opcode.
class HdrMask {
 public:
  constexpr HdrMask() = default;
  constexpr explicit HdrMask(ExtHdr h) : bits_(static_cast<uint16_t>(1u << static_cast<int>(h))) {}
  constexpr bool has(ExtHdr h) const { return (bits_ & HdrMask(h).bits_) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint16_t bits() const { return bits_; }
  friend constexpr HdrMask operator|(HdrMask a, HdrMask b) { return HdrMask(a.bits_ | b.bits_); }
  friend constexpr HdrMask operator&(HdrMask a, HdrMask b) { return HdrMask(a.bits_ & b.bits_); }
  friend constexpr bool operator==(HdrMask, HdrMask) = default;

 private:
  constexpr explicit HdrMask(unsigned bits) : bits_(static_cast<uint16_t>(bits)) {}
  uint16_t bits_ = 0;
};

/// Classification flags of an opcode.
enum class OpFlag : uint8_t {
  kRc,
  kUc,
  kUd,
  kCnp,
  kXrc,  // service
  kRequest,
  kResponse,  // direction: requester -> responder, or responder -> requester
  kFirst,
  kMiddle,
  kLast,
  kOnly,
  kSend,
  kWrite,
  kReadRequest,
  kReadResponse,
  kAck,
  kAtomic,
  kAtomicAck,
  kAtomicWrite,  ///< RDMA ATOMIC WRITE (IBA 1.5 Annex A19)
  kFlush,        ///< RDMA FLUSH (IBA 1.5 Annex A19)
  kImm,
  kInv,
  kRwqe,  // the message consumes a receive WQE
};

/// A set of OpFlag. Not constructible from an integer, an Opcode or a HdrMask.
class OpFlags {
 public:
  constexpr OpFlags() = default;
  constexpr explicit OpFlags(OpFlag f) : bits_(1u << static_cast<int>(f)) {}
  constexpr bool has(OpFlag f) const { return (bits_ & OpFlags(f).bits_) != 0; }
  /// True when any flag of s is set.
  constexpr bool any(OpFlags s) const { return (bits_ & s.bits_) != 0; }
  constexpr uint32_t bits() const { return bits_; }
  friend constexpr OpFlags operator|(OpFlags a, OpFlags b) {
    OpFlags r;
    r.bits_ = a.bits_ | b.bits_;
    return r;
  }
  friend constexpr bool operator==(OpFlags, OpFlags) = default;

 private:
  uint32_t bits_ = 0;
};

/// One row of the opcode table.
struct OpcodeInfo {
  std::string_view name;  ///< IBTA name ("RC_SEND_FIRST"); empty for undefined opcodes
  bool valid = false;     ///< defined in opcodes.def
  HdrMask hdrs;           ///< extended headers present (+ kPayload when payload follows)
  OpFlags flags;          ///< classification
  uint8_t length = 0;     ///< BTH + extended headers, bytes
  /// Byte offset of each present ExtHdr from the start of the BTH; offset[kPayload] == length.
  /// Absent headers have offset 0.
  std::array<uint8_t, kExtHdrCount> offset{};

  constexpr uint8_t offset_of(ExtHdr h) const { return offset[static_cast<size_t>(h)]; }
  constexpr bool has(ExtHdr h) const { return hdrs.has(h); }
  constexpr bool has_payload() const { return hdrs.has(ExtHdr::kPayload); }
  constexpr bool is(OpFlag f) const { return flags.has(f); }
  /// First or only packet of a message.
  constexpr bool is_start() const { return is(OpFlag::kFirst) || is(OpFlag::kOnly); }
  /// Last or only packet of a message.
  constexpr bool is_end() const { return is(OpFlag::kLast) || is(OpFlag::kOnly); }
};

/// The tokens of opcodes.def.
namespace opdef {
inline constexpr HdrMask DETH{ExtHdr::kDeth};
inline constexpr HdrMask XRCETH{ExtHdr::kXrcEth};
inline constexpr HdrMask FETH{ExtHdr::kFeth};
inline constexpr HdrMask RETH{ExtHdr::kReth};
inline constexpr HdrMask ATOMICETH{ExtHdr::kAtomicEth};
inline constexpr HdrMask AETH{ExtHdr::kAeth};
inline constexpr HdrMask ATOMICACKETH{ExtHdr::kAtomicAckEth};
inline constexpr HdrMask IMMDT{ExtHdr::kImmDt};
inline constexpr HdrMask IETH{ExtHdr::kIeth};
inline constexpr HdrMask CNPRSVD{ExtHdr::kCnpReserved};
inline constexpr HdrMask PAYLOAD{ExtHdr::kPayload};
inline constexpr OpFlags RC{OpFlag::kRc};
inline constexpr OpFlags UC{OpFlag::kUc};
inline constexpr OpFlags UD{OpFlag::kUd};
inline constexpr OpFlags CNP{OpFlag::kCnp};
inline constexpr OpFlags XRC{OpFlag::kXrc};
inline constexpr OpFlags REQ{OpFlag::kRequest};
inline constexpr OpFlags RESP{OpFlag::kResponse};
inline constexpr OpFlags FIRST{OpFlag::kFirst};
inline constexpr OpFlags MIDDLE{OpFlag::kMiddle};
inline constexpr OpFlags LAST{OpFlag::kLast};
inline constexpr OpFlags ONLY{OpFlag::kOnly};
inline constexpr OpFlags SEND{OpFlag::kSend};
inline constexpr OpFlags WRITE{OpFlag::kWrite};
inline constexpr OpFlags READ_REQ{OpFlag::kReadRequest};
inline constexpr OpFlags READ_RESP{OpFlag::kReadResponse};
inline constexpr OpFlags ACK{OpFlag::kAck};
inline constexpr OpFlags ATOMIC{OpFlag::kAtomic};
inline constexpr OpFlags ATOMIC_ACK{OpFlag::kAtomicAck};
inline constexpr OpFlags ATOMIC_WRITE{OpFlag::kAtomicWrite};
inline constexpr OpFlags FLUSH{OpFlag::kFlush};
inline constexpr OpFlags IMM{OpFlag::kImm};
inline constexpr OpFlags INV{OpFlag::kInv};
inline constexpr OpFlags RWQE{OpFlag::kRwqe};

constexpr OpcodeInfo make_row(std::string_view name, HdrMask hdrs, OpFlags flags) {
  OpcodeInfo r;
  r.name = name;
  r.valid = true;
  r.hdrs = hdrs;
  r.flags = flags;
  size_t off = sizeof(Bth);
  for (size_t i = 0; i < kExtHdrCount; ++i) {
    if (hdrs.has(static_cast<ExtHdr>(i))) {
      r.offset[i] = static_cast<uint8_t>(off);
      off += kExtHdrSize[i];
    }
  }
  r.offset[static_cast<size_t>(ExtHdr::kPayload)] = static_cast<uint8_t>(off);
  r.length = static_cast<uint8_t>(off);
  return r;
}

constexpr std::array<OpcodeInfo, 256> make_table() {
  std::array<OpcodeInfo, 256> t{};
#define X(name, value, str, hdrs, flags) t[value] = make_row(str, hdrs, flags);
#include "transport/wire/opcodes.def"
#undef X
  return t;
}
}  // namespace opdef

/// The opcode table, indexed by the raw opcode byte.
inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = opdef::make_table();

constexpr const OpcodeInfo& opcode_info(Opcode op) {
  return kOpcodeTable[static_cast<uint8_t>(op)];
}
constexpr bool is_known(Opcode op) { return opcode_info(op).valid; }
/// "RC_SEND_FIRST", or "UNKNOWN" for an undefined opcode.
constexpr std::string_view to_string(Opcode op) {
  return is_known(op) ? opcode_info(op).name : std::string_view("UNKNOWN");
}

/// Longest BTH + extended headers of any opcode (UD SEND_ONLY_WITH_IMMEDIATE, WRITE_ONLY_IMM: 32;
/// ATOMIC: 40; XRC ATOMIC: 44), bytes.
inline constexpr size_t kMaxTransportHeaderLen = 44;

/// An XRC opcode's RC twin (the same operation and headers but the XRCETH, IBA 9.2.1 table 37:
/// the low five bits name the operation); any other opcode is returned as it is.
constexpr Opcode rc_twin(Opcode op) {
  const auto v = static_cast<uint8_t>(op);
  return (v & 0xe0) == 0xa0 ? static_cast<Opcode>(v & 0x1f) : op;
}
/// The XRC twin of an RC opcode that has one.
constexpr Opcode xrc_twin(Opcode rc) {
  return static_cast<Opcode>(static_cast<uint8_t>(rc) | 0xa0);
}

// Key rows, checked at compile time.
static_assert(opcode_info(Opcode::kRcSendFirst).length == 12);
static_assert(opcode_info(Opcode::kRcRdmaWriteFirst).offset_of(ExtHdr::kReth) == 12);
static_assert(opcode_info(Opcode::kRcRdmaWriteOnlyWithImmediate).offset_of(ExtHdr::kImmDt) == 28);
static_assert(opcode_info(Opcode::kRcRdmaWriteOnlyWithImmediate).length == 32);
static_assert(opcode_info(Opcode::kRcRdmaReadRequest).length == 28 &&
              !opcode_info(Opcode::kRcRdmaReadRequest).has_payload());
static_assert(opcode_info(Opcode::kRcRdmaReadResponseMiddle).length == 12);
static_assert(opcode_info(Opcode::kRcRdmaReadResponseFirst).length == 16);
static_assert(opcode_info(Opcode::kRcAcknowledge).length == 16 &&
              !opcode_info(Opcode::kRcAcknowledge).has_payload());
static_assert(opcode_info(Opcode::kRcAtomicAcknowledge).offset_of(ExtHdr::kAtomicAckEth) == 16 &&
              opcode_info(Opcode::kRcAtomicAcknowledge).length == 24);
static_assert(opcode_info(Opcode::kRcCompareSwap).length == 40);
static_assert(opcode_info(Opcode::kRcFlush).offset_of(ExtHdr::kFeth) == 12 &&
              opcode_info(Opcode::kRcFlush).offset_of(ExtHdr::kReth) == 16 &&
              opcode_info(Opcode::kRcFlush).length == 32 &&
              !opcode_info(Opcode::kRcFlush).has_payload());
static_assert(opcode_info(Opcode::kRcAtomicWrite).offset_of(ExtHdr::kReth) == 12 &&
              opcode_info(Opcode::kRcAtomicWrite).length == 28 &&
              opcode_info(Opcode::kRcAtomicWrite).has_payload());
static_assert(opcode_info(Opcode::kUdSendOnlyWithImmediate).offset_of(ExtHdr::kImmDt) == 20 &&
              opcode_info(Opcode::kUdSendOnlyWithImmediate).length == 24);
static_assert(opcode_info(Opcode::kCnp).length == 28 && !opcode_info(Opcode::kCnp).has_payload());
static_assert(opcode_info(Opcode::kXrcSendOnly).offset_of(ExtHdr::kXrcEth) == 12 &&
              opcode_info(Opcode::kXrcSendOnly).length == 16);
static_assert(opcode_info(Opcode::kXrcRdmaWriteOnlyWithImmediate).offset_of(ExtHdr::kReth) == 16 &&
              opcode_info(Opcode::kXrcRdmaWriteOnlyWithImmediate).offset_of(ExtHdr::kImmDt) == 32 &&
              opcode_info(Opcode::kXrcRdmaWriteOnlyWithImmediate).length == 36);
static_assert(opcode_info(Opcode::kXrcCompareSwap).offset_of(ExtHdr::kAtomicEth) == 16 &&
              opcode_info(Opcode::kXrcCompareSwap).length == 44);
static_assert(opcode_info(Opcode::kXrcAcknowledge).length == 16 &&
              !opcode_info(Opcode::kXrcAcknowledge).has(ExtHdr::kXrcEth));
static_assert(rc_twin(Opcode::kXrcRdmaReadResponseOnly) == Opcode::kRcRdmaReadResponseOnly &&
              xrc_twin(Opcode::kRcFetchAdd) == Opcode::kXrcFetchAdd &&
              rc_twin(Opcode::kUcSendOnly) == Opcode::kUcSendOnly);
static_assert(!kOpcodeTable[0x15].valid && !kOpcodeTable[0xff].valid && !kOpcodeTable[0xb5].valid);
static_assert(opcode_info(Opcode::kRcRdmaWriteLastWithImmediate).is(OpFlag::kRwqe) &&
              !opcode_info(Opcode::kRcRdmaWriteLast).is(OpFlag::kRwqe));

}  // namespace uroce::wire
