/**
 * @file profile_edit.cc
 * @brief Line-preserving TOML edits for `uroce profile apply` (profile_edit.h).
 *
 * The text is split into logical entries (one key with its possibly multi-line value, a
 * comment, a blank line, or a table header) grouped into tables. Only the managed keys of the
 * targeted [[device]] blocks are removed and written again; everything else is copied.
 */
#include "profile_edit.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "config/config.h"
#include "config/profile.h"
#include "stats/summary.h"

namespace uroce::tool {

namespace {

/// One logical entry: a key (with its whole value) or anything else, as raw text lines.
struct Entry {
  std::string text;  ///< the lines, each ending in '\n'
  std::string key;   ///< the key for key = value entries, else empty
  bool blank = false;
};

/// One table: its header entry (empty for the part before the first header) and entries.
struct Table {
  std::string name;    ///< "" (top), "device" ([[device]]), "device.pfc", "device.dcqcn", ...
  std::string header;  ///< the header line(s)
  std::vector<Entry> entries;
  int block = -1;  ///< index of the [[device]] block it belongs to, -1 outside
};

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

/// Net bracket depth change of one line, skipping strings and a trailing comment.
int bracket_delta(std::string_view line) {
  int d = 0;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'')
      quote = c;
    else if (c == '#')
      break;
    else if (c == '[' || c == '{')
      ++d;
    else if (c == ']' || c == '}')
      --d;
  }
  return d;
}

std::vector<Table> split(const std::string& text) {
  std::vector<Table> tables(1);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos) + "\n");
    pos = nl + 1;
  }
  int block = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string t = trim(lines[i]);
    if (!t.empty() && t[0] == '[') {
      Table tb;
      bool array = t.rfind("[[", 0) == 0;
      size_t close = t.find(']');
      tb.name =
          trim(t.substr(array ? 2 : 1, close == std::string::npos ? 0 : close - (array ? 2 : 1)));
      if (tb.name.size() >= 2 && tb.name.front() == '"')
        tb.name = tb.name.substr(1, tb.name.size() - 2);
      tb.header = lines[i];
      if (array && tb.name == "device") ++block;
      tb.block = (tb.name == "device" || tb.name.rfind("device.", 0) == 0) ? block : -1;
      tables.push_back(std::move(tb));
      continue;
    }
    Entry e;
    e.text = lines[i];
    e.blank = t.empty();
    if (!t.empty() && t[0] != '#') {
      size_t eq = t.find('=');
      e.key = trim(t.substr(0, eq == std::string::npos ? t.size() : eq));
      if (e.key.size() >= 2 && e.key.front() == '"') e.key = e.key.substr(1, e.key.size() - 2);
      int depth = bracket_delta(t);
      while (depth > 0 && i + 1 < lines.size()) {
        e.text += lines[++i];
        depth += bracket_delta(lines[i]);
      }
    }
    tables.back().entries.push_back(std::move(e));
  }
  return tables;
}

std::string line(const std::string& kv, std::string_view comment) {
  return fmt::format("{:<32}# {}\n", kv + " ", comment);
}

std::string prio_list(const std::array<bool, 8>& on) {
  std::string s = "[";
  for (int p = 0; p < 8; ++p)
    if (on[p]) s += (s.size() > 1 ? ", " : "") + std::to_string(p);
  return s + "]";
}

/// DCQCN knobs some profile tunes: applying any profile writes or removes them.
std::set<std::string> tuned_params() {
  std::set<std::string> out;
  for (const ProfileInfo& p : profiles()) {
    config::Device d;
    config::apply_profile(p.name, &d);
    for (const auto& [k, v] : d.dcqcn.params) out.insert(k);
  }
  return out;
}

std::string_view param_comment(std::string_view name) {
  if (name == "rpg_time_reset") return "DCQCN rate-increase timer, us (firmware default 300)";
  if (name == "rpg_ai_rate") return "DCQCN additive increase step, Mb/s (firmware default 5)";
  if (name == "min_time_between_cnps") return "at most one CNP per QP per this many us (default 4)";
  return "DCQCN parameter set by the profile";
}

struct Managed {
  std::vector<std::string> main, pfc, dcqcn;
};

