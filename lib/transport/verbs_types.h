/**
 * @file verbs_types.h
 * @brief The transport's own names for verbs quantities: QP types and states, attribute masks,
 * access flags, work requests and completions.
 *
 * Numeric values equal rdma-core's (<infiniband/verbs.h>, rdma-core 44) so lib/verbs converts
 * with a cast; lib/verbs static_asserts every one. lib/transport never includes verbs.h. The
 * FLUSH names rdma-core 44 lacks carry rdma-core 45's values (lib/verbs ibta15.h).
 */
#pragma once

#include <cstdint>

#include "common/time.h"
#include "common/types.h"

namespace uroce::transport {

/// IBV_QPT_*. The XRC halves (IBA Vol 1 §11.2.5.2, XRC transport): kXrcSend sends only (its
/// requests name the XRC SRQ at the peer), kXrcRecv receives only, into the XRC SRQs of its
/// XRC domain.
enum class QpType : uint8_t { kRc = 2, kUc = 3, kUd = 4, kXrcSend = 9, kXrcRecv = 10 };
constexpr bool is_xrc(QpType t) { return t == QpType::kXrcSend || t == QpType::kXrcRecv; }
/// RC and both XRC halves: reliable (ACKs, go-back-N, retries).
constexpr bool is_reliable(QpType t) {
  return t == QpType::kRc || t == QpType::kXrcSend || t == QpType::kXrcRecv;
}
/// How an RC QP repairs loss: IBA go-back-N, or uroce's selective repeat between agreeing peers.
enum class LossRecovery : uint8_t { kGoBackN, kSelective };

enum class QpState : uint8_t {  // IBV_QPS_*
  kReset = 0,
  kInit = 1,
  kRtr = 2,
  kRts = 3,
  kSqd = 4,
  kSqe = 5,
  kErr = 6,
};

/// ibv_qp_attr_mask bits.
enum QpAttrMask : uint32_t {
  kAttrState = 1 << 0,
  kAttrCurState = 1 << 1,
  kAttrEnSqdAsyncNotify = 1 << 2,
  kAttrAccessFlags = 1 << 3,
  kAttrPkeyIndex = 1 << 4,
  kAttrPort = 1 << 5,
  kAttrQkey = 1 << 6,
  kAttrAv = 1 << 7,
  kAttrPathMtu = 1 << 8,
  kAttrTimeout = 1 << 9,
  kAttrRetryCnt = 1 << 10,
  kAttrRnrRetry = 1 << 11,
  kAttrRqPsn = 1 << 12,
  kAttrMaxQpRdAtomic = 1 << 13,
  kAttrAltPath = 1 << 14,
  kAttrMinRnrTimer = 1 << 15,
  kAttrSqPsn = 1 << 16,
  kAttrMaxDestRdAtomic = 1 << 17,
  kAttrPathMigState = 1 << 18,
  kAttrCap = 1 << 19,
  kAttrDestQpn = 1 << 20,
};

/// ibv_access_flags bits the engine enforces.
enum Access : uint32_t {
  kAccessLocalWrite = 1 << 0,
  kAccessRemoteWrite = 1 << 1,
  kAccessRemoteRead = 1 << 2,
  kAccessRemoteAtomic = 1 << 3,
  kAccessMwBind = 1 << 4,  ///< memory windows may be bound to the region (ibv_reg_mr(3))
  /// A window bind only: remote addresses are offsets from the window's start (ibv_bind_mw(3)).
  kAccessZeroBased = 1 << 5,
  /// On-demand paging (ibv_reg_mr(3) IBV_ACCESS_ON_DEMAND): the region's memory need not be
  /// mapped; every access copies through the kernel and an unmapped page fails the access.
  kAccessOnDemand = 1 << 6,
  /// FLUSH with placement type global visibility may target the region (or the QP allows it);
  /// IBV_ACCESS_FLUSH_GLOBAL of rdma-core 45+ (IBA 1.5 Annex A19)
  kAccessFlushGlobal = 1 << 8,
  /// FLUSH with placement type persistence (IBV_ACCESS_FLUSH_PERSISTENT): a QP may allow it,
  /// no region has it (uroce has no persistent memory domain, see docs/limits.md)
  kAccessFlushPersistent = 1 << 9,
};

/// ibv_mw_type.
enum class MwType : uint8_t { kType1 = 1, kType2 = 2 };
inline constexpr uint32_t kMaxMws = 1u << 16;  ///< live memory windows per device (max_mw)

/// ibv_mtu: 1=256 … 5=4096.
inline constexpr uint32_t mtu_bytes(uint8_t ibv_mtu) { return 128u << ibv_mtu; }

/// Address vector (ibv_ah_attr with its GRH) as RoCEv2 uses it.
struct AddressVector {
  Gid dgid;                   ///< destination GID (IPv4-mapped or IPv6)
  uint8_t sgid_index = 0;     ///< source GID table index
  uint8_t traffic_class = 0;  ///< IPv4 TOS / IPv6 TC; 0 means the device's RoCE DSCP + ECT(0)
  uint8_t hop_limit = 64;     ///< TTL / hop limit
  uint32_t flow_label = 0;    ///< IPv6 flow label
  uint8_t sl = 0;             ///< service level (priority)
  uint16_t udp_sport = 0;     ///< 0: chosen by the engine per QP
};

/// ibv_qp_attr subset the engine uses.
struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;
  uint8_t path_mtu = 3;  ///< ibv_mtu enum (3 = 1024)
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  AddressVector av;
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  uint8_t max_rd_atomic = 1;       ///< outstanding READ/atomic as requester
  uint8_t max_dest_rd_atomic = 1;  ///< outstanding READ/atomic as responder
  uint8_t min_rnr_timer = 0;       ///< IBA RNR timer encoding (Table 45)
  uint8_t timeout = 14;            ///< local ACK timeout: 4.096 us * 2^timeout (0 = infinite)
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;  ///< 7 = infinite
  uint8_t sq_draining = 0;
  uint8_t en_sqd_async_notify = 0;
  uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0,
           max_inline_data = 0;  ///< capabilities (cap)
};

