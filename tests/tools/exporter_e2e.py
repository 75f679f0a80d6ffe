#!/usr/bin/env python3
"""End-to-end check of the counters path (issue #6): ib_write_bw (perftest, unmodified) runs as
two processes over uroce on a memif pair; `uroce exporter` serves their shared-memory counters;
/metrics is scraped with curl while they run and must show both processes, parse as Prometheus
text format, and show the traffic counters growing between scrapes; after the programs exit
their segments are gone (removed at exit) and the exporter serves none of their series.

Usage: exporter_e2e.py --build <build dir>   (needs <build>/lib/libibverbs.so.1, bin/uroce)
Every wait is a condition polled against a deadline.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "lib"))
import links  # noqa: E402
from waits import wait_for  # noqa: E402
import pair as pairmod  # noqa: E402

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([-+]?(\d*\.?\d+([eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf))$')
TYPE = re.compile(r'^# (TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|summary|histogram|untyped)|HELP .*)$')


def scrape(port):
    p = subprocess.run(["curl", "-sS", "--max-time", "5", f"http://127.0.0.1:{port}/metrics"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"curl failed: {p.stderr.strip()}")
    series = {}
    for n, line in enumerate(p.stdout.splitlines(), 1):
        if not line or (line.startswith("#") and TYPE.match(line)):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise RuntimeError(f"/metrics line {n} is not Prometheus text format: {line!r}")
        series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return series


def per_pid(series, name, device="uroce0"):
    """{pid: value} of metric `name` for `device`, summed over its other labels (qp)."""
    out = {}
    for k, v in series.items():
        if k.startswith(name + "{") and f'device="{device}"' in k:
            pid = re.search(r'pid="(\d+)"', k).group(1)
            out[pid] = out.get(pid, 0) + v
    return out




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    build = os.path.abspath(ap.parse_args().build)
    run_dir = tempfile.mkdtemp(prefix="uroce-exp-e2e-", dir="/dev/shm")
    os.environ["UROCE_RUN_DIR"] = run_dir  # Pair copies os.environ into both sides
    exp = subprocess.Popen([os.path.join(build, "bin", "uroce"), "exporter", "--listen",
                            "127.0.0.1:0", "--run-dir", run_dir],
                           stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", exp.stdout.readline())
        if not m:
            print("FAIL: the exporter did not start")
            return 1
        port = int(m.group(1))
        deadline = time.monotonic() + 90
        with links.make_link("memif", 4096) as link:
            p = pairmod.Pair(link, build)
            tcp = pairmod.free_tcp_port()
            argv = ["ib_write_bw", "-d", pairmod.DEVICE, "-x", str(pairmod.GID_INDEX),
                    "-p", str(tcp), "-F", "-D", "5"]
            srv = p.start(0, argv)
            if not p.wait_listen(srv, tcp, deadline):
                print("FAIL: ib_write_bw server did not listen\n" + srv.output())
                return 1
            cli = p.start(1, argv + [link.oob_host()])
            tx = "rdma_tx_vport_rdma_unicast_bytes_total"
            rx = "rdma_rx_vport_rdma_unicast_bytes_total"
            # Both processes publish a segment and traffic has started.
            def both_sending():
                s = scrape(port)
                t = per_pid(s, tx)
                return s if len(t) == 2 and max(t.values()) > 0 else None
            first = wait_for(both_sending, deadline, "two uroce0 segments with traffic")
            t1, r1 = per_pid(first, tx), per_pid(first, rx)
            sender = max(t1, key=t1.get)

            def sender_grew():
                s = scrape(port)
                return s if per_pid(s, tx).get(sender, 0) > t1[sender] else None
            second = wait_for(sender_grew, deadline, "the sender's byte counter to grow")
            t2, r2 = per_pid(second, tx), per_pid(second, rx)
            grew_rx = any(r2.get(k, 0) > v for k, v in r1.items())
            print(f"scrape 1: tx {t1} rx {r1}\nscrape 2: tx {t2} rx {r2}")
            if not grew_rx:
                print("FAIL: no receive counter grew between scrapes")
                return 1
            # The sender's QPs count their own packets too (refreshed by the progress thread).
            qtx = "rdma_qp_tx_packets_total"
            q1 = per_pid(first, qtx).get(sender, 0)

            def sender_qp_grew():
                s = scrape(port)
                return s if per_pid(s, qtx).get(sender, 0) > q1 else None
            third = wait_for(sender_qp_grew, deadline, "the sender's per-QP packet counter to grow")
            print(f"{qtx} of the sender: {q1} -> {per_pid(third, qtx)[sender]}")
            # The CLI reads the same live segments.
            show = subprocess.run([os.path.join(build, "bin", "uroce"), "show", "roce", "--json",
                                   "--run-dir", run_dir], capture_output=True, text=True)
            devs = json.loads(show.stdout)["devices"] if show.returncode == 0 else []
            if len(devs) != 2 or any(d["state"] != "running" or d["device"] != "uroce0" or
                                     d["mtu"] != 4096 for d in devs):
                print(f"FAIL: uroce show roce: rc {show.returncode} {show.stderr.strip()} {devs}")
                return 1
            print(f"uroce show roce: pids {[d['pid'] for d in devs]}, profile "
                  f"{[d['profile'] for d in devs]}, dcqcn {[d['dcqcn']['mode'] for d in devs]}")
            for s in (cli, srv):
                s.wait(deadline - time.monotonic())
            if cli.rc != 0 or srv.rc != 0:
                print(f"FAIL: ib_write_bw exited {srv.rc}/{cli.rc}\n" + srv.output() + cli.output())
                return 1
            # Expect: both segments removed at exit, nothing left to export.
            after = scrape(port)
            if per_pid(after, tx) or after.get('rdma_exporter_segments{state="live"}') != 0:
                print(f"FAIL: segments left after exit: {os.listdir(run_dir)}")
                return 1
            if os.listdir(run_dir):
                print(f"FAIL: files left in the run dir: {os.listdir(run_dir)}")
                return 1
        print("PASS: counters served live, grew between scrapes, removed at exit")
        return 0
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        exp.terminate()
        exp.wait(10)
        for f in os.listdir(run_dir):
            os.unlink(os.path.join(run_dir, f))
        os.rmdir(run_dir)


if __name__ == "__main__":
    sys.exit(main())
