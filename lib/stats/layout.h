/**
 * @file layout.h
 * @brief The byte layout of a uroce statistics segment: one shared-memory file per device and
 * process, `<run dir>/uroce.<device>.<pid>` (run dir: $UROCE_RUN_DIR or /dev/shm), that the
 * `uroce` command and the Prometheus exporter read while the program runs (docs/counters.md).
 *
 * Layout (every block 64-byte aligned, offsets in the header):
 *   SegmentHeader | CounterBlock (engine counters, counters.def) | counter names table |
 *   PortStats (per-priority PFC/traffic/queue arrays, port scalars) | ConfigSummary |
 *   QpRecord[qp_capacity]
 *
 * Concurrency: one writer (the process that owns the device), any number of readers in other
 * processes. Counters and gauges are plain uint64_t written with relaxed atomic stores, read
 * with relaxed atomic loads: each value is consistent on its own, a snapshot is not an
 * instant. QP records carry a seqlock (`seq` odd while the writer changes identity fields) so
 * a reader never mixes two QPs. The header, names table and ConfigSummary are written before
 * `magic` is published (release) and never change afterwards.
 *
 * Units: bytes, frames, microseconds (pause durations), Mb/s (rates), Q10 is not used: α is a
 * double stored by its bit pattern. Versioning: a reader refuses a segment whose
 * layout_version differs from kLayoutVersion; counter names are read from the segment's own
 * table, so a reader built from another counters.def still labels every value correctly.
 */
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "common/counters.h"

