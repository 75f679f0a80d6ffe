#!/usr/bin/python3
"""Run by hostd_e2e.py's case `forkquery` in a namespace whose netdev uroce-hostd serves, with
LD_LIBRARY_PATH to uroce's libibverbs (pyverbs, Debian's python3-pyverbs, links it).

Opens the device, queries it (device, port, every GID and its type) and closes it: no DPDK may
start in this process (no EAL thread, no DPDK runtime folder of this pid). The port's figures
must be the netdev's (state, GIDs = its addresses). Then forks: the child opens the device and
allocates a PD, which makes it a client of the daemon (its port opens) and still starts no
DPDK (shared mode never does), and exits 0. Prints one "ok ..." line; exits non-zero with the
reason otherwise.

Usage: fork_after_query.py DEVICE IPV4_ADDRESS
"""

import os
import sys

import pyverbs.device as d
import pyverbs.enums as e
import pyverbs.pd as pd


def eal_threads():
    names = []
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/comm") as f:
            names.append(f.read().strip())
    return [n for n in names if n.startswith("eal-")]


def runtime_dirs():
    try:
        return [n for n in os.listdir("/var/run/dpdk") if n.startswith(f"uroce-{os.getpid()}-")]
    except FileNotFoundError:
        return []


def main():
    dev, ipv4 = sys.argv[1], sys.argv[2]
    ctx = d.Context(name=dev)
    ctx.query_device()
    port = ctx.query_port(1)
    if port.state != e.IBV_PORT_ACTIVE:
        sys.exit(f"port state {port.state}, want ACTIVE")
    gids = [str(ctx.query_gid(1, i)) for i in range(port.gid_tbl_len)]
    for i in range(port.gid_tbl_len):
        ctx.query_gid_type(1, i)
    ctx.close()
    want = "0000:0000:0000:0000:0000:ffff:" + "".join(
        f"{int(a):02x}{int(b):02x}:" for a, b in [ipv4.split(".")[0:2], ipv4.split(".")[2:4]])[:-1]
    if want not in gids:
        sys.exit(f"GIDs {gids} lack {want}")
    if eal_threads() or runtime_dirs():
        sys.exit(f"open + query + close started DPDK: threads {eal_threads()}, "
                 f"folders {runtime_dirs()}")
    child = os.fork()
    if child == 0:
        code = 0
        try:
            c = d.Context(name=dev)
            p = pd.PD(c)
            if eal_threads() or runtime_dirs():
                print(f"child: DPDK started by alloc_pd: threads {eal_threads()}, "
                      f"folders {runtime_dirs()}", flush=True)
                code = 3
            p.close()
            c.close()
        except Exception as ex:  # the child's failure, reported through its exit status
            print(f"child: {ex}", flush=True)
            code = 2
        os._exit(code)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"the forked child failed: status {status}")
    print(f"ok {dev}: {len(gids)} GIDs, no DPDK before fork; the child opened it and "
          "allocated a PD")


if __name__ == "__main__":
    main()
