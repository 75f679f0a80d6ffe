/**
 * @file doctor.h
 * @brief `uroce fabric doctor`: the checks no single node can make (docs/fabric.md "The
 * doctor"), on every node's sample (view.h). Each finding names the nodes and the fix.
 *
 *   unreachable      a node that did not answer
 *   roce-priority    nodes that put RoCE data (or CNPs) on different priorities
 *   pfc-mismatch     PFC on a priority some hosts or switches do not pause (or the reverse)
 *   trust            a switch classifying by PCP where hosts classify by DSCP
 *   ecn-off          ECN off on a switch (or a host) while hosts run DCQCN
 *   mtu              a host's RoCE packets larger than a switch forwards
 *   profile          nodes on different profiles
 *   drift            a host whose devices differ from each other
 *   desired-state    a node following a desired state (zero-touch) that does not have it
 *   pfc-storm        a pause-storm watchdog fired, or a switch port paused now on a lossless
 *                    priority while its queue is at its high-water mark
 *   cnp-without-ecn  hosts sending CNPs while no switch marked ECN
 *   drops-lossless   drops on a switch while the fabric is lossless
 */
#pragma once

#include <string>
#include <vector>

#include "fabric/view.h"

namespace uroce::fabric {

struct Finding {
  std::string check;  ///< the names above
  bool error = true;  ///< false: a warning
  std::vector<std::string> nodes;
  std::string what;
  std::string fix;
};

/// samples: one per node (view.h); rates: the view's rows over an interval (may be empty:
/// then the counters' totals are judged).
std::vector<Finding> diagnose(const std::vector<NodeSample>& samples,
                              const std::vector<PortRow>& rates);

std::string render_findings(const std::vector<Finding>& f);
std::string render_findings_json(const std::vector<Finding>& f);

}  // namespace uroce::fabric