namespace uroce::stats {

inline constexpr uint64_t kMagic = 0x314d4853454f5255ull;  ///< "UROESHM1" little-endian
inline constexpr uint32_t kLayoutVersion = 3;              // 3: congestion control, recovery
inline constexpr int kNumPriorities = 8;                   ///< 802.1p priorities
inline constexpr size_t kCounterNameLen = 48;              ///< bytes per entry of the names table
inline constexpr size_t kDeviceNameLen = 64;
inline constexpr uint32_t kDefaultQpCapacity = 1024;
inline constexpr uint32_t kFlagClosed = 1;  ///< SegmentHeader::flags: the owner closed it

/// Whether a statistic only grows (exported as a Prometheus counter) or goes up and down.
enum class Kind : uint8_t { kCounter, kGauge };

// ---- Relaxed atomic access to plain uint64_t fields in shared memory ----------------------

inline uint64_t load(const uint64_t& f) { return __atomic_load_n(&f, __ATOMIC_RELAXED); }
inline void store(uint64_t& f, uint64_t v) { __atomic_store_n(&f, v, __ATOMIC_RELAXED); }
/// Single-writer increment (no read-modify-write atomic needed: only the owner writes).
inline void add(uint64_t& f, uint64_t n = 1) { store(f, load(f) + n); }
/// Sets a gauge and raises its high-water mark.
inline void set_with_high_water(uint64_t& f, uint64_t& hwm, uint64_t v) {
  store(f, v);
  if (v > load(hwm)) store(hwm, v);
}
/// Publishes n words from a private struct (e.g. dcqcn::PfcCounters into PortStats).
inline void publish_words(uint64_t* dst, const uint64_t* src, size_t n) {
  for (size_t i = 0; i < n; ++i) store(dst[i], src[i]);
}
inline double load_double(const uint64_t& f) { return std::bit_cast<double>(load(f)); }
inline void store_double(uint64_t& f, double v) { store(f, std::bit_cast<uint64_t>(v)); }

// ---- Port statistics ----------------------------------------------------------------------

/// Per-priority arrays (prio_stats.def) followed by port scalars (port_stats.def).
struct PortStats {
#define X(name, kind, help) uint64_t name[kNumPriorities];  ///< help
#include "stats/prio_stats.def"
#undef X
#define X(name, kind, help) uint64_t name;  ///< help
#include "stats/port_stats.def"
#undef X
};
static_assert(std::is_trivially_copyable_v<PortStats> && std::is_standard_layout_v<PortStats>);

/// One row of a statistics table: name, kind, help and where it lives in its struct.
struct StatDesc {
  std::string_view name;
  Kind kind;
  std::string_view help;
  size_t offset;  ///< byte offset of the field (the array for per-priority entries)
};

inline constexpr StatDesc kPrioStats[] = {
#define X(n, k, h) {#n, Kind::k, h, offsetof(PortStats, n)},
#include "stats/prio_stats.def"
#undef X
};
inline constexpr StatDesc kPortStats[] = {
#define X(n, k, h) {#n, Kind::k, h, offsetof(PortStats, n)},
#include "stats/port_stats.def"
#undef X
};

/// Reads entry d of priority p (p ignored for port scalars when is_prio is false).
inline uint64_t prio_value(const PortStats& s, const StatDesc& d, int p) {
  const auto* base = reinterpret_cast<const unsigned char*>(&s) + d.offset;
  uint64_t v;
  std::memcpy(&v, base + sizeof(uint64_t) * static_cast<size_t>(p), sizeof v);
  return v;
}
inline uint64_t& prio_ref(PortStats& s, const StatDesc& d, int p) {
  auto* base = reinterpret_cast<unsigned char*>(&s) + d.offset;
  return *reinterpret_cast<uint64_t*>(
      static_cast<void*>(base + sizeof(uint64_t) * static_cast<size_t>(p)));
}

// ---- Queue pairs --------------------------------------------------------------------------

enum class QpCounter : uint16_t {
#define X(name, kind, help) name,
#include "stats/qp_stats.def"
#undef X
  kCount
};
inline constexpr size_t kQpCounterCount = static_cast<size_t>(QpCounter::kCount);
inline constexpr StatDesc kQpStats[] = {
#define X(n, k, h) {#n, Kind::k, h, 0},
#include "stats/qp_stats.def"
#undef X
};

/// QP type and state as numbers: type 0 RC, 1 UC, 2 UD, 3 XRC_SEND, 4 XRC_RECV; state the
/// IBV_QPS_* values (0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 SQD, 5 SQE, 6 ERR).
inline constexpr std::string_view kQpTypeNames[] = {"RC", "UC", "UD", "XRC_SEND", "XRC_RECV"};
inline constexpr std::string_view kQpStateNames[] = {"RESET", "INIT", "RTR", "RTS",
                                                     "SQD",   "SQE",  "ERR"};

/// QpRecord::flags.
inline constexpr uint32_t kQpFlagDelayInForce = 1;  ///< the delay-based rate limits the QP
inline constexpr uint32_t kQpFlagSelective = 2;     ///< RC loss recovery by selective repeat
inline constexpr uint32_t kQpFlagTimestamps = 4;    ///< round trips from peer timestamps

/// One QP's slot in the fixed table. Identity fields (type .. peer_gid) change under the
/// seqlock; PSNs, rates and counters are relaxed atomics that change at any time.
struct QpRecord {
  uint32_t seq;          ///< seqlock sequence: odd while the writer changes identity fields
  uint32_t in_use;       ///< 1 while the QP exists (release store after the fields are set)
  uint32_t qpn;          ///< 24-bit QP number
  uint32_t type;         ///< 0 RC, 1 UC, 2 UD, 3 XRC_SEND, 4 XRC_RECV
  uint32_t state;        ///< IBV_QPS_* value
  uint32_t peer_qpn;     ///< destination QP (RC/UC), 0 otherwise
  uint8_t peer_gid[16];  ///< destination GID (RC/UC), zero otherwise
  uint64_t sq_psn;       ///< next PSN the requester sends
  uint64_t rq_psn;       ///< next PSN the responder expects
  uint64_t rate_mbps;    ///< DCQCN current rate Rc, Mb/s (double bits; 0 = unlimited)
  uint64_t target_mbps;  ///< DCQCN target rate Rt, Mb/s (double bits)
  uint64_t alpha;        ///< DCQCN α, 0..1 (double bits)
  uint64_t delay_mbps;   ///< the delay-based control's rate, Mb/s (double bits; 0 = not limiting)
  uint64_t rtt_us;       ///< last round-trip sample, µs (double bits; 0 = none)
  uint64_t target_us;    ///< the delay control's target delay, µs (double bits; 0 = none)
  uint32_t cc;           ///< congestion control, a CcAlgorithm value (common/cc_algorithm.h)
  uint32_t flags;        ///< kQpFlag*
  uint64_t counters[kQpCounterCount];  ///< qp_stats.def

