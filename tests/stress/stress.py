#!/usr/bin/python3
"""Every end-to-end case many times in a row under load (issue 31, "every end-to-end case under
load"): for each selected ctest test, its command (as `ctest --show-only=json-v1` gives it, with
its environment, working folder and timeout) runs --runs times while --busy busy loops keep the
machine's cores occupied beside it. A run fails when the command exits non-zero or outlives its
timeout; the first failure's telling line is the cause column. Prints one Markdown table row per
case (case | runs | failures | cause) and, with --table, writes the table to a file.

  stress.py --build build [--runs 20] [--busy 2] [--label e2e] [--exclude 'long|soak|vm']
            [--tests REGEX] [--table FILE] [--logs DIR] [--max-failures N]
            [--timeout-factor F]

Beside busy loops every run gets --timeout-factor (3) times its time limit, and so do the
limits inside tests/e2e/e2e.py (UROCE_E2E_TIMEOUT_FACTOR): two pinned busy-polling processes
that share their cores with busy loops run several times slower (riostream's default set: 71 and
179 s against its 120 s limit, 2026-12-07), which is no failure; a hang still is.

Exit status: 0 when no run failed, 1 otherwise. The ctest tests `stress.short` (CI: a few runs
of each case that failed under load before) and `stress.e2e` (labels stress;long: 20 runs of
every e2e case) call it (tests/stress/CMakeLists.txt).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

ERROR_RE = re.compile(r"(?i)(FAIL|error|timed out|timeout|Segmentation|Aborted|exit \d+|rc -?\d+)")


def ctest_tests(build, label, exclude, regex):
    """[(name, command, env, cwd, timeout)] of the tests ctest would run with these filters."""
    args = ["ctest", "--test-dir", build, "-N", "--show-only=json-v1"]
    if label:
        args += ["-L", label]
    if exclude:
        args += ["-LE", exclude]
    if regex:
        args += ["-R", regex]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tests = []
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        tests.append((t["name"], t["command"], env, props.get("WORKING_DIRECTORY", build),
                      float(props.get("TIMEOUT", 1500))))
    return tests


def start_busy(n):
    """n processes that spin forever (the load); killed by stop_busy."""
    return [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def run_once(command, env, cwd, timeout):
    """(ok, output) of one run; a run past its timeout is killed with its process group."""
    p = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode == 0, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return False, out + f"\nstress.py: timed out after {timeout:.0f} s\n"


def cause(output):
    """The line that says why a run failed: the last line matching ERROR_RE, else the last."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    hits = [ln for ln in lines if ERROR_RE.search(ln)]
    line = (hits or lines or ["(no output)"])[-1]
    return line[:160].replace("|", "/")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--label", default="e2e")
    ap.add_argument("--exclude", default="long|soak|vm|stress")
    ap.add_argument("--tests", default="")
    ap.add_argument("--table")
    ap.add_argument("--logs", default="")
    ap.add_argument("--timeout-factor", type=float, default=3,
                    help="each run's time limit (and e2e.py's own) times this, beside busy loops: "
                         "a slower run is no failure, a hang is")
    ap.add_argument("--max-failures", type=int, default=0,
                    help="stop a case after this many failures (0: run all --runs)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tests = [t for t in ctest_tests(build, a.label, a.exclude, a.tests)
             if not t[0].startswith("stress.")]
    if not tests:
        print("stress.py: no test matches", file=sys.stderr)
        return 2
    rows, failed_any = [], False
    busy = start_busy(a.busy)
    try:
        print(f"stress.py: {len(tests)} cases x {a.runs} runs, {a.busy} busy loops beside",
              flush=True)
        factor = a.timeout_factor if a.busy else 1
        for name, command, env, cwd, timeout in tests:
            fails, first, t0, runs = 0, "", time.monotonic(), 0
            env = dict(env, UROCE_E2E_TIMEOUT_FACTOR=str(factor))
            for k in range(a.runs):
                ok, out = run_once(command, env, cwd, timeout * factor)
                runs += 1
                if ok:
                    continue
                fails += 1
                first = first or cause(out)
                if a.logs:
                    os.makedirs(a.logs, exist_ok=True)
                    with open(os.path.join(a.logs, f"{name}.run{k}.log"), "w") as f:
                        f.write(out)
                else:
                    print(f"--- {name} run {k} failed:\n{out[-3000:]}", flush=True)
                if a.max_failures and fails >= a.max_failures:
                    break
            row = f"| `{name}` | {runs} | {fails} | {first or '—'} |"
            rows.append(row)
            failed_any = failed_any or fails > 0
            print(f"{row}  ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        stop_busy(busy)
    table = "| case | runs | failures | cause of the first failure |\n|---|---|---|---|\n"
    table += "\n".join(rows) + "\n"
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    print(table)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
