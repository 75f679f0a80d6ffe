/**
 * @file qp_state.h
 * @brief The QP state machine of ibv_modify_qp: which transitions exist and which attribute
 * mask bits each requires and allows, per QP type (IBA Vol 1 §10.3, Table 92 "QP state
 * transition properties"; the same table as ib_modify_qp_is_ok() in the Linux kernel and the
 * lists in ibv_modify_qp(3)).
 *
 * Units: none. A mask is a QpAttrMask bit set. kAttrState is implied for every transition and
 * never listed in required/optional.
 */
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "transport/verbs_types.h"

namespace uroce::transport {

inline constexpr size_t kQpStateCount = 7;

/// "RESET", "INIT", ... for traces and test messages.
std::string_view to_string(QpState s);

/// Required and optional attributes of one transition for one QP type.
struct TransitionRule {
  bool valid = false;     ///< the transition exists
  uint32_t required = 0;  ///< QpAttrMask bits that must be present
  uint32_t optional = 0;  ///< QpAttrMask bits that may be present
};

/// The rule for cur -> next on a QP of type t.
TransitionRule transition_rule(QpType t, QpState cur, QpState next);

/// Checks a modify_qp mask against the table: the transition cur -> next (next = cur when the
/// mask has no kAttrState) must exist, every required bit must be present and no bit outside
/// required|optional|kAttrState may be. Values are not checked here.
/// @return ok, or EINVAL.
Status check_modify_mask(QpType t, QpState cur, QpState next, uint32_t mask);

}  // namespace uroce::transport
