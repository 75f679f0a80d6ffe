/**
 * @file engine_unavailable.cc
 * @brief Stand-in for uroce::transport::Engine, linked only while lib/transport is not in the
 * tree (CMakeLists.txt). Every operation fails with EOPNOTSUPP; no frames are produced.
 */
#include "transport/engine.h"

namespace uroce::transport {

struct Engine::Impl {
  EngineConfig cfg;
  CounterBlock* counters;
};

Engine::Engine(const EngineConfig& cfg, CounterBlock* counters, EngineObserver*)
    : impl_(std::make_unique<Impl>(Impl{cfg, counters})) {}
Engine::~Engine() = default;
Result<uint32_t> Engine::alloc_pd() { return Status::unsupported(); }
Status Engine::dealloc_pd(uint32_t) { return Status::unsupported(); }
Result<MrKeys> Engine::reg_mr(uint32_t, uint64_t, uint64_t, uint64_t, uint32_t) {
  return Status::unsupported();
}
Status Engine::rereg_mr(uint32_t, uint32_t, uint64_t, uint64_t, uint64_t, uint32_t) {
  return Status::unsupported();
}
Status Engine::dereg_mr(uint32_t) { return Status::unsupported(); }
bool Engine::on_demand_supported() { return false; }
Result<uint64_t> Engine::prefetch_mr(uint32_t, uint32_t, uint64_t, uint64_t, bool) {
  return Status::unsupported();
}
Status Engine::populate(uint64_t, uint64_t, bool) { return Status::unsupported(); }
Result<uint32_t> Engine::create_cq(uint32_t) { return Status::unsupported(); }
Status Engine::resize_cq(uint32_t, uint32_t) { return Status::unsupported(); }
Status Engine::destroy_cq(uint32_t) { return Status::unsupported(); }
size_t Engine::poll_cq(uint32_t, std::span<Cqe>) { return 0; }
Status Engine::req_notify_cq(uint32_t, bool) { return Status::unsupported(); }
Result<uint32_t> Engine::create_srq(uint32_t, uint32_t, uint32_t, uint32_t) {
  return Status::unsupported();
}
Status Engine::modify_srq(uint32_t, uint32_t, uint32_t, uint32_t) { return Status::unsupported(); }
Status Engine::query_srq(uint32_t, uint32_t*, uint32_t*, uint32_t*) {
  return Status::unsupported();
}
Status Engine::destroy_srq(uint32_t) { return Status::unsupported(); }
Status Engine::post_srq_recv(uint32_t, const RecvWr&) { return Status::unsupported(); }
Result<uint32_t> Engine::create_qp(QpInitAttr&) { return Status::unsupported(); }
Status Engine::modify_qp(uint32_t, const QpAttr&, uint32_t) { return Status::unsupported(); }
Status Engine::query_qp(uint32_t, QpAttr*, QpInitAttr*) { return Status::unsupported(); }
Status Engine::destroy_qp(uint32_t) { return Status::unsupported(); }
Status Engine::set_selective_repeat(uint32_t, bool) { return Status::unsupported(); }
Status Engine::set_ooo_placement(uint32_t, bool) { return Status::unsupported(); }
bool Engine::ooo_placement(uint32_t) const { return false; }
bool Engine::selective_repeat(uint32_t) const { return false; }
Status Engine::set_peer_timestamps(uint32_t, bool) { return Status::unsupported(); }
bool Engine::peer_timestamps(uint32_t) const { return false; }
uint64_t Engine::qp_rate_bps(uint32_t) const { return 0; }
bool Engine::qp_cc_state(uint32_t, Timestamp, QpCcState*) const { return false; }
Status Engine::post_send(uint32_t, const SendWr&, Timestamp) { return Status::unsupported(); }
Status Engine::post_recv(uint32_t, const RecvWr&) { return Status::unsupported(); }
void Engine::on_frame(std::span<const uint8_t>, Timestamp) {}
size_t Engine::poll_transmit(TxSink&, NeighborResolver&, Timestamp) { return 0; }
Timestamp Engine::next_deadline() const { return Timestamp::never(); }
bool Engine::has_tx_work() const { return false; }
const EngineConfig& Engine::config() const { return impl_->cfg; }
CounterBlock& Engine::counters() { return *impl_->counters; }

}  // namespace uroce::transport
