/**
 * @file summary.cc
 * @brief config::Device -> ConfigSummary (summary.h). The DCQCN values are the effective ones:
 * the mode's preset (lib/dcqcn params.h) with the file's overrides applied.
 */
#include "stats/summary.h"

#include "config/profile.h"
#include "dcqcn/params.h"

namespace uroce::stats {

ConfigSummary summarize(const config::Device& dev, const std::string& source,
                        uint32_t num_tx_queues) {
  ConfigSummary s{};
  set_text(s.profile, dev.profile);
  set_text(s.trust, dev.trust == config::Device::Trust::kPcp ? "pcp" : "dscp");
  s.vlan = dev.vlan ? int32_t{*dev.vlan} : -1;
  set_text(s.port, dev.port);
  set_text(s.source, source);
  for (size_t i = 0; i < dev.addresses.size() && i < 4; ++i) {
    const config::Address& a = dev.addresses[i];
    set_text(s.addresses[i], a.gid.to_string() + "/" + std::to_string(a.prefix));
  }
  s.mtu = dev.mtu;
  s.num_tx_queues = num_tx_queues ? num_tx_queues : 1;
  s.pfc_xoff_bytes = dev.pfc.xoff_bytes;
  s.pfc_xon_bytes = dev.pfc.xon_bytes;
  s.pfc_watchdog_detect_ms = dev.pfc.watchdog_detect_ms;
  s.pfc_watchdog_restore_ms = dev.pfc.watchdog_restore_ms;
  s.ecn = dev.ecn;
  s.dcqcn_enabled = dev.dcqcn.enabled;
  s.roce_dscp = dev.roce_dscp;
  s.cnp_dscp = dev.cnp_dscp;
  for (int p = 0; p < kNumPriorities; ++p)
    if (dev.pfc.enabled[p]) s.pfc_enabled_mask |= static_cast<uint8_t>(1u << p);
  uint8_t roce_prio = dev.dscp_to_prio[dev.roce_dscp & 63] & 7;
  s.lossless = dev.pfc.enabled[roce_prio];
  if (dev.ecn) s.ecn_enabled_mask = static_cast<uint8_t>(1u << roce_prio);
  for (int d = 0; d < 64; ++d) s.dscp_to_prio[d] = dev.dscp_to_prio[d];
  for (int p = 0; p < kNumPriorities; ++p) {
    s.pcp_to_prio[p] = dev.pcp_to_prio[p];
    s.prio_to_txq[p] = static_cast<uint8_t>(p % s.num_tx_queues);
  }

  // Effective DCQCN parameters: the mode's preset, then the file's overrides.
  dcqcn::DcqcnParams params =
      dev.dcqcn.mode == "paper" ? dcqcn::paper_preset() : dcqcn::nvidia_firmware_preset();
  std::string err;
  (void)dcqcn::apply_overrides(&params, dev.dcqcn.params, &err);  // validated at load time
  set_text(s.dcqcn_mode, dev.dcqcn.enabled ? dev.dcqcn.mode : std::string("off"));
  set_text(s.congestion_control, to_string(config::cc_in_force(dev)));
  set_text(s.loss_recovery, config::to_string(dev.loss_recovery));
  s.delay = {dev.delay.target_queue_us, dev.delay.base_rtt_us,  dev.delay.ai_mbps, dev.delay.beta,
             dev.delay.max_mdf,         dev.delay.min_rate_mbps};
  for (std::string_view name : config::kDcqcnParamNames) {
    if (s.dcqcn_param_count >= kMaxDcqcnParams) break;
    double v = 0;
    if (dcqcn::is_cp_param(name)) {
      auto it = dev.dcqcn.params.find(std::string(name));
      if (it == dev.dcqcn.params.end()) continue;  // switch-side knob, not set
      v = it->second;
    } else {
      Result<double> r = dcqcn::get_param(params, name);
      if (!r) continue;
      v = r.value();
    }
    ConfigSummary::Param& p = s.dcqcn_params[s.dcqcn_param_count++];
    set_text(p.name, name);
    p.value = v;
  }
  return s;
}

}  // namespace uroce::stats
