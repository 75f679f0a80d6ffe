#!/usr/bin/env python3
"""End-to-end check of `uroce capture` (issue #6): ib_write_bw (perftest, unmodified) runs as two
processes over uroce on a memif pair; `uroce capture --device uroce0 --pid <one of them>` writes
that process's frames to a pcap while they run. The pcap must hold the frames asked for, decode
in tshark as RoCEv2 (every UDP/4791 frame an InfiniBand BTH, none malformed, both directions:
the process's RX and TX), and every frame's ICRC must check out in scapy. After the tool exits
the ring file is gone, and the programs finish normally.

Usage: capture_e2e.py --build <build dir>   (needs <build>/lib/libibverbs.so.1, bin/uroce)
Every wait is a condition polled against a deadline.
"""
import argparse
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
import roce_pcap  # noqa: E402

SEGMENT = re.compile(r"^uroce\.uroce0\.(\d+)$")
FRAMES = 300




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    build = os.path.abspath(ap.parse_args().build)
    run_dir = tempfile.mkdtemp(prefix="uroce-cap-e2e-", dir="/dev/shm")
    pcap = os.path.join(run_dir, "capture.pcap")
    os.environ["UROCE_RUN_DIR"] = run_dir  # Pair copies os.environ into both sides
    try:
        deadline = time.monotonic() + 90
        with links.make_link("memif", 4096) as link:
            p = pairmod.Pair(link, build)
            tcp = pairmod.free_tcp_port()
            argv = ["ib_write_bw", "-d", pairmod.DEVICE, "-x", str(pairmod.GID_INDEX),
                    "-p", str(tcp), "-F", "-D", "4", "-s", "4096"]
            srv = p.start(0, argv)
            if not p.wait_listen(srv, tcp, deadline):
                print("FAIL: ib_write_bw server did not listen\n" + srv.output())
                return 1
            cli = p.start(1, argv + [link.oob_host()])

            def pids():
                found = [SEGMENT.match(f) for f in os.listdir(run_dir)]
                found = sorted(int(m.group(1)) for m in found if m)
                return found if len(found) == 2 else None
            pid = wait_for(pids, deadline, "both programs' stats segments")[0]
            cap = subprocess.run([os.path.join(build, "bin", "uroce"), "capture", "--device",
                                  "uroce0", "--pid", str(pid), "--count", str(FRAMES),
                                  "--seconds", "30", "--out", pcap, "--run-dir", run_dir],
                                 capture_output=True, text=True, timeout=60)
            print(cap.stderr.strip())
            if cap.returncode != 0:
                print(f"FAIL: uroce capture exited {cap.returncode}")
                return 1
            m = re.search(r"(\d+) frames of uroce0", cap.stderr)
            if not m or int(m.group(1)) != FRAMES:
                print(f"FAIL: asked for {FRAMES} frames: {cap.stderr.strip()}")
                return 1
            if any(f.endswith(".cap") for f in os.listdir(run_dir)):
                print(f"FAIL: the capture ring is left behind: {os.listdir(run_dir)}")
                return 1
            ok1, m1 = roce_pcap.check_tshark(pcap)
            ok2, m2 = roce_pcap.check_icrc(pcap)
            print(m1)
            print(m2)
            if not (ok1 and ok2):
                print(f"FAIL: the capture does not check out (kept in {pcap})")
                return 1
            for s in (cli, srv):
                s.wait(deadline - time.monotonic())
            if cli.rc != 0 or srv.rc != 0:
                print(f"FAIL: ib_write_bw exited {srv.rc}/{cli.rc}\n" + srv.output() + cli.output())
                return 1
        print(f"PASS: {FRAMES} frames of pid {pid} captured, decoded and ICRC-checked")
        return 0
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        for f in os.listdir(run_dir):
            os.unlink(os.path.join(run_dir, f))
        os.rmdir(run_dir)


if __name__ == "__main__":
    sys.exit(main())
