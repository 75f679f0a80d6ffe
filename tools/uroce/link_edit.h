/**
 * @file link_edit.h
 * @brief `uroce link add|del` as text edits of the configuration (rdma-core's `rdma link add
 * rxe0 type rxe netdev eth0` habit): add appends a [[device]] table bound to a netdev, del
 * removes one device's table (with its [device.*] sub-tables); every other line is kept. The
 * result is checked with config::parse before it is returned.
 */
#pragma once

#include <string>

namespace uroce::tool {

/// Appends `[[device]] name = NAME  netdev = NETDEV` (and `exclusive = true` when asked) to
/// `text` (empty: a new file). Fails
/// with one line when text does not parse, NAME or NETDEV is already used, or the result does
/// not validate (e.g. a bad interface name).
bool link_add_text(const std::string& text, const std::string& source, const std::string& name,
                   const std::string& netdev, bool exclusive, std::string* out, std::string* err);

/// Removes device NAME's table. *out is empty when it was the only device (the caller removes
/// the file). Fails with one line when text does not parse or has no device NAME.
bool link_del_text(const std::string& text, const std::string& source, const std::string& name,
                   std::string* out, std::string* err);

}  // namespace uroce::tool
