/**
 * @file exporter.h
 * @brief `uroce exporter`: a Prometheus endpoint (prometheus-cpp) that reads every live
 * statistics segment (lib/stats) at scrape time and serves its raw cumulative values, so a
 * restart of the exporter or a `uroce clear counters` never distorts rates (no Add per
 * scrape; docs/dcqcn-pfc.md §5.3). Stale and unreadable segments are skipped and counted.
 *
 * Names (docs/dcqcn-pfc.md §5.3 "each hw counter is exported as rdma_<name>_total"):
 *   rdma_<engine counter>_total                  counter  {device, port, pid}
 *   rdma_<per-priority stat>_total               counter  {device, port, pid, priority}
 *   rdma_tx_prio_queue_depth_bytes, _high_water_bytes  gauge {.., priority}
 *   rdma_<port stat>_total, rdma_link_speed_mbps {device, port, pid}
 *   rdma_qp_<qp counter>_total                   counter  {device, port, pid, qp}
 *   rdma_rp_current_rate_mbps, rdma_rp_target_rate_mbps, rdma_rp_alpha, rdma_qp_state,
 *   rdma_qp_selective_repeat, rdma_qp_peer_timestamps, rdma_qp_delay_in_force,
 *   rdma_qp_delay_rate_mbps, rdma_qp_rtt_us
 *                                                gauge    {device, port, pid, qp}
 *   rdma_device_info{device, port, pid, profile, lossless, trust, dcqcn_mode,
 *                    congestion_control, loss_recovery} 1
 *   rdma_qps{device, port, pid}, rdma_exporter_segments{state}
 *   uroce-hostd (stats/hostd_status.h): rdma_hostd_worker_{frames_in,frames_out}_total,
 *   rdma_hostd_worker_{busy_ratio,tx_backlog_frames,rx_backlog_frames} {netdev, pid, worker};
 *   rdma_hostd_clients {netdev, pid}; rdma_hostd_client_{to_client,from_client,to_wire,
 *   switched,dropped}_frames_total and rdma_hostd_client_refused_frames_total{reason}
 *   {netdev, client_pid, command, device, slot, worker}
 *   compatibility names of other exporters: rdma_cc_{rx_ce,rx_cnp,tx_cnp}_pkts_total,
 *   rdma_port_{xmit,rcv}_data_total (4-byte words), rdma_roce_pfc_pause_duration_total{direction}
 * `port` is the IB port number ("1"). Units: bytes, frames, µs (pause durations), Mb/s.
 */
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace uroce::exporter {

/// Every metric family for the segments in `run_dir` (empty: $UROCE_RUN_DIR or /dev/shm).
std::vector<prometheus::MetricFamily> collect_families(const std::string& run_dir);

/// Serves /metrics on `listen` ("host:port"; port 0 picks a free one) until SIGINT or
/// SIGTERM. Prints "listening on <host>:<port>" on stdout once it accepts connections.
/// @return the exit status (1 with one line on stderr when it cannot listen).
int run(const std::string& listen, const std::string& run_dir);

}  // namespace uroce::exporter