/// The managed entries for profile `name` on device `dev` (as parsed, before the profile).
Managed managed_entries(std::string_view name, const config::Device& parsed) {
  config::Device d = parsed;
  d.dcqcn.params.clear();
  config::apply_profile(name, &d);
  int prio = d.dscp_to_prio[d.roce_dscp & 63] & 7;
  std::string tag = fmt::format("profile {}: ", name);
  std::string summary;
  for (const ProfileInfo& p : profiles())
    if (p.name == name) summary = std::string(p.summary);
  Managed m;
  m.main.push_back(line(fmt::format("profile = \"{}\"", name), "uroce profile: " + summary));
  m.main.push_back(line(fmt::format("ecn = {}", d.ecn ? "true" : "false"),
                        tag + "send RoCE data as ECT(0) so switches mark CE instead of dropping"));
  m.main.push_back(
      line(fmt::format("congestion_control = \"{}\"", to_string(d.congestion_control)),
           tag + (d.congestion_control == CcAlgorithm::kDcqcnDelay
                      ? "DCQCN where switches mark ECN, the delay-based control where they do not"
                      : "senders react to CNPs (DCQCN)")));
  m.main.push_back(
      line(fmt::format("loss_recovery = \"{}\"", config::to_string(d.loss_recovery)),
           tag + (d.loss_recovery == config::Device::LossRecovery::kSelective
                      ? "selective repeat: every RC peer must be a uroce saying the same"
                      : "IBA go-back-N, what every RoCE peer speaks")));
  m.main.push_back(
      line(fmt::format("peer_timestamps = {}", d.peer_timestamps ? "true" : "false"),
           tag + (d.peer_timestamps ? "round trips from timestamps both uroce peers carry"
                                    : "round trips timed by the sender alone")));
  bool lossless = d.pfc.enabled[prio];
  m.pfc.push_back(line("enabled = " + prio_list(d.pfc.enabled),
                       lossless ? tag + fmt::format("PFC (802.1Qbb) on priority {}, the RoCE data "
                                                    "priority (DSCP {})",
                                                    prio, d.roce_dscp)
                                : tag + "no PFC: losses are repaired by retransmission"));
  m.pfc.push_back(line(fmt::format("xoff_bytes = {}", d.pfc.xoff_bytes),
                       tag + "RX backlog in bytes at which this host sends XOFF (0 = never)"));
  m.pfc.push_back(line(fmt::format("xon_bytes = {}", d.pfc.xon_bytes),
                       tag + "RX backlog in bytes at which it sends XON again"));
  m.dcqcn.push_back(line(fmt::format("enabled = {}", d.dcqcn.enabled ? "true" : "false"),
                         tag + "DCQCN cuts a QP's rate on CNPs and recovers it on timers"));
  m.dcqcn.push_back(line("mode = \"nvidia\"", tag + "ConnectX firmware algorithm and defaults"));
  for (const auto& [k, v] : d.dcqcn.params)
    m.dcqcn.push_back(line(fmt::format("{} = {:g}", k, v), tag + std::string(param_comment(k))));
  return m;
}

void drop_trailing_blanks(std::vector<Entry>* es) {
  while (!es->empty() && es->back().blank) es->pop_back();
}

void append(std::vector<Entry>* es, const std::vector<std::string>& lines) {
  drop_trailing_blanks(es);
  for (const std::string& l : lines) es->push_back(Entry{l, "", false});
  es->push_back(Entry{"\n", "", true});
}

}  // namespace

const std::vector<ProfileInfo>& profiles() {
  static const std::vector<ProfileInfo> kProfiles = {
      {"lossless",
       "PFC on the RoCE priority (3), ECN on, DCQCN with NVIDIA defaults, CNPs on priority 6"},
      {"lossy",
       "no PFC; ECN on; DCQCN where switches mark ECN, the delay-based control where they do not; "
       "selective repeat (uroce peers only)"},
      {"hpc",
       "lossless plus faster DCQCN recovery for low latency (rpg_time_reset 100, rpg_ai_rate 20, "
       "min_time_between_cnps 0)"},
      {"storage",
       "lossless with deeper PFC thresholds for large bursts (xoff 256 KiB, xon 128 KiB)"},
  };
  return kProfiles;
}

bool is_profile(std::string_view name) {
  for (const ProfileInfo& p : profiles())
    if (p.name == name) return true;
  return false;
}

