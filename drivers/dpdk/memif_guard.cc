/**
 * @file memif_guard.cc
 * @brief The memif-region SIGSEGV guard and the burst fence (see memif_guard.h). Signal-handler
 * code uses only atomics, a thread-local pointer the thread set before, mmap/sigaction and
 * siglongjmp (async-signal-safe). The handler has SA_NODEFER, so a fence's sigsetjmp need not
 * save the signal mask (a syscall per burst): SIGSEGV is not blocked after the jump.
 */
#include "dpdk/memif_guard.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace uroce::dpdk {

namespace {

constexpr int kMaxRanges = 64;

/// Known memif region ranges; the handler reads them lock-free.
std::atomic<uintptr_t> g_start[kMaxRanges];
std::atomic<uintptr_t> g_end[kMaxRanges];
std::atomic<int> g_count{0};
std::atomic<uint64_t> g_faults{0};
std::atomic<uint64_t> g_fenced{0};
/// The fence of the call this thread is in (memif_fenced_call), or null.
thread_local sigjmp_buf* t_fence = nullptr;
struct sigaction g_prev;
std::once_flag g_installed;
std::mutex g_mu;

void on_segv(int sig, siginfo_t* info, void* ctx) {
  auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  int n = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < n && i < kMaxRanges; ++i) {
    uintptr_t s = g_start[i].load(std::memory_order_relaxed);
    uintptr_t e = g_end[i].load(std::memory_order_relaxed);
    if (addr < s || addr >= e) continue;
    void* p = mmap(reinterpret_cast<void*>(s), e - s, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      g_faults.fetch_add(1, std::memory_order_relaxed);
      return;  // the faulting instruction runs again, on zeros
    }
    break;
  }
  if (sigjmp_buf* fence = t_fence) {  // inside a fenced burst: end the burst, not the process
    t_fence = nullptr;
    g_fenced.fetch_add(1, std::memory_order_relaxed);
    siglongjmp(*fence, 1);
  }
  // Not ours: hand the fault to whoever had it before.
  if ((g_prev.sa_flags & SA_SIGINFO) && g_prev.sa_sigaction) {
    g_prev.sa_sigaction(sig, info, ctx);
    return;
  }
  sigaction(SIGSEGV, &g_prev, nullptr);  // default or the old handler, on the re-fault
}

}  // namespace

void memif_guard_refresh() {
  std::call_once(g_installed, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_prev);
  });
  std::lock_guard<std::mutex> lock(g_mu);
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return;
  // Keep the ranges already known (their unmapping may still be in flight) and add new ones.
  int n = g_count.load(std::memory_order_relaxed);
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    if (!std::strstr(line, "memif_region")) continue;
    unsigned long s = 0, e = 0;
    if (std::sscanf(line, "%lx-%lx", &s, &e) != 2) continue;
    bool known = false;
    for (int i = 0; i < n; ++i)
      known |= g_start[i].load(std::memory_order_relaxed) == s &&
               g_end[i].load(std::memory_order_relaxed) == e;
    if (known) continue;
    int slot = n < kMaxRanges ? n++ : static_cast<int>(s / 4096 % kMaxRanges);
    g_end[slot].store(0, std::memory_order_relaxed);  // never a half-written range
    g_start[slot].store(s, std::memory_order_relaxed);
    g_end[slot].store(e, std::memory_order_release);
  }
  std::fclose(f);
  g_count.store(n, std::memory_order_release);
}

uint64_t memif_guard_faults() { return g_faults.load(std::memory_order_relaxed); }

uint64_t memif_guard_fenced() { return g_fenced.load(std::memory_order_relaxed); }

bool memif_fenced_call(void (*fn)(void*), void* arg) {
  sigjmp_buf fence;
  if (sigsetjmp(fence, 0) != 0) return false;  // the handler jumped here and cleared t_fence
  t_fence = &fence;
  fn(arg);
  t_fence = nullptr;
  return true;
}

}  // namespace uroce::dpdk
