#!/usr/bin/env python3
"""`uroce link add` makes a netdev's device usable by every process, as `rdma link add` does for
rxe (docs/host-mode.md, "Bring-up"), on the routed topology of tests/e2e (namespaces A and B, a
Linux router between them):

  1. `uroce link add uroce0 netdev IF --daemon direct` in A and in B writes the device and starts
     the netdev's uroce-hostd (there is no systemd here), which then serves IF;
  2. `uroce link show` names the daemon's pid and, while a process holds a QP on the device,
     that process (pid, command, QPs);
  3. a uroce_verify pair A -> B runs through the two daemons (they count its frames);
  4. `uroce link del uroce0` removes the device as `rdma link delete` does: with an rping pair
     connected A -> B, del in A ends A's client at once with "device removal" (no waiting for
     a next daemon) and B's server sees the DREQ A's daemon sent (DISCONNECTED), both within
     2 s; then each daemon has stopped (its pid gone, no daemon serves IF);
  5. `uroce link add ... --exclusive` writes `exclusive = true` and starts no daemon.

Usage (root): link_e2e.py --build B
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "lib"))
import hostd_e2e  # noqa: E402
import links  # noqa: E402
import pair as pairmod  # noqa: E402

A, B = 0, 1


class Run(hostd_e2e.Host):
    """hostd_e2e's namespaces and environment, without its configuration files (`uroce link add`
    writes them) and without daemons of its own."""

    def __init__(self, build):
        super().__init__(build)
        for c in self.configs:
            os.remove(c)
        links.on_cleanup(self.kill_daemons)

    def uroce(self, side, *args):
        p = subprocess.run(self.link.wrap(side) + [os.path.join(self.build, "bin", "uroce"),
                                                   *args, "--config", self.configs[side]],
                           env=self.env(side), capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    def show_text(self, side):
        if not os.path.exists(self.configs[side]):
            return ""
        return self.uroce(side, "link", "show")[1]

    def kill_daemons(self):
        """Daemons a failed run left behind."""
        for side in (A, B):
            pid = daemon_pid(self.show_text(side))
            if pid:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass

    def close(self):
        self.kill_daemons()
        super().close()


def daemon_pid(show):
    m = re.search(r"uroce-hostd pid (\d+) serves", show)
    return int(m.group(1)) if m else 0


def alive(pid):
    """pid runs (a zombie that its new parent has not reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def check(r):
    daemons = {}
    for side in (A, B):
        rc, out = r.uroce(side, "link", "add", "uroce0", "netdev", r.link.ifs[side], "--daemon",
                          "direct")
        if rc != 0 or "uroce-hostd started" not in out:
            return f"link add in {'AB'[side]}: rc {rc}: {out.strip()}"
        pid = daemon_pid(r.show_text(side))
        if not pid or not alive(pid):
            return f"link show in {'AB'[side]} names no live daemon: {r.show_text(side)}"
        daemons[side] = pid
    # A process that holds a QP (until its standard input closes) is listed under the device.
    out_path = os.path.join(r.dir, "hold.out")
    with open(out_path, "w+") as out:
        hold = subprocess.Popen(r.link.wrap(A) + [os.path.join(r.build, "bin", "hostd_hold_qp"),
                                                  "uroce0"], env=r.env(A), stdin=subprocess.PIPE,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not open(out_path).read().startswith("up "):
            if hold.poll() is not None or time.monotonic() > deadline:
                return f"hold_qp did not come up: {open(out_path).read()[-300:]}"
            time.sleep(0.05)  # polling a condition with a deadline
        show = r.show_text(A)
        if not re.search(rf"client pid {hold.pid} comm hostd_hold_qp qps 1 ", show):
            return f"link show does not list hold_qp (pid {hold.pid}) with 1 QP: {show}"
    finally:
        hold.stdin.close()
        hold.wait(30)
    # Traffic through both daemons.
    port = pairmod.free_tcp_port()
    argv = [os.path.join(r.build, "bin", "uroce_verify"), "-d", "uroce0", "-g",
            str(links.RoutedLink.GID_V4), "-p", str(port), "-o", "write", "-s", "65536", "-n",
            "20"]
    srv = r.start(B, "verify-server", argv)
    deadline = time.monotonic() + 60
    while not pairmod.listening(r.link, B, port):
        if srv.poll() is not None or time.monotonic() > deadline:
            return f"uroce_verify server did not listen: {srv.output()[-300:]}"
        time.sleep(0.05)  # polling a condition with a deadline
    cli = r.start(A, "verify-client", argv + [r.link.addr[B]])
    for p in (cli, srv):
        if p.wait(max(1, deadline - time.monotonic())) is None or p.rc != 0:
            return f"{p.label}: rc {p.rc}: {p.output()[-400:]}"
    if "OK" not in cli.output():
        return f"uroce_verify client: {cli.output()[-300:]}"
    for side in (A, B):
        log = [f for f in os.listdir(r.run_dir) if f.startswith(f"hostd-{r.link.ifs[side]}.")
               and f.endswith(".log")]
        if not log:
            return f"no daemon log for {r.link.ifs[side]} in {r.run_dir}"
    # del removes the device: a connected rping pair hears of it at once, on both ends.
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + 60
    b = r.link.addr[B]
    server = hostd_e2e.cm_server(r, B, "removal", port, ["rping", "-s", "-v", "-a", b, "-p",
                                                          str(port)], deadline)
    if not server:
        return "the rping server did not listen"
    client = r.start(A, "removal-client", ["rping", "-c", "-v", "-a", b, "-p", str(port)])
    problem = hostd_e2e.wait_for("the rping pair's first 50 pings",
                                 lambda: client.output().count("ping data") >= 50,
                                 [client, server], deadline)
    if problem:
        return problem
    t0 = time.monotonic()
    rc, out = r.uroce(A, "link", "del", "uroce0", "--daemon", "direct")
    if rc != 0 or "stopped" not in out:
        return f"link del in A: rc {rc}: {out.strip()}"
    ended = {}  # label: seconds from link del to the program's exit
    while len(ended) < 2 and time.monotonic() < t0 + 30:
        for p in (client, server):
            if p.label not in ended and p.poll() is not None:
                ended[p.label] = round(time.monotonic() - t0, 3)
        time.sleep(0.01)  # polling a condition with a deadline
    for p, what in ((client, "device removal"), (server, "DISCONNECT")):
        took = ended.get(p.label)
        if took is None or took > 2.0 or what not in p.output():
            return (f"{p.label}: no \"{what}\" within 2 s of link del (exit after {took} s): "
                    f"{p.output()[-300:]}")
    if alive(daemons[A]):
        return f"the daemon of A (pid {daemons[A]}) still runs after link del"
    # del stops the other daemon (no client).
    rc, out = r.uroce(B, "link", "del", "uroce0", "--daemon", "direct")
    if rc != 0 or "stopped" not in out:
        return f"link del in B: rc {rc}: {out.strip()}"
    if alive(daemons[B]):
        return f"the daemon of B (pid {daemons[B]}) still runs after link del"
    # --exclusive: the config says so, and no daemon starts.
    rc, out = r.uroce(A, "link", "add", "uroce0", "netdev", r.link.ifs[A], "--exclusive")
    if rc != 0 or "exclusive = true" not in open(r.configs[A]).read():
        return f"link add --exclusive: rc {rc}: {out.strip()}"
    show = r.show_text(A)
    if daemon_pid(show) or "exclusive" not in show:
        return f"link show after --exclusive: {show}"
    print(f"link del under a connected rping pair: exits after {ended} s")
    print("link add/show/del: daemons " + ", ".join(str(p) for p in daemons.values()) +
          f"; verify: {[ln for ln in cli.output().splitlines() if 'uroce_verify' in ln][-1:]}")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (namespaces, AF_XDP)")
        return 0
    r = Run(args.build)
    try:
        problem = check(r)
        if problem:
            print(f"FAIL hostd.linkadd: {problem}", file=sys.stderr)
            for p in r.procs:
                print(f"---- {p.label} rc={p.rc}\n{p.output().rstrip()}", file=sys.stderr)
            return 1
        print("PASS hostd.linkadd")
        return 0
    finally:
        r.close()


if __name__ == "__main__":
    sys.exit(main())
