#!/bin/sh
# @file verify_memif_test.sh
# @brief examples/uroce_verify between two processes over a net_memif pair (DPDK, --no-huge
# fallback by the driver): write, read, send and atomic, every byte checked by the program;
# both sides must exit 0. Usage: verify_memif_test.sh <lib dir> <uroce_verify>
set -eu
lib="$1"
verify="$2"
tmp=$(mktemp -d)
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
for s in 0 1; do
  p=$((1 - s)); role=server; [ "$s" = 1 ] && role=client
  cat > "$tmp/side$s.toml" <<EOT
[[device]]
name = "uroce0"
port = "net_memif0,role=$role,socket=$tmp/memif.sock,bsize=8192"
addresses = ["198.18.0.$((s + 1))/15"]
mtu = 1024
mac = "02:00:00:00:00:0$((s + 1))"
neighbors = { "198.18.0.$((p + 1))" = "02:00:00:00:00:0$((p + 1))" }
EOT
done
export LD_LIBRARY_PATH="$lib"
port=$((20000 + $$ % 20000))
for op in write read send atomic; do
  port=$((port + 1))
  UROCE_CONFIG="$tmp/side0.toml" timeout 60 "$verify" -o $op -s 65536 -n 20 -p $port \
    > "$tmp/s.log" 2>&1 &
  spid=$!
  pids="$spid"
  UROCE_CONFIG="$tmp/side1.toml" timeout 60 "$verify" -o $op -s 65536 -n 20 -p $port 127.0.0.1 \
    > "$tmp/c.log" 2>&1 || { cat "$tmp/c.log" "$tmp/s.log"; echo "FAIL: $op client"; exit 1; }
  wait "$spid" || { cat "$tmp/s.log"; echo "FAIL: $op server"; exit 1; }
  pids=""
  grep -q "OK" "$tmp/c.log" || { cat "$tmp/c.log"; echo "FAIL: $op"; exit 1; }
  echo "$op: $(grep uroce_verify "$tmp/c.log")"
done
echo "PASS"
