#!/usr/bin/env python3
"""Helpers of the tests that run real uroce processes through tools/uroce-switch
(incast_e2e.py, lossy_e2e.py): process start/kill with output files, the switch's start and
stop, and its `key=value` counter lines. Every wait is a condition with a deadline."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "lib"))
from waits import wait_for  # noqa: E402

procs = []


def start(argv, out_path, env=None):
    f = open(out_path, "w+")
    p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    p.out_path = out_path
    procs.append(p)
    return p


def output(p):
    with open(p.out_path, errors="replace") as f:
        return f.read()


def kill_all():
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(5)




def listening(port):
    p = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
    return bool(p.stdout.strip())


def write_host_config(path, who, i, sock, addrs, macs, extra=""):
    """The TOML of host i: a uroce device that is a memif client of switch socket `sock`, with
    addrs[i]/macs[i] and every other host as a static neighbour; `extra`: more device keys."""
    neigh = ", ".join(f'"{addrs[j]}" = "{macs[j]}"' for j in range(len(addrs)) if j != i)
    with open(path, "w") as f:
        f.write(f"""# written by {who}: host {i} on switch port {i}
[[device]]
name = "uroce0"
port = "net_memif0,role=client,socket={sock},bsize=4096"
addresses = ["{addrs[i]}/15"]
mtu = 1024
mac = "{macs[i]}"
neighbors = {{ {neigh} }}
{extra}
""")


def parse_switch(text):
    """{port: {counter: int}} from the switch's `final` lines."""
    ports = {}
    for line in text.splitlines():
        if line.startswith("final "):
            kv = dict(x.split("=") for x in line.split()[1:])
            ports[int(kv["port"])] = {k: int(v) for k, v in kv.items()}
    return ports


def start_switch(build, d, name, ports, extra, deadline, max_time=40):
    argv = [os.path.join(build, "bin", "uroce-switch"), "--file-prefix",
            f"usw-{os.getpid()}-{os.path.basename(d)}-{name}"]
    for i, dev in enumerate(ports):
        argv += ["--port", f"net_memif{i},{dev}"]
    argv += extra + ["--buffer", "16M", "--stats-every", "1s", "--max-time", f"{max_time}s"]
    sw = start(argv, os.path.join(d, f"{name}.out"))
    wait_for(lambda: "ports up" in output(sw) or sw.poll() is not None, deadline, f"{name} start")
    if sw.poll() is not None:
        raise RuntimeError(f"{name} exited:\n" + output(sw))
    return sw


def stop_switches(d, switches):
    outs = {}
    for name, sw in switches.items():
        sw.send_signal(signal.SIGINT)
        sw.wait(10)
        outs[name] = output(sw)
        if sw.returncode != 0:
            raise RuntimeError(f"{name} exited {sw.returncode}:\n" + outs[name])
    left = [f for f in os.listdir(d) if f.endswith(".sock")]
    if left:
        raise RuntimeError(f"memif sockets left behind: {left}")
    return {name: parse_switch(o) for name, o in outs.items()}


def run_test(prefix, keep, body):
    """Runs body(tmp, failures, gaps) in a fresh temp folder, prints every failure (gaps: the
    blocking ones outside the switch) and PASS, kills what is left, removes the folder unless
    it failed or `keep`. Returns the exit status."""
    # On a tmpfs: the run folders inside it hold the processes' statistics segments, whose
    # writes on a disk can wait for its journal and stall an engine (docs/counters.md).
    tmp = tempfile.mkdtemp(prefix=prefix, dir="/dev/shm")
    failures, gaps = [], []
    ok = False
    try:
        body(tmp, failures, gaps)
        ok = not failures and not gaps
        for g in gaps:
            print("FAIL (blocking gap outside the switch): " + g)
        for f in failures:
            print("FAIL: " + f)
        if ok:
            print("PASS")
        return 0 if ok else 1
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        kill_all()
        if ok and not keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"outputs kept in {tmp}")


def script_main(main):
    """Runs main() as a script: SIGTERM (a ctest timeout) still runs its cleanup."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
