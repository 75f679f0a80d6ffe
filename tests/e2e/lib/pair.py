"""Runs a server and a client program as two processes over uroce.

Each side gets its own UROCE_CONFIG file (written here, docs/configuration.md), the drop-in
library through LD_LIBRARY_PATH=<build>/lib, and its own core (taskset: server on core 0, client
on core 1; two busy-polling processes must not share one of this machine's two cores).

The client starts once the server listens on its TCP port (polled with `ss`, bounded), since
neither pingpong nor perftest clients retry their connect. Every run has a deadline; on expiry
both processes are killed and the run fails. On failure both sides' output is printed.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import links

DEVICE = "uroce0"
GID_INDEX = 0  # GID index i is the RoCEv2 GID of address i (docs/configuration.md)


def write_config(path, link, side, extra_eal=None, queues=1, extra_toml="", arp=False):
    """Writes the TOML file of one side; returns its path. extra_toml: more [[device]] keys;
    arp: no static neighbour (the peer's MAC comes from ARP)."""
    peer = 1 - side
    eal = ", ".join(f'"{a}"' for a in (extra_eal or []))
    if hasattr(link, "device_toml"):  # host mode: the kernel supplies addresses and neighbours
        text = (f'# written by tests/e2e/lib/pair.py for side {side} of a {link.name} link\n'
                f'[[device]]\nname = "{DEVICE}"\n{link.device_toml(side)}'
                f'eal = [{eal}]\nqueues = {queues}\n{extra_toml}\n')
        with open(path, "w") as f:
            f.write(text)
        return path
    text = f"""# written by tests/e2e/lib/pair.py for side {side} of a {link.name} link
[[device]]
name = "{DEVICE}"
port = "{link.port(side)}"
eal = [{eal}]
addresses = ["{links.ROCE_ADDR[side]}/{links.ROCE_PREFIX_LEN}"]
mtu = {link.mtu}
queues = {queues}
mac = "{links.MACS[side]}"
{"" if arp else f'neighbors = {{ "{links.ROCE_ADDR[peer]}" = "{links.MACS[peer]}" }}'}
{extra_toml}
"""
    with open(path, "w") as f:
        f.write(text)
    return path


class Side:
    """One running program with its output captured to a file. stdin: as subprocess.Popen's
    (subprocess.PIPE: the program reads what proc.stdin is given)."""

    def __init__(self, label, argv, env, out_path, stdin=None):
        self.label = label
        self.argv = argv
        self.out_path = out_path
        self.out = open(out_path, "w+")
        self.proc = subprocess.Popen(argv, env=env, stdin=stdin, stdout=self.out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.rc = None
        _running.append(self)

    def poll(self):
        if self.rc is None:
            self.rc = self.proc.poll()
        return self.rc

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout):
        try:
            self.rc = self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            pass
        return self.rc

    def output(self):
        self.out.flush()
        with open(self.out_path, errors="replace") as f:
            return f.read()


_running = []  # every Side started; killed when the harness exits (links.py's cleanup)


def kill_all_sides():
    for s in _running:
        s.kill()


links.on_cleanup(kill_all_sides)


def free_tcp_port():
    return random.randint(20000, 39999)


def listening(link, side, port):
    """True when something listens on TCP `port` in `side`'s namespace."""
    p = subprocess.run(link.wrap(side) + ["ss", "-Hltn", f"sport = :{port}"],
                       capture_output=True, text=True)
    return bool(p.stdout.strip())


def cm_listening(listen_file, port):
    """True when a program over uroce's librdmacm listens on RDMA CM `port`: it appends
    "listen <port>" to $UROCE_RDMACM_LISTEN_FILE at each rdma_listen and "unlisten <port>" when
    that listen ends (there is no socket to poll); the last of them says."""
    if not os.path.exists(listen_file):
        return False
    state = False
    with open(listen_file) as f:
        for line in f.read().splitlines():
            if line == f"listen {port}":
                state = True
            elif line == f"unlisten {port}":
                state = False
    return state


class Scratch:
    """One folder for the temporary files of a case or a benchmark: every tempfile.mkdtemp()
    inside the `with` block (Pair's run folders, memif socket folders) goes under it. Removed at
    the end unless `keep` was set (a failed case: its logs stay, and the folder is named on
    stderr) or the block raised."""

    def __init__(self, prefix):
        self.root = tempfile.mkdtemp(prefix=prefix)
        self.keep = False
        self._saved = None

    def __enter__(self):
        self._saved = tempfile.tempdir
        tempfile.tempdir = self.root
        return self

    def __exit__(self, exc_type, exc, tb):
        tempfile.tempdir = self._saved
        if exc_type is None and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            print(f"kept {self.root}", file=sys.stderr)
        return False


class Pair:
    """A server and a client over `link`. Use run() or start_server()/start_client()/finish()."""

    def __init__(self, link, build_dir, workdir=None, extra_eal=None, queues=1, extra_toml="",
                 arp=False, env=None):
        self.link = link
        self.build_dir = build_dir
        self.dir = workdir or tempfile.mkdtemp(prefix="ue2e-run-")
        link.fresh()
        self.configs = [write_config(os.path.join(self.dir, f"side{s}.toml"), link, s, extra_eal,
                                     queues, extra_toml, arp)
                        for s in (0, 1)]
        self.extra_env = env or {}
        self.sides = [None, None]  # the first server and client
        self.procs = []            # every program started, in order
        self.timed_out = False

    def env(self, side):
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = os.path.join(self.build_dir, "lib")
        e["UROCE_CONFIG"] = self.configs[side]
        e.update(self.extra_env)
        return e

    def command(self, side, argv):
        """The full command line of a program on `side`: namespace, core pin, program."""
        # stdbuf: line-buffered stdout, so that a program killed at its deadline still shows
        # how far it got.
        return self.link.wrap(side) + ["taskset", "-c", str(side % os.cpu_count()),
                                       "stdbuf", "-oL", "-eL"] + argv

    def start(self, side, argv, tag=""):
        label = ("server" if side == 0 else "client") + tag
        s = Side(label, self.command(side, argv), self.env(side),
                 os.path.join(self.dir, f"{label}.out"))
        if tag == "":
            self.sides[side] = s
        self.procs.append(s)
        return s

    def wait_output(self, side_proc, text, deadline):
        """Waits until `text` appears in a program's output; False if it exited first."""
        while time.monotonic() < deadline:
            if text in side_proc.output():
                return True
            if side_proc.poll() is not None:
                return text in side_proc.output()
            time.sleep(0.05)  # polling a condition with a deadline
        return False

    def wait_listen(self, server, port, deadline):
        """Waits until the server listens on `port`; False if it exited or the deadline passed."""
        while time.monotonic() < deadline:
            if listening(self.link, 0, port):
                return True
            if server.poll() is not None:
                return False
            time.sleep(0.05)  # polling a condition with a deadline, not synchronising by time
        return False

    def run(self, server_argv, client_argv, port, timeout):
        """Runs both to completion. Returns (server_rc, client_rc); None = killed on timeout."""
        deadline = time.monotonic() + timeout
        srv = self.start(0, server_argv)
        if not self.wait_listen(srv, port, deadline):
            srv.wait(min(5, max(0, deadline - time.monotonic())))
            if srv.poll() is None:
                self.timed_out = True
            self.stop_all()
            return srv.rc, None
        cli = self.start(1, client_argv)
        for s in (cli, srv):
            s.wait(deadline - time.monotonic())
        if cli.rc is None or srv.rc is None:
            self.timed_out = True
        self.stop_all()
        return srv.rc, cli.rc

    def stop_all(self):
        for s in self.procs:
            if s.poll() is None:
                s.kill()
                s.wait(5)

    def report(self, title=""):
        """Both sides' command lines and output, for a failed run."""
        lines = [f"==== {title} (link {self.link.name}, dir {self.dir})"]
        if self.timed_out:
            lines.append("!!!! TIMED OUT: killed")
        for s in self.procs:
            lines.append(f"---- {s.label} rc={s.rc}: {' '.join(s.argv)}")
            lines.append(s.output().rstrip())
        for c in self.configs:
            with open(c) as f:
                lines.append(f"---- {c}\n{f.read().rstrip()}")
        return "\n".join(lines)


def fail(msg, pair=None):
    print(f"FAIL: {msg}", file=sys.stderr)
    if pair is not None:
        print(pair.report(msg), file=sys.stderr)
    return 1


def wait_one(name, pair, side, timeout, what="exit code"):
    """Waits for one process of the pair: (its output, None) when it exited 0; otherwise
    (its output, fail()'s return code) with the report printed, every process stopped first
    when it timed out. what: how a non-zero exit code is named in the message."""
    rc = side.wait(timeout)
    out = side.output()
    if rc is None:
        pair.timed_out = True
        pair.stop_all()
        return out, fail(f"{name}: timed out", pair)
    if rc != 0:
        return out, fail(f"{name}: {what} {rc}", pair)
    return out, None
