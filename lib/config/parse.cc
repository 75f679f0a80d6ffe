/**
 * @file parse.cc
 * @brief TOML text -> Config, refusing every bad entry with one line
 * "<source>: device[<i>].<key>: <problem>; allowed: <values>" (docs/configuration.md).
 *
 * Keys are read in a fixed order so that a profile (profile.h) is applied after the DSCP map
 * it depends on and before the explicit ecn/pfc/dcqcn keys that override it. Units: mtu in
 * bytes, PFC thresholds in bytes, watchdog times in milliseconds.
 */
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/profile.h"

namespace uroce::config {

namespace {

constexpr std::string_view kDeviceKeys[] = {"name",          "port",
                                            "eal",           "netdev",
                                            "exclusive",     "addresses",
                                            "mtu",           "queues",
                                            "mac",           "neighbors",
                                            "profile",       "roce_dscp",
                                            "cnp_dscp",      "dscp_to_prio",
                                            "trust",         "pcp_to_prio",
                                            "vlan",          "ecn",
                                            "pfc",           "dcqcn",
                                            "loss_recovery", "congestion_control",
                                            "delay",         "peer_timestamps",
                                            "ooo_placement", "progress",
                                            "roce_v1",       "rxe_flush_icrc"};
constexpr int64_t kMaxBurstBytes = 16 << 20;  ///< [device.dcqcn] max_burst_bytes bound
constexpr std::string_view kPfcKeys[] = {"enabled",
                                         "xoff_bytes",
                                         "xon_bytes",
                                         "watchdog_detect_ms",
                                         "watchdog_restore_ms",
                                         "watchdog_ignore_pause"};
/// A TOML integer or float as a double; nullopt for any other type.
std::optional<double> number(const toml::node& v) {
  if (v.is_integer()) return static_cast<double>(v.as_integer()->get());
  if (v.is_floating_point()) return v.as_floating_point()->get();
  return std::nullopt;
}

constexpr std::string_view kMtuAllowed = "256, 512, 1024, 2048, 4096";
constexpr std::string_view kPortAllowed =
    "\"loopback\", a DPDK vdev string \"net_<pmd><n>[,key=value...]\" or a PCI address "
    "\"0000:03:00.0\"";

template <size_t N>
std::string join(const std::string_view (&names)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i) out += ", ";
    out += names[i].empty() ? "\"\"" : std::string(names[i]);
  }
  return out;
}

template <size_t N>
bool contains(const std::string_view (&names)[N], std::string_view k) {
  return std::find(std::begin(names), std::end(names), k) != std::end(names);
}

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

/// True for "dddd:bb:dd.f" or "bb:dd.f" (hex digits), the forms EAL's -a accepts.
bool is_pci_address(std::string_view s) {
  auto hex = [](std::string_view t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c));
    });
  };
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != s.size() || !hex(s.substr(dot + 1))) return false;
  std::string_view head = s.substr(0, dot);
  size_t c2 = head.rfind(':');
  if (c2 == std::string_view::npos || head.size() - c2 - 1 != 2 || !hex(head.substr(c2 + 1)))
    return false;
  std::string_view front = head.substr(0, c2);
  size_t c1 = front.rfind(':');
  if (c1 == std::string_view::npos) return front.size() == 2 && hex(front);
  return front.size() - c1 - 1 == 2 && hex(front.substr(c1 + 1)) && c1 == 4 &&
         hex(front.substr(0, 4));
}

/// The DPDK device name of a port string: up to the first comma.
std::string_view vdev_name(std::string_view port) { return port.substr(0, port.find(',')); }

class Parser {
 public:
  Parser(const std::string& source, std::string* err) : source_(source), err_(err) {}

