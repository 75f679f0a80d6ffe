/**
 * @file query.cc
 * @brief ibv_query_device(_ex), ibv_query_port, the GID table (ibv_query_gid, _ex, _table,
 * ibv_query_gid_type) and P_Keys, as ibv_query_device(3), ibv_query_port(3),
 * ibv_query_gid_ex(3) describe them.
 *
 * The port is RoCE: link layer Ethernet, LID 0, one P_Key 0xffff, GID index i = the RoCEv2 GID
 * of configured address i (::ffff:a.b.c.d for IPv4, the address itself for IPv6; IBA Annex 17
 * §A17.4.5). Limits are the engine's (verbs_types.h) or the constants below.
 */
#include <cerrno>
#include <cstring>

#include "transport/memory_table.h"
#include "transport/verbs_types.h"
#include "verbs/identity.h"
#include "verbs/objects.h"
#include "verbs/symver.h"

namespace uroce::verbs {

namespace {

// The engine's limits (lib/transport verbs_types.h, memory_table.h): it refuses beyond them.
constexpr int kMaxQp = static_cast<int>(transport::kMaxQps);
constexpr int kMaxQpWr = static_cast<int>(transport::kMaxQpWr);
constexpr int kMaxCq = static_cast<int>(transport::kMaxCqs);
constexpr int kMaxCqe = static_cast<int>(transport::kMaxCqe);
constexpr int kMaxMr = static_cast<int>(transport::MemoryTable::kMaxRegions);
constexpr int kMaxPd = static_cast<int>(transport::kMaxPds);
/// READs/atomics in flight per QP, both directions (the engine's limit; rxe also has 128).
constexpr int kMaxRdAtom = static_cast<int>(transport::kMaxRdAtomic);
constexpr int kMaxSrq = 4096;
constexpr int kMaxSrqWr = 16384;
constexpr int kMaxAh = 1 << 16;
constexpr uint32_t kVendorPart = 0x0001;  ///< in no part table of perftest or UCX

/// IBTA width/speed encodings that multiply out to the port's speed: the first row whose
/// rate the port reaches.
struct WidthSpeed {
  uint64_t min_gbps;
  uint8_t width;  ///< 1 = 1x, 2 = 4x
  uint8_t speed;  ///< 1 SDR, 4 QDR, 32 EDR, 64 HDR, 128 NDR
};
constexpr WidthSpeed kWidthSpeeds[] = {
    {400, 2, 128},  // 4x NDR
    {200, 2, 64},   // 4x HDR
    {100, 2, 32},   // 4x EDR
    {50, 1, 64},    // 1x HDR
    {40, 2, 4},     // 4x QDR
    {25, 1, 32},    // 1x EDR
    {10, 1, 4},     // 1x QDR
    {0, 1, 1},      // 1x SDR
};

void speed_width(uint64_t bps, uint8_t* width, uint8_t* speed) {
  const uint64_t g = bps / 1'000'000'000ull;
  for (const WidthSpeed& r : kWidthSpeeds) {
    if (g < r.min_gbps) continue;
    *width = r.width;
    *speed = r.speed;
    return;
  }
}

void fill_port_attr(Context* ctx, ibv_port_attr* p) {
  std::memset(p, 0, sizeof *p);
  Runtime* rt = ctx->rt;
  p->max_mtu = IBV_MTU_4096;
  p->port_cap_flags = 0;
  p->max_msg_sz = 1u << 31;
  p->pkey_tbl_len = 1;
  p->lid = 0;
  p->sm_lid = 0;
  p->lmc = 0;
  p->max_vl_num = 4;  // VL0-7: eight priorities (PFC)
  p->subnet_timeout = 18;
  uint64_t speed;
  {
    std::lock_guard<std::mutex> g(rt->mu);  // the Port is used by one thread at a time
    speed = rt->port ? rt->port->link_speed_bps() : rt->view_speed_bps;
    p->state = rt->link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    p->phys_state = rt->link_up ? 5 : 3;  // LinkUp : Disabled
    p->active_mtu = static_cast<ibv_mtu>(rt->active_mtu);
    p->gid_tbl_len = static_cast<int>(rt->gids.size());
  }
  speed_width(speed, &p->active_width, &p->active_speed);
  p->link_layer = IBV_LINK_LAYER_ETHERNET;
}

bool port_ok(uint32_t port) { return port == 1; }

}  // namespace

void fill_device_attr(Context* ctx, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "uroce 0.1.0");
  a->node_guid = htobe64(ctx->dev->guid);
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~uint64_t{0};
  a->page_size_cap = 4096;
  a->vendor_id = kVendorId;
  a->vendor_part_id = kVendorPart;
  a->hw_ver = 1;
  a->max_qp = kMaxQp;
  a->max_qp_wr = kMaxQpWr;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |
                        IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
                        IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_RESIZE_MAX_WR | IBV_DEVICE_UD_IP_CSUM |
                        IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
  a->max_sge = static_cast<int>(transport::kMaxSge);
  a->max_sge_rd = static_cast<int>(transport::kMaxSge);
  a->max_cq = kMaxCq;
  a->max_cqe = kMaxCqe;
  a->max_mr = kMaxMr;
  a->max_pd = kMaxPd;
  a->max_mw = static_cast<int>(transport::kMaxMws);
  a->max_qp_rd_atom = kMaxRdAtom;
  a->max_res_rd_atom = kMaxRdAtom * kMaxQp;
  a->max_qp_init_rd_atom = kMaxRdAtom;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_ah = kMaxAh;
  a->max_srq = kMaxSrq;
  a->max_srq_wr = kMaxSrqWr;
  a->max_srq_sge = static_cast<int>(transport::kMaxSge);
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 15;
  a->phys_port_cnt = 1;
}

