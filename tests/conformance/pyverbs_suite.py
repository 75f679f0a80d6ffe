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

The device is the built-in loopback device uroce0 (one process). It has no kernel netdev, so
the RDMA CM tests skip ("doesn't have net interface"). A device bound to a veth (host mode) would
not run them either: each CM test forks its two sides from a process that has already opened the
device, and DPDK's EAL, started in the parent, does not work in a forked child (the EAL threads
are not there), so uroce would need fork support first.

Usage: pyverbs_suite.py --build BUILD [--min-tests N] [--min-passed N]
"""

import argparse
import gzip
import json
import os
import re
import shutil
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
                         "RDMA CM tests: the loopback device has no kernel netdev, and on a "
                         "host-mode device they would fork after the parent opened it (no "
                         "fork support: DPDK's EAL does not work in a forked child)"),
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


def run_suite(work, env, timeout):
    """Unpacks the suite under work and runs it through child(); returns the parsed record."""
    suite = os.path.join(work, "rdma-core-tests")
    unpack(suite)
    out = os.path.join(work, "results.json")
    if os.path.exists(out):
        os.remove(out)
    cmd = [PYTHON, os.path.abspath(__file__), "--child", out, suite, "--",
                    "--dev", DEVICE, "-v"]
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=work, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"pyverbs: FAIL: the suite did not finish in {timeout} s")
    print(f"pyverbs: run_tests.py exited {p.returncode} after {time.monotonic() - started:.1f} s")
    if not os.path.exists(out):
        sys.exit(f"pyverbs: the suite wrote no results (exit {p.returncode})")
    with open(out) as f:
        return json.load(f)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        out, suite, sep = sys.argv[2], sys.argv[3], sys.argv[4]
        assert sep == "--"
        sys.exit(child(out, suite, sys.argv[5:]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--min-tests", type=int, default=0)
    ap.add_argument("--min-passed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=600, help="seconds for the whole suite")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = os.path.join(build, "conformance", "pyverbs")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib")
    env.pop("PYTHONPATH", None)
    cfg = os.path.join(work, "uroce.toml")
    loopback_config(cfg)
    env["UROCE_CONFIG"] = cfg
    result = run_suite(work, env, args.timeout)
    problems = check(result, build, args.min_tests, args.min_passed)
    for p in problems:
        print(p, file=sys.stderr)
    print("PASS" if not problems else f"FAIL: {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
