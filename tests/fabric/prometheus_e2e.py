#!/usr/bin/env python3
"""`uroce fabric prometheus-config` against a real Prometheus server (Debian's prometheus, on a
loopback port): the generated configuration and alerting rules pass promtool; after a scrape,
Prometheus' HTTP API returns every node's series (up, uroce_node_lossless with node and role
labels, the switch's port counters, a host's uroce_node_info) and has loaded the fabric's
alerts; a node that stops is `up == 0`. Nodes: two `uroce serve` hosts (one following a desired
state from a plain static HTTP server) and one uroce-switch."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodelib import Nodes, loopback_host, verdict, wait_for, write_inventory  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    uroce = os.path.join(args.build, "bin", "uroce")
    tmp = tempfile.mkdtemp(prefix="uroce-prom-", dir="/dev/shm")
    nodes = Nodes(tmp, args.build)
    procs, failures = nodes.procs, []

    def check(cond, what):
        if not cond:
            failures.append(what)

    try:
        ports = {}
        # h1 follows a desired state from a plain static HTTP server (zero-touch).
        with open(os.path.join(tmp, "desired.json"), "w") as f:
            json.dump({"version": 1, "all": {"profile": "lossless"}}, f)
        static_port = free_port()
        nodes.start("static", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                               "--directory", tmp, str(static_port)])
        for i, h in enumerate(("h1", "h2")):
            follow = ["--desired", f"http://127.0.0.1:{static_port}/desired.json",
                      "--desired-every", "500"] if h == "h1" else []
            ports[h] = nodes.host(h, loopback_host(i + 1, 'profile = "lossless"\n'), follow)
        ports["leaf"] = nodes.switch("leaf")
        inv = write_inventory(os.path.join(tmp, "fabric.toml"), "",
                              [("h1", "host", ports["h1"]), ("h2", "host", ports["h2"]),
                               ("leaf", "switch", ports["leaf"])])
        p = subprocess.run([uroce, "fabric", "prometheus-config", "--dir", tmp, "--inventory", inv],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"prometheus-config: {p.returncode} {p.stdout}{p.stderr}")
        p = subprocess.run(["promtool", "check", "config", os.path.join(tmp, "prometheus.yml")],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and "5 rules found" in p.stdout + p.stderr,
              f"promtool check config: {p.returncode}\n{p.stdout}{p.stderr}")
        # The switch's metrics as the node serves them.
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['leaf']}/metrics", timeout=10) as r:
            text = r.read().decode()
            ctype = r.headers.get("Content-Type", "")
        check(ctype.startswith("text/plain") and 'uroce_switch_rx_packets_total{port="1"}' in text
              and 'uroce_node_lossless{node="leaf",role="switch"}' in text,
              f"leaf /metrics ({ctype}):\n{text[:600]}")

        prom_port = free_port()
        nodes.start("prometheus", ["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/data",
                             f"--web.listen-address=127.0.0.1:{prom_port}"])

        def query(q):
            url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    return json.loads(r.read())["data"]["result"]
            except OSError:
                return []

        def nodes_of(q, value=None):
            return sorted(x["metric"].get("node") for x in query(q)
                          if value is None or x["value"][1] == value)

        wait_for(lambda: nodes_of("up", "1") == ["h1", "h2", "leaf"], time.monotonic() + 60,
                 "Prometheus to scrape every node")
        lossless = {x["metric"]["node"]: (x["metric"].get("role"), x["value"][1])
                    for x in query("uroce_node_lossless")}
        check(lossless == {"h1": ("host", "1"), "h2": ("host", "1"), "leaf": ("switch", "1")},
              f"uroce_node_lossless: {lossless}")
        check(nodes_of("uroce_switch_rx_packets_total") == ["leaf", "leaf"],
              f"switch port series: {query('uroce_switch_rx_packets_total')}")
        wait_for(lambda: nodes_of("uroce_node_desired_in_sync", "1") == ["h1"],
                 time.monotonic() + 60, "h1 in the desired state from a static server")
        check(nodes_of('uroce_node_info{role="host"}') == ["h1", "h2"],
              f"hosts' info: {query('uroce_node_info')}")
        with urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/api/v1/rules", timeout=5) as r:
            groups = json.loads(r.read())["data"]["groups"]
        alerts = sorted(rule["name"] for g in groups for rule in g["rules"])
        check(alerts == ["UroceCnpSurge", "UroceLosslessDrops", "UroceNodeDown",
                         "UroceNotAsDesired", "UrocePfcStorm"], f"rules loaded: {alerts}")
        # The fabric dashboard asks only for names that exist: every uroce_* one is served
        # now (the rdma_* ones are the hosts' exporter families, tests/tools/exporter_test.cc).
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                               "grafana", "fabric.json")) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        import re
        used = {m for e in exprs for m in re.findall(r"\buroce_[a-z_]+", e)}
        with urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/api/v1/label/__name__/values",
                                    timeout=5) as r:
            names = set(json.loads(r.read())["data"])
        check(len(used) >= 8 and used <= names, f"dashboard names not served: {used - names}")
        # A node that goes away.
        procs["h2"].send_signal(signal.SIGTERM)
        procs["h2"].wait(15)
        wait_for(lambda: nodes_of("up", "0") == ["h2"], time.monotonic() + 60,
                 "up == 0 for the stopped node")
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        nodes.stop_all()
    return verdict(failures, tmp)


if __name__ == "__main__":
    sys.exit(main())
