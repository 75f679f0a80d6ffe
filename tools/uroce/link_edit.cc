/**
 * @file link_edit.cc
 * @brief link_add_text() and link_del_text() (link_edit.h).
 */
#include "link_edit.h"

#include <optional>
#include <sstream>
#include <vector>

#include "config/config.h"

namespace uroce::tool {

namespace {

std::optional<config::Config> parse_or_fail(const std::string& text, const std::string& source,
                                            std::string* err) {
  return config::parse(text, source, err);
}

/// True for a line that opens a [[device]] table (whitespace inside the brackets allowed).
bool is_device_header(const std::string& line) {
  std::string s;
  for (char c : line) {
    if (c == '#') break;
    if (c != ' ' && c != '\t') s.push_back(c);
  }
  return s == "[[device]]";
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

bool link_add_text(const std::string& text, const std::string& source, const std::string& name,
                   const std::string& netdev, bool exclusive, std::string* out, std::string* err) {
  if (!text.empty()) {
    auto cfg = parse_or_fail(text, source, err);
    if (!cfg) return false;
    for (const config::Device& d : cfg->devices) {
      if (d.name == name) {
        *err = source + ": a device named " + name + " exists already (uroce link del " + name +
               " removes it)";
        return false;
      }
      if (!d.netdev.empty() && d.netdev == netdev) {
        *err = source + ": netdev " + netdev + " is already the netdev of device " + d.name;
        return false;
      }
    }
  }
  std::string added = "[[device]]\nname = " + quoted(name) + "\nnetdev = " + quoted(netdev) + "\n";
  if (exclusive) added += "exclusive = true\n";
  std::string result = text;
  if (!result.empty() && result.back() != '\n') result += '\n';
  if (!result.empty()) result += '\n';
  result += added;
  std::string perr;
  if (!config::parse(result, source, &perr)) {
    *err = perr;
    return false;
  }
  *out = result;
  return true;
}

bool link_del_text(const std::string& text, const std::string& source, const std::string& name,
                   std::string* out, std::string* err) {
  auto cfg = parse_or_fail(text, source, err);
  if (!cfg) return false;
  size_t index = cfg->devices.size();
  for (size_t i = 0; i < cfg->devices.size(); ++i)
    if (cfg->devices[i].name == name) index = i;
  if (index == cfg->devices.size()) {
    *err = source + ": no device named " + name;
    return false;
  }
  if (cfg->devices.size() == 1) {
    out->clear();
    return true;
  }
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<size_t> headers;
  for (size_t i = 0; i < lines.size(); ++i)
    if (is_device_header(lines[i])) headers.push_back(i);
  if (headers.size() != cfg->devices.size()) {
    *err = source +
           ": the [[device]] tables are not one per line as `uroce link` writes them; "
           "edit the file by hand";
    return false;
  }
  const size_t from = headers[index];
  const size_t to = index + 1 < headers.size() ? headers[index + 1] : lines.size();
  std::string result;
  for (size_t i = 0; i < lines.size(); ++i)
    if (i < from || i >= to) result += lines[i] + "\n";
  std::string perr;
  auto after = config::parse(result, source, &perr);
  if (!after || after->devices.size() + 1 != cfg->devices.size()) {
    *err = perr.empty() ? source + ": removing " + name + " would change other devices" : perr;
    return false;
  }
  *out = result;
  return true;
}

}  // namespace uroce::tool