  std::optional<Config> run(const std::string& text) {
    toml::table root;
    try {
      root = toml::parse(text, source_);
    } catch (const toml::parse_error& e) {
      std::ostringstream os;
      os << source_ << ": line " << e.source().begin.line << " column " << e.source().begin.column
         << ": TOML syntax: " << e.description() << "; allowed: TOML 1.0";
      set_err(os.str());
      return std::nullopt;
    }
    Config cfg;
    cfg.source = source_;
    for (auto&& [k, v] : root) {
      if (k.str() != "device")
        return fail(std::string(k.str()), "unknown key", "device ([[device]] tables)");
    }
    const toml::node* devs = root.get("device");
    if (!devs) return fail("device", "missing", "one or more [[device]] tables");
    const toml::array* arr = devs->as_array();
    if (!arr || !arr->is_array_of_tables() || arr->empty())
      return fail("device", std::string("is ") + std::string(type_name(*devs)),
                  "one or more [[device]] tables");
    for (size_t i = 0; i < arr->size(); ++i) {
      Device dev;
      dev.name = "uroce" + std::to_string(i);
      prefix_ = "device[" + std::to_string(i) + "].";
      if (!parse_device(*(*arr)[i].as_table(), &dev)) return std::nullopt;
      for (size_t j = 0; j < cfg.devices.size(); ++j) {
        if (cfg.devices[j].name == dev.name)
          return fail(
              "name",
              "\"" + dev.name + "\" is already the name of device[" + std::to_string(j) + "]",
              "a name unique in the file");
        if (!dev.netdev.empty() && cfg.devices[j].netdev == dev.netdev)
          return fail(
              "netdev",
              "\"" + dev.netdev + "\" is already the netdev of device[" + std::to_string(j) + "]",
              "one device per netdev");
        if (dev.netdev.empty() && dev.port != "loopback" &&
            vdev_name(cfg.devices[j].port) == vdev_name(dev.port))
          return fail("port",
                      "DPDK device \"" + std::string(vdev_name(dev.port)) +
                          "\" is already the port of device[" + std::to_string(j) + "]",
                      "one device per DPDK port");
      }
      cfg.devices.push_back(std::move(dev));
    }
    return cfg;
  }

 private:
  /// Stores the one error line; control characters (a quoted key or string may hold a
  /// newline) are written as \xNN so that the message stays one line.
  void set_err(const std::string& s) {
    if (!err_) return;
    err_->clear();
    for (unsigned char c : s) {
      if (c >= 0x20 && c != 0x7f) {
        err_->push_back(static_cast<char>(c));
      } else {
        static constexpr char kHex[] = "0123456789abcdef";
        *err_ += "\\x";
        err_->push_back(kHex[c >> 4]);
        err_->push_back(kHex[c & 15]);
      }
    }
  }
  std::nullopt_t fail(const std::string& key, const std::string& problem,
                      std::string_view allowed) {
    set_err(source_ + ": " + prefix_ + key + ": " + problem + "; allowed: " + std::string(allowed));
    return std::nullopt;
  }
  bool fail_b(const std::string& key, const std::string& problem, std::string_view allowed) {
    fail(key, problem, allowed);
    return false;
  }
  bool wrong_type(const std::string& key, const toml::node& n, std::string_view allowed) {
    return fail_b(key, std::string("is ") + std::string(type_name(n)), allowed);
  }

