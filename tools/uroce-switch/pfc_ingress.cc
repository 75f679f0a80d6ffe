/**
 * @file pfc_ingress.cc
 * @brief PfcIngress (see pfc_ingress.h). Units: bytes, ns.
 */
#include "uroce-switch/pfc_ingress.h"

namespace uroce::uswitch {

PfcIngress::PfcIngress(uint64_t link_bps, const dcqcn::PfcTxConfig& cfg)
    : tx_(link_bps, cfg, &counters_) {}

std::optional<wire::PauseFrame> PfcIngress::add(uint8_t prio, uint32_t len, Timestamp now) {
  bytes_[prio] += len;
  return tx_.on_backlog(prio, bytes_[prio], now);
}

std::optional<wire::PauseFrame> PfcIngress::remove(uint8_t prio, uint32_t len, Timestamp now) {
  bytes_[prio] = bytes_[prio] >= len ? bytes_[prio] - len : 0;
  return tx_.on_backlog(prio, bytes_[prio], now);
}

std::vector<wire::PauseFrame> PfcIngress::reconfigure(const dcqcn::PfcTxConfig& cfg,
                                                      Timestamp now) {
  std::vector<wire::PauseFrame> out;
  if (auto f = tx_.reconfigure(cfg, now)) out.push_back(*f);
  for (uint8_t p = 0; p < kPrios; ++p)
    if (auto f = tx_.on_backlog(p, bytes_[p], now)) out.push_back(*f);
  return out;
}

}  // namespace uroce::uswitch