int op_query_port(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (!port_ok(port)) return EINVAL;
  if (refuse_gone(ctx_of(c)->rt)) return EIO;  // the kernel's uverbs after a removal
  ibv_port_attr full;
  fill_port_attr(ctx_of(c), &full);
  std::memcpy(attr, &full, std::min(len, sizeof full));
  return 0;
}

int op_query_device_ex(ibv_context* c, const ibv_query_device_ex_input* in,
                       ibv_device_attr_ex* attr, size_t len) {
  if (in && in->comp_mask) return EINVAL;
  if (len < sizeof(ibv_device_attr)) return EINVAL;
  if (refuse_gone(ctx_of(c)->rt)) return EIO;
  ibv_device_attr_ex full;
  std::memset(&full, 0, sizeof full);
  fill_device_attr(ctx_of(c), &full.orig_attr);
  // RDMA ATOMIC WRITE and FLUSH to global visibility (IBA 1.5 Annex A19); no persistence (no
  // persistent memory domain). rdma-core 44 has no names for these bits (ibta15.h).
  full.device_cap_flags_ex =
      full.orig_attr.device_cap_flags | kIbUverbsDeviceAtomicWrite | kIbUverbsDeviceFlushGlobal;
  full.phys_port_cnt_ex = 1;
  // Completion timestamps (cq.cc): the device clock is CLOCK_MONOTONIC in nanoseconds, a 1 GHz
  // counter (hca_core_clock is in kHz) whose values stay below 2^63.
  full.completion_timestamp_mask = ~uint64_t{0} >> 1;
  full.hca_core_clock = 1'000'000;
  // CQ event moderation (ibv_modify_cq; transport Engine::modify_cq).
  full.cq_mod_caps.max_cq_count = static_cast<uint16_t>(transport::kMaxCqModCount);
  full.cq_mod_caps.max_cq_period = static_cast<uint16_t>(transport::kMaxCqModPeriodUs);
  if (transport::Engine::on_demand_supported()) {
    // On-demand paging (pd_mr.cc): every operation of every transport uroce has moves an
    // on-demand MR's bytes through the same checked copies; implicit MRs cover all memory.
    constexpr uint32_t kSendRecv =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
    full.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    full.odp_caps.per_transport_caps.rc_odp_caps =
        kSendRecv | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
    full.odp_caps.per_transport_caps.uc_odp_caps = kSendRecv | IBV_ODP_SUPPORT_WRITE;
    full.odp_caps.per_transport_caps.ud_odp_caps = kSendRecv;
    // XRC requests and XRC SRQ receives take the same copies as RC's.
    full.xrc_odp_caps = full.odp_caps.per_transport_caps.rc_odp_caps;
  }
  std::memcpy(attr, &full, std::min(len, sizeof full));
  return 0;
}

}  // namespace uroce::verbs

using namespace uroce::verbs;  // NOLINT: C entry points below

UROCE_EXPORT int uroce_query_device_1_1(ibv_context* c, ibv_device_attr* a) {
  if (refuse_gone(ctx_of(c)->rt)) return EIO;
  fill_device_attr(ctx_of(c), a);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_device_1_1, ibv_query_device, "IBVERBS_1.1");