  bool get_string(const toml::table& t, const std::string& path, std::string_view key,
                  std::string_view allowed, std::string* out) {
    const toml::node* n = t.get(key);
    if (!n) return true;
    if (!n->is_string()) return wrong_type(path, *n, allowed);
    *out = n->as_string()->get();
    return true;
  }
  bool get_int(const toml::table& t, const std::string& path, std::string_view key, int64_t lo,
               int64_t hi, std::string_view allowed, int64_t* out) {
    const toml::node* n = t.get(key);
    if (!n) return true;
    if (!n->is_integer()) return wrong_type(path, *n, allowed);
    int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) return fail_b(path, std::to_string(v) + " is out of range", allowed);
    *out = v;
    return true;
  }
  bool get_bool(const toml::table& t, const std::string& path, std::string_view key, bool* out) {
    const toml::node* n = t.get(key);
    if (!n) return true;
    if (!n->is_boolean()) return wrong_type(path, *n, "true, false");
    *out = n->as_boolean()->get();
    return true;
  }

  bool parse_device(const toml::table& t, Device* dev) {
    for (auto&& [k, v] : t)
      if (!contains(kDeviceKeys, k.str()))
        return fail_b(std::string(k.str()), "unknown key", join(kDeviceKeys));

    constexpr std::string_view kNameAllowed = "1..63 characters of [A-Za-z0-9_-]";
    if (!get_string(t, "name", "name", kNameAllowed, &dev->name)) return false;
    if (dev->name.empty() || dev->name.size() > 63 ||
        !std::all_of(dev->name.begin(), dev->name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        }))
      return fail_b("name", "\"" + dev->name + "\" is not a valid device name", kNameAllowed);

    if (!parse_netdev(t, dev)) return false;
    if (!get_string(t, "port", "port", kPortAllowed, &dev->port)) return false;
    if (dev->netdev.empty() && dev->port != "loopback" && !is_pci_address(dev->port) &&
        !(dev->port.rfind("net_", 0) == 0 && vdev_name(dev->port).size() > 4))
      return fail_b("port", "\"" + dev->port + "\" is not a port", kPortAllowed);

    if (const toml::node* n = t.get("eal")) {
      constexpr std::string_view kEalAllowed = "an array of strings (EAL arguments)";
      const toml::array* a = n->as_array();
      if (!a) return wrong_type("eal", *n, kEalAllowed);
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& e = *a->get(i);
        if (!e.is_string()) return wrong_type("eal[" + std::to_string(i) + "]", e, kEalAllowed);
        const std::string& s = e.as_string()->get();
        if (s.rfind("--file-prefix", 0) == 0)
          return fail_b("eal[" + std::to_string(i) + "]",
                        "the driver chooses --file-prefix itself (one per process)",
                        "EAL arguments other than --file-prefix");
        dev->eal.push_back(s);
      }
    }

    if (dev->netdev.empty() && !parse_addresses(t, dev)) return false;

    int64_t mtu = dev->mtu;
    if (!get_int(t, "mtu", "mtu", 256, 4096, kMtuAllowed, &mtu)) return false;
    if (mtu & (mtu - 1))
      return fail_b("mtu", std::to_string(mtu) + " is not a power of two", kMtuAllowed);
    dev->mtu = static_cast<uint32_t>(mtu);

    int64_t queues = dev->queues;
    if (!get_int(t, "queues", "queues", 1, 16, "1..16", &queues)) return false;
    dev->queues = static_cast<uint16_t>(queues);

    constexpr std::string_view kMacAllowed = "a unicast MAC \"02:00:00:00:00:01\"";
    std::string mac_text;
    if (!get_string(t, "mac", "mac", kMacAllowed, &mac_text)) return false;
    if (t.get("mac")) {
      MacAddr m;
      if (!MacAddr::parse(mac_text, &m))
        return fail_b("mac", "\"" + mac_text + "\" is not a MAC address", kMacAllowed);
      if (m.is_zero() || (m.b[0] & 1))
        return fail_b("mac", "\"" + mac_text + "\" is not a unicast MAC address", kMacAllowed);
      dev->mac = m;
    }

    if (!parse_neighbors(t, dev)) return false;

    if (!get_string(t, "profile", "profile", join(kProfileNames), &dev->profile)) return false;
    if (!contains(kProfileNames, dev->profile))
      return fail_b("profile", "\"" + dev->profile + "\" is not a profile", join(kProfileNames));

    int64_t v = dev->roce_dscp;
    if (!get_int(t, "roce_dscp", "roce_dscp", 0, 63, "0..63", &v)) return false;
    dev->roce_dscp = static_cast<uint8_t>(v);
    v = dev->cnp_dscp;
    if (!get_int(t, "cnp_dscp", "cnp_dscp", 0, 63, "0..63", &v)) return false;
    dev->cnp_dscp = static_cast<uint8_t>(v);
    if (!parse_prio_map(t, "dscp_to_prio", "DSCP", dev->dscp_to_prio)) return false;
    if (!parse_prio_map(t, "pcp_to_prio", "PCP", dev->pcp_to_prio)) return false;
    constexpr std::string_view kTrustAllowed = "\"dscp\", \"pcp\"";
    std::string trust = "dscp";
    if (!get_string(t, "trust", "trust", kTrustAllowed, &trust)) return false;
    if (trust != "dscp" && trust != "pcp")
      return fail_b("trust", "\"" + trust + "\" is not a trust mode", kTrustAllowed);
    dev->trust = trust == "pcp" ? Device::Trust::kPcp : Device::Trust::kDscp;
    if (t.get("vlan")) {
      int64_t vid = 0;
      if (!get_int(t, "vlan", "vlan", 0, 4094, "0..4094 (0 = priority-tagged)", &vid)) return false;
      dev->vlan = static_cast<uint16_t>(vid);
    }

    apply_profile(dev->profile, dev);

    if (!get_bool(t, "ecn", "ecn", &dev->ecn)) return false;
    if (!get_bool(t, "roce_v1", "roce_v1", &dev->roce_v1)) return false;
    if (!get_bool(t, "rxe_flush_icrc", "rxe_flush_icrc", &dev->rxe_flush_icrc)) return false;
    // Host mode's XDP steering and uroce-hostd take RoCEv2 frames only: RoCE v1 ones would go
    // to the kernel.
    if (dev->roce_v1 && !dev->netdev.empty())
      return fail_b("roce_v1", "not supported with netdev (host mode receives RoCEv2 only)",
                    "false with netdev");
    if (!parse_recovery_and_cc(t, dev)) return false;
    if (!get_bool(t, "peer_timestamps", "peer_timestamps", &dev->peer_timestamps)) return false;
    if (!get_bool(t, "ooo_placement", "ooo_placement", &dev->ooo_placement)) return false;
    if (!parse_pfc(t, dev)) return false;
    if (!parse_delay(t, dev)) return false;
    if (!parse_progress(t, dev)) return false;
    return parse_dcqcn(t, dev);
  }

  /// loss_recovery and congestion_control: after the profile, which sets both.
  bool parse_recovery_and_cc(const toml::table& t, Device* dev) {
    constexpr std::string_view kRecoveryAllowed = "\"go-back-n\", \"selective\"";
    std::string rec(to_string(dev->loss_recovery));
    if (!get_string(t, "loss_recovery", "loss_recovery", kRecoveryAllowed, &rec)) return false;
    if (rec != "go-back-n" && rec != "selective")
      return fail_b("loss_recovery", "\"" + rec + "\" is not a loss recovery", kRecoveryAllowed);
    dev->loss_recovery =
        rec == "selective" ? Device::LossRecovery::kSelective : Device::LossRecovery::kGoBackN;
    constexpr std::string_view kCcAllowed = "\"dcqcn\", \"delay\", \"dcqcn+delay\", \"off\"";
    std::string cc(to_string(dev->congestion_control));
    if (!get_string(t, "congestion_control", "congestion_control", kCcAllowed, &cc)) return false;
    for (size_t i = 0; i < std::size(kCcAlgorithmNames); ++i)
      if (cc == kCcAlgorithmNames[i]) {
        dev->congestion_control = static_cast<CcAlgorithm>(i);
        return true;
      }
    return fail_b("congestion_control", "\"" + cc + "\" is not a congestion control", kCcAllowed);
  }

  /// One key of a table of numbers: its range, whether the low end is excluded, whether it
  /// takes whole numbers only, and the allowed text of its errors.
  struct NumberKey {
    std::string_view name;
    double lo, hi;
    bool lo_open, whole;
    std::string_view allowed;
  };

  /// [device.<table>]: numbers, each in its range; store(i, value) takes each one, i its index
  /// in keys.
  template <size_t N, typename Store>
  bool parse_numbers(const toml::table& t, const std::string& table, const NumberKey (&keys)[N],
                     Store&& store) {
    const toml::node* n = t.get(table);
    if (!n) return true;
    const toml::table* tt = n->as_table();
    if (!tt) return wrong_type(table, *n, "a table [device." + table + "]");
    std::string allowed_keys;
    for (const NumberKey& k : keys)
      allowed_keys += (allowed_keys.empty() ? "" : ", ") + std::string(k.name);
    for (auto&& [k, v] : *tt) {
      std::string ks(k.str());
      const NumberKey* key = nullptr;
      for (const NumberKey& c : keys)
        if (c.name == ks) key = &c;
      if (!key) return fail_b(table + "." + ks, "unknown key", allowed_keys);
      std::optional<double> x = number(v);
      if (!x) return wrong_type(table + "." + ks, v, key->allowed);
      if (!(key->lo_open ? *x > key->lo : *x >= key->lo) || !(*x <= key->hi) ||
          (key->whole && *x != std::floor(*x)))
        return fail_b(table + "." + ks, "is out of range", key->allowed);
      store(static_cast<size_t>(key - keys), *x);
    }
    return true;
  }

  /// [device.delay]: numbers, each in its range.
  bool parse_delay(const toml::table& t, Device* dev) {
    static constexpr NumberKey keys[] = {
        {"target_queue_us", 0, 1e6, true, false, "a number of µs in (0, 1000000]"},
        {"base_rtt_us", 0, 1e6, false, false, "a number of µs in [0, 1000000]"},
        {"ai_mbps", 0, 1e6, false, false, "a number of Mb/s in [0, 1000000]"},
        {"beta", 0, 1, true, false, "a number in (0, 1]"},
        {"max_mdf", 0, 0.999, true, false, "a number in (0, 0.999]"},
        {"min_rate_mbps", 0, 1e6, false, false, "a number of Mb/s in [0, 1000000]"}};
    // The fields keys[i] names, in the same order.
    static constexpr double Delay::*fields[] = {&Delay::target_queue_us, &Delay::base_rtt_us,
                                                &Delay::ai_mbps,         &Delay::beta,
                                                &Delay::max_mdf,         &Delay::min_rate_mbps};
    static_assert(std::size(fields) == std::size(keys));
    return parse_numbers(t, "delay", keys, [&](size_t i, double x) { dev->delay.*fields[i] = x; });
  }

  /// [device.progress]: numbers, each in its range (whole numbers for counts).
  bool parse_progress(const toml::table& t, Device* dev) {
    static constexpr NumberKey keys[] = {
        {"spin_rounds", 0, 100000, false, true, "a whole number in [0, 100000]"},
        {"yield_rounds", 0, 10000, false, true, "a whole number in [0, 10000]"},
        {"max_sleep_us", 1, 64, false, false, "a number of µs in [1, 64]"},
        {"app_driving_us", 0, 1e6, false, false, "a number of µs in [0, 1000000]"},
        {"follow_up_us", 0, 1e7, false, false, "a number of µs in [0, 10000000]"},
        {"follow_up_sleep_us", 1, 1e4, false, false, "a number of µs in [1, 10000]"},
        {"driving_max_sleep_us", 1, 1e6, false, false, "a number of µs in [1, 1000000]"},
        {"rx_burst", 1, 1024, false, true, "a whole number in [1, 1024]"},
        {"drive_rounds", 1, 64, false, true, "a whole number in [1, 64]"},
        {"post_rx_gap_us", 0, 1e6, false, false, "a number of µs in [0, 1000000]"},
        {"slice_us", 0, 1e5, false, false, "a number of µs in [0, 100000]"}};
    return parse_numbers(t, "progress", keys,
                         [&](size_t i, double x) { dev->progress[std::string(keys[i].name)] = x; });
  }

  /// `netdev`: the device is bound to a kernel network interface (host mode). Its port,
  /// addresses, MAC and neighbours are the kernel's, so those keys are refused beside it.
  bool parse_netdev(const toml::table& t, Device* dev) {
    constexpr std::string_view kAllowed = "a network interface name (1..15 characters, no '/')";
    if (!get_string(t, "netdev", "netdev", kAllowed, &dev->netdev)) return false;
    if (!get_bool(t, "exclusive", "exclusive", &dev->exclusive)) return false;
    if (!t.get("netdev")) {
      if (dev->exclusive)
        return fail_b("exclusive", "only with netdev (a DPDK port is always one process's)",
                      "netdev = \"IF\" beside it, or no exclusive");
      return true;
    }
    if (dev->netdev.empty() || dev->netdev.size() > 15 || dev->netdev == "." ||
        dev->netdev == ".." || std::any_of(dev->netdev.begin(), dev->netdev.end(), [](char c) {
          return c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) ||
                 !std::isprint(static_cast<unsigned char>(c));
        }))
      return fail_b("netdev", "\"" + dev->netdev + "\" is not an interface name", kAllowed);
    for (std::string_view k : {"port", "addresses", "mac", "neighbors"})
      if (t.get(k))
        return fail_b(std::string(k),
                      "not allowed with netdev (the kernel's interface supplies it)",
                      "netdev alone, or port + addresses without netdev");
    dev->port = "netdev:" + dev->netdev;
    return true;
  }

  bool parse_addresses(const toml::table& t, Device* dev) {
    constexpr std::string_view kAllowed =
        "a non-empty array of \"a.b.c.d/len\" (len 0..32) or \"ipv6/len\" (len 0..128)";
    const toml::node* n = t.get("addresses");
    if (!n) return fail_b("addresses", "missing", kAllowed);
    const toml::array* a = n->as_array();
    if (!a) return wrong_type("addresses", *n, kAllowed);
    if (a->empty()) return fail_b("addresses", "is empty", kAllowed);
    for (size_t i = 0; i < a->size(); ++i) {
      std::string key = "addresses[" + std::to_string(i) + "]";
      const toml::node& e = *a->get(i);
      if (!e.is_string()) return wrong_type(key, e, kAllowed);
      const std::string& s = e.as_string()->get();
      size_t slash = s.find('/');
      Address addr;
      if (!Gid::parse(s.substr(0, slash), &addr.gid))
        return fail_b(key, "\"" + s + "\" is not an IP address", kAllowed);
      int max_len = addr.is_ipv4() ? 32 : 128;
      int len = max_len;
      if (slash != std::string::npos) {
        std::string p = s.substr(slash + 1);
        char* end = nullptr;
        long l = std::strtol(p.c_str(), &end, 10);
        if (p.empty() || *end || !std::isdigit(static_cast<unsigned char>(p[0])) || l < 0 ||
            l > max_len)
          return fail_b(key, "\"" + s + "\" has a bad prefix length", kAllowed);
        len = static_cast<int>(l);
      }
      bool unusable = addr.is_ipv4() ? (addr.gid.ipv4() == 0 || addr.gid.ipv4() >= 0xe0000000u)
                                     : (addr.gid.is_zero() || addr.gid.raw[0] == 0xff);
      if (unusable) return fail_b(key, "\"" + s + "\" is not a unicast address", kAllowed);
      addr.prefix = static_cast<uint8_t>(len);
      for (const Address& other : dev->addresses)
        if (other.gid == addr.gid)
          return fail_b(key, "\"" + s + "\" is listed twice", "each address once");
      dev->addresses.push_back(addr);
    }
    return true;
  }

  bool parse_neighbors(const toml::table& t, Device* dev) {
    constexpr std::string_view kAllowed = "a table { \"<ip address>\" = \"<unicast MAC>\" }";
    const toml::node* n = t.get("neighbors");
    if (!n) return true;
    const toml::table* nt = n->as_table();
    if (!nt) return wrong_type("neighbors", *n, kAllowed);
    for (auto&& [k, v] : *nt) {
      std::string key = "neighbors.\"" + std::string(k.str()) + "\"";
      Gid ip;
      if (!Gid::parse(std::string(k.str()), &ip))
        return fail_b(key, "\"" + std::string(k.str()) + "\" is not an IP address", kAllowed);
      if (!v.is_string()) return wrong_type(key, v, kAllowed);
      MacAddr m;
      if (!MacAddr::parse(v.as_string()->get(), &m) || m.is_zero() || (m.b[0] & 1))
        return fail_b(key, "\"" + v.as_string()->get() + "\" is not a unicast MAC address",
                      kAllowed);
      dev->neighbors[ip.to_string()] = m;
    }
    return true;
  }

  /// A code -> priority map: `key` = { "<code>" = <prio> } or an array of N priorities.
  template <size_t N>
  bool parse_prio_map(const toml::table& t, const std::string& key, std::string_view code,
                      std::array<uint8_t, N>& map) {
    const std::string allowed = "a table { \"<" + std::string(code) + " 0.." +
                                std::to_string(N - 1) + ">\" = <priority 0..7> } or an array of " +
                                std::to_string(N) + " priorities 0..7";
    const toml::node* n = t.get(key);
    if (!n) return true;
    auto set = [&](const std::string& k, const toml::node& v, size_t i) {
      if (!v.is_integer()) return wrong_type(k, v, allowed);
      int64_t p = v.as_integer()->get();
      if (p < 0 || p > 7) return fail_b(k, std::to_string(p) + " is out of range", allowed);
      map[i] = static_cast<uint8_t>(p);
      return true;
    };
    if (const toml::array* a = n->as_array()) {
      if (a->size() != N)
        return fail_b(key, "has " + std::to_string(a->size()) + " entries", allowed);
      for (size_t i = 0; i < N; ++i)
        if (!set(key + "[" + std::to_string(i) + "]", *a->get(i), i)) return false;
      return true;
    }
    const toml::table* mt = n->as_table();
    if (!mt) return wrong_type(key, *n, allowed);
    for (auto&& [k, v] : *mt) {
      std::string ks(k.str());
      std::string path = key + ".\"" + ks + "\"";
      char* end = nullptr;
      long i = std::strtol(ks.c_str(), &end, 10);
      if (ks.empty() || *end || !std::isdigit(static_cast<unsigned char>(ks[0])) ||
          i >= static_cast<long>(N))
        return fail_b(path, "\"" + ks + "\" is not a " + std::string(code), allowed);
      if (!set(path, v, static_cast<size_t>(i))) return false;
    }
    return true;
  }

  bool parse_pfc(const toml::table& t, Device* dev) {
    const toml::node* n = t.get("pfc");
    if (!n) return true;
    const toml::table* pt = n->as_table();
    if (!pt) return wrong_type("pfc", *n, "a table [device.pfc]");
    for (auto&& [k, v] : *pt)
      if (!contains(kPfcKeys, k.str()))
        return fail_b("pfc." + std::string(k.str()), "unknown key", join(kPfcKeys));
    Pfc& pfc = dev->pfc;
    if (const toml::node* e = pt->get("enabled")) {
      constexpr std::string_view kAllowed = "an array of priorities 0..7";
      const toml::array* a = e->as_array();
      if (!a) return wrong_type("pfc.enabled", *e, kAllowed);
      pfc.enabled = {};
      for (size_t i = 0; i < a->size(); ++i) {
        std::string key = "pfc.enabled[" + std::to_string(i) + "]";
        const toml::node& p = *a->get(i);
        if (!p.is_integer()) return wrong_type(key, p, kAllowed);
        int64_t prio = p.as_integer()->get();
        if (prio < 0 || prio > 7)
          return fail_b(key, std::to_string(prio) + " is out of range", kAllowed);
        pfc.enabled[prio] = true;
      }
    }
    constexpr int64_t kMaxU32 = 0xffffffff;
    int64_t v = pfc.xoff_bytes;
    if (!get_int(*pt, "pfc.xoff_bytes", "xoff_bytes", 0, kMaxU32, "0..4294967295 bytes", &v))
      return false;
    pfc.xoff_bytes = static_cast<uint32_t>(v);
    v = pfc.xon_bytes;
    if (!get_int(*pt, "pfc.xon_bytes", "xon_bytes", 0, kMaxU32, "0..4294967295 bytes", &v))
      return false;
    pfc.xon_bytes = static_cast<uint32_t>(v);
    if (pfc.xoff_bytes && pfc.xon_bytes > pfc.xoff_bytes)
      return fail_b(
          "pfc.xon_bytes",
          std::to_string(pfc.xon_bytes) + " is above xoff_bytes " + std::to_string(pfc.xoff_bytes),
          "0..xoff_bytes");
    v = pfc.watchdog_detect_ms;
    if (!get_int(*pt, "pfc.watchdog_detect_ms", "watchdog_detect_ms", 1, 60000, "1..60000 ms", &v))
      return false;
    pfc.watchdog_detect_ms = static_cast<uint32_t>(v);
    v = pfc.watchdog_restore_ms;
    if (!get_int(*pt, "pfc.watchdog_restore_ms", "watchdog_restore_ms", 1, 600000, "1..600000 ms",
                 &v))
      return false;
    pfc.watchdog_restore_ms = static_cast<uint32_t>(v);
    return get_bool(*pt, "pfc.watchdog_ignore_pause", "watchdog_ignore_pause",
                    &pfc.watchdog_ignore_pause);
  }

  bool parse_dcqcn(const toml::table& t, Device* dev) {
    const toml::node* n = t.get("dcqcn");
    if (!n) return true;
    const toml::table* dt = n->as_table();
    if (!dt) return wrong_type("dcqcn", *n, "a table [device.dcqcn]");
    std::string allowed_keys = "enabled, mode, max_burst_bytes, " + join(kDcqcnParamNames);
    for (auto&& [k, v] : *dt) {
      std::string ks(k.str());
      if (ks == "enabled" || ks == "mode" || ks == "max_burst_bytes") continue;
      if (!contains(kDcqcnParamNames, ks))
        return fail_b("dcqcn." + ks, "unknown key", allowed_keys);
      std::optional<double> x = number(v);
      if (!x) return wrong_type("dcqcn." + ks, v, "a number >= 0");
      if (!(*x >= 0)) return fail_b("dcqcn." + ks, "is negative", "a number >= 0");
      dev->dcqcn.params[ks] = *x;
    }
    if (!get_bool(*dt, "dcqcn.enabled", "enabled", &dev->dcqcn.enabled)) return false;
    int64_t burst = dev->dcqcn.max_burst_bytes;
    if (!get_int(*dt, "dcqcn.max_burst_bytes", "max_burst_bytes", 0, kMaxBurstBytes,
                 "0..16777216 bytes", &burst))
      return false;
    dev->dcqcn.max_burst_bytes = static_cast<uint32_t>(burst);
    if (!get_string(*dt, "dcqcn.mode", "mode", "\"nvidia\", \"paper\"", &dev->dcqcn.mode))
      return false;
    if (dev->dcqcn.mode != "nvidia" && dev->dcqcn.mode != "paper")
      return fail_b("dcqcn.mode", "\"" + dev->dcqcn.mode + "\" is not a mode",
                    "\"nvidia\", \"paper\"");
    return true;
  }

  const std::string& source_;
  std::string* err_;
  std::string prefix_;  ///< "device[i]." while a device is parsed
};

}  // namespace

std::optional<Config> parse(const std::string& text, const std::string& source, std::string* err) {
  return Parser(source, err).run(text);
}

}  // namespace uroce::config
