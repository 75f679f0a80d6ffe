/**
 * @file rs_wire.cc
 * @brief rsocket connection data (see rs_wire.h).
 */
#include "rdmacm/rs_wire.h"

#include <bit>
#include <cstring>

namespace uroce::rdmacm::rs {

static_assert(std::endian::native == std::endian::little,
              "rsocket target SGL/iomap entries are written in host order; uroce assumes "
              "little-endian hosts (RS_CONN_FLAG_NET clear)");

namespace {
WireSge to_wire(const Sge& s) {
  WireSge w;
  w.addr.store(s.addr);
  w.key.store(s.key);
  w.length.store(s.length);
  return w;
}
Sge from_wire(const WireSge& w) { return {w.addr.load(), w.key.load(), w.length.load()}; }
}  // namespace

void build_conn_data(const ConnData& d, std::span<uint8_t> out) {
  WireConnData w{};
  w.version = kConnVersion;
  w.flags = d.flags;
  w.credits.store(d.credits);
  w.target_iomap_size = iomap_size_to_wire(d.iomap_size);
  w.target_sgl = to_wire(d.target_sgl);
  w.data_buf = to_wire(d.data_buf);
  std::memcpy(out.data(), &w, std::min(out.size(), sizeof w));
}

std::optional<ConnData> parse_conn_data(std::span<const uint8_t> in) {
  if (in.size() < sizeof(WireConnData)) return std::nullopt;
  WireConnData w;
  std::memcpy(&w, in.data(), sizeof w);
  if (w.version != kConnVersion) return std::nullopt;
  ConnData d;
  d.flags = w.flags;
  d.credits = w.credits.load();
  d.iomap_size = iomap_size_from_wire(w.target_iomap_size);
  d.target_sgl = from_wire(w.target_sgl);
  d.data_buf = from_wire(w.data_buf);
  return d;
}

}  // namespace uroce::rdmacm::rs