/// ibv_wr_opcode.
enum class WrOpcode : uint8_t {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,
  kAtomicFetchAndAdd = 6,
  kLocalInv = 7,
  kBindMw = 8,
  kSendWithInv = 9,
  kFlush = 14,        ///< IBV_WR_FLUSH of rdma-core 45+ (ibv_wr_flush)
  kAtomicWrite = 15,  ///< IBV_WR_ATOMIC_WRITE (ibv_wr_atomic_write)
};

/// FLUSH placement type bits (ibv_placement_type of rdma-core 45+; the FETH PLT field).
inline constexpr uint8_t kFlushGlobal = 1 << 0;
inline constexpr uint8_t kFlushPersistent = 1 << 1;
/// FLUSH selectivity level (ibv_selectivity_level; the FETH SEL field): the range of the WR,
/// or the whole region its rkey names.
inline constexpr uint8_t kFlushRange = 0;
inline constexpr uint8_t kFlushMr = 1;

/// ibv_send_flags.
enum SendFlags : uint32_t {
  kSendFence = 1 << 0,
  kSendSignaled = 1 << 1,
  kSendSolicited = 1 << 2,
  kSendInline = 1 << 3,
};

/// ibv_wc_status.
enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocEecOpErr = 3,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kMwBindErr = 6,
  kBadRespErr = 7,
  kLocAccessErr = 8,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kLocRddViolErr = 14,
  kRemInvRdReqErr = 15,
  kRemAbortErr = 16,
  kInvEecnErr = 17,
  kInvEecStateErr = 18,
  kFatalErr = 19,
  kRespTimeoutErr = 20,
  kGeneralErr = 21,
};

/// ibv_wc_opcode.
enum class WcOpcode : uint8_t {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kBindMw = 5,
  kLocalInv = 6,
  kFlush = 8,        ///< IBV_WC_FLUSH of rdma-core 45+
  kAtomicWrite = 9,  ///< IBV_WC_ATOMIC_WRITE
  kRecv = 128,
  kRecvRdmaWithImm = 129,
};

/// ibv_wc_flags.
enum WcFlags : uint32_t {
  kWcGrh = 1 << 0,
  kWcWithImm = 1 << 1,
  kWcWithInv = 1 << 3,
};

/// A scatter/gather element (ibv_sge).
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

inline constexpr uint32_t kMaxSge = 32;  ///< per work request

