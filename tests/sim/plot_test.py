#!/usr/bin/python3
"""bench/plot on a real scenario: the flow-join scenario of sim_dcqcn_test writes its CSV,
bench/plot turns it into a PNG (checked by signature, size and dimensions), and a file that is
not a scenario CSV is refused with one line and a non-zero exit.

Usage: plot_test.py <sim_dcqcn_test binary> <bench/plot>
"""
import os
import struct
import subprocess
import sys
import tempfile


def main():
    sim, plot = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="uroce-plot-") as d:
        r = subprocess.run([sim, "--gtest_filter=*FlowJoin*"], capture_output=True, text=True,
                           env=dict(os.environ, UROCE_SIM_CSV_DIR=d), timeout=600)
        csv_path = os.path.join(d, "flow_join_40g.csv")
        if r.returncode != 0 or not os.path.exists(csv_path):
            print(f"FAIL: the scenario wrote no CSV (rc {r.returncode})\n{r.stdout[-2000:]}")
            return 1
        r = subprocess.run([plot, csv_path], capture_output=True, text=True, timeout=120)
        png = os.path.join(d, "flow_join_40g.png")
        if r.returncode != 0 or r.stdout.strip() != png:
            print(f"FAIL: bench/plot rc {r.returncode}: {r.stdout} {r.stderr}")
            return 1
        with open(png, "rb") as f:
            head = f.read(24)
        size = os.path.getsize(png)
        width, height = struct.unpack(">II", head[16:24])
        if head[:8] != b"\x89PNG\r\n\x1a\n" or size < 20000 or (width, height) != (900, 800):
            print(f"FAIL: {png} is not the expected PNG ({size} bytes, {width}x{height})")
            return 1
        bad = os.path.join(d, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b\n1,2\n")
        r = subprocess.run([plot, bad], capture_output=True, text=True, timeout=120)
        if r.returncode == 0 or "not a scenario CSV" not in r.stderr or r.stderr.count("\n") != 1:
            print(f"FAIL: a bad CSV gave rc {r.returncode}: {r.stderr!r}")
            return 1
        print(f"PASS: {png}: {size} bytes, {width}x{height}; a bad CSV is refused")
        return 0


if __name__ == "__main__":
    sys.exit(main())
