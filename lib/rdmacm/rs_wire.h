/**
 * @file rs_wire.h
 * @brief The rsocket stream protocol's wire facts (librdmacm's "rsocket Protocol and Design
 * Guide", docs/rsocket in rdma-core, and rsocket(7)): the connection data carried as RDMA CM
 * private data, the 32-bit messages carried as immediate data, and the entries a peer RDMA
 * WRITEs into our target SGL and target iomap. Pure: no verbs, no sockets.
 *
 * Messages: every exchange is an RDMA WRITE WITH IMMEDIATE (zero-length when only the message
 * matters). Bits 31:29 of the immediate are the type, bits 28:0 its argument:
 *   000 data      bytes written into the receive buffer
 *   100 SGL       credit update: receives the peer may use up to (a 16-bit sequence number);
 *                 a target SGE may have been rewritten with it
 *   110 iomap     the target iomap entry with this index was rewritten
 *   111 control   0 disconnect, 1 keepalive, 2 shutdown (of the sender's sending side)
 * (010 marks a direct write in a sender's own work-request IDs; it never travels.)
 * The immediate is sent in network order (wr.imm_data = htobe32(message)).
 *
 * Byte order: the connection data is big-endian. Target SGL and iomap entries are written
 * in the writer's byte order; RS_CONN_FLAG_NET says a peer is big-endian, and a peer of the
 * other order swaps what it writes. uroce runs on little-endian hosts only.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "common/byteorder.h"

namespace uroce::rdmacm::rs {

/// Entries of the target SGL (the peer publishes receive-buffer halves there).
inline constexpr int kSglSize = 2;
/// Largest data message: longer sends are split.
inline constexpr uint32_t kMaxTransfer = 65536;
/// A sender waits until this much of its send buffer is free.
inline constexpr uint32_t kSndLowat = 2048;
/// First split size of a long send (doubling up to kMaxTransfer), so the first bytes leave
/// early.
inline constexpr uint32_t kOlapStartSize = 2048;
/// Send-queue entries kept for control messages (credit updates, shutdown).
inline constexpr uint32_t kCtrlSlots = 4;
inline constexpr uint16_t kQpMinSize = 16;
inline constexpr uint16_t kQpMaxSize = 0xfffe;

inline constexpr uint8_t kConnVersion = 1;
inline constexpr uint8_t kConnFlagNet = 1 << 0;    ///< the sender is big-endian
inline constexpr uint8_t kConnFlagIomap = 1 << 1;  ///< the sender has a target iomap

/// Message types (bits 31:29 of the immediate).
enum class Op : uint8_t {
  kData = 0,
  kWrite = 2,  ///< local only: a direct (iomap) write's work-request ID
  kSgl = 4,
  kIomapSgl = 6,
  kCtrl = 7,
};
/// Control messages (the argument of Op::kCtrl).
enum class Ctrl : uint32_t { kDisconnect = 0, kKeepalive = 1, kShutdown = 2 };

constexpr uint32_t msg(Op op, uint32_t data) {
  return (uint32_t{static_cast<uint8_t>(op)} << 29) | (data & 0x1fffffff);
}
constexpr Op msg_op(uint32_t m) { return static_cast<Op>(m >> 29); }
constexpr uint32_t msg_data(uint32_t m) { return m & 0x1fffffff; }

/// An address, key and length, in host order (target SGL/iomap entries).
struct Sge {
  uint64_t addr = 0;
  uint32_t key = 0;
  uint32_t length = 0;
};
static_assert(sizeof(Sge) == 16 && std::is_trivially_copyable_v<Sge>);

/// One target iomap entry: the peer's buffer `sge` is mapped at stream offset `offset`.
struct Iomap {
  uint64_t offset = 0;
  Sge sge;
};
static_assert(sizeof(Iomap) == 24 && std::is_trivially_copyable_v<Iomap>);

/// An Sge as the connection data carries it (big-endian).
struct WireSge {
  Be64 addr;
  Be32 key;
  Be32 length;
};
static_assert(sizeof(WireSge) == 16 && alignof(WireSge) == 1);

/// struct rs_conn_data: the private data of the REQ and of the REP.
struct WireConnData {
  uint8_t version;            ///< kConnVersion
  uint8_t flags;              ///< kConnFlag*
  Be16 credits;               ///< receives posted: the peer may send this many messages
  uint8_t reserved[3];        ///< zero
  uint8_t target_iomap_size;  ///< iomap entries, scaled (iomap_size_to_wire)
  WireSge target_sgl;         ///< our target SGL: address, key, kSglSize entries
  WireSge data_buf;           ///< the first receive-buffer half the peer may fill
};
static_assert(sizeof(WireConnData) == 40 && alignof(WireConnData) == 1 &&
              std::is_trivially_copyable_v<WireConnData>);

/// The connection data in host terms.
struct ConnData {
  uint8_t flags = 0;
  uint16_t credits = 0;
  uint16_t iomap_size = 0;  ///< entries (after scaling)
  Sge target_sgl;           ///< length = number of entries
  Sge data_buf;
};

/// The 8-bit encoding of an iomap size: values up to 128 as themselves, larger ones as
/// 0x80 | (value >> 8) (librdmacm's scale; sizes round down to what it can carry).
constexpr uint8_t iomap_size_to_wire(uint32_t v) {
  return static_cast<uint8_t>(v <= 128 ? v : 0x80 | (v >> 8));
}
constexpr uint16_t iomap_size_from_wire(uint8_t w) {
  return static_cast<uint16_t>(w <= 128 ? w : (w & 0x7f) << 8);
}
/// The size an iomap of v entries actually gets (what the peer will read back).
constexpr uint16_t iomap_size_round(uint32_t v) {
  return iomap_size_from_wire(iomap_size_to_wire(v > 0x7fff ? 0x7fff : v));
}

/// Writes d as struct rs_conn_data (version 1, little-endian host) into out (>= 40 bytes).
void build_conn_data(const ConnData& d, std::span<uint8_t> out);
/// Reads struct rs_conn_data; nullopt when shorter than 40 bytes or not version 1.
std::optional<ConnData> parse_conn_data(std::span<const uint8_t> in);

}  // namespace uroce::rdmacm::rs