  /// Writer: identity changes go between begin_update() and end_update().
  void begin_update() {
    __atomic_store_n(&seq, seq + 1, __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void end_update() { __atomic_store_n(&seq, seq + 1, __ATOMIC_RELEASE); }
  void set_state(uint32_t s) {
    begin_update();
    __atomic_store_n(&state, s, __ATOMIC_RELAXED);
    end_update();
  }
  void set_peer(uint32_t qpn_, const uint8_t gid[16]) {
    begin_update();
    __atomic_store_n(&peer_qpn, qpn_, __ATOMIC_RELAXED);
    for (int i = 0; i < 16; ++i) __atomic_store_n(&peer_gid[i], gid[i], __ATOMIC_RELAXED);
    end_update();
  }
  void set_psns(uint32_t sq, uint32_t rq) {
    store(sq_psn, sq);
    store(rq_psn, rq);
  }
  void set_rate(double rc_mbps, double rt_mbps, double a) {
    store_double(rate_mbps, rc_mbps);
    store_double(target_mbps, rt_mbps);
    store_double(alpha, a);
  }
  void set_cc(uint32_t algorithm, uint32_t fl, double delay_rate_mbps, double rtt, double target) {
    __atomic_store_n(&cc, algorithm, __ATOMIC_RELAXED);
    __atomic_store_n(&flags, fl, __ATOMIC_RELAXED);
    store_double(delay_mbps, delay_rate_mbps);
    store_double(rtt_us, rtt);
    store_double(target_us, target);
  }
  void inc(QpCounter c, uint64_t n = 1) { add(counters[static_cast<size_t>(c)], n); }
  void set(QpCounter c, uint64_t v) { store(counters[static_cast<size_t>(c)], v); }
};
static_assert(std::is_trivially_copyable_v<QpRecord> && std::is_standard_layout_v<QpRecord>);

// ---- Effective configuration --------------------------------------------------------------

inline constexpr size_t kMaxDcqcnParams = 32;

/// The effective configuration of the device, as `uroce show roce` prints it. Written once
/// at creation. Strings are NUL-terminated and truncated to fit.
struct ConfigSummary {
  char profile[16];             ///< "", "lossless", "lossy", "hpc", "storage"
  char trust[8];                ///< "dscp" (priority from the IP DSCP) or "pcp"
  char dcqcn_mode[16];          ///< "nvidia", "paper" or "off"
  char congestion_control[16];  ///< "dcqcn", "delay", "dcqcn+delay" or "off" (in force)
  char loss_recovery[16];       ///< "go-back-n" or "selective" (QPs not agreed through ECE)
  char port[160];               ///< the DPDK vdev string, PCI address or "loopback"
  char source[160];             ///< the configuration file, or "built-in"
  char addresses[4][48];        ///< first addresses "a.b.c.d/len"
  uint32_t mtu;                 ///< RoCE path MTU, bytes
  uint32_t num_tx_queues;       ///< TX queues of the port (priority -> queue below)
  uint32_t pfc_xoff_bytes;      ///< RX backlog that sends XOFF
  uint32_t pfc_xon_bytes;       ///< RX backlog that sends XON
  uint32_t pfc_watchdog_detect_ms;
  uint32_t pfc_watchdog_restore_ms;
  uint8_t lossless;          ///< 1 when PFC is on for the RoCE data priority
  uint8_t ecn;               ///< 1 when data is sent ECT(0)
  uint8_t dcqcn_enabled;     ///< 1 when DCQCN runs
  uint8_t roce_dscp;         ///< DSCP of RoCE data
  uint8_t cnp_dscp;          ///< DSCP of CNPs
  uint8_t pfc_enabled_mask;  ///< bit p: PFC on priority p
  uint8_t ecn_enabled_mask;  ///< bit p: ECN marking / DCQCN reaction on priority p
  uint8_t pad0;
  uint8_t dscp_to_prio[64];    ///< DSCP -> priority
  uint8_t pcp_to_prio[8];      ///< 802.1p PCP -> priority
  uint8_t prio_to_txq[8];      ///< priority -> TX queue
  uint32_t dcqcn_param_count;  ///< entries used in dcqcn_params
  int32_t vlan;                ///< 802.1Q VLAN id of sent frames; -1 = untagged
  struct Param {
    char name[40];
    double value;
  } dcqcn_params[kMaxDcqcnParams];  ///< effective DCQCN parameters by NVIDIA name
  struct {
    double target_queue_us, base_rtt_us, ai_mbps, beta, max_mdf, min_rate_mbps;
  } delay;  ///< [device.delay] as configured (0 = the default that follows the line rate)
};
static_assert(std::is_trivially_copyable_v<ConfigSummary> &&
              std::is_standard_layout_v<ConfigSummary>);

/// Copies s into a fixed char array, NUL-terminated, truncated.
template <size_t N>
void set_text(char (&dst)[N], std::string_view s) {
  size_t n = s.size() < N - 1 ? s.size() : N - 1;
  std::memcpy(dst, s.data(), n);
  std::memset(dst + n, 0, N - n);
}
/// Reads a fixed char array as text (up to the first NUL).
template <size_t N>
std::string_view get_text(const char (&src)[N]) {
  return std::string_view(src, strnlen(src, N));
}

// ---- Header -------------------------------------------------------------------------------

struct SegmentHeader {
  uint64_t magic;               ///< kMagic, stored last (release) when the segment is ready
  uint32_t layout_version;      ///< kLayoutVersion
  uint32_t header_size;         ///< sizeof(SegmentHeader)
  uint64_t total_size;          ///< bytes of the whole file
  int32_t pid;                  ///< owner process
  uint32_t flags;               ///< kFlagClosed once the owner closes the segment
  uint64_t start_time;          ///< owner's start time, /proc/<pid>/stat field 22 (clock ticks
                                ///< since boot): a reused pid has another one
  char device[kDeviceNameLen];  ///< ibv device name
  uint32_t counter_count;       ///< entries of the engine CounterBlock
  uint32_t counter_name_len;    ///< kCounterNameLen
  uint64_t counters_hash;       ///< FNV-1a of the counter names (joined with '\n')
  uint32_t num_priorities;      ///< kNumPriorities
  uint32_t qp_capacity;         ///< QpRecord slots
  uint32_t port_stats_size;     ///< sizeof(PortStats)
  uint32_t qp_record_size;      ///< sizeof(QpRecord)
  uint64_t counters_off;        ///< CounterBlock
  uint64_t names_off;           ///< counter_count * counter_name_len bytes
  uint64_t port_off;            ///< PortStats
  uint64_t config_off;          ///< ConfigSummary
  uint64_t qps_off;             ///< QpRecord[qp_capacity]
  uint64_t heartbeat;           ///< the writer may bump it (e.g. per progress loop); optional
};
static_assert(std::is_trivially_copyable_v<SegmentHeader> &&
              std::is_standard_layout_v<SegmentHeader>);

/// FNV-1a 64 of the compiled-in counter names, joined with '\n'.
constexpr uint64_t counters_def_hash() {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < kCounterCount; ++i) {
    for (char c : kCounterNames[i]) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    h = (h ^ '\n') * 0x100000001b3ull;
  }
  return h;
}

}  // namespace uroce::stats
