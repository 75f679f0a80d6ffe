/**
 * @file settings_edit.h
 * @brief A host's fabric settings (lib/fabric/settings.h) and its configuration file: read from
 * a parsed device, and written into the file's text for every device (the profile first, as
 * `uroce profile apply` writes it, then each setting as an explicit key; every other line kept).
 */
#pragma once

#include <string>

#include "config/config.h"
#include "fabric/settings.h"

namespace uroce::tool {

/// The settings device d runs with.
fabric::Settings host_settings(const config::Device& d);

/// Rewrites `text` (the file `source`) so that every device has settings s. @return false with
/// *err = one line when the text does not parse, cannot be edited, or the result does not
/// give every device exactly s.
bool write_host_settings(const std::string& text, const std::string& source,
                         const fabric::Settings& s, std::string* out, std::string* err);

}  // namespace uroce::tool
