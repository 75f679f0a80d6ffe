/**
 * @file qp_state.cc
 * @brief The modify_qp transition table (IBA Vol 1 §10.3.1, Table 92; ibv_modify_qp(3)).
 *
 * One constexpr table indexed [cur][next]; each cell holds per-type (UD, UC, RC, XRC_SEND,
 * XRC_RECV) required and optional masks, the XRC columns as the kernel's ib_modify_qp_is_ok()
 * has them for IB_QPT_XRC_INI and IB_QPT_XRC_TGT. Any state may go to RESET or ERR with no
 * other attribute.
 */
#include "transport/qp_state.h"

namespace uroce::transport {

namespace {

struct Cell {
  bool valid = false;
  // Indexed by type: 0 UD, 1 UC, 2 RC, 3 XRC_SEND, 4 XRC_RECV.
  std::array<uint32_t, 5> req{};
  std::array<uint32_t, 5> opt{};
};

constexpr size_t idx(QpState s) { return static_cast<size_t>(s); }
constexpr size_t tidx(QpType t) {
  switch (t) {
    case QpType::kUd: return 0;
    case QpType::kUc: return 1;
    case QpType::kRc: return 2;
    case QpType::kXrcSend: return 3;
    case QpType::kXrcRecv: return 4;
  }
  return 0;
}

using Table = std::array<std::array<Cell, kQpStateCount>, kQpStateCount>;

constexpr Table make_table() {
  Table t{};
  using S = QpState;
  // Every state -> RESET and -> ERR.
  for (size_t s = 0; s < kQpStateCount; ++s) {
    t[s][idx(S::kReset)].valid = true;
    t[s][idx(S::kErr)].valid = true;
  }
  // RESET -> INIT.
  {
    Cell& c = t[idx(S::kReset)][idx(S::kInit)];
    c.valid = true;
    constexpr uint32_t kConnected = kAttrPkeyIndex | kAttrPort | kAttrAccessFlags;
    c.req = {kAttrPkeyIndex | kAttrPort | kAttrQkey, kConnected, kConnected, kConnected,
             kConnected};
  }
  // INIT -> INIT.
  {
    Cell& c = t[idx(S::kInit)][idx(S::kInit)];
    c.valid = true;
    constexpr uint32_t kConnected = kAttrPkeyIndex | kAttrPort | kAttrAccessFlags;
    c.opt = {kAttrPkeyIndex | kAttrPort | kAttrQkey, kConnected, kConnected, kConnected,
             kConnected};
  }
  // INIT -> RTR.
  {
    Cell& c = t[idx(S::kInit)][idx(S::kRtr)];
    c.valid = true;
    constexpr uint32_t kPath = kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
    constexpr uint32_t kResponder = kPath | kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    constexpr uint32_t kOpt = kAttrAltPath | kAttrAccessFlags | kAttrPkeyIndex;
    c.req = {0, kPath, kResponder, kPath, kResponder};
    c.opt = {kAttrPkeyIndex | kAttrQkey, kOpt, kOpt, kOpt, kOpt};
  }
  // RTR -> RTS.
  {
    Cell& c = t[idx(S::kRtr)][idx(S::kRts)];
    c.valid = true;
    constexpr uint32_t kRequester =
        kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrSqPsn | kAttrMaxQpRdAtomic;
    constexpr uint32_t kSend = kAttrCurState | kAttrAltPath | kAttrAccessFlags | kAttrPathMigState;
    c.req = {kAttrSqPsn, kAttrSqPsn, kRequester, kRequester, kAttrTimeout | kAttrSqPsn};
    c.opt = {kAttrCurState | kAttrQkey, kSend, kSend | kAttrMinRnrTimer, kSend,
             kSend | kAttrMinRnrTimer};
  }
  // RTS -> RTS, SQD -> RTS (same optional sets), SQE -> RTS.
  for (S from : {S::kRts, S::kSqd}) {
    Cell& c = t[idx(from)][idx(S::kRts)];
    c.valid = true;
    constexpr uint32_t kSend = kAttrCurState | kAttrAccessFlags | kAttrAltPath | kAttrPathMigState;
    c.opt = {kAttrCurState | kAttrQkey, kSend, kSend | kAttrMinRnrTimer, kSend,
             kSend | kAttrMinRnrTimer};
  }
  {
    Cell& c = t[idx(S::kSqe)][idx(S::kRts)];
    c.valid = true;
    c.opt = {kAttrCurState | kAttrQkey, kAttrCurState | kAttrAccessFlags, 0, 0, 0};
  }
  // RTS -> SQD.
  {
    Cell& c = t[idx(S::kRts)][idx(S::kSqd)];
    c.valid = true;
    c.opt = {kAttrEnSqdAsyncNotify, kAttrEnSqdAsyncNotify, kAttrEnSqdAsyncNotify,
             kAttrEnSqdAsyncNotify, kAttrEnSqdAsyncNotify};
  }
  // SQD -> SQD.
  {
    Cell& c = t[idx(S::kSqd)][idx(S::kSqd)];
    c.valid = true;
    c.opt = {kAttrPkeyIndex | kAttrQkey,
             kAttrAv | kAttrAltPath | kAttrAccessFlags | kAttrPkeyIndex | kAttrPathMigState,
             kAttrPort | kAttrAv | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry |
                 kAttrMaxQpRdAtomic | kAttrMaxDestRdAtomic | kAttrAltPath | kAttrAccessFlags |
                 kAttrPkeyIndex | kAttrMinRnrTimer | kAttrPathMigState,
             kAttrPort | kAttrAv | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry |
                 kAttrMaxQpRdAtomic | kAttrAltPath | kAttrAccessFlags | kAttrPkeyIndex |
                 kAttrPathMigState,
             kAttrPort | kAttrAv | kAttrTimeout | kAttrMaxDestRdAtomic | kAttrAltPath |
                 kAttrAccessFlags | kAttrPkeyIndex | kAttrMinRnrTimer | kAttrPathMigState};
  }
  return t;
}

constexpr Table kTable = make_table();

// Spot checks of the table against ibv_modify_qp(3).
static_assert(kTable[1][2].req[2] & kAttrMaxDestRdAtomic);
static_assert(kTable[0][1].req[0] & kAttrQkey);
static_assert(!kTable[2][2].valid);  // RTR -> RTR does not exist
static_assert(kTable[6][0].valid && !kTable[6][3].valid);
static_assert(kTable[2][3].req[4] == (kAttrTimeout | kAttrSqPsn));  // XRC_RECV RTR -> RTS
static_assert(!(kTable[1][2].req[3] & kAttrMaxDestRdAtomic));       // XRC_SEND INIT -> RTR

}  // namespace

std::string_view to_string(QpState s) {
  static constexpr std::array<std::string_view, kQpStateCount> kNames = {
      "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  size_t i = idx(s);
  return i < kNames.size() ? kNames[i] : "UNKNOWN";
}

TransitionRule transition_rule(QpType t, QpState cur, QpState next) {
  if (idx(cur) >= kQpStateCount || idx(next) >= kQpStateCount) return {};
  const Cell& c = kTable[idx(cur)][idx(next)];
  return {c.valid, c.req[tidx(t)], c.opt[tidx(t)]};
}

Status check_modify_mask(QpType t, QpState cur, QpState next, uint32_t mask) {
  TransitionRule r = transition_rule(t, cur, next);
  if (!r.valid) return Status::invalid();
  if ((mask & r.required) != r.required) return Status::invalid();
  if (mask & ~(r.required | r.optional | kAttrState)) return Status::invalid();
  return Status::ok();
}

}  // namespace uroce::transport
