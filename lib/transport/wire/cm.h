/**
 * @file cm.h
 * @brief Communication Manager MADs (IBA Vol 1 §13.4 MAD header, §12.6 CM messages): the
 * 256-byte management datagrams that RDMA CM peers exchange on QP1 (GSI) to connect RC/UC QPs.
 * SIDR_REQ/SIDR_REP (Tables 119-120) resolve a service ID to a UD QP.
 * On RoCEv2 a MAD is the payload of a UD SEND to QP 1 with Q_Key 0x80010000 (issue #9).
 *
 * Layout: a 24-byte MAD header, then the message at MAD byte 24. Field offsets below are from
 * the start of the message (IBA's tables); bit positions count from the most significant bit
 * of the byte, as the spec draws them. Multi-byte fields are big-endian. Only the primary path
 * of a REQ is carried (no automatic path migration: the alternate path is written as zeros
 * and ignored when read).
 *
 * parse_cm_mad() accepts any CM message of class version 2 with method Send and answers with
 * a typed message or a reason; build_cm_mad() writes the exact 256 bytes. Round trip:
 * parse(build(m)) == m for every message whose fields are within their widths.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>

#include "common/types.h"

namespace uroce::wire::cm {

inline constexpr size_t kMadLen = 256;       ///< every MAD, header included
inline constexpr size_t kMadHeaderLen = 24;  ///< common MAD header
inline constexpr uint8_t kBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;  ///< Communication Management class
inline constexpr uint8_t kClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;  ///< CM messages all use Send
inline constexpr uint32_t kGsiQpn = 1;        ///< QP1, the General Services Interface
inline constexpr uint32_t kGsiQkey = 0x80010000;

/// AttributeID of each CM message (IBA Table 103).
enum class AttrId : uint16_t {
  kReq = 0x0010,
  kMra = 0x0011,
  kRej = 0x0012,
  kRep = 0x0013,
  kRtu = 0x0014,
  kDreq = 0x0015,
  kDrep = 0x0016,
  kSidrReq = 0x0017,
  kSidrRep = 0x0018,
};

/// Private data carried by each message (bytes; the rest of its 232-byte MAD data field).
inline constexpr size_t kReqPrivateLen = 92;
inline constexpr size_t kMraPrivateLen = 222;
inline constexpr size_t kRejPrivateLen = 148;
inline constexpr size_t kRejAriLen = 72;  ///< Additional Rejection Information, at most
inline constexpr size_t kRepPrivateLen = 196;
inline constexpr size_t kRtuPrivateLen = 224;
inline constexpr size_t kDreqPrivateLen = 220;
inline constexpr size_t kDrepPrivateLen = 224;
inline constexpr size_t kSidrReqPrivateLen = 216;
inline constexpr size_t kSidrRepPrivateLen = 136;
inline constexpr size_t kSidrRepInfoLen = 72;  ///< additional information, at most

/// Transport Service Type of a REQ (2 bits). kExtended: the Extended Transport Type says
/// which (IBA Vol 1 Annex A14, XRC).
enum class Transport : uint8_t { kRc = 0, kUc = 1, kRd = 2, kExtended = 3 };
/// Extended Transport Type of a REQ whose Transport Service Type is kExtended (3 bits): XRC,
/// the only one defined (Linux's CM_REQ_EXTENDED_TRANSPORT_TYPE 1, IB_QPT_XRC_TGT).
inline constexpr uint8_t kExtendedXrc = 1;

/// Which message an MRA or REJ answers (2 bits).
enum class MsgRef : uint8_t { kReq = 0, kRep = 1, kOther = 2 };

/// REJ reasons used here (IBA Table 109).
enum class RejReason : uint16_t {
  kNoQp = 1,
  kNoResources = 3,
  kTimeout = 4,
  kUnsupportedReq = 5,
  kInvalidCommId = 6,
  kInvalidServiceId = 8,
  kInvalidTransportType = 9,
  kStaleConnection = 10,
  kConsumerDefined = 28,
  kVendorOptionNotSupported = 35,  ///< IBA 1.4: the REQ's ECE options are refused
};

/// The common MAD header (IBA 13.4.2), in host order.
struct MadHeader {
  uint8_t base_version = kBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kClassVersion;
  uint8_t method = kMethodSend;  ///< R bit (7) and method (6:0)
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;  ///< transaction ID: the sender's, echoed by the answers it expects
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
  friend bool operator==(const MadHeader&, const MadHeader&) = default;
};

/// The primary path of a REQ (IBA Table 106, bytes 52..95). LIDs are 0xFFFF on RoCE.
struct Path {
  uint16_t local_lid = 0xffff;
  uint16_t remote_lid = 0xffff;
  Gid local_gid{};
  Gid remote_gid{};
  uint32_t flow_label = 0;  ///< 20 bits
  uint8_t packet_rate = 0;  ///< 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;  ///< 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;  ///< 5 bits
  friend bool operator==(const Path&, const Path&) = default;
};

/// Connect request (IBA Table 106).
struct Req {
  uint32_t local_comm_id = 0;
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;  ///< 24 bits
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t remote_cm_response_timeout = 0;  ///< 5 bits, 4.096 us * 2^n
  Transport transport = Transport::kRc;
  uint8_t extended_transport = 0;  ///< 3 bits; kExtendedXrc when transport is kExtended
  bool end_to_end_flow_control = false;
  uint32_t starting_psn = 0;              ///< 24 bits
  uint8_t local_cm_response_timeout = 0;  ///< 5 bits
  uint8_t retry_count = 0;                ///< 3 bits
  uint16_t pkey = 0xffff;
  uint8_t path_mtu = 0;         ///< 4 bits, IBA MTU code (1 = 256 ... 5 = 4096)
  uint8_t rnr_retry_count = 0;  ///< 3 bits
  uint8_t max_cm_retries = 0;   ///< 4 bits
  bool srq = false;
  uint32_t vendor_id = 0;  ///< 24 bits: the ECE vendor (IBA 1.4; its options are the attr_mod)
  Path primary;
  std::array<uint8_t, kReqPrivateLen> private_data{};
  friend bool operator==(const Req&, const Req&) = default;
};

/// Message receipt acknowledgement: "answer comes later" (IBA Table 107).
struct Mra {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  MsgRef message_mraed = MsgRef::kReq;
  uint8_t service_timeout = 0;  ///< 5 bits
  std::array<uint8_t, kMraPrivateLen> private_data{};
  friend bool operator==(const Mra&, const Mra&) = default;
};

/// Reject (IBA Table 108).
struct Rej {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  MsgRef message_rejected = MsgRef::kReq;
  uint8_t ari_length = 0;  ///< 7 bits, at most kRejAriLen
  uint16_t reason = 0;     ///< RejReason or another IBA code
  std::array<uint8_t, kRejAriLen> ari{};
  std::array<uint8_t, kRejPrivateLen> private_data{};
  friend bool operator==(const Rej&, const Rej&) = default;
};

/// Connect reply (IBA Table 110).
struct Rep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;  ///< 24 bits
  /// 24 bits: the Local EE Context Number; the answer to an XRC REQ carries the XRC target
  /// QP's number here, with local_qpn 0 and srq set (Linux's cm_format_rep).
  uint32_t local_eecn = 0;
  uint32_t starting_psn = 0;  ///< 24 bits
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;   ///< 5 bits
  uint8_t failover_accepted = 0;  ///< 2 bits
  bool end_to_end_flow_control = false;
  uint8_t rnr_retry_count = 0;  ///< 3 bits
  bool srq = false;
  uint64_t local_ca_guid = 0;
  uint32_t vendor_id = 0;  ///< 24 bits: the ECE vendor (IBA 1.4; its options are the attr_mod)
  std::array<uint8_t, kRepPrivateLen> private_data{};
  friend bool operator==(const Rep&, const Rep&) = default;
};

/// Ready to use (IBA Table 111).
struct Rtu {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kRtuPrivateLen> private_data{};
  friend bool operator==(const Rtu&, const Rtu&) = default;
};

/// Disconnect request (IBA Table 112).
struct Dreq {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;  ///< 24 bits
  std::array<uint8_t, kDreqPrivateLen> private_data{};
  friend bool operator==(const Dreq&, const Dreq&) = default;
};

/// Disconnect reply (IBA Table 113).
struct Drep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kDrepPrivateLen> private_data{};
  friend bool operator==(const Drep&, const Drep&) = default;
};

/// Service ID resolution request: which UD QP serves this service? (IBA Table 119).
struct SidrReq {
  uint32_t request_id = 0;
  uint16_t pkey = 0xffff;
  uint64_t service_id = 0;
  std::array<uint8_t, kSidrReqPrivateLen> private_data{};
  friend bool operator==(const SidrReq&, const SidrReq&) = default;
};

/// SIDR_REP status (IBA Table 120).
enum class SidrStatus : uint8_t {
  kValid = 0,
  kServiceIdNotSupported = 1,
  kRejected = 2,
  kNoQp = 3,
  kRedirect = 4,
  kUnsupportedVersion = 5
};

/// Service ID resolution reply (IBA Table 120).
struct SidrRep {
  uint32_t request_id = 0;
  uint8_t status = 0;       ///< SidrStatus
  uint8_t info_length = 0;  ///< at most kSidrRepInfoLen
  uint32_t qpn = 0;         ///< 24 bits
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kSidrRepInfoLen> info{};
  std::array<uint8_t, kSidrRepPrivateLen> private_data{};
  friend bool operator==(const SidrRep&, const SidrRep&) = default;
};

using Message = std::variant<Req, Mra, Rej, Rep, Rtu, Dreq, Drep, SidrReq, SidrRep>;

/// One CM MAD: its header (attr_id matches the message) and the message.
struct Mad {
  MadHeader hdr;
  Message msg;
  friend bool operator==(const Mad&, const Mad&) = default;
};

/// Why parse_cm_mad() refused a MAD.
enum class ParseError : uint8_t {
  kTooShort,          ///< fewer than kMadLen bytes
  kNotCm,             ///< base version or management class is not CM's
  kBadClassVersion,   ///< class version is not 2
  kBadMethod,         ///< not Send (CM sends every message with method Send)
  kUnknownAttribute,  ///< an attribute this CM does not speak (LAP, APR, ClassPortInfo)
  kBadField,          ///< a field out of its range (REJ ARI length > 72, reserved values)
};

const char* to_string(ParseError e);

/// Whether a REQ asks for an XRC connection (its initiator is an XRC_SEND QP).
inline bool is_xrc(const Req& r) {
  return r.transport == Transport::kExtended && r.extended_transport == kExtendedXrc;
}

/// AttributeID of a message.
AttrId attr_of(const Message& m);

/// Parses the first kMadLen bytes of `mad`.
std::optional<Mad> parse_cm_mad(std::span<const uint8_t> mad, ParseError* err = nullptr);

/// Writes `m` as kMadLen bytes; the header's attr_id is taken from the message.
void build_cm_mad(const Mad& m, std::span<uint8_t, kMadLen> out);

}  // namespace uroce::wire::cm
