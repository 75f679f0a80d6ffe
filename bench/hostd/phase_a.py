#!/usr/bin/env python3
"""uroce-hostd phase A measurements (bench/RESULTS.md, "uroce-hostd phase A"), on the routed
veth topology of tests/e2e (namespaces A and B, a Linux router between them), as root.

  open     time and memory of one process's ibv_open_device + first QP (hostd_hold_qp --once)
           through A's daemon, RUNS times in a row: median and spread
  idle     CPU of N idle connected clients (each holding a QP) over 10 s (schedstat), and the
           daemon's own over the same 10 s
  bw       ib_write_bw -s 65536 A -> B, RUNS times: through the daemons, or (--exclusive)
           without them

--build is the build whose uroce-hostd and libibverbs run (a build of another commit measures
"before"); --prog the hostd_hold_qp binary (it links libibverbs dynamically, so one binary
serves both builds). One line of results per measurement on stdout.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "host"))
import hostd_e2e as he  # noqa: E402


def thread_ns(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def measure_open(h, prog, runs):
    times, rss, hwm = [], [], []
    for _ in range(runs):
        out = subprocess.run(h.link.wrap(he.A) + [prog, he.DEVICE, "--once"], env=h.env(he.A),
                             capture_output=True, text=True, timeout=60)
        kv = dict(x.split("=") for x in out.stdout.split() if "=" in x)
        if "open_qp_us" not in kv:
            raise RuntimeError(f"hold_qp --once: {out.stdout} {out.stderr}")
        times.append(int(kv["open_qp_us"]) / 1000)
        rss.append(int(kv["rss_kb"]))
        hwm.append(int(kv["hwm_kb"]))
    print(f"open+QP: median {statistics.median(times):.1f} ms (min {min(times):.1f}, max "
          f"{max(times):.1f}); RSS {statistics.median(rss) / 1024:.1f} MiB, peak "
          f"{statistics.median(hwm) / 1024:.1f} MiB ({runs} runs)")


def measure_idle(h, prog, n):
    procs = [subprocess.Popen(h.link.wrap(he.A) + [prog, he.DEVICE], env=h.env(he.A),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(n)]
    try:
        for p in procs:
            if not p.stdout.readline().startswith(b"up"):
                raise RuntimeError("a client did not come up")
        time.sleep(3)
        daemon = h.daemons[he.A].proc.pid
        pids = [p.pid for p in procs]
        c0, d0, t0 = sum(thread_ns(p) for p in pids), thread_ns(daemon), time.monotonic()
        time.sleep(10)
        c1, d1, t1 = sum(thread_ns(p) for p in pids), thread_ns(daemon), time.monotonic()
        print(f"{n} idle clients: {100 * (c1 - c0) / 1e9 / (t1 - t0):.2f} % of a core in all; "
              f"the daemon {100 * (d1 - d0) / 1e9 / (t1 - t0):.2f} %")
    finally:
        for p in procs:
            p.stdin.close()
        for p in procs:
            p.wait(30)


def measure_bw(h, runs, iters):
    res = []
    for i in range(runs):
        port = he.pairmod.free_tcp_port() + i
        base = ["ib_write_bw", "-d", he.DEVICE, "-i", "1", "-x", str(he.links.RoutedLink.GID_V4),
                "-p", str(port), "-n", str(iters), "-s", "65536"]
        problem = he.run_pairs(h, [(f"bw{i}", he.B, base, he.A, base + [h.link.addr[he.B]],
                                    he.tcp(port))], 200)
        if problem:
            raise RuntimeError(problem)
        out = next(p for p in h.procs if p.label == f"bw{i}-client").output()
        rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("65536")]
        res.append(float(rows[-1][3]))  # BW average [MB/sec]
    print(f"ib_write_bw 64 KiB: {', '.join(f'{r:.0f}' for r in res)} MB/s "
          f"(median {statistics.median(res):.0f}, {runs} runs of {iters})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--exclusive", action="store_true", help="no daemons (bw only)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--idle", type=int, default=0, help="clients for the idle measurement")
    ap.add_argument("what", nargs="+", choices=["open", "idle", "bw"])
    a = ap.parse_args()
    h = he.Host(a.build)
    try:
        if not a.exclusive:
            h.start_daemons(time.monotonic() + 30)
        for w in a.what:
            if w == "open":
                measure_open(h, os.path.abspath(a.prog), a.runs)
            elif w == "idle":
                measure_idle(h, os.path.abspath(a.prog), a.idle)
            else:
                measure_bw(h, a.runs, a.iters)
        if not a.exclusive:
            h.stop_daemons()
    finally:
        h.close()


if __name__ == "__main__":
    main()
