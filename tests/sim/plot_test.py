#!/usr/bin/python3
"""bench/plot on the real scenarios: every scenario of sim_dcqcn_test writes its CSV (the list
below is the issue's: 2:1 at 40G and at 100G with HPCC thresholds, 4:1/8:1/16:1, flow join, PFC
without DCQCN, the PFC victim with and without DCQCN), bench/plot turns each into a PNG
(checked by signature, size and dimensions), and a file that is not a scenario CSV is refused
with one line and a non-zero exit.

Usage: plot_test.py <sim_dcqcn_test binary> <bench/plot>
"""
import os
import struct
import subprocess
import sys
import tempfile


EXPECTED = ["incast_2to1_40g", "incast_2to1_100g_hpcc", "queue_growth_2to1_40g",
            "queue_growth_4to1_40g", "queue_growth_8to1_40g", "incast_16to1_40g",
            "flow_join_40g", "incast_2to1_40g_no_dcqcn", "pfc_victim_40g",
            "pfc_victim_40g_no_dcqcn"]


def main():
    sim, plot = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="uroce-plot-") as d:
        r = subprocess.run([sim], capture_output=True, text=True,
                           env=dict(os.environ, UROCE_SIM_CSV_DIR=d), timeout=600)
        missing = [n for n in EXPECTED if not os.path.exists(os.path.join(d, n + ".csv"))]
        if r.returncode != 0 or missing:
            print(f"FAIL: scenarios rc {r.returncode}, no CSV from {missing}\n{r.stdout[-2000:]}")
            return 1
        csvs = [os.path.join(d, n + ".csv") for n in EXPECTED]
        r = subprocess.run([plot] + csvs, capture_output=True, text=True, timeout=300)
        pngs = [c[:-4] + ".png" for c in csvs]
        if r.returncode != 0 or r.stdout.split() != pngs:
            print(f"FAIL: bench/plot rc {r.returncode}: {r.stdout} {r.stderr}")
            return 1
        for png in pngs:
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
        print(f"PASS: {len(pngs)} scenario PNGs ({', '.join(EXPECTED)}), 900x800 each; "
              "a bad CSV is refused")
        return 0


if __name__ == "__main__":
    sys.exit(main())
