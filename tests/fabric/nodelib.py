"""Helpers of the tests and benchmarks that run uroce nodes with their node API on loopback
(docs/fabric.md): a token file, `uroce serve` hosts and uroce-switch nodes started with their
output in a folder, the API port each one prints, HTTP calls, and stopping them all. Every wait
is a condition with a deadline."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "lib"))
from waits import wait_for  # noqa: E402


def write_token(folder, token):
    """A token file (mode 0600) in folder; its path."""
    path = os.path.join(folder, "token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (token + "\n").encode())
    os.close(fd)
    return path


def call(port, method, path, body=None, token=None, raw=None):
    """(status, parsed JSON or text) of one request to 127.0.0.1:port."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def get(port, path):
    status, body = call(port, "GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path} on port {port}: HTTP {status} {body}")
    return body


class Nodes:
    """Processes started in `folder`, each with its output in <name>.out."""

    def __init__(self, folder, build):
        self.folder, self.build, self.procs = folder, build, {}
        self.uroce = os.path.join(build, "bin", "uroce")

    def output(self, name):
        with open(os.path.join(self.folder, name + ".out"), errors="replace") as f:
            return f.read()

    def start(self, name, argv):
        out = open(os.path.join(self.folder, name + ".out"), "w")
        self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        return self.procs[name]

    def port_of(self, name, marker, seconds=30):
        """The port in the "(port N)" of the first output line with marker."""
        line = wait_for(lambda: next((x for x in self.output(name).splitlines() if marker in x),
                                     None) or (self.procs[name].poll() is not None and "exited"),
                        time.monotonic() + seconds, f"{name} start")
        if self.procs[name].poll() is not None:
            raise RuntimeError(f"{name} exited:\n" + self.output(name))
        return int(line.split("(port ")[1].split(")")[0])

    def host(self, name, config_text, extra=()):
        """`uroce serve` over a configuration file of config_text; its API port."""
        cfg = os.path.join(self.folder, f"{name}.toml")
        with open(cfg, "w") as f:
            f.write(config_text)
        self.start(name, [self.uroce, "serve", "--listen", "127.0.0.1:0", "--config", cfg,
                          "--name", name, "--run-dir", self.folder, *extra])
        return self.port_of(name, "API on")

    def switch(self, name, extra=(), ports=2):
        """uroce-switch with `ports` memif ports (no peer) and its node API; its API port."""
        argv = [os.path.join(self.build, "bin", "uroce-switch"), "--file-prefix",
                f"usw-{os.getpid()}-{name}", "--name", name, "--api", "127.0.0.1:0",
                "--stats-every", "0", *extra]
        for k in range(ports):
            argv += ["--port", f"net_memif{k},role=server,id=0,socket={self.folder}/{name}{k}.sock"]
        self.start(name, argv)
        return self.port_of(name, "node API on")

    def stop_all(self):
        """SIGTERM to every process still running, SIGKILL after 20 s; the names that needed
        the kill."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        killed = []
        for name, p in self.procs.items():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                killed.append(name)
        return killed


def loopback_host(i, extra=""):
    """A host configuration of one loopback device at 198.18.5.<i>."""
    return (f'[[device]]\nname = "uroce0"\nport = "loopback"\n'
            f'addresses = ["198.18.5.{i}/15"]\n{extra}')


def write_inventory(path, token_file, nodes, timeout_ms=2000):
    """An inventory of (name, role, port) nodes on 127.0.0.1."""
    with open(path, "w") as f:
        if token_file:
            f.write(f'token_file = "{token_file}"\n')
        f.write(f"timeout_ms = {timeout_ms}\n")
        for name, role, port in nodes:
            f.write(f'\n[[node]]\nname = "{name}"\nrole = "{role}"\napi = "127.0.0.1:{port}"\n')
    return path


def verdict(failures, folder):
    """Prints every failure and PASS or where the outputs are kept (the folder is removed on
    success); the exit status."""
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print(f"outputs kept in {folder}")
        return 1
    shutil.rmtree(folder, ignore_errors=True)
    print("PASS")
    return 0
