#!/usr/bin/env python3
"""rdma-core's own test suite (pyverbs) against uroce's libibverbs.so.1.

Debian's python3-pyverbs installs the suite under /usr/share/doc/rdma-core/tests (most files
gzip-compressed). This script unpacks a copy into the build tree, runs its unmodified
run_tests.py with Debian's /usr/bin/python3 and LD_LIBRARY_PATH=<build>/lib (pyverbs' Cython
modules link libibverbs.so.1, so they get uroce's), records every test's outcome, and passes
only when:
  - no test failed or errored (unittest's own verdict, subtests included);
  - every skip is another vendor's feature (the mlx5/EFA/CUDA modules, dmabuf, ...) or a known
    uroce limit of KNOWN_LIMITS, each listed with its reason in docs/limits.md ("Known limits"), and
    no known limit skips more tests than it is allowed (a regression hiding behind a limit);
  - the suite ran at least --min-tests tests and passed at least --min-passed of them;
  - the libibverbs.so.1 the suite mapped is the build's.

Two runs (ctest registers each):
  default   the whole suite on the built-in loopback device uroce0 (one process). It has no
            kernel netdev, so the RDMA CM tests skip ("doesn't have net interface").
  --rdmacm  the RDMA CM tests (tests/test_rdmacm.py) on a host-mode device bound to a veth
            (namespace A of tests/e2e's RoutedLink: 198.18.1.1/24, 2001:2:0:1::1/64, created
            and removed here, also on failure), shared through uroce-hostd, under `uroce
            rdma-ns` (which shows the device's netdev at /sys/class/infiniband/<dev>/device/net/,
            where the suite looks for it). Each test's parent opens the device, queries it and
            closes it, then forks the passive and the active side, which open it again: the
            parent's open starts no DPDK (docs/host-mode.md, "Opening without DPDK"), the two
            children become two clients of the daemon, and their frames go from one to the
            other through it (its counters must show that). Needs root; exits 77 (ctest: skipped)
            without it.

Usage: pyverbs_suite.py --build BUILD [--rdmacm] [--min-tests N] [--min-passed N]
"""

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LIMITS_DOC = os.path.join(HERE, "..", "..", "docs", "limits.md")
SUITE_SRC = "/usr/share/doc/rdma-core/tests"
PYTHON = "/usr/bin/python3"
DEVICE = "uroce0"

# Skips that are another vendor's feature: the test module is a provider's (mlx5, EFA, CUDA),
# or the reason names hardware uroce cannot be (a GPU's dma-buf memory or render node, CUDA).
OTHER_VENDOR_MODULES = re.compile(r"^tests\.test_(mlx5_|efa|cuda_)")
OTHER_VENDOR_REASONS = re.compile(r"(?i)\bmlx5\b|\bEFA\b|\bCUDA\b|\bdma-?buf\b|/dev/dri/")

# Known uroce limits: key -> (skips it may explain: (reason regex, test id regex or None), the
# most tests it may skip, its reason). docs/limits.md's "Known limits" table lists every key
# with the same reason; a limit that skips more tests than its count fails the run (a regression
# hiding behind a limit), one that skips fewer means a feature arrived (lower the count).
KNOWN_LIMITS = {
    "hugepages": ([(r"There are no huge pages of size 2M allocated",
                    r"^tests\.test_(odp|parent_domain)\.")], 3,
                  "the machine's, not uroce's: the 2 MiB huge page tests (two ODP, one parent "
                  "domain) skip when no 2 MiB huge pages are reserved"),
    "tag_matching": ([(r"Extended CQ is not supported", r"^tests\.test_tag_matching\.")], 4,
                     "hardware tag matching (IBV_SRQT_TM, IBV_WC_EX_WITH_TM_INFO): "
                     "ibv_create_cq_ex refuses TM_INFO"),
    "device_memory": ([(r"Device memory is not supported", None)], 14,
                      "device memory (ibv_alloc_dm): a software device has no on-device memory"),
    "raw_packet": ([(r"Create QP type 8 is not supported", None),
                    (r"Create Raw Packet QP", None)], 11,
                   "raw packet QPs and flow steering: uroce's port carries RoCE only"),
    "gid_table_full": ([(r"All gid indices populated, cannot check bad flow", None)], 1,
                       "a configured device's GID table is exactly its addresses: no free "
                       "entry to query"),
    "import": ([(r"Importing a device is not supported", None)], 1,
               "ibv_import_device: EOPNOTSUPP (a context lives in the process that opened it)"),
    "rdmacm_no_netdev": ([(r"doesn't have net interface", None)], 10,
                         "RDMA CM tests on the loopback device: it has no kernel netdev (they "
                         "run on a host-mode device in conformance.pyverbs_rdmacm)"),
    "multicast": ([(r"Multicast is not supported on this device", r"^tests\.test_rdmacm\.")], 3,
                  "multicast: max_mcast_grp is 0 and rdma_join_multicast fails with ENOSYS "
                  "(the kernel's answer for a device without multicast)"),
}


