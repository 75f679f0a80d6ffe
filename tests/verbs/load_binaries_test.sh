#!/bin/sh
# @file load_binaries_test.sh
# @brief Debian's own rdma-core and perftest binaries load against our libibverbs.so.1
# (LD_LIBRARY_PATH=<build>/lib): ldd resolves libibverbs to ours, libmlx5/libefa (BIND_NOW)
# resolve every import, and ibv_devices / ibv_devinfo / ib_write_bw -h run on the built-in
# device. Usage: load_binaries_test.sh <dir holding our libibverbs.so.1>
set -eu
lib="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"            # no ./uroce.toml here: the built-in device uroce0
unset UROCE_CONFIG || true
export LD_LIBRARY_PATH="$lib"
fail() { echo "FAIL: $*"; exit 1; }
for b in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_lat ib_send_bw; do
  p=$(command -v "$b") || fail "$b not installed"
  ldd "$p" | grep -q "libibverbs.so.1 => $lib/libibverbs.so.1" || fail "$b does not bind our library"
  ldd -r "$p" 2>&1 | grep -q "undefined symbol" && fail "$b: undefined symbols: $(ldd -r "$p" 2>&1 | grep undefined | head -3)"
done
out=$(timeout 20 ibv_devices) || fail "ibv_devices exit $?"
echo "$out" | grep -q "uroce0" || fail "ibv_devices does not list uroce0: $out"
out=$(timeout 20 ibv_devinfo -v) || fail "ibv_devinfo -v exit $?"
echo "$out" | grep -q "link_layer:.*Ethernet" || fail "ibv_devinfo: no Ethernet link layer"
echo "$out" | grep -q "GID\[  0\]:.*::ffff:198.18.0.1, RoCE v2" || fail "ibv_devinfo: no RoCE v2 GID: $out"
timeout 20 ib_write_bw -h > help.txt 2>&1 || true
grep -q "Usage:" help.txt || fail "ib_write_bw -h did not start: $(head -3 help.txt)"
echo "PASS"