// ---- Device limits (ibv_query_device reports these; the engine enforces them) ----------------
inline constexpr uint32_t kMaxQps = 16384;  ///< live QPs per device (max_qp)
/// EngineConfig::qpn_block_bits: at least 4096 QPs in a block, at most kMaxQps.
inline constexpr uint8_t kMinQpnBlockBits = 12;
inline constexpr uint8_t kMaxQpnBlockBits = 14;
static_assert(kMaxQps == 1u << kMaxQpnBlockBits);
inline constexpr uint32_t kMaxQpWr = 16384;      ///< send/receive queue depth (max_qp_wr)
inline constexpr uint32_t kMaxCqs = 16384;       ///< live CQs per device (max_cq)
inline constexpr uint32_t kMaxCqe = 1u << 20;    ///< CQ depth (max_cqe)
inline constexpr uint32_t kMaxPds = 1u << 16;    ///< live PDs per device (max_pd)
inline constexpr uint32_t kMaxXrcds = 1u << 16;  ///< live XRC domains per device
/// max_rd_atomic / max_dest_rd_atomic limit: READs/atomics outstanding per QP (rxe: 128).
inline constexpr uint32_t kMaxRdAtomic = 128;
inline constexpr uint32_t kMaxInline = 512;  ///< bytes of inline data per work request
/// CQ event moderation bounds (Engine::modify_cq): the whole range of ibv_moderate_cq's
/// 16-bit fields (a count of completions, a period in microseconds).
inline constexpr uint32_t kMaxCqModCount = 0xffff;
inline constexpr uint32_t kMaxCqModPeriodUs = 0xffff;

/// A send work request as the engine takes it. sg points at num_sge elements that the engine
/// reads during post_send() only (it copies what it keeps).
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;  ///< SendFlags
  const Sge* sg = nullptr;
  uint32_t num_sge = 0;
  uint32_t imm_data = 0;  ///< network byte order, as the application gave it
  uint32_t invalidate_rkey = 0;
  uint64_t remote_addr = 0;  ///< RDMA and atomic target
  uint32_t rkey = 0;
  /// atomic compare (CMP_SWP) or add (FETCH_ADD); ATOMIC_WRITE: the 8 bytes to write, as they
  /// lie in memory
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // FLUSH (ibv_wr_flush): remote_addr/rkey, the length, placement type and selectivity level
  uint32_t flush_len = 0;
  uint8_t flush_type = 0;   ///< kFlushGlobal | kFlushPersistent
  uint8_t flush_level = 0;  ///< kFlushRange or kFlushMr
  // BIND_MW (ibv_send_wr.bind_mw): the window's current rkey; the rkey it gets is `rkey`
  uint32_t mw_rkey = 0;
  uint32_t bind_lkey = 0;  ///< the region (0 with bind_len 0: unbind a type 1 window)
  uint64_t bind_addr = 0;
  uint64_t bind_len = 0;
  uint32_t bind_access = 0;  ///< Access bits granted through the window
  /// XRC_SEND: the XRC SRQ at the peer (ibv_send_wr.qp_type.xrc.remote_srqn, 24 bits)
  uint32_t xrc_srqn = 0;
  // UD only
  const AddressVector* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
};

/// A receive work request.
struct RecvWr {
  uint64_t wr_id = 0;
  const Sge* sg = nullptr;
  uint32_t num_sge = 0;
};

/// A completion (ibv_wc plus the UD source GID for ibv_create_ah_from_wc).
struct Cqe {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;  ///< network byte order (or the invalidated rkey with kWcWithInv)
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;    ///< UD: the sender's QPN
  uint32_t wc_flags = 0;  ///< WcFlags
  uint16_t pkey_index = 0;
  uint8_t sl = 0;
  Gid sgid;              ///< UD: the sender's GID (also written into the GRH)
  Gid dgid;              ///< UD: the destination GID of the datagram
  bool ipv4 = true;      ///< UD: the datagram came over IPv4 (GRH holds an IPv4 header)
  bool roce_v1 = false;  ///< UD: the datagram was RoCE v1 (GRH holds its GRH)
  /// When the engine generated it: the time of the step or call that did (Engine::push_cqe).
  Timestamp ts{};
};

/// Async events (ibv_event_type values).
enum class AsyncEventType : uint8_t {
  kCqErr = 0,
  kQpFatal = 1,
  kQpReqErr = 2,
  kQpAccessErr = 3,
  kCommEst = 4,
  kSqDrained = 5,
  kPathMig = 6,
  kPathMigErr = 7,
  kDeviceFatal = 8,
  kPortActive = 9,
  kPortErr = 10,
  kLidChange = 11,
  kPkeyChange = 12,
  kSmChange = 13,
  kSrqErr = 14,
  kSrqLimitReached = 15,
  kQpLastWqeReached = 16,
  kClientReregister = 17,
  kGidChange = 18,
};

struct AsyncEvent {
  AsyncEventType type;
  uint32_t id;  ///< QPN, CQ id, SRQ id or port number, depending on type
};

}  // namespace uroce::transport
