/**
 * @file notification_point.cc
 * @brief CNP pacing per QP (docs/dcqcn-pfc.md §1.3). Units: ns.
 */
#include "dcqcn/notification_point.h"

namespace uroce::dcqcn {

bool NotificationPoint::on_ce_marked(Timestamp now) {
  ++stats_.np_ecn_marked_roce_packets;
  // A due coalesced CNP goes out now and covers this CE too: the caller sends exactly one.
  if (on_timer(now)) return true;
  if (!sent_any_ || now - last_cnp_ >= n_) {
    send(now);
    return true;
  }
  pending_ = true;
  ++stats_.np_cnp_coalesced;
  return false;
}

bool NotificationPoint::on_timer(Timestamp now) {
  if (!pending_ || last_cnp_ + n_ > now) return false;
  pending_ = false;
  send(now);  // the CNP leaves when the caller runs the timer
  return true;
}

}  // namespace uroce::dcqcn
