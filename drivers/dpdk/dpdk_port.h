/**
 * @file dpdk_port.h
 * @brief uroce::Port on a DPDK ethdev: any vdev (net_memif, net_af_packet, net_af_xdp,
 * net_pcap, net_ring, ...) or a PCI NIC, named by a device's `port` string.
 *
 * open_dpdk_port() opens the ethdev (ethdev_io.h: EAL at the first call, the device, a mempool
 * sized for the RoCE MTU, `queues` RX/TX queue pairs, RSS over the RX queues where the NIC has
 * it), runs the port's queues, PFC and counters in a drivers/pipeline PortPipeline (TX queue =
 * priority % queues), and answers ARP/ND for the device's addresses itself (neighbors.h). What
 * each PMD allows here is in drivers/dpdk/PMDS.md.
 *
 * TX goes through eight software queues, one per TxMeta::priority: the CNP class (priority of
 * cnp_dscp) strict, deficit round robin for the others (lib/dcqcn TxScheduler), and a priority
 * paused by a received PFC frame starts no frame until the pause ends (lib/dcqcn PfcRx; only
 * priorities with [device.pfc] enabled honour PFC, 802.3x PAUSE always). PFC/PAUSE frames are
 * consumed, never passed to the FrameHandler. As a receiver the port sends PFC itself when
 * [device.pfc] sets xoff_bytes: what one poll drains per priority (by DSCP) is the backlog
 * that waited in the RX ring; lib/dcqcn PfcTx turns it into XOFF (refreshed while it lasts,
 * never longer than watchdog_detect_ms) and XON once a poll finds it at or below xon_bytes.
 *
 * Links that come and go: a memif client opened before its server starts later (retried every
 * 100 ms), and one whose server died reconnects after 300 ms of link down (once the control
 * connection to it is closed, never under a handshake still on its way); the addresses are
 * announced (gratuitous ARP / unsolicited NA) whenever the link comes up. memif_guard.h keeps
 * a burst running while the peer dies from crashing the process.
 *
 * A closed port is parked (still started) and reused by the next open of the same port
 * string and MTU, because DPDK 22.11's memif cannot re-create a server in one process.
 *
 * Frame size: max_frame_len() = mtu + kRoceOverhead (Ethernet + 802.1Q + IPv6 + UDP + BTH +
 * the largest extended header + ICRC + pad), e.g. 1152 bytes for mtu 1024, 4224 for 4096.
 * Units: bytes, bits per second.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/port.h"
#include "config/config.h"
#include "dcqcn/pfc_counters.h"
#include "dpdk/ethdev_io.h"

namespace uroce::dpdk {

/// What the PMD of an open DPDK port reports (for drivers/dpdk/PMDS.md and `uroce show`).
struct PortInfo {
  std::string driver;          ///< PMD name, e.g. "net_memif"
  uint32_t max_rx_pktlen = 0;  ///< largest frame the PMD says it receives (with CRC)
  uint16_t min_mtu = 0;        ///< MTU range the PMD accepts (L3 bytes)
  uint16_t max_mtu = 0;
  uint16_t max_rx_queues = 0;  ///< queue counts the PMD offers
  uint16_t max_tx_queues = 0;
  uint32_t link_speed_mbps = 0;  ///< as reported (0: none, UINT32_MAX: unknown)
  bool link_up = false;
  uint32_t configured_mtu = 0;  ///< the L3 MTU uroce configured
  uint64_t tx_frames = 0;       ///< ethdev counters (rte_eth_stats)
  uint64_t rx_frames = 0;
  uint64_t rx_missed = 0;  ///< dropped by the PMD for lack of RX buffers
  uint64_t tx_errors = 0;
  std::vector<uint64_t> rx_queue_frames;  ///< per RX/TX queue (config `queues`)
  std::vector<uint64_t> tx_queue_frames;
  dcqcn::PfcCounters pfc;  ///< received PFC/PAUSE (rx_prio*_pause...), per priority
};

/// Facts about p if it is a DPDK port; false for any other Port.
bool port_info(const Port& p, PortInfo* out);

/// Opens the DPDK port of dev. On failure returns nullptr and sets *err to one line naming
/// the device, the port and the problem (and, for a too-large mtu, what the PMD allows).
std::unique_ptr<Port> open_dpdk_port(const config::Device& dev, std::string* err);

}  // namespace uroce::dpdk
