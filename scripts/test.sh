#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine (as root): installs what is missing, builds
# the release, ASan+UBSan and TSan presets, runs every ctest test (the sanitizer builds: the
# in-process unit/protocol/sim tests; TSan: the multi-threaded engine and verbs tests), then
# each fuzz target for a bounded time. Long runs (label `long`) run here in their short form (the same tests without `long`);
# the full forms run with: (cd build && ctest -L long).
#   UROCE_TEST_VM=0   skips the Soft-RoCE VM interop test (label vm); it runs by default.
#   FUZZ_SECONDS=N    seconds per fuzz target (default 10 here; scripts/fuzz.sh alone: 60).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stamp() { echo "== test.sh: $1 ($(( $(date +%s) - start )) s)"; }

bash scripts/install-deps.sh
stamp "dependencies ready"

bash scripts/build.sh release
stamp "release build done"
exclude='long|soak|vm'
# The in-process tiers two at a time (the simulated benchmarks and plots too: simulated time,
# nothing timing-sensitive); then everything else one at a time (real processes pinned to the
# two cores, timing-sensitive under load).
inproc='unit|protocol|sim|bench|plot'
(cd build && ctest --output-on-failure --timeout 600 -j2 -L "$inproc" -LE "$exclude")
stamp "release in-process tests done"
(cd build && ctest --output-on-failure --timeout 600 -j1 -LE "$exclude|$inproc")
stamp "release tests done"

# interop_vm_rxe_uroce's cases are a subset of interop_vm_rxe_uroce_full's: the full one runs.
if [ "${UROCE_TEST_VM:-1}" = 1 ]; then
  (cd build && ctest --output-on-failure --timeout 1800 -j1 -L vm -E '^interop_vm_rxe_uroce$')
  stamp "vm interop tests done"
fi

bash scripts/build.sh asan
stamp "asan build done"
# The incast scenarios (tests/sim/*_incast_test.cc: many engines for tens of simulated ms)
# take ~430 s of the ASan phase's CPU at -O0; they run in the release phase, and the engine
# code they drive runs under ASan in the shorter sim and protocol tests.
(cd build-asan && ctest --output-on-failure --timeout 900 -j2 -L 'unit|protocol|sim|netns' -LE 'long|e2e|dpdk|vm' \
  -E '^(DcqcnIncastTest|DelayIncastTest)[.]')
stamp "asan tests done"

bash scripts/build.sh tsan
stamp "tsan build done"
(cd build-tsan && ctest --output-on-failure --timeout 900 -j2 -L 'unit|protocol' -LE 'long|e2e|dpdk|vm')
stamp "tsan tests done"

FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash scripts/fuzz.sh
stamp "fuzz done"
