#!/usr/bin/env bash
# The README's first command (as root, on Debian 12): installs what is missing, builds, then
# runs perftest's ib_write_bw (Debian's own, unmodified binary) between two processes over
# uroce, one uroce device per process joined by a memif pair, and prints perftest's table.
# After the build it takes well under two minutes. Usage: bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh release
exec /usr/bin/python3 tests/e2e/e2e.py --build "$PWD/build" demo
