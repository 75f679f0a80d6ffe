#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine (as root): installs what is missing, builds
# the release and ASan+UBSan presets, runs every ctest test, then the fuzz targets for a bounded
# time. Long runs (soak, vm) run here in their short form.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

bash scripts/build.sh release
(cd build && ctest --output-on-failure --timeout 600 -j1)

bash scripts/build.sh asan
(cd build-asan && ctest --output-on-failure --timeout 900 -j1 -L 'unit|protocol|sim|fuzz')

if [ -x scripts/fuzz.sh ]; then bash scripts/fuzz.sh; fi
