/**
 * @file placement_order_test.cc
 * @brief How the responder writes a WRITE's bytes into memory, store by store (issue 31): the
 * message's last byte is written last and once. Programs learn that a WRITE landed by polling
 * its last byte and then write into the same buffer (riostream's latency test writes its next
 * marker there); a NIC places each byte once, in order. glibc's memcpy gives neither: it writes
 * some sizes twice (AVX-512: two 64-byte stores of the same bytes for a 64-byte copy) and stores
 * the tail of others first. A placing thread preempted between two such stores let riostream see
 * its peer's marker, write its own, lose it to the second store, and send the peer's marker
 * back: both sides then waited forever.
 *
 * The test makes the preemption happen at every store: the MR's pages are read-only while the
 * engine takes the frame, each store faults, the handler opens the pages and single-steps that
 * one instruction (x86 trap flag), then closes them again. After the store that makes the last
 * byte appear, the handler acts as the program: it checks that every earlier byte of the
 * message is in place and writes its own value into the last byte. That value must survive the
 * rest of the placement. Deterministic; x86-64 Linux only (the trap flag), not under TSan (its
 * signal handling defers handlers).
 * Comment grammar (eRPC): "Receive X (in-order|duplicate|future)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)
#define UROCE_STEP_STORES 1
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#endif

#include <cstring>
#include <string>
#include <vector>

#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

#ifdef UROCE_STEP_STORES

using wire::Opcode;

constexpr size_t kPages = 2 * 4096;
constexpr uint64_t kTrapFlag = 0x100;  // EFLAGS.TF: a debug trap after the next instruction
constexpr uint8_t kOld = 0x00, kLast = 0x77, kProgram = 0xee;

/// What the signal handlers share with the test (plain globals: handlers reach nothing else).
struct Watch {
  uint8_t* region = nullptr;
  uint8_t* first = nullptr;  ///< the message's first byte
  size_t len = 0;
  const uint8_t* want = nullptr;  ///< the message's bytes
  volatile bool stepping = false;
  volatile bool seen = false;  ///< the last byte appeared and the program wrote its own
  volatile bool torn = false;  ///< when it appeared, an earlier byte was not in place
  volatile int stores = 0;
} g;

void on_segv(int sig, siginfo_t* si, void* uc) {
  auto* a = static_cast<uint8_t*>(si->si_addr);
  if (a < g.region || a >= g.region + kPages) {
    signal(sig, SIG_DFL);  // not ours: crash as without the handler
    return;
  }
  mprotect(g.region, kPages, PROT_READ | PROT_WRITE);
  static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_EFL] |= kTrapFlag;
  g.stepping = true;
}

void on_trap(int, siginfo_t*, void* uc) {
  static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_EFL] &= ~kTrapFlag;
  if (!g.stepping) return;
  g.stepping = false;
  g.stores = g.stores + 1;
  uint8_t* last = g.first + g.len - 1;
  if (!g.seen && *last == kLast) {
    // The program polling the last byte sees it: the message must be whole; it then writes
    // into the same buffer.
    g.torn = std::memcmp(g.first, g.want, g.len - 1) != 0;
    *last = kProgram;
    g.seen = true;
  }
  mprotect(g.region, kPages, PROT_READ);
}

class PlacementOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* m = mmap(nullptr, kPages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    g = Watch{};
    g.region = static_cast<uint8_t*>(m);
    keys = t.e->reg_mr(t.pd, reinterpret_cast<uint64_t>(m), kPages, 0xf).value();
    struct sigaction sa {};
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, &old_segv);
    sa.sa_sigaction = on_trap;
    sigaction(SIGTRAP, &sa, &old_trap);
  }
  void TearDown() override {
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGTRAP, &old_trap, nullptr);
    munmap(g.region, kPages);
  }

  /// Places a len-byte WRITE_ONLY at offset off of the region with every store stepped; a
  /// problem, or "".
  std::string place(uint32_t psn, size_t off, size_t len) {
    std::vector<uint8_t> data(len);
    for (size_t i = 0; i < len; ++i) data[i] = static_cast<uint8_t>(0x11 + i % 0x60);
    data[len - 1] = kLast;
    std::memset(g.region, kOld, kPages);
    g.first = g.region + off;
    g.len = len;
    g.want = data.data();
    g.seen = false;
    g.torn = false;
    g.stores = 0;
    const auto f = t.pb.write(Opcode::kRcRdmaWriteOnly, psn, reinterpret_cast<uint64_t>(g.first),
                              keys.rkey, static_cast<uint32_t>(len), data);
    // Receive WRITE_ONLY psn (in-order), each store into the region stepped
    mprotect(g.region, kPages, PROT_READ);
    t.rx(f);
    mprotect(g.region, kPages, PROT_READ | PROT_WRITE);
    std::string at = " (" + std::to_string(len) + " bytes at offset " + std::to_string(off) + ", " +
                     std::to_string(g.stores) + " stores)";
    if (!g.seen) return "the last byte never appeared" + at;
    if (g.torn) return "the last byte appeared before every earlier byte was in place" + at;
    if (g.first[len - 1] != kProgram)
      return "the program's write into the last byte was lost to a later store" + at;
    if (std::memcmp(g.first, data.data(), len - 1) != 0) return "a byte is wrong" + at;
    return "";
  }

  EngineUnderTest t;
  MrKeys keys;
  struct sigaction old_segv {
  }, old_trap{};
};

TEST_F(PlacementOrderTest, TheLastByteIsWrittenLastAndOnceWhateverTheSize) {
  // Every size up to 130 bytes (glibc's copies change strategy at 4, 8, 16, 32, 64 and 128
  // bytes: the sizes it writes twice or tail first), then larger ones up to the path MTU, at
  // offsets of every alignment.
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 130; ++n) sizes.push_back(n);
  for (size_t n : {255, 256, 257, 511, 512, 1000, 1023, 1024}) sizes.push_back(n);
  uint32_t psn = EngineUnderTest::kRqPsn;
  for (size_t n : sizes) {
    const size_t off = 64 + (n * 13) % 64;
    // Expect: when the last byte appears the message is whole, and the program's write there
    // stays
    EXPECT_EQ(place(psn++, off, n), "");
  }
  // Expect: every WRITE acknowledged in order, nothing else written
  t.tx();
  Captured c;
  while (!t.sink.empty()) c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(psn - 1));
  EXPECT_EQ(t.counters.get(Counter::rx_write_requests), sizes.size());
}

#endif  // UROCE_STEP_STORES

}  // namespace
}  // namespace uroce::transport::testing