def unpack(dst):
    """Copies the installed suite to dst and decompresses every .gz file in place."""
    if not os.path.isdir(SUITE_SRC):
        sys.exit(f"{SUITE_SRC} is missing: install python3-pyverbs (scripts/install-deps.sh)")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(SUITE_SRC, dst)
    for name in os.listdir(dst):
        if name.endswith(".gz"):
            path = os.path.join(dst, name)
            with gzip.open(path, "rb") as src, open(path[:-3], "wb") as out:
                shutil.copyfileobj(src, out)
            os.remove(path)


def child(out_path, suite_dir, argv):
    """Runs the suite's run_tests.py in this process with a unittest result class that also
    records every outcome, then writes them to out_path as JSON."""
    import runpy
    import traceback
    import unittest

    pid = os.getpid()
    records = []

    def rec(test, outcome, detail=""):
        records.append({"id": test.id(), "outcome": outcome, "detail": detail})

    def err_text(err):
        return "".join(traceback.format_exception(*err))

    class Recording(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            rec(test, "pass")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            rec(test, "skip", str(reason))

        def addFailure(self, test, err):
            super().addFailure(test, err)
            rec(test, "fail", err_text(err))

        def addError(self, test, err):
            super().addError(test, err)
            rec(test, "error", err_text(err))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            rec(test, "expected_failure", err_text(err))

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            rec(test, "fail", "unexpected success")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                failed = issubclass(err[0], test.failureException)
                rec(subtest, "fail" if failed else "error", err_text(err))

    unittest.TextTestRunner.resultclass = Recording
    run_tests = os.path.join(suite_dir, "run_tests.py")
    sys.path.insert(0, suite_dir)
    sys.argv = [run_tests] + argv
    code = 0
    try:
        runpy.run_path(run_tests, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        if os.getpid() == pid:  # not in a test's forked child
            libs = set()
            with open("/proc/self/maps") as maps:
                for line in maps:
                    if "libibverbs.so" in line:
                        libs.add(line.split()[-1])
            with open(out_path, "w") as f:
                json.dump({"exit": code, "records": records, "libibverbs": sorted(libs)}, f)
    return code


def classify(rec):
    """-> ("vendor", None) | ("limit", key) | ("unexpected", None) for a skip record."""
    if OTHER_VENDOR_MODULES.match(rec["id"]) or OTHER_VENDOR_REASONS.search(rec["detail"]):
        return "vendor", None
    for key, (skips, _most, _text) in KNOWN_LIMITS.items():
        for reason, test_re in skips:
            if re.search(reason, rec["detail"]) and (test_re is None or
                                                     re.search(test_re, rec["id"])):
                return "limit", key
    return "unexpected", None


def limits_doc_problems():
    """KNOWN_LIMITS and the rows `| \`key\` | ...` of docs/limits.md's "Known limits" section
    must name the same limits."""
    with open(LIMITS_DOC) as f:
        text = f.read()
    m = re.search(r"^## Known limits\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        return ["docs/limits.md has no '## Known limits' section"]
    listed = set(re.findall(r"^\| `([a-z_0-9]+)` \|", m.group(1), re.M))
    problems = [f"known limit {k!r} is not in docs/limits.md's Known limits table"
                for k in KNOWN_LIMITS if k not in listed]
    problems += [f"docs/limits.md's Known limits table lists {k!r}, which KNOWN_LIMITS does not"
                 for k in sorted(listed - set(KNOWN_LIMITS))]
    return problems


def check(result, build, min_tests, min_passed):
    """Prints the summary; returns the list of problems (empty: pass)."""
    records = result["records"]
    problems = limits_doc_problems()
    lib_dir = os.path.realpath(os.path.join(build, "lib"))
    libs = result["libibverbs"]
    if not libs or any(os.path.dirname(os.path.realpath(p)) != lib_dir for p in libs):
        problems.append(f"the suite mapped libibverbs {libs}, not the one in {lib_dir}")
    counts = {}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    per_limit = {}
    vendor = 0
    for r in records:
        if r["outcome"] in ("fail", "error"):
            problems.append(f"{r['outcome'].upper()}: {r['id']}\n{r['detail']}")
        elif r["outcome"] == "skip":
            kind, key = classify(r)
            if kind == "vendor":
                vendor += 1
            elif kind == "limit":
                per_limit.setdefault(key, []).append(r["id"])
            else:
                problems.append(f"unexpected skip: {r['id']}: {r['detail']!r} (neither another "
                                "vendor's feature nor a known limit in KNOWN_LIMITS/docs/limits.md)")
    for key, (_skips, most, _text) in KNOWN_LIMITS.items():
        ids = per_limit.get(key, [])
        if len(ids) > most:
            problems.append(f"known limit {key!r} skipped {len(ids)} tests, at most {most} "
                            "expected: " + ", ".join(ids))
    total = len(records)
    passed = counts.get("pass", 0)
    if total < min_tests:
        problems.append(f"only {total} tests ran, at least {min_tests} expected")
    if passed < min_passed:
        problems.append(f"only {passed} tests passed, at least {min_passed} expected")
    if result["exit"] != 0 and not any(r["outcome"] in ("fail", "error") for r in records):
        problems.append(f"run_tests.py exited with {result['exit']}")

    print(f"pyverbs: {total} tests: {passed} passed, {counts.get('skip', 0)} skipped "
          f"({vendor} other vendors', {sum(len(v) for v in per_limit.values())} known uroce "
          f"limits), {counts.get('fail', 0)} failed, {counts.get('error', 0)} errors, "
          f"{counts.get('expected_failure', 0)} expected failures")
    for key, (_skips, most, text) in KNOWN_LIMITS.items():
        if key in per_limit:
            print(f"  limit {key:17} {len(per_limit[key]):3} (at most {most}): {text}")
    return problems


def loopback_config(path):
    with open(path, "w") as f:
        f.write(f'[[device]]\nname = "{DEVICE}"\nport = "loopback"\n'
                'addresses = ["198.18.0.1/15"]\n')


def suite_argv(work, tests=()):
    """Unpacks the suite under work; returns (the command that runs it through child(), the
    results file)."""
    suite = os.path.join(work, "rdma-core-tests")
    unpack(suite)
    out = os.path.join(work, "results.json")
    if os.path.exists(out):
        os.remove(out)
    return [PYTHON, os.path.abspath(__file__), "--child", out, suite, "--",
            "--dev", DEVICE, "-v", *tests], out


def read_results(out, code):
    if not os.path.exists(out):
        sys.exit(f"pyverbs: the suite wrote no results (exit {code})")
    with open(out) as f:
        return json.load(f)


def run_suite(work, env, timeout):
    """Runs the whole suite on the loopback device; returns the parsed record."""
    cmd, out = suite_argv(work)
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=work, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"pyverbs: FAIL: the suite did not finish in {timeout} s")
    print(f"pyverbs: run_tests.py exited {p.returncode} after {time.monotonic() - started:.1f} s")
    return read_results(out, p.returncode)


RDMACM_TESTS = ["test_rdmacm"]


def daemon_problem(out):
    """The CM tests' frames went through uroce-hostd: it switched frames between at least two
    clients (each test's passive and active side), and none left for the wire."""
    slots = {}
    for m in re.finditer(r"(?m)^final slot=(\d+) (.*)$", out):
        slots[int(m.group(1))] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    if len([c for c in slots.values() if c.get("switched", 0) > 0]) < 2:
        return f"uroce-hostd switched no frames between two clients: {slots}"
    if any(c.get("to_wire", 0) > 0 for c in slots.values()):
        return f"same-host frames reached the wire: {slots}"
    return None


def run_rdmacm(build, work, env, timeout):
    """The RDMA CM tests on a host-mode device shared through uroce-hostd (module docstring).
    Returns (the parsed record, problems of the daemon's counters)."""
    sys.path.insert(0, os.path.join(HERE, "..", "e2e", "lib"))
    import links  # noqa: E402  (namespaces, cleanup on exit and on signals)
    import pair  # noqa: E402  (programs with captured output, killed on cleanup)

    link = links.RoutedLink(mtu=1024)
    try:
        run_dir = os.path.join(work, "run")
        os.makedirs(run_dir, exist_ok=True)
        env = dict(env, UROCE_CONFIG=pair.write_config(os.path.join(work, "uroce.toml"), link, 0),
                   UROCE_RUN_DIR=run_dir)
        ifname = link.ifs[0]
        daemon = pair.Side("uroce-hostd", link.wrap(0) + [
            "stdbuf", "-oL", "-eL", os.path.join(build, "bin", "uroce-hostd"), "--netdev", ifname,
            "--run-dir", run_dir], env, os.path.join(work, "hostd.out"))
        deadline = time.monotonic() + 30
        while "serving" not in daemon.output():
            if daemon.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"pyverbs: uroce-hostd did not start:\n{daemon.output()}")
            time.sleep(0.05)  # polling a condition with a deadline
        cmd, out = suite_argv(work, RDMACM_TESTS)
        started = time.monotonic()
        suite = pair.Side("suite", link.wrap(0) + [
            os.path.join(build, "bin", "uroce"), "rdma-ns", "--"] + cmd, env,
            os.path.join(work, "suite.out"))
        code = suite.wait(timeout)
        print(suite.output(), end="")
        if code is None:
            suite.kill()
            sys.exit(f"pyverbs: FAIL: the RDMA CM tests did not finish in {timeout} s")
        print(f"pyverbs: run_tests.py exited {code} after {time.monotonic() - started:.1f} s")
        daemon.kill(signal.SIGTERM)  # it prints its final counters
        if daemon.wait(15) is None:
            daemon.kill()
        hostd = daemon.output()
        print("\n".join(ln for ln in hostd.splitlines() if ln.startswith("final")))
        problem = daemon_problem(hostd)
        return read_results(out, code), [problem] if problem else []
    finally:
        pair.kill_all_sides()
        link.close()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        out, suite, sep = sys.argv[2], sys.argv[3], sys.argv[4]
        assert sep == "--"
        sys.exit(child(out, suite, sys.argv[5:]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--min-tests", type=int, default=0)
    ap.add_argument("--min-passed", type=int, default=0)
    ap.add_argument("--rdmacm", action="store_true",
                    help="the RDMA CM tests on a host-mode device (module docstring)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds for the whole suite")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = os.path.join(build, "conformance", "pyverbs_rdmacm" if args.rdmacm else "pyverbs")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib")
    env.pop("PYTHONPATH", None)
    if args.rdmacm:
        if os.geteuid() != 0:
            print("SKIP: needs root (network namespaces, AF_XDP, uroce rdma-ns)")
            sys.exit(77)
        result, problems = run_rdmacm(build, work, env, args.timeout)
    else:
        cfg = os.path.join(work, "uroce.toml")
        loopback_config(cfg)
        env["UROCE_CONFIG"] = cfg
        result, problems = run_suite(work, env, args.timeout), []
    problems += check(result, build, args.min_tests, args.min_passed)
    for p in problems:
        print(p, file=sys.stderr)
    print("PASS" if not problems else f"FAIL: {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
