#!/usr/bin/env bash
# Builds the 'fuzz' preset (clang, libFuzzer, ASan+UBSan) and runs every fuzz target for a
# bounded time on its corpus. Fails on any crash, sanitizer report or leak.
#   FUZZ_SECONDS=60 (per target)   FUZZ_TARGETS="parse_frame ..." (default: every fuzz/*.cc)
#   FUZZ_JOBS=2 (build parallelism)
# New inputs go to build-fuzz/fuzz-work/<target>/corpus; the committed fuzz/corpus/<target>/
# is only read. Crash inputs are kept in build-fuzz/fuzz-work/<target>/ for reproduction:
#   build-fuzz/bin/fuzz_<target> <crash-file>
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-2}"
build="$root/build-fuzz"

mkdir -p "$build"
# UROCE_BUILD_BENCH=ON only so that bench/*/CMakeLists.txt that link benchmark::benchmark
# unconditionally still configure; no benchmark is built here.
if ! cmake --preset fuzz -S "$root" -DUROCE_BUILD_BENCH=ON >"$build/configure.log" 2>&1; then
  echo "fuzz.sh: configure failed:"; grep -A8 "CMake Error" "$build/configure.log" | head -40
  exit 1
fi
if [[ -n "${FUZZ_TARGETS:-}" ]]; then
  targets=(${FUZZ_TARGETS})
else
  targets=()
  for src in "$root"/fuzz/*.cc; do targets+=("$(basename "$src" .cc)"); done
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]/#/fuzz_}"

failed=()
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t"
  mkdir -p "$work/corpus"
  seeds=()
  [[ -d "$root/fuzz/corpus/$t" ]] && seeds=("$root/fuzz/corpus/$t")
  echo "fuzz.sh: running fuzz_$t for ${seconds}s (seeds: ${seeds[*]:-none})"
  if "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "${seeds[@]}" \
      >"$work/log.txt" 2>&1; then
    echo "fuzz.sh: fuzz_$t OK ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$') runs)"
  else
    echo "fuzz.sh: fuzz_$t FAILED; last lines of $work/log.txt:"
    tail -n 40 "$work/log.txt"
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: all ${#targets[@]} target(s) passed"
