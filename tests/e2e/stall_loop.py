#!/usr/bin/python3
"""Runs one librdmacm e2e case over memif again and again under load, and catches hangs.

  stall_loop.py --build <dir> [--runs N] [--busy K] [--stall S] [--toml 'key = value']...
                <case> [-- <more program options>]

<case> is a memif case of e2e.py's RDMA CM set (e.g. memif.riostream.default,
memif.riostream.lat, memif.rping.default); the options after `--` go to both programs (e.g.
`-- -S 64 -C 1 -I 5000` for riostream's 64-byte latency test with 5000 round trips). K busy
loops (`sh -c 'while :; do :; done'`) run beside, as CI's other jobs do. A run whose two
processes stop moving frames for S seconds (uroce's counters, read through a private
UROCE_RUN_DIR) is a hang: its state is written to <run dir>/hang.txt (uroce show qp and
counters; each process's threads with gdb backtraces, and the main thread's registers and
instructions, which show what a program spinning on memory waits for) before both are
killed, and the run directory is kept. One line per run, then a summary:

  run 3 HANG 41s client_rows=[] server_rows=[] kept /tmp/ue2e-stall-.../run003
  hangs 1 of 20, other failures 0

Needs root (as e2e.py). Used for issue 31 (tests/RELIABILITY.md, "riostream and rping under
load").
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2e  # noqa: E402
import links  # noqa: E402
import pair as pairmod  # noqa: E402

ROW = re.compile(r"(?m)^(\S+)\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+[\d.]+s")


def frames_moved(uroce, run_dir):
    """{pid: tx + rx RoCE frames} of every device under run_dir."""
    p = subprocess.run([uroce, "show", "counters", "--json", "--run-dir", run_dir],
                       capture_output=True, text=True)
    try:
        devices = json.loads(p.stdout).get("devices", [])
    except ValueError:
        return {}
    return {d["pid"]: d["counters"].get("tx_vport_rdma_unicast_packets", 0)
            + d["counters"].get("rx_vport_rdma_unicast_packets", 0) for d in devices}


def dump_state(uroce, run_dir, sides, path):
    with open(path, "w") as f:
        for what in ("qp", "counters"):
            f.write(subprocess.run([uroce, "show", what, "--run-dir", run_dir],
                                   capture_output=True, text=True).stdout)
        for s in sides:
            # The program is the process taskset and stdbuf exec'd into: the same pid.
            f.write(f"==== {s.label} pid {s.proc.pid}\n")
            g = subprocess.run(["gdb", "-p", str(s.proc.pid), "-batch", "-ex", "info threads",
                                "-ex", "thread apply all bt 12", "-ex", "thread 1", "-ex",
                                "info registers", "-ex", "x/12i $pc-24"],
                               capture_output=True, text=True, timeout=120)
            f.write(g.stdout + g.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--busy", type=int, default=2, help="busy loops beside (default 2)")
    ap.add_argument("--stall", type=float, default=20, help="seconds without a frame = hang")
    ap.add_argument("--deadline", type=float, default=900, help="seconds per run at most")
    ap.add_argument("--toml", action="append", default=[], help="a [[device]] line, both sides")
    ap.add_argument("case")
    ap.add_argument("extra", nargs="*", help="more options for both programs")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 0
    name = a.case.removeprefix("memif.")
    kw = e2e.RDMACM_CASES_TEMPLATE().get(name)
    if not a.case.startswith("memif.") or not kw or kw.get("client_only"):
        print(f"{a.case}: not a memif RDMA CM case with a server and a client", file=sys.stderr)
        return 2
    build = os.path.abspath(a.build)
    uroce = os.path.join(build, "bin", "uroce")
    root = tempfile.mkdtemp(prefix="ue2e-stall-")
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.busy)]
    links.on_cleanup(lambda: [b.kill() for b in busy])
    hangs = failures = 0
    try:
        for run in range(a.runs):
            rdir = os.path.join(root, f"run{run:03d}")
            run_dir = os.path.join(rdir, "stats")
            os.makedirs(run_dir)
            listen_file = os.path.join(rdir, "listen")
            port = kw.get("port") or pairmod.free_tcp_port()
            env = {"UROCE_RUN_DIR": run_dir, "UROCE_RDMACM_LISTEN_FILE": listen_file}
            if kw.get("connect_when_listening"):
                env["UROCE_RDMACM_CONNECT_WHEN_LISTENING"] = listen_file
            link = links.MemifLink(mtu=4096)
            p = pairmod.Pair(link, build, workdir=rdir, extra_toml="\n".join(a.toml), env=env)
            fmt = {"addr": link.roce_addr(0), "port": port, "port1": port + 1,
                   "oob": link.oob_host()}
            t0 = time.monotonic()
            srv = p.start(0, [x.format(**fmt) for x in kw["server"]] + a.extra)
            while not pairmod.cm_listening(listen_file, port) and srv.poll() is None and \
                    time.monotonic() - t0 < 30:
                time.sleep(0.05)  # polling a condition with a deadline
            cli = p.start(1, [x.format(**fmt) for x in kw["client"]] + a.extra)
            last, since, verdict = None, time.monotonic(), None
            while verdict is None:
                time.sleep(1)  # sampling the counters, not synchronising
                if cli.poll() is not None and srv.poll() is not None:
                    verdict = "ok" if (srv.rc, cli.rc) == tuple(kw.get("rc", (0, 0))) else \
                        f"rc={srv.rc},{cli.rc}"
                    break
                moved = frames_moved(uroce, run_dir)
                now = time.monotonic()
                if moved != last:
                    last, since = moved, now
                elif now - since > a.stall:
                    verdict = "HANG"
                elif now - t0 > a.deadline:
                    verdict = "SLOW"
            if verdict in ("HANG", "SLOW"):
                dump_state(uroce, run_dir, (srv, cli), os.path.join(rdir, "hang.txt"))
            p.stop_all()
            rows = [ROW.findall(s.output()) for s in (srv, cli)]
            keep = verdict != "ok"
            hangs += verdict == "HANG"
            failures += verdict not in ("ok", "HANG")
            print(f"run {run} {verdict} {time.monotonic() - t0:.0f}s client_rows={rows[1]} "
                  f"server_rows={rows[0]}" + (f" kept {rdir}" if keep else ""), flush=True)
            if not keep:
                shutil.rmtree(rdir, ignore_errors=True)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    print(f"hangs {hangs} of {a.runs}, other failures {failures}")
    if not hangs and not failures:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if hangs or failures else 0


if __name__ == "__main__":
    sys.exit(main())
