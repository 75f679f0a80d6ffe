/**
 * @file apply.h
 * @brief `uroce fabric apply` as a procedure over any transport (docs/fabric.md "Applying to
 * the whole fabric"): one change document per role, made true on every node or on none.
 *
 *  1. Read: GET /v1/settings of every node. One that cannot be read: stop, nothing changed.
 *  2. Check: PATCH (PUT for a whole change) ?dry_run=1 with the node's document. One that refuses
 * or cannot be reached: stop, nothing changed. (--dry-run ends here with what would change per
 * node.)
 *  3. Apply: the same without dry_run on every node that has something to change, all at once.
 *  4. Should any fail, every node that changed is put back (PUT of the settings read in 1) and
 *     the outcome of each node is reported exactly: changed, unchanged, rolled back, failed
 *     (this node's write failed), or unknown (its write's outcome or its roll-back could not be
 *     confirmed: check it).
 *
 * The transport runs a batch of calls at once (mgmt::perform_all in the command; a fake in the
 * tests). Calls carry the token for writes.
 */
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fabric/inventory.h"
#include "mgmt/http_client.h"

namespace uroce::fabric {

using Transport = std::function<std::vector<mgmt::Result>(const std::vector<mgmt::Call>&)>;

/// The change for each role: a change document (settings.h) or "" (that role unchanged).
/// whole: each node's settings become its role's defaults plus the document (PUT), so every
/// node ends up alike whatever it had; otherwise only the document's keys change (PATCH).
struct Change {
  std::string host;
  std::string sw;
  bool whole = false;
  const std::string& for_role(Role r) const { return r == Role::kHost ? host : sw; }
};

/// A profile name as a whole change for both roles: the defaults, then {"profile": NAME}.
Change profile_change(const std::string& name);

/// A change file: JSON {"all": doc, "host": doc, "switch": doc} (each optional; "all" first,
/// then the role's document on top), or nullopt with *err.
std::optional<Change> parse_change_file(const std::string& text, std::string* err);

enum class Outcome {
  kUnchanged,
  kChanged,
  kWouldChange,
  kRolledBack,
  kFailed,
  kUnknown,
  kNotTried
};
std::string_view to_string(Outcome o);

struct NodeReport {
  std::string node;
  Outcome outcome = Outcome::kNotTried;
  std::vector<std::string> changes;  ///< "key: old -> new" (made, or that would be made)
  std::string error;                 ///< why it failed / is unknown / refused
};

struct ApplyReport {
  bool ok = false;      ///< every node has the change (or, dry run, would take it)
  std::string stopped;  ///< the phase that stopped it ("read", "check", "apply"), or ""
  std::vector<NodeReport> nodes;
};

ApplyReport apply_change(const Inventory& inv, const Change& change, const std::string& token,
                         bool dry_run, const Transport& transport);

}  // namespace uroce::fabric