UROCE_EXPORT int uroce_query_port_1_1(ibv_context* c, uint8_t port, _compat_ibv_port_attr* out) {
  if (!port_ok(port)) return EINVAL;
  if (refuse_gone(ctx_of(c)->rt)) return EIO;
  ibv_port_attr full;
  fill_port_attr(ctx_of(c), &full);
  // The compat struct ends before `flags` (rdma-core's struct _compat_ibv_port_attr).
  std::memcpy(out, &full, offsetof(ibv_port_attr, flags));
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_port_1_1, ibv_query_port, "IBVERBS_1.1");

namespace {

using uroce::Gid;
using uroce::gid_type_at;
using uroce::GidType;

/// GID index i of rt's table (zero for a free slot); false past its end. Takes the engine
/// lock: a netdev's address change replaces the table (follow_link_locked).
bool gid_at(Runtime* rt, size_t i, Gid* out, int* ifindex = nullptr, GidType* type = nullptr) {
  std::lock_guard<std::mutex> g(rt->mu);
  if (ifindex) *ifindex = rt->ifindex;
  if (i >= rt->gids.size()) return false;
  *out = rt->gids[i];
  if (type) *type = gid_type_at(i, rt->gid_v1_base);
  return true;
}

/// Fills one ibv_gid_entry; ENODATA for a free slot or an index past the table.
int fill_gid_entry(Runtime* rt, uint32_t port, uint32_t index, ibv_gid_entry* entry) {
  Gid gid;
  int ifindex = 0;
  GidType type = GidType::kRoceV2;
  if (!gid_at(rt, index, &gid, &ifindex, &type) || gid.is_zero()) return ENODATA;
  std::memset(entry, 0, sizeof *entry);
  std::memcpy(entry->gid.raw, gid.raw.data(), 16);
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = type == GidType::kRoceV1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = static_cast<uint32_t>(ifindex);
  return 0;
}

}  // namespace

UROCE_EXPORT int uroce_query_gid_1_1(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  Runtime* rt = ctx_of(c)->rt;
  Gid g;
  if (!port_ok(port) || index < 0 || !gid_at(rt, static_cast<size_t>(index), &g)) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(gid->raw, g.raw.data(), 16);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_gid_1_1, ibv_query_gid, "IBVERBS_1.1");

UROCE_EXPORT int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index,
                                   ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  if (flags) return EINVAL;
  if (!port_ok(port)) return EINVAL;
  if (entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  return fill_gid_entry(ctx_of(c)->rt, port, index, entry);
}

/// The valid entries only (free slots are skipped), as the kernel's GID table query.
UROCE_EXPORT ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* entries,
                                          size_t max_entries, uint32_t flags, size_t entry_size) {
  Runtime* rt = ctx_of(c)->rt;
  if (flags) return -EINVAL;
  if (entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  size_t size, valid = 0;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    size = rt->gids.size();
    for (const Gid& gid : rt->gids) valid += !gid.is_zero();
  }
  if (max_entries < valid) return -EINVAL;
  auto* p = reinterpret_cast<uint8_t*>(entries);
  ssize_t n = 0;
  for (uint32_t i = 0; i < size && static_cast<size_t>(n) < max_entries; ++i)
    if (fill_gid_entry(rt, 1, i, reinterpret_cast<ibv_gid_entry*>(p + n * entry_size)) == 0) ++n;
  return n;
}

/// rdma-core's private query (driver.h): enum ibv_gid_type_sysfs {IB_ROCE_V1 = 0, ROCE_V2 = 1}.
UROCE_EXPORT int ibv_query_gid_type(ibv_context* c, uint8_t port, unsigned int index, int* type) {
  Gid g;
  GidType t = GidType::kRoceV2;
  if (!port_ok(port) || !gid_at(ctx_of(c)->rt, index, &g, nullptr, &t)) {
    errno = EINVAL;
    return -1;
  }
  *type = t == GidType::kRoceV1 ? 0 : 1;
  return 0;
}

UROCE_EXPORT int uroce_query_pkey_1_1(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (!port_ok(port) || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xffff);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_pkey_1_1, ibv_query_pkey, "IBVERBS_1.1");

UROCE_EXPORT int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  if (!port_ok(port)) return -EINVAL;
  if ((be16toh(pkey) & 0x7fff) == 0x7fff) return 0;
  return -ENOENT;
}
