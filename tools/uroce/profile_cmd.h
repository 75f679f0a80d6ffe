/**
 * @file profile_cmd.h
 * @brief `uroce profile list | show NAME | apply NAME | diff NAME`. apply writes the file
 * atomically (temporary file + fsync + rename, mode kept) after saving the old text as
 * FILE.bak the same way; nothing is written when the profile is unknown, the file does not
 * parse or the result does not validate. Each returns the exit status (0, 1 on a bad file,
 * 2 on an unknown profile), with one line on stderr for every failure.
 */
#pragma once

#include <sys/types.h>

#include <string>

namespace uroce::tool {

struct ProfileOptions {
  std::string name;    ///< profile
  std::string config;  ///< file; empty: $UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml
  std::string device;  ///< only this device (empty: every device in the file)
};

int profile_list();
int profile_show(const ProfileOptions& o);
int profile_apply(const ProfileOptions& o);
int profile_diff(const ProfileOptions& o);

/// The file to edit: `given`, else the lookup order of lib/config ($UROCE_CONFIG,
/// ./uroce.toml, /etc/uroce/uroce.toml). Empty when none exists (*tried says where it looked).
std::string config_file(const std::string& given, std::string* tried);

/// The whole file at path in *out; false when it cannot be opened (errno says why).
bool read_text(const std::string& path, std::string* out);

/// Writes `text` to `path` atomically (a temporary file renamed over it) with `mode`.
/// @return false with *err = one line.
bool write_atomically(const std::string& path, const std::string& text, mode_t mode,
                      std::string* err);

/// Writes `text` to `path` atomically, first saving the current content as path + ".bak".
/// @return false with *err = one line.
bool write_atomically_with_backup(const std::string& path, const std::string& old_text,
                                  const std::string& text, std::string* err);

}  // namespace uroce::tool
