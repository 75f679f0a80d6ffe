"""Host mode's open, use, close and open again (tests/e2e/host_reopen.cc, e2e_host_reopen), shared
by routed.reopen.exclusive (lib/host_cases.py: the process owns the netdev) and hostd.reopen
(tests/host/hostd_e2e.py: through uroce-hostd).

The server (one process, the device open throughout) serves one QP per TCP connection; the
client runs CYCLES cycles, each a probe (open, query, PD, close) and then CONTEXTS contexts
open at once with a QP each, a 64 KiB WRITE read back and compared byte for byte on each QP,
everything destroyed and closed. Then it prints CLOSED with what it still has open of a port
and waits on stdin (--hold), so that the harness checks the netdev while the process lives
with no context open.
"""

import os
import re
import subprocess
import time

import pair as pairmod

CYCLES = 10
CONTEXTS = 2


def server_argv(build, port, gid):
    return [os.path.join(build, "bin", "e2e_host_reopen"), "--server", "--port", str(port),
            "--gid", str(gid), "--count", str(CYCLES * CONTEXTS)]


def client_argv(build, port, gid, server_host):
    return [os.path.join(build, "bin", "e2e_host_reopen"), "--port", str(port), "--gid", str(gid),
            "--cycles", str(CYCLES), "--contexts", str(CONTEXTS), "--probe", "--hold",
            server_host]


def start_client(label, argv, env, out_path):
    """The client as a pairmod.Side whose stdin is a pipe (closing it ends --hold)."""
    return pairmod.Side(label, argv, env, out_path, stdin=subprocess.PIPE)


def wait_closed(client, deadline):
    """Waits until the client printed CLOSED (True) or exited (False)."""
    while time.monotonic() < deadline:
        if "\nCLOSED " in "\n" + client.output():
            return True
        if client.poll() is not None:
            return "\nCLOSED " in "\n" + client.output()
        time.sleep(0.05)  # polling a condition with a deadline
    return False


def release(client, timeout):
    """Ends --hold; returns the client's exit code (None: still running)."""
    try:
        client.proc.stdin.close()
    except OSError:
        pass
    return client.wait(timeout)


def check_output(out):
    """Every cycle reported ok and nothing of a port is left open; a problem or None."""
    for i in range(CYCLES):
        if not re.search(rf"(?m)^CYCLE {i} ok: {CONTEXTS} context", out):
            return f"cycle {i} did not complete"
    m = re.search(r"(?m)^CLOSED (.*)$", out)
    if not m:
        return "no CLOSED line"
    left = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
    if not left or any(left.values()):
        return f"after the last close the process still has open: {m.group(1)}"
    return None
