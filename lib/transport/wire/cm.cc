/**
 * @file cm.cc
 * @brief CM MAD parse and build (see cm.h). Offsets are the message-relative byte offsets of
 * IBA Vol 1 Tables 106-113; Field describes one sub-byte or 24-bit field by its byte, its bit
 * position from the most significant bit, and its width.
 */
#include "transport/wire/cm.h"

#include <algorithm>
#include <cstring>

#include "common/byteorder.h"

namespace uroce::wire::cm {

namespace {

/// Bits [bit, bit + width) of byte `off`, counted from the most significant bit.
struct Bits {
  size_t off;
  unsigned bit, width;

  uint8_t mask() const { return static_cast<uint8_t>((1u << width) - 1); }
  unsigned shift() const { return 8 - bit - width; }
  uint8_t get(const uint8_t* p) const { return static_cast<uint8_t>((p[off] >> shift()) & mask()); }
  void set(uint8_t* p, unsigned v) const {
    p[off] = static_cast<uint8_t>((p[off] & ~(mask() << shift())) | ((v & mask()) << shift()));
  }
};

/// The top 24 bits of the big-endian dword at `off` (QPNs, PSNs, EECNs); the low byte is
/// another field and is kept.
uint32_t get24(const uint8_t* p, size_t off) { return load_be32(p + off) >> 8; }
void set24(uint8_t* p, size_t off, uint32_t v) {
  store_be32(p + off, ((v & 0xffffff) << 8) | p[off + 3]);
}

template <size_t N>
void get_bytes(const uint8_t* p, size_t off, std::array<uint8_t, N>* out) {
  std::memcpy(out->data(), p + off, N);
}
template <size_t N>
void set_bytes(uint8_t* p, size_t off, const std::array<uint8_t, N>& in) {
  std::memcpy(p + off, in.data(), N);
}

// REQ (Table 106).
constexpr size_t kReqVendorId = 4, kReqServiceId = 8, kReqCaGuid = 16, kReqQkey = 28, kReqQpn = 32,
                 kReqRespRes = 35, kReqInitDepth = 39, kReqPsn = 44, kReqPkey = 48,
                 kReqLocalLid = 52, kReqRemoteLid = 54, kReqLocalGid = 56, kReqRemoteGid = 72,
                 kReqFlowLabel = 88, kReqTrafficClass = 92, kReqHopLimit = 93, kReqPrivate = 140;
constexpr Bits kReqRemoteCmTimeout{43, 0, 5}, kReqTransport{43, 5, 2}, kReqE2e{43, 7, 1},
    kReqLocalCmTimeout{47, 0, 5}, kReqRetry{47, 5, 3}, kReqMtu{50, 0, 4}, kReqRnrRetry{50, 5, 3},
    kReqMaxCmRetries{51, 0, 4}, kReqSrq{51, 4, 1}, kReqExtTransport{51, 5, 3},
    kReqPacketRate{91, 2, 6}, kReqSl{94, 0, 4}, kReqSubnetLocal{94, 4, 1}, kReqAckTimeout{95, 0, 5};
// MRA (Table 107), REJ (Table 108).
constexpr Bits kMraMsg{8, 0, 2}, kMraTimeout{9, 0, 5}, kRejMsg{8, 0, 2}, kRejAriLength{9, 0, 7};
constexpr size_t kMraPrivate = 10, kRejReason = 10, kRejAri = 12, kRejPrivate = 84;
// REP (Table 110).
constexpr size_t kRepVendorH = 15, kRepVendorM = 19, kRepVendorL = 23;  // low bytes of dwords
constexpr size_t kRepQkey = 8, kRepQpn = 12, kRepEecn = 16, kRepPsn = 20, kRepRespRes = 24,
                 kRepInitDepth = 25, kRepCaGuid = 28, kRepPrivate = 36;
constexpr Bits kRepAckDelay{26, 0, 5}, kRepFailover{26, 5, 2}, kRepE2e{26, 7, 1},
    kRepRnrRetry{27, 0, 3}, kRepSrq{27, 3, 1};
// RTU, DREQ, DREP (Tables 111-113).
constexpr size_t kRtuPrivate = 8, kDreqQpn = 8, kDreqPrivate = 12, kDrepPrivate = 8;
// SIDR_REQ, SIDR_REP (Tables 119, 120).
constexpr size_t kSidrReqPkey = 4, kSidrReqServiceId = 8, kSidrReqPrivate = 16;
constexpr size_t kSidrRepStatus = 4, kSidrRepInfoLength = 5, kSidrRepQpn = 8,
                 kSidrRepServiceId = 12, kSidrRepQkey = 20, kSidrRepInfo = 24, kSidrRepPrivate = 96;

uint32_t local_id(const uint8_t* p) { return load_be32(p); }
uint32_t remote_id(const uint8_t* p) { return load_be32(p + 4); }

Req parse_req(const uint8_t* p) {
  Req r;
  r.local_comm_id = local_id(p);
  r.vendor_id = load_be32(p + kReqVendorId) & 0xffffff;
  r.service_id = load_be64(p + kReqServiceId);
  r.local_ca_guid = load_be64(p + kReqCaGuid);
  r.local_qkey = load_be32(p + kReqQkey);
  r.local_qpn = get24(p, kReqQpn);
  r.responder_resources = p[kReqRespRes];
  r.initiator_depth = p[kReqInitDepth];
  r.remote_cm_response_timeout = kReqRemoteCmTimeout.get(p);
  r.transport = static_cast<Transport>(kReqTransport.get(p));
  r.end_to_end_flow_control = kReqE2e.get(p) != 0;
  r.starting_psn = get24(p, kReqPsn);
  r.local_cm_response_timeout = kReqLocalCmTimeout.get(p);
  r.retry_count = kReqRetry.get(p);
  r.pkey = load_be16(p + kReqPkey);
  r.path_mtu = kReqMtu.get(p);
  r.rnr_retry_count = kReqRnrRetry.get(p);
  r.max_cm_retries = kReqMaxCmRetries.get(p);
  r.srq = kReqSrq.get(p) != 0;
  r.extended_transport = kReqExtTransport.get(p);
  Path& a = r.primary;
  a.local_lid = load_be16(p + kReqLocalLid);
  a.remote_lid = load_be16(p + kReqRemoteLid);
  std::memcpy(a.local_gid.raw.data(), p + kReqLocalGid, 16);
  std::memcpy(a.remote_gid.raw.data(), p + kReqRemoteGid, 16);
  a.flow_label = load_be32(p + kReqFlowLabel) >> 12;
  a.packet_rate = kReqPacketRate.get(p);
  a.traffic_class = p[kReqTrafficClass];
  a.hop_limit = p[kReqHopLimit];
  a.sl = kReqSl.get(p);
  a.subnet_local = kReqSubnetLocal.get(p) != 0;
  a.local_ack_timeout = kReqAckTimeout.get(p);
  get_bytes(p, kReqPrivate, &r.private_data);
  return r;
}

void build_req(const Req& r, uint8_t* p) {
  store_be32(p, r.local_comm_id);
  store_be32(p + kReqVendorId, (uint32_t{p[kReqVendorId]} << 24) | (r.vendor_id & 0xffffff));
  store_be64(p + kReqServiceId, r.service_id);
  store_be64(p + kReqCaGuid, r.local_ca_guid);
  store_be32(p + kReqQkey, r.local_qkey);
  set24(p, kReqQpn, r.local_qpn);
  p[kReqRespRes] = r.responder_resources;
  p[kReqInitDepth] = r.initiator_depth;
  kReqRemoteCmTimeout.set(p, r.remote_cm_response_timeout);
  kReqTransport.set(p, static_cast<unsigned>(r.transport));
  kReqE2e.set(p, r.end_to_end_flow_control);
  set24(p, kReqPsn, r.starting_psn);
  kReqLocalCmTimeout.set(p, r.local_cm_response_timeout);
  kReqRetry.set(p, r.retry_count);
  store_be16(p + kReqPkey, r.pkey);
  kReqMtu.set(p, r.path_mtu);
  kReqRnrRetry.set(p, r.rnr_retry_count);
  kReqMaxCmRetries.set(p, r.max_cm_retries);
  kReqSrq.set(p, r.srq);
  kReqExtTransport.set(p, r.extended_transport);
  const Path& a = r.primary;
  store_be16(p + kReqLocalLid, a.local_lid);
  store_be16(p + kReqRemoteLid, a.remote_lid);
  std::memcpy(p + kReqLocalGid, a.local_gid.raw.data(), 16);
  std::memcpy(p + kReqRemoteGid, a.remote_gid.raw.data(), 16);
  store_be32(p + kReqFlowLabel, (a.flow_label & 0xfffff) << 12);
  kReqPacketRate.set(p, a.packet_rate);
  p[kReqTrafficClass] = a.traffic_class;
  p[kReqHopLimit] = a.hop_limit;
  kReqSl.set(p, a.sl);
  kReqSubnetLocal.set(p, a.subnet_local);
  kReqAckTimeout.set(p, a.local_ack_timeout);
  set_bytes(p, kReqPrivate, r.private_data);
}

Rep parse_rep(const uint8_t* p) {
  Rep r;
  r.local_comm_id = local_id(p);
  r.remote_comm_id = remote_id(p);
  r.local_qkey = load_be32(p + kRepQkey);
  r.local_qpn = get24(p, kRepQpn);
  r.local_eecn = get24(p, kRepEecn);
  r.starting_psn = get24(p, kRepPsn);
  r.responder_resources = p[kRepRespRes];
  r.initiator_depth = p[kRepInitDepth];
  r.target_ack_delay = kRepAckDelay.get(p);
  r.failover_accepted = kRepFailover.get(p);
  r.end_to_end_flow_control = kRepE2e.get(p) != 0;
  r.rnr_retry_count = kRepRnrRetry.get(p);
  r.srq = kRepSrq.get(p) != 0;
  r.local_ca_guid = load_be64(p + kRepCaGuid);
  r.vendor_id = uint32_t{p[kRepVendorH]} << 16 | uint32_t{p[kRepVendorM]} << 8 | p[kRepVendorL];
  get_bytes(p, kRepPrivate, &r.private_data);
  return r;
}

void build_rep(const Rep& r, uint8_t* p) {
  store_be32(p, r.local_comm_id);
  store_be32(p + 4, r.remote_comm_id);
  store_be32(p + kRepQkey, r.local_qkey);
  set24(p, kRepQpn, r.local_qpn);
  set24(p, kRepEecn, r.local_eecn);
  set24(p, kRepPsn, r.starting_psn);
  p[kRepRespRes] = r.responder_resources;
  p[kRepInitDepth] = r.initiator_depth;
  kRepAckDelay.set(p, r.target_ack_delay);
  kRepFailover.set(p, r.failover_accepted);
  kRepE2e.set(p, r.end_to_end_flow_control);
  kRepRnrRetry.set(p, r.rnr_retry_count);
  kRepSrq.set(p, r.srq);
  store_be64(p + kRepCaGuid, r.local_ca_guid);
  p[kRepVendorH] = static_cast<uint8_t>(r.vendor_id >> 16);
  p[kRepVendorM] = static_cast<uint8_t>(r.vendor_id >> 8);
  p[kRepVendorL] = static_cast<uint8_t>(r.vendor_id);
  set_bytes(p, kRepPrivate, r.private_data);
}

/// The messages that are two comm IDs and private data at `off` (RTU, DREP).
template <typename M>
M parse_ids_private(const uint8_t* p, size_t off) {
  M m;
  m.local_comm_id = local_id(p);
  m.remote_comm_id = remote_id(p);
  get_bytes(p, off, &m.private_data);
  return m;
}
template <typename M>
void build_ids_private(const M& m, uint8_t* p, size_t off) {
  store_be32(p, m.local_comm_id);
  store_be32(p + 4, m.remote_comm_id);
  set_bytes(p, off, m.private_data);
}

struct Builder {
  uint8_t* p;
  void operator()(const SidrReq& m) const {
    store_be32(p, m.request_id);
    store_be16(p + kSidrReqPkey, m.pkey);
    store_be64(p + kSidrReqServiceId, m.service_id);
    set_bytes(p, kSidrReqPrivate, m.private_data);
  }
  void operator()(const SidrRep& m) const {
    store_be32(p, m.request_id);
    p[kSidrRepStatus] = m.status;
    p[kSidrRepInfoLength] = m.info_length;
    set24(p, kSidrRepQpn, m.qpn);
    store_be64(p + kSidrRepServiceId, m.service_id);
    store_be32(p + kSidrRepQkey, m.qkey);
    set_bytes(p, kSidrRepInfo, m.info);
    set_bytes(p, kSidrRepPrivate, m.private_data);
  }
  void operator()(const Req& m) const { build_req(m, p); }
  void operator()(const Rep& m) const { build_rep(m, p); }
  void operator()(const Rtu& m) const { build_ids_private(m, p, kRtuPrivate); }
  void operator()(const Drep& m) const { build_ids_private(m, p, kDrepPrivate); }
  void operator()(const Dreq& m) const {
    build_ids_private(m, p, kDreqPrivate);
    set24(p, kDreqQpn, m.remote_qpn);
  }
  void operator()(const Mra& m) const {
    build_ids_private(m, p, kMraPrivate);
    kMraMsg.set(p, static_cast<unsigned>(m.message_mraed));
    kMraTimeout.set(p, m.service_timeout);
  }
  void operator()(const Rej& m) const {
    build_ids_private(m, p, kRejPrivate);
    kRejMsg.set(p, static_cast<unsigned>(m.message_rejected));
    kRejAriLength.set(p, m.ari_length);
    store_be16(p + kRejReason, m.reason);
    set_bytes(p, kRejAri, m.ari);
  }
};

std::optional<Message> parse_message(AttrId id, const uint8_t* p) {
  switch (id) {
    case AttrId::kReq: {
      Req r = parse_req(p);
      // Transport 3 is XRC when its extended type says so; other extended types are reserved.
      if (r.transport == Transport::kExtended && !is_xrc(r)) return std::nullopt;
      return r;
    }
    case AttrId::kRep: return parse_rep(p);
    case AttrId::kRtu: return parse_ids_private<Rtu>(p, kRtuPrivate);
    case AttrId::kDrep: return parse_ids_private<Drep>(p, kDrepPrivate);
    case AttrId::kSidrReq: {
      SidrReq m;
      m.request_id = load_be32(p);
      m.pkey = load_be16(p + kSidrReqPkey);
      m.service_id = load_be64(p + kSidrReqServiceId);
      get_bytes(p, kSidrReqPrivate, &m.private_data);
      return m;
    }
    case AttrId::kSidrRep: {
      SidrRep m;
      m.request_id = load_be32(p);
      m.status = p[kSidrRepStatus];
      m.info_length = p[kSidrRepInfoLength];
      m.qpn = get24(p, kSidrRepQpn);
      m.service_id = load_be64(p + kSidrRepServiceId);
      m.qkey = load_be32(p + kSidrRepQkey);
      get_bytes(p, kSidrRepInfo, &m.info);
      get_bytes(p, kSidrRepPrivate, &m.private_data);
      if (m.info_length > kSidrRepInfoLen) return std::nullopt;
      return m;
    }
    case AttrId::kDreq: {
      auto m = parse_ids_private<Dreq>(p, kDreqPrivate);
      m.remote_qpn = get24(p, kDreqQpn);
      return m;
    }
    case AttrId::kMra: {
      auto m = parse_ids_private<Mra>(p, kMraPrivate);
      m.message_mraed = static_cast<MsgRef>(kMraMsg.get(p));
      m.service_timeout = kMraTimeout.get(p);
      if (kMraMsg.get(p) > static_cast<uint8_t>(MsgRef::kOther)) return std::nullopt;
      return m;
    }
    case AttrId::kRej: {
      auto m = parse_ids_private<Rej>(p, kRejPrivate);
      m.message_rejected = static_cast<MsgRef>(kRejMsg.get(p));
      m.ari_length = kRejAriLength.get(p);
      m.reason = load_be16(p + kRejReason);
      get_bytes(p, kRejAri, &m.ari);
      if (kRejMsg.get(p) > static_cast<uint8_t>(MsgRef::kOther) || m.ari_length > kRejAriLen)
        return std::nullopt;
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::kTooShort: return "MAD shorter than 256 bytes";
    case ParseError::kNotCm: return "not a CM MAD (base version or class)";
    case ParseError::kBadClassVersion: return "CM class version is not 2";
    case ParseError::kBadMethod: return "CM method is not Send";
    case ParseError::kUnknownAttribute: return "CM attribute not supported";
    case ParseError::kBadField: return "CM field out of range";
  }
  return "?";
}

AttrId attr_of(const Message& m) {
  constexpr AttrId kIds[] = {AttrId::kReq,  AttrId::kMra,     AttrId::kRej,
                             AttrId::kRep,  AttrId::kRtu,     AttrId::kDreq,
                             AttrId::kDrep, AttrId::kSidrReq, AttrId::kSidrRep};
  return kIds[m.index()];
}

std::optional<Mad> parse_cm_mad(std::span<const uint8_t> mad, ParseError* err) {
  auto fail = [err](ParseError e) {
    if (err) *err = e;
    return std::nullopt;
  };
  if (mad.size() < kMadLen) return fail(ParseError::kTooShort);
  const uint8_t* h = mad.data();
  MadHeader hdr;
  hdr.base_version = h[0];
  hdr.mgmt_class = h[1];
  hdr.class_version = h[2];
  hdr.method = h[3];
  hdr.status = load_be16(h + 4);
  hdr.class_specific = load_be16(h + 6);
  hdr.tid = load_be64(h + 8);
  hdr.attr_id = load_be16(h + 16);
  hdr.attr_mod = load_be32(h + 20);
  if (hdr.base_version != kBaseVersion || hdr.mgmt_class != kMgmtClassCm)
    return fail(ParseError::kNotCm);
  if (hdr.class_version != kClassVersion) return fail(ParseError::kBadClassVersion);
  if (hdr.method != kMethodSend) return fail(ParseError::kBadMethod);
  if (hdr.attr_id < static_cast<uint16_t>(AttrId::kReq) ||
      hdr.attr_id > static_cast<uint16_t>(AttrId::kSidrRep))
    return fail(ParseError::kUnknownAttribute);
  std::optional<Message> msg = parse_message(static_cast<AttrId>(hdr.attr_id), h + kMadHeaderLen);
  if (!msg) return fail(ParseError::kBadField);
  return Mad{hdr, std::move(*msg)};
}

void build_cm_mad(const Mad& m, std::span<uint8_t, kMadLen> out) {
  std::fill(out.begin(), out.end(), uint8_t{0});
  uint8_t* h = out.data();
  h[0] = m.hdr.base_version;
  h[1] = m.hdr.mgmt_class;
  h[2] = m.hdr.class_version;
  h[3] = m.hdr.method;
  store_be16(h + 4, m.hdr.status);
  store_be16(h + 6, m.hdr.class_specific);
  store_be64(h + 8, m.hdr.tid);
  store_be16(h + 16, static_cast<uint16_t>(attr_of(m.msg)));
  store_be32(h + 20, m.hdr.attr_mod);
  std::visit(Builder{h + kMadHeaderLen}, m.msg);
}

}  // namespace uroce::wire::cm
