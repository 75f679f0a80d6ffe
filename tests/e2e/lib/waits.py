"""Condition waits for the test harnesses: every wait is a condition polled against a
deadline, never a bare sleep."""
import time


def wait_for(cond, deadline, what, period=0.05):
    """Returns cond()'s first truthy value; raises RuntimeError at `deadline` (monotonic)."""
    while time.monotonic() < deadline:
        r = cond()
        if r:
            return r
        time.sleep(period)  # polling a condition with a deadline
    raise RuntimeError(f"timed out waiting for {what}")
