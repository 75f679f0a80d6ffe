/**
 * @file local_hold.h
 * @brief Same-host frames between two clients of uroce-hostd (docs/host-mode.md, "clients →
 * netdev"): lossless while the receiver reads its RX ring, bounded when it does not.
 *
 * A frame whose receiving client's RX ring is full waits in its sender's TX ring (the
 * sender's later frames behind it), as a NIC's internal loopback back-pressures instead of
 * dropping: a receiver that waits for a CPU (more busy processes than cores) loses nothing.
 * A receiver full for kHold is `stalled`: frames to it are dropped at once (and counted) until
 * its ring has room again, so a process that stopped reading holds up its senders for kHold
 * once, not for every frame. Sans-IO: the caller says whether the ring has room and when.
 */
#pragma once

#include "common/time.h"

namespace uroce::hostd {

class LocalHold {
 public:
  /// How long a sender's frame waits for a full receiver before the receiver counts as stalled.
  static constexpr Duration kHold = Duration::millis(2);

  /// Per sending client: its oldest frame waits since `since`.
  struct Sender {
    Timestamp since{};
    bool waiting = false;
  };
  /// Per receiving client.
  struct Receiver {
    bool stalled = false;
  };

  /// True when the sender's frame to the receiver must stay in the sender's ring for now;
  /// false when it goes on (delivered if `room`, else dropped by the caller).
  static bool must_wait(Sender& s, Receiver& r, bool room, Timestamp now) {
    if (room) {
      r.stalled = false;
      s.waiting = false;
      return false;
    }
    if (r.stalled) return false;
    if (!s.waiting) {
      s.waiting = true;
      s.since = now;
    }
    if (now - s.since < kHold) return true;
    r.stalled = true;
    s.waiting = false;
    return false;
  }
};

}  // namespace uroce::hostd
