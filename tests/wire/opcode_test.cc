/**
 * @file opcode_test.cc
 * @brief Opcode table (IBA Vol 1 §9.2.1 table 37, §9.3; Annex 17 §9.3 as docs/dcqcn-pfc.md §3.1
 * gives it) consistency tests.
 */
#include "transport/wire/opcode.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace uroce::wire {
namespace {

// An Opcode, an integer and a HdrMask/OpFlags must not stand in for one another.
static_assert(!std::is_constructible_v<HdrMask, Opcode>);
static_assert(!std::is_convertible_v<Opcode, HdrMask>);
static_assert(!std::is_constructible_v<HdrMask, uint16_t>);
static_assert(!std::is_constructible_v<HdrMask, int>);
static_assert(!std::is_constructible_v<OpFlags, Opcode>);
static_assert(!std::is_constructible_v<OpFlags, HdrMask>);
static_assert(!std::is_constructible_v<HdrMask, OpFlags>);
static_assert(!std::is_convertible_v<Opcode, uint8_t>);
template <typename Set, typename Elem>
concept HasWith = requires(Set s, Elem e) {
  s.has(e);
};
template <typename A, typename B>
concept Orable = requires(A a, B b) {
  a | b;
};
static_assert(HasWith<HdrMask, ExtHdr> && HasWith<OpFlags, OpFlag>);
static_assert(!HasWith<HdrMask, Opcode> && !HasWith<HdrMask, OpFlag> && !HasWith<HdrMask, int>);
static_assert(!HasWith<OpFlags, ExtHdr> && !HasWith<OpFlags, Opcode>);
static_assert(Orable<HdrMask, HdrMask> && !Orable<HdrMask, Opcode> && !Orable<HdrMask, OpFlags>);

TEST(OpcodeTable, PayloadOffsetEqualsLengthForEveryOpcode) {
  int defined = 0;
  for (int v = 0; v < 256; ++v) {
    const OpcodeInfo& i = kOpcodeTable[v];
    if (!i.valid) {
      EXPECT_EQ(i.length, 0) << v;
      EXPECT_TRUE(i.hdrs.empty()) << v;
      continue;
    }
    ++defined;
    EXPECT_EQ(i.offset_of(ExtHdr::kPayload), i.length) << i.name;
    // Present headers are laid out back to back, in wire order, after the 12-byte BTH.
    size_t off = 12;
    for (size_t h = 0; h + 1 < kExtHdrCount; ++h) {
      if (!i.has(static_cast<ExtHdr>(h))) continue;
      EXPECT_EQ(i.offset[h], off) << i.name << " hdr " << h;
      off += kExtHdrSize[h];
    }
    EXPECT_EQ(off, i.length) << i.name;
    EXPECT_LE(i.length, kMaxTransportHeaderLen) << i.name;
  }
  // 25 RC (FLUSH and ATOMIC WRITE included) + 12 UC + 2 UD + CNP + 23 XRC.
  EXPECT_EQ(defined, 63);
}

TEST(OpcodeTable, ServiceFlagMatchesOpcodeTopBits) {
  for (int v = 0; v < 256; ++v) {
    const OpcodeInfo& i = kOpcodeTable[v];
    if (!i.valid) continue;
    const int service = v >> 5;  // 0 RC, 1 UC, 3 UD, 4 CNP, 5 XRC
    EXPECT_EQ(i.is(OpFlag::kRc), service == 0) << i.name;
    EXPECT_EQ(i.is(OpFlag::kUc), service == 1) << i.name;
    EXPECT_EQ(i.is(OpFlag::kUd), service == 3) << i.name;
    EXPECT_EQ(i.is(OpFlag::kCnp), service == 4) << i.name;
    EXPECT_EQ(i.is(OpFlag::kXrc), service == 5) << i.name;
    EXPECT_EQ(i.name.substr(0, 3), service == 0   ? "RC_"
                                   : service == 1 ? "UC_"
                                   : service == 3 ? "UD_"
                                   : service == 5 ? "XRC"
                                                  : "CNP");
    // XRCETH exactly on XRC requests (IBA 9.3.9).
    EXPECT_EQ(i.has(ExtHdr::kXrcEth), service == 5 && i.is(OpFlag::kRequest)) << i.name;
    if (service == 5) {
      // The same row as its RC twin but the XRCETH (4 bytes) on requests.
      const OpcodeInfo& rc = opcode_info(rc_twin(static_cast<Opcode>(v)));
      ASSERT_TRUE(rc.valid) << i.name;
      EXPECT_EQ(i.name.substr(1), rc.name) << i.name;
      EXPECT_EQ(i.length, rc.length + (i.is(OpFlag::kRequest) ? 4 : 0)) << i.name;
      EXPECT_EQ(i.hdrs | HdrMask(ExtHdr::kXrcEth), rc.hdrs | HdrMask(ExtHdr::kXrcEth)) << i.name;
    }
    if (service == 4) continue;
    // Exactly one position and one direction.
    const int positions =
        i.is(OpFlag::kFirst) + i.is(OpFlag::kMiddle) + i.is(OpFlag::kLast) + i.is(OpFlag::kOnly);
    EXPECT_EQ(positions, 1) << i.name;
    EXPECT_NE(i.is(OpFlag::kRequest), i.is(OpFlag::kResponse)) << i.name;
    // IMM <=> ImmDt present, INV <=> IETH present.
    EXPECT_EQ(i.is(OpFlag::kImm), i.has(ExtHdr::kImmDt)) << i.name;
    EXPECT_EQ(i.is(OpFlag::kInv), i.has(ExtHdr::kIeth)) << i.name;
    // RETH exactly on WRITE first/only, READ request, ATOMIC WRITE and FLUSH; FETH on FLUSH.
    EXPECT_EQ(i.has(ExtHdr::kReth), i.is(OpFlag::kReadRequest) ||
                                        (i.is(OpFlag::kWrite) && i.is_start()) ||
                                        i.is(OpFlag::kAtomicWrite) || i.is(OpFlag::kFlush))
        << i.name;
    EXPECT_EQ(i.has(ExtHdr::kFeth), i.is(OpFlag::kFlush)) << i.name;
    // DETH exactly on UD.
    EXPECT_EQ(i.has(ExtHdr::kDeth), i.is(OpFlag::kUd)) << i.name;
    // Sends always consume a receive WQE; writes only with immediate.
    if (i.is(OpFlag::kSend)) {
      EXPECT_TRUE(i.is(OpFlag::kRwqe)) << i.name;
    }
    if (i.is(OpFlag::kWrite)) {
      EXPECT_EQ(i.is(OpFlag::kRwqe), i.is(OpFlag::kImm)) << i.name;
    }
  }
}

TEST(OpcodeTable, KeyRows) {
  // Receive: values straight from IBA table 37.
  EXPECT_EQ(static_cast<int>(Opcode::kRcSendFirst), 0x00);
  EXPECT_EQ(static_cast<int>(Opcode::kRcRdmaWriteMiddle), 0x07);
  EXPECT_EQ(static_cast<int>(Opcode::kRcRdmaReadRequest), 0x0c);
  EXPECT_EQ(static_cast<int>(Opcode::kRcAcknowledge), 0x11);
  EXPECT_EQ(static_cast<int>(Opcode::kRcFetchAdd), 0x14);
  EXPECT_EQ(static_cast<int>(Opcode::kRcSendOnlyWithInvalidate), 0x17);
  // IBA 1.5 Annex A19, as Linux's include/rdma/ib_pack.h numbers them.
  EXPECT_EQ(static_cast<int>(Opcode::kRcFlush), 0x1c);
  EXPECT_EQ(static_cast<int>(Opcode::kRcAtomicWrite), 0x1d);
  EXPECT_EQ(static_cast<int>(Opcode::kUcRdmaWriteOnlyWithImmediate), 0x2b);
  EXPECT_EQ(static_cast<int>(Opcode::kUdSendOnly), 0x64);
  EXPECT_EQ(static_cast<int>(Opcode::kCnp), 0x81);

  const OpcodeInfo& rr = opcode_info(Opcode::kRcRdmaReadResponseFirst);
  EXPECT_TRUE(rr.has(ExtHdr::kAeth));
  EXPECT_TRUE(rr.has_payload());
  EXPECT_TRUE(rr.is(OpFlag::kResponse));
  EXPECT_FALSE(opcode_info(Opcode::kRcRdmaReadResponseMiddle).has(ExtHdr::kAeth));
  const OpcodeInfo& aa = opcode_info(Opcode::kRcAtomicAcknowledge);
  EXPECT_EQ(aa.offset_of(ExtHdr::kAeth), 12);
  EXPECT_EQ(aa.offset_of(ExtHdr::kAtomicAckEth), 16);
  EXPECT_FALSE(aa.has_payload());
  const OpcodeInfo& ud = opcode_info(Opcode::kUdSendOnlyWithImmediate);
  EXPECT_EQ(ud.offset_of(ExtHdr::kDeth), 12);
  EXPECT_EQ(ud.offset_of(ExtHdr::kImmDt), 20);
  EXPECT_EQ(ud.offset_of(ExtHdr::kPayload), 24);
  // FLUSH: BTH, FETH, RETH, no payload; ATOMIC WRITE: BTH, RETH, 8 bytes of payload.
  const OpcodeInfo& fl = opcode_info(Opcode::kRcFlush);
  EXPECT_EQ(fl.offset_of(ExtHdr::kFeth), 12);
  EXPECT_EQ(fl.offset_of(ExtHdr::kReth), 16);
  EXPECT_EQ(fl.length, 32);
  EXPECT_FALSE(fl.has_payload());
  EXPECT_TRUE(fl.is(OpFlag::kRequest) && fl.is(OpFlag::kOnly) && !fl.is(OpFlag::kRwqe));
  const OpcodeInfo& aw = opcode_info(Opcode::kRcAtomicWrite);
  EXPECT_EQ(aw.offset_of(ExtHdr::kReth), 12);
  EXPECT_EQ(aw.offset_of(ExtHdr::kPayload), 28);
  EXPECT_TRUE(aw.has_payload());
  EXPECT_FALSE(aw.is(OpFlag::kWrite) || aw.is(OpFlag::kAtomic));
  EXPECT_EQ(to_string(Opcode::kRcFlush), "RC_FLUSH");
  EXPECT_EQ(to_string(Opcode::kRcAtomicWrite), "RC_ATOMIC_WRITE");
  EXPECT_EQ(to_string(Opcode::kRcSendLastWithImmediate), "RC_SEND_LAST_WITH_IMMEDIATE");
  EXPECT_EQ(to_string(static_cast<Opcode>(0x15)), "UNKNOWN");
  EXPECT_FALSE(is_known(static_cast<Opcode>(0x40)));  // RD is not supported
  // XRC (IBA table 37, prefix 101b): the XRCETH right after the BTH, before RETH/AtomicETH.
  EXPECT_EQ(static_cast<int>(Opcode::kXrcSendFirst), 0xa0);
  EXPECT_EQ(static_cast<int>(Opcode::kXrcAcknowledge), 0xb1);
  EXPECT_EQ(static_cast<int>(Opcode::kXrcSendOnlyWithInvalidate), 0xb7);
  const OpcodeInfo& xw = opcode_info(Opcode::kXrcRdmaWriteFirst);
  EXPECT_EQ(xw.offset_of(ExtHdr::kXrcEth), 12);
  EXPECT_EQ(xw.offset_of(ExtHdr::kReth), 16);
  EXPECT_EQ(xw.offset_of(ExtHdr::kPayload), 32);
  const OpcodeInfo& xa = opcode_info(Opcode::kXrcCompareSwap);
  EXPECT_EQ(xa.offset_of(ExtHdr::kAtomicEth), 16);
  EXPECT_EQ(xa.length, 44);
  EXPECT_FALSE(opcode_info(Opcode::kXrcRdmaReadResponseFirst).has(ExtHdr::kXrcEth));
  EXPECT_FALSE(is_known(static_cast<Opcode>(0xbc)));  // no XRC FLUSH
  EXPECT_EQ(to_string(Opcode::kXrcSendOnly), "XRC_SEND_ONLY");
}

}  // namespace
}  // namespace uroce::wire
