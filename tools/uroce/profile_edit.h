/**
 * @file profile_edit.h
 * @brief Writing a profile (lib/config profile.h) into a TOML configuration text: every key
 * the profile decides is written explicitly with a comment saying what it does, and every
 * other line (the user's keys, comments, other tables) is kept as it was.
 *
 * The keys a profile decides: `profile` and `ecn` in the [[device]] table, `enabled`,
 * `xoff_bytes`, `xon_bytes` in [device.pfc], and `enabled`, `mode` and the DCQCN knobs any
 * profile tunes in [device.dcqcn]. Their values are computed by config::apply_profile on the
 * device as the file describes it (so the PFC priority follows its roce_dscp and DSCP map);
 * the result is checked with config::parse before it is returned.
 */
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace uroce::tool {

struct ProfileInfo {
  std::string_view name;
  std::string_view summary;  ///< one line
};

/// The profiles `uroce profile list` offers, in order.
const std::vector<ProfileInfo>& profiles();
/// True for a name in profiles().
bool is_profile(std::string_view name);

/// One key of a [[device]] block's table ("device", "device.pfc", "device.dcqcn"): `line` is
/// the whole entry ("key = value   # comment\n"); an empty line only removes the key.
struct KeyEdit {
  std::string table;
  std::string key;
  std::string line;
};

/// Rewrites `text` (the file `source`): in every [[device]] block (`device` empty) or device
/// NAME's, the keys edits_for(device as parsed) names are removed from their table and the
/// non-empty lines appended to it (a missing sub-table is created at the end of the block);
/// every other line is kept. @return false with *err = one line when the input does not
/// parse, a device is missing, a table to edit is written inline, or the result does not
/// validate.
bool edit_devices(const std::string& text, const std::string& source, const std::string& device,
                  const std::function<std::vector<KeyEdit>(const config::Device&)>& edits_for,
                  std::string* out, std::string* err);

/// Rewrites `text` (the file `source`) so that `device` (empty: every device) uses profile
/// `name`. @return false with *err = one line ("<source>: ...") when the input does not
/// parse, a device is missing, the tables cannot be edited (inline pfc/dcqcn tables), or the
/// result does not validate.
bool apply_profile_text(const std::string& text, const std::string& source, std::string_view name,
                        const std::string& device, std::string* out, std::string* err);

/// The lines `uroce profile show NAME` prints: the keys as apply_profile_text writes them
/// for a device with the default DSCP map (RoCE DSCP 26 -> priority 3).
std::string profile_snippet(std::string_view name);

/// Effective differences between two configuration texts, one line per changed field:
/// "<device>: <field>: <old> -> <new>". Both texts must parse.
std::vector<std::string> effective_diff(const std::string& before, const std::string& after,
                                        const std::string& source);

}  // namespace uroce::tool
