#!/usr/bin/env python3
"""How long `uroce fabric apply` and `uroce fabric show roce` take (docs/fabric.md):

  --real   the six real nodes of tests/fabric/fabric_e2e.py (four `uroce serve` hosts, two
           uroce-switch nodes), on loopback;
  --stubs N  N simulated nodes: one process serving N node APIs on loopback ports, each
           answering from a recorded state document (a host's and a switch's, taken from the
           real nodes above) and taking writes into memory; no RoCE process behind them.

Each command runs --repeat times; the median and the largest wall time are printed, one line
per command. Usage: fabric_bench.py --build DIR [--stubs 500] [--repeat 5]"""
import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "fabric"))
from nodelib import Nodes, get, loopback_host, write_inventory, write_token  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def make_stub(settings, state, role, name):
    """A handler class answering as one node: its settings change with writes."""
    class Stub(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"
        cur = dict(settings)

        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.startswith("/v1/settings"):
                self.reply(200, Stub.cur)
            elif self.path.startswith("/v1/state"):
                self.reply(200, {"node": name, "role": role, "settings": Stub.cur,
                                 "state": state})
            else:
                self.reply(200, {"api": "uroce-node", "version": 1, "node": name, "role": role})

        def do_PATCH(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            new = dict(Stub.cur)
            new.update(body)
            changed = [f"{k}: {json.dumps(Stub.cur.get(k))} -> {json.dumps(v)}"
                       for k, v in body.items() if Stub.cur.get(k) != v]
            dry = "dry_run=1" in self.path
            if not dry:
                Stub.cur = new
            self.reply(200, {"changed": changed, "applied": bool(changed) and not dry,
                             "settings": new})

        do_PUT = do_PATCH

        def log_message(self, *args):
            pass
    return Stub


def timed(argv, repeat):
    walls = []
    for _ in range(repeat):
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        walls.append(time.monotonic() - t0)
        if p.returncode not in (0,):
            raise RuntimeError(f"{' '.join(argv)}: rc {p.returncode}\n{p.stdout[-2000:]}{p.stderr}")
    return statistics.median(walls), max(walls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--stubs", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    uroce = os.path.join(args.build, "bin", "uroce")
    tmp = tempfile.mkdtemp(prefix="uroce-fabric-bench-", dir="/dev/shm")
    nodes, servers = Nodes(tmp, args.build), []
    try:
        token_file = write_token(tmp, TOKEN)
        real = [(f"h{i}", "host", nodes.host(f"h{i}", loopback_host(i + 1),
                                             ["--token-file", token_file])) for i in range(4)]
        real += [(s, "switch", nodes.switch(s, ["--api-token-file", token_file]))
                 for s in ("leaf", "spine")]

        def inventory(path, entries):
            return write_inventory(path, token_file, entries, timeout_ms=10000)

        def bench(label, inv):
            for what, argv in [
                    ("apply lossless", ["apply", "lossless"]),
                    ("apply lossy", ["apply", "lossy"]),
                    ("show roce --interval 0", ["show", "roce", "--interval", "0"]),
                    ("doctor --interval 0", ["doctor", "--interval", "0"])]:
                med, worst = timed([uroce, "fabric", *argv, "--inventory", inv], args.repeat)
                print(f"{label}: uroce fabric {what}: median {med:.3f} s, max {worst:.3f} s "
                      f"({args.repeat} runs)", flush=True)

        bench("6 real nodes", inventory(os.path.join(tmp, "real.toml"), real))

        # Recorded state of a real host and switch, served by N stubs.
        rec = {role: get(port, "/v1/state") for _, role, port in (real[0], real[4])}
        stubs = []
        for i in range(args.stubs):
            role = "switch" if i % 10 == 0 else "host"
            handler = make_stub(rec[role]["settings"], rec[role]["state"], role, f"n{i}")
            srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            srv.daemon_threads = True
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
            stubs.append((f"n{i}", role, srv.server_address[1]))
        bench(f"{args.stubs} simulated nodes", inventory(os.path.join(tmp, "stubs.toml"), stubs))
        return 0
    finally:
        for s in servers:
            s.shutdown()
        nodes.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