bool edit_devices(const std::string& text, const std::string& source, const std::string& device,
                  const std::function<std::vector<KeyEdit>(const config::Device&)>& edits_for,
                  std::string* out, std::string* err) {
  std::optional<config::Config> cfg = config::parse(text, source, err);
  if (!cfg) return false;
  std::vector<Table> tables = split(text);
  int blocks = 0;
  for (const Table& t : tables) blocks = std::max(blocks, t.block + 1);
  if (blocks != static_cast<int>(cfg->devices.size())) {
    *err = source + ": cannot edit: the [[device]] tables are not written as [[device]] headers";
    return false;
  }
  std::vector<std::vector<KeyEdit>> edits(cfg->devices.size());
  bool any = false;
  for (size_t i = 0; i < cfg->devices.size(); ++i)
    if (device.empty() || cfg->devices[i].name == device) {
      edits[i] = edits_for(cfg->devices[i]);
      any = true;
    }
  if (!any) {
    *err = source + ": no device named \"" + device + "\"";
    return false;
  }
  // The keys to remove and the lines to append, per (block, table name).
  auto touched = [&](int b, const std::string& table) {
    std::vector<const KeyEdit*> v;
    if (b >= 0)
      for (const KeyEdit& e : edits[b])
        if (e.table == table) v.push_back(&e);
    return v;
  };
  auto lines_of = [](const std::vector<const KeyEdit*>& v) {
    std::vector<std::string> l;
    for (const KeyEdit* e : v)
      if (!e->line.empty()) l.push_back(e->line);
    return l;
  };
  std::vector<Table> result;
  for (size_t ti = 0; ti < tables.size(); ++ti) {
    Table t = tables[ti];
    const int b = t.block;
    if (b < 0 || edits[b].empty()) {
      result.push_back(std::move(t));
      continue;
    }
    if (t.name == "device") {
      for (const Entry& e : t.entries)
        if (e.key == "pfc" || e.key == "dcqcn" || e.key.rfind("pfc.", 0) == 0 ||
            e.key.rfind("dcqcn.", 0) == 0) {
          *err = fmt::format(
              "{}: device[{}].{}: written inline; move it to a [device.{}] "
              "table so uroce can edit it",
              source, b, e.key, e.key.substr(0, e.key.find('.')));
          return false;
        }
    }
    const std::vector<const KeyEdit*> mine = touched(b, t.name);
    if (!mine.empty()) {
      std::erase_if(t.entries, [&](const Entry& e) {
        return !e.key.empty() && std::any_of(mine.begin(), mine.end(),
                                             [&](const KeyEdit* k) { return k->key == e.key; });
      });
      const std::vector<std::string> add = lines_of(mine);
      if (!add.empty()) append(&t.entries, add);
    }
    result.push_back(std::move(t));
    const bool last_of_block = ti + 1 == tables.size() || tables[ti + 1].block != b;
    if (!last_of_block) continue;
    // Sub-tables this block lacks get created after its last table.
    std::set<std::string> present;
    for (const Table& x : tables)
      if (x.block == b) present.insert(x.name);
    std::vector<std::string> missing;
    for (const KeyEdit& e : edits[b])
      if (!present.count(e.table) &&
          std::find(missing.begin(), missing.end(), e.table) == missing.end())
        missing.push_back(e.table);
    for (const std::string& name : missing) {
      const std::vector<std::string> add = lines_of(touched(b, name));
      if (add.empty()) continue;
      Table n{name, "[" + name + "]\n", {}, b};
      append(&n.entries, add);
      drop_trailing_blanks(&result.back().entries);
      result.back().entries.push_back(Entry{"\n", "", true});
      result.push_back(std::move(n));
    }
  }
  std::string s;
  for (const Table& t : result) {
    s += t.header;
    for (const Entry& e : t.entries) s += e.text;
  }
  while (s.size() >= 2 && s[s.size() - 1] == '\n' && s[s.size() - 2] == '\n') s.pop_back();
  if (!s.empty() && s.back() != '\n') s += '\n';
  std::string verr;
  if (!config::parse(s, source, &verr)) {
    *err = "internal error: the edited configuration does not validate: " + verr;
    return false;
  }
  *out = std::move(s);
  return true;
}

