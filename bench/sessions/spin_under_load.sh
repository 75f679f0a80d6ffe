#!/bin/bash
# How fast a program that spins on memory (riostream's default set: its 64-byte latency loop
# polls its iomapped buffer without calling the library) gets its peer's WRITEs through uroce
# beside two busy loops, with the two riostream processes in one session (as a shell runs
# them) or each in a session of its own (as tests/e2e/e2e.py and most real launches do).
# Prints "writes/s" received by the client over 5 s. tests/RELIABILITY.md has the figures.
#   bench/sessions/spin_under_load.sh BUILD_DIR [own|shared] [busy loops (2)]
# (UROCE_TOOL: the uroce that reads the counters, default BUILD_DIR/bin/uroce)
set -euo pipefail
B=$(cd "$1" && pwd); MODE=${2:-own}; BUSY=${3:-2}
D=$(mktemp -d /dev/shm/uroce-spin-XXXXXX)
busy=()
cleanup() {
  for p in "${busy[@]}"; do kill -9 -- "-$p" 2>/dev/null || true; done
  pkill -f "riostream -[bs] 198.18.0.1 -p $P" 2>/dev/null || true
  rm -rf "$D"
}
P=$((30000 + RANDOM % 5000))
trap cleanup EXIT
for i in 0 1; do
  role=$([ $i = 0 ] && echo server || echo client); me=$((i + 1)); peer=$((2 - i))
  cat > "$D/side$i.toml" <<T
[[device]]
name = "uroce0"
port = "net_memif0,role=$role,socket=$D/m.sock,bsize=8192"
addresses = ["198.18.0.$me/15"]
mtu = 4096
mac = "02:00:5e:18:00:0$me"
neighbors = { "198.18.0.$peer" = "02:00:5e:18:00:0$peer" }
T
done
for _ in $(seq "$BUSY"); do setsid sh -c 'while :; do :; done' & busy+=($!); disown; done
export LD_LIBRARY_PATH=$B/lib UROCE_RDMACM_LISTEN_FILE=$D/listen UROCE_RUN_DIR=$D
S=$([ "$MODE" = own ] && echo setsid || echo)
UROCE_CONFIG=$D/side0.toml $S taskset -c 0 riostream -b 198.18.0.1 -p $P > "$D/s.out" 2>&1 &
until [ -s "$D/listen" ]; do sleep 0.05; done   # the server's rdma_listen happened
UROCE_CONFIG=$D/side1.toml $S taskset -c 1 riostream -s 198.18.0.1 -p $P > "$D/c.out" 2>&1 &
count() { "$B/bin/uroce" show counters --run-dir "$D" 2>/dev/null |
          awk '/rx_write_requests/ {s += $2} END {print s + 0}'; }
until [ "$(count)" -gt 0 ]; do sleep 0.1; done
a=$(count); sleep 5; b=$(count)
echo "$MODE sessions, $BUSY busy loops: $(( (b - a) / 5 )) writes/s"
