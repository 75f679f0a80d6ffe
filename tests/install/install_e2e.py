#!/usr/bin/env python3
"""uroce as installed: `cmake --install` into a staging folder (DESTDIR), then ib_write_bw
(perftest, unmodified) between two processes over a memif pair with the installed files only.

Each side runs `<stage>/usr/local/bin/uroce run --config sideN.toml -- ib_write_bw ...` with
neither LD_LIBRARY_PATH nor UROCE_CONFIG in its environment, so the libraries come from where
`uroce run` finds them next to itself. Checks:
  - the layout: programs in bin, libibverbs.so.1/librdmacm.so.1 and the XDP object in
    lib/uroce (no libibverbs.so development link), the sample /etc/uroce/uroce.toml, the
    exporter's unit naming the installed `uroce`;
  - the sample configuration loads: `uroce run --config <sample> -- ibv_devices` lists uroce0;
  - while the server waits, its /proc/PID/maps has libibverbs.so.1 and librdmacm.so.1 from the
    staging folder, and the installed `uroce show roce --json` sees its device running;
  - both programs exit 0 and the client prints a perftest result row.

Usage: install_e2e.py --build <build dir>   (needs root for memif/DPDK; the build done)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import links  # noqa: E402
import pair as pairmod  # noqa: E402
from e2e import perftest_rows  # noqa: E402

PREFIX = "/usr/local"


class InstalledPair(pairmod.Pair):
    """A Pair whose programs run through the installed `uroce run`, with no uroce variables."""

    def __init__(self, link, build, uroce):
        super().__init__(link, build)
        self.uroce = uroce

    def env(self, side):
        e = dict(os.environ)
        e.pop("LD_LIBRARY_PATH", None)
        e.pop("UROCE_CONFIG", None)
        return e

    def command(self, side, argv):
        return super().command(side, [self.uroce, "run", "--config", self.configs[side], "--"]
                               + argv)


def check_layout(stage):
    """Problems with the installed files, one string each."""
    lib = stage + PREFIX + "/lib/uroce"
    want = [stage + PREFIX + "/bin/" + p for p in ("uroce", "uroce-switch", "uroce-hostd")]
    want += [lib + "/" + f for f in ("libibverbs.so.1", "librdmacm.so.1", "roce_steer.bpf.o")]
    want += [stage + "/etc/uroce/uroce.toml",
             stage + PREFIX + "/lib/systemd/system/uroce-exporter.service",
             stage + PREFIX + "/lib/systemd/system/uroce-hostd@.service"]
    bad = [f"missing {p}" for p in want if not os.path.exists(p)]
    bad += [f"development link installed: {lib}/{f}" for f in ("libibverbs.so", "librdmacm.so")
            if os.path.lexists(os.path.join(lib, f))]
    unit = stage + PREFIX + "/lib/systemd/system/uroce-exporter.service"
    if os.path.exists(unit) and f"ExecStart={PREFIX}/bin/uroce exporter" not in open(unit).read():
        bad.append(f"{unit}: ExecStart does not name {PREFIX}/bin/uroce")
    hostd = stage + PREFIX + "/lib/systemd/system/uroce-hostd@.service"
    if os.path.exists(hostd) and f"ExecStart={PREFIX}/bin/uroce-hostd --netdev %i" not in open(
            hostd).read():
        bad.append(f"{hostd}: ExecStart does not name {PREFIX}/bin/uroce-hostd")
    return bad


def mapped_from(pid, names):
    """{name: path} of the shared objects `names` that process `pid` has mapped."""
    out = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            for n in names:
                if os.path.basename(path).startswith(n):
                    out[n] = path
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    build = os.path.abspath(ap.parse_args().build)
    work = tempfile.mkdtemp(prefix="uroce-install-e2e-")
    stage = os.path.join(work, "stage")
    run_dir = tempfile.mkdtemp(prefix="uroce-install-run-", dir="/dev/shm")  # a tmpfs, as /dev/shm
    os.environ["UROCE_RUN_DIR"] = run_dir  # the pair and `uroce show` use a folder of their own
    try:
        p = subprocess.run(["cmake", "--install", build, "--prefix", PREFIX],
                           env=dict(os.environ, DESTDIR=stage), capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL: cmake --install: {p.stdout}{p.stderr}")
            return 1
        bad = check_layout(stage)
        if bad:
            print("FAIL: installed layout:\n  " + "\n  ".join(bad))
            return 1
        uroce = stage + PREFIX + "/bin/uroce"
        clean = {k: v for k, v in os.environ.items()
                 if k not in ("LD_LIBRARY_PATH", "UROCE_CONFIG")}
        p = subprocess.run([uroce, "run", "--config", stage + "/etc/uroce/uroce.toml", "--",
                            "ibv_devices"], env=clean, capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or "uroce0" not in p.stdout:
            print(f"FAIL: the sample configuration: ibv_devices rc {p.returncode}\n"
                  f"{p.stdout}{p.stderr}")
            return 1
        print(f"installed into {stage}; the sample configuration lists uroce0")

        deadline = time.monotonic() + 90
        with links.make_link("memif", 4096) as link:
            pr = InstalledPair(link, build, uroce)
            tcp = pairmod.free_tcp_port()
            argv = ["ib_write_bw", "-d", pairmod.DEVICE, "-x", str(pairmod.GID_INDEX),
                    "-p", str(tcp), "-F", "-n", "2000"]
            srv = pr.start(0, argv)
            if not pr.wait_listen(srv, tcp, deadline):
                return pairmod.fail("the ib_write_bw server did not listen", pr)
            libs = mapped_from(srv.proc.pid, ["libibverbs.so", "librdmacm.so"])
            lib_dir = stage + PREFIX + "/lib/uroce/"
            if sorted(libs) != ["libibverbs.so", "librdmacm.so"] or \
                    any(not v.startswith(lib_dir) for v in libs.values()):
                return pairmod.fail(f"the server did not map the installed libraries: {libs}", pr)
            print(f"server maps {sorted(libs.values())}")
            show = subprocess.run([uroce, "show", "roce", "--json"], env=clean,
                                  capture_output=True, text=True, timeout=30)
            devs = json.loads(show.stdout)["devices"] if show.returncode == 0 else []
            if not any(d["pid"] == srv.proc.pid and d["state"] == "running" for d in devs):
                return pairmod.fail(f"installed uroce show roce: rc {show.returncode} "
                                    f"{show.stderr.strip()} {devs}", pr)
            cli = pr.start(1, argv + [link.oob_host()])
            for s in (cli, srv):
                s.wait(deadline - time.monotonic())
            if cli.rc != 0 or srv.rc != 0:
                pr.timed_out = cli.rc is None or srv.rc is None
                pr.stop_all()
                return pairmod.fail(f"ib_write_bw exited {srv.rc}/{cli.rc}", pr)
            rows = perftest_rows(cli.output())
            if not rows or rows[-1][0] != 65536 or rows[-1][3] <= 0:
                return pairmod.fail(f"no result row with a bandwidth: {rows}", pr)
            print(f"PASS: ib_write_bw over the installed uroce: {rows[-1]}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