bool apply_profile_text(const std::string& text, const std::string& source, std::string_view name,
                        const std::string& device, std::string* out, std::string* err) {
  if (!is_profile(name)) {
    *err =
        fmt::format("unknown profile \"{}\"; known profiles: lossless, lossy, hpc, storage", name);
    return false;
  }
  const std::set<std::string> tuned = tuned_params();
  auto edits_for = [&](const config::Device& dev) {
    std::vector<KeyEdit> e;
    auto drop = [&](const char* table, const std::string& key) {
      e.push_back(KeyEdit{table, key, ""});
    };
    for (const char* k :
         {"profile", "ecn", "congestion_control", "loss_recovery", "peer_timestamps"})
      drop("device", k);
    for (const char* k : {"enabled", "xoff_bytes", "xon_bytes"}) drop("device.pfc", k);
    for (const char* k : {"enabled", "mode"}) drop("device.dcqcn", k);
    for (const std::string& k : tuned) drop("device.dcqcn", k);
    const Managed m = managed_entries(name, dev);
    auto set = [&](const char* table, const std::vector<std::string>& lines) {
      for (const std::string& l : lines)
        e.push_back(KeyEdit{table, trim(l.substr(0, l.find('='))), l});
    };
    set("device", m.main);
    set("device.pfc", m.pfc);
    set("device.dcqcn", m.dcqcn);
    return e;
  };
  std::string s;
  if (!edit_devices(text, source, device, edits_for, &s, err)) return false;
  std::string verr;
  std::optional<config::Config> check = config::parse(s, source, &verr);
  for (size_t i = 0; check && i < check->devices.size(); ++i)
    if ((device.empty() || check->devices[i].name == device) && check->devices[i].profile != name) {
      *err = "internal error: the edited configuration does not select the profile";
      return false;
    }
  *out = std::move(s);
  return true;
}

std::string profile_snippet(std::string_view name) {
  config::Device d;
  Managed m = managed_entries(name, d);
  std::string s = "[[device]]\n";
  for (const auto& l : m.main) s += l;
  s += "\n[device.pfc]\n";
  for (const auto& l : m.pfc) s += l;
  s += "\n[device.dcqcn]\n";
  for (const auto& l : m.dcqcn) s += l;
  return s;
}

std::vector<std::string> effective_diff(const std::string& before, const std::string& after,
                                        const std::string& source) {
  std::vector<std::string> out;
  std::string err;
  auto a = config::parse(before, source, &err);
  auto b = config::parse(after, source, &err);
  if (!a || !b) return out;
  auto mask = [](uint8_t m) {
    std::string s = "[";
    for (int p = 0; p < 8; ++p)
      if ((m >> p) & 1) s += (s.size() > 1 ? ", " : "") + std::to_string(p);
    return s + "]";
  };
  for (size_t i = 0; i < a->devices.size() && i < b->devices.size(); ++i) {
    stats::ConfigSummary x = stats::summarize(a->devices[i], source);
    stats::ConfigSummary y = stats::summarize(b->devices[i], source);
    const std::string& dev = a->devices[i].name;
    auto cmp = [&](std::string_view field, const std::string& o, const std::string& n) {
      if (o != n) out.push_back(fmt::format("{}: {}: {} -> {}", dev, field, o, n));
    };
    auto q = [](std::string_view s) { return "\"" + std::string(s) + "\""; };
    auto onoff = [](bool v) { return std::string(v ? "on" : "off"); };
    cmp("profile", q(stats::get_text(x.profile)), q(stats::get_text(y.profile)));
    cmp("lossless", onoff(x.lossless), onoff(y.lossless));
    cmp("ecn", onoff(x.ecn), onoff(y.ecn));
    cmp("pfc priorities", mask(x.pfc_enabled_mask), mask(y.pfc_enabled_mask));
    cmp("pfc.xoff_bytes", std::to_string(x.pfc_xoff_bytes), std::to_string(y.pfc_xoff_bytes));
    cmp("pfc.xon_bytes", std::to_string(x.pfc_xon_bytes), std::to_string(y.pfc_xon_bytes));
    cmp("dcqcn", q(stats::get_text(x.dcqcn_mode)), q(stats::get_text(y.dcqcn_mode)));
    cmp("congestion_control", q(stats::get_text(x.congestion_control)),
        q(stats::get_text(y.congestion_control)));
    cmp("loss_recovery", q(stats::get_text(x.loss_recovery)), q(stats::get_text(y.loss_recovery)));
    std::map<std::string, double> px, py;
    for (uint32_t k = 0; k < x.dcqcn_param_count; ++k)
      px[std::string(stats::get_text(x.dcqcn_params[k].name))] = x.dcqcn_params[k].value;
    for (uint32_t k = 0; k < y.dcqcn_param_count; ++k)
      py[std::string(stats::get_text(y.dcqcn_params[k].name))] = y.dcqcn_params[k].value;
    for (const auto& [k, v] : py) {
      auto it = px.find(k);
      std::string o = it == px.end() ? "unset" : fmt::format("{:g}", it->second);
      cmp("dcqcn." + k, o, fmt::format("{:g}", v));
    }
  }
  return out;
}

}  // namespace uroce::tool
