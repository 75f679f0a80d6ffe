/**
 * @file types.h
 * @brief Strong value types for protocol quantities: 24-bit PSN/QPN/MSN, MAC, GID/IP.
 *
 * PSNs compare with serial arithmetic modulo 2^24 (IBA Vol 1 §9.7.1): a is "before" b when
 * (a - b) mod 2^24 lies in the upper half. Units: none.
 */
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace uroce {

inline constexpr uint32_t k24BitMask = 0x00ffffff;

/// Packet sequence number, 24 bits, wrapping. No implicit conversion to or from integers.
class Psn {
 public:
  constexpr Psn() = default;
  constexpr explicit Psn(uint32_t v) : v_(v & k24BitMask) {}
  constexpr uint32_t value() const { return v_; }
  constexpr Psn operator+(uint32_t n) const { return Psn(v_ + n); }
  constexpr Psn operator-(uint32_t n) const { return Psn(v_ - n); }
  constexpr Psn& operator++() {
    v_ = (v_ + 1) & k24BitMask;
    return *this;
  }
  /// Signed distance b -> a in serial arithmetic: positive when a is after b.
  friend constexpr int32_t diff(Psn a, Psn b) {
    return static_cast<int32_t>((a.v_ - b.v_) << 8) >> 8;
  }
  friend constexpr bool operator==(Psn, Psn) = default;
  friend constexpr bool operator<(Psn a, Psn b) { return diff(a, b) < 0; }
  friend constexpr bool operator<=(Psn a, Psn b) { return diff(a, b) <= 0; }
  friend constexpr bool operator>(Psn a, Psn b) { return diff(a, b) > 0; }
  friend constexpr bool operator>=(Psn a, Psn b) { return diff(a, b) >= 0; }

 private:
  uint32_t v_ = 0;
};

/// Queue pair number, 24 bits.
class Qpn {
 public:
  constexpr Qpn() = default;
  constexpr explicit Qpn(uint32_t v) : v_(v & k24BitMask) {}
  constexpr uint32_t value() const { return v_; }
  friend constexpr auto operator<=>(Qpn, Qpn) = default;

 private:
  uint32_t v_ = 0;
};

/// Message sequence number carried in AETH, 24 bits.
using Msn = Psn;

/// Ethernet MAC address.
struct MacAddr {
  std::array<uint8_t, 6> b{};
  friend constexpr bool operator==(const MacAddr&, const MacAddr&) = default;
  constexpr bool is_zero() const {
    for (auto x : b)
      if (x) return false;
    return true;
  }
  std::string to_string() const;
  /// Parses "aa:bb:cc:dd:ee:ff"; returns false on malformed input.
  static bool parse(const std::string& s, MacAddr* out);
  static constexpr MacAddr broadcast() { return {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
};

/// A 128-bit GID. For RoCEv2 over IPv4 it is the IPv4-mapped IPv6 address ::ffff:a.b.c.d,
/// for IPv6 the address itself (IBA Annex 17 §A17.4.5).
struct Gid {
  std::array<uint8_t, 16> raw{};

  friend constexpr bool operator==(const Gid&, const Gid&) = default;
  constexpr bool is_ipv4_mapped() const {
    for (int i = 0; i < 10; ++i)
      if (raw[i]) return false;
    return raw[10] == 0xff && raw[11] == 0xff;
  }
  /// The IPv4 address in network order as host uint32 (a.b.c.d -> 0xaabbccdd).
  constexpr uint32_t ipv4() const {
    return (uint32_t{raw[12]} << 24) | (uint32_t{raw[13]} << 16) | (uint32_t{raw[14]} << 8) |
           raw[15];
  }
  static constexpr Gid from_ipv4(uint32_t addr) {
    Gid g;
    g.raw[10] = 0xff;
    g.raw[11] = 0xff;
    g.raw[12] = static_cast<uint8_t>(addr >> 24);
    g.raw[13] = static_cast<uint8_t>(addr >> 16);
    g.raw[14] = static_cast<uint8_t>(addr >> 8);
    g.raw[15] = static_cast<uint8_t>(addr);
    return g;
  }
  /// An IPv6 link-local address (fe80::/10).
  constexpr bool is_link_local() const { return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80; }
  constexpr bool is_zero() const {
    for (auto x : raw)
      if (x) return false;
    return true;
  }
  /// Text form: dotted quad for IPv4-mapped GIDs, RFC 5952 IPv6 text otherwise.
  std::string to_string() const;
  /// Parses an IPv4 or IPv6 address text into a GID; false on malformed input.
  static bool parse(const std::string& s, Gid* out);
};

/// The RoCE version of a GID table entry, as rdma-core's IBV_GID_TYPE_ROCE_V1 / _V2: the frames
/// a QP or AH whose source GID it is sends (RoCE v1: Ethernet + GRH; RoCEv2: IP + UDP 4791).
enum class GidType : uint8_t { kRoceV2, kRoceV1 };

/// The GID table a device shows for its addresses' RoCEv2 GIDs `v2` (index i = address i, zero =
/// a free slot): `v2` itself, and with roce_v1 the same entries again after them as RoCE v1
/// GIDs (index v2.size() + i), so that every RoCEv2 index is the same with or without them
/// (docs/configuration.md, [device] roce_v1).
std::vector<Gid> gid_table(const std::vector<Gid>& v2, bool roce_v1);

/// The type of entry i of a gid_table() whose RoCE v1 entries start at v1_base.
constexpr GidType gid_type_at(size_t i, size_t v1_base) {
  return i >= v1_base ? GidType::kRoceV1 : GidType::kRoceV2;
}

}  // namespace uroce
