#!/bin/bash
# @file memif_reconnect.sh
# @brief A memif client survives its server: server 1 is killed (SIGKILL) after 1.5 s while
# the client sends, server 2 starts on the same socket; the client must not crash (memif_guard.h)
# and server 2 must receive intact frames (the client port reconnects, and learns server 2's
# MAC from its gratuitous ARP).
# Usage: memif_reconnect.sh <port_tool> [pace]
set -u
tool=$1 pace=${2:-20000}
dir=$(mktemp -d /tmp/uroce-memifrc.XXXXXX)
sock=$dir/memif.sock
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
srv() { exec "$tool" --role rx --port "net_memif0,role=server,id=0,socket=$sock" --ip 198.18.0.1/15 --seconds "$1"; }
srv 10 >"$dir/rx1.out" 2>"$dir/rx1.err" &
rx1=$!; pids="$rx1"
"$tool" --role tx --port "net_memif0,role=client,id=0,socket=$sock" --ip 198.18.0.2/15 \
  --peer 198.18.0.1 --seconds 5 --pace "$pace" >"$dir/tx.out" 2>"$dir/tx.err" &
txpid=$!; pids="$pids $txpid"
# Fault injection, not synchronisation: kill server 1 mid-transfer, ~1.5 s in.
sleep 1.5
kill -9 "$rx1"; wait "$rx1" 2>/dev/null
srv 12 >"$dir/rx2.out" 2>"$dir/rx2.err" &
rx2=$!; pids="$pids $rx2"
wait "$txpid"; txrc=$?
wait "$rx2"; rx2rc=$?
cat "$dir/tx.out" "$dir/rx1.out" "$dir/rx2.out"; cat "$dir/tx.err" "$dir/rx2.err" >&2
[ $txrc -eq 0 ] || { echo "FAIL: tx exited $txrc"; exit 1; }
n2=$(sed -n 's/.*PORT rx frames=\([0-9]*\) bad=0.*/\1/p' "$dir/rx2.out")
[ -n "$n2" ] && [ "$n2" -gt 0 ] || { echo "FAIL: server 2 got no intact frames after the reconnect"; exit 1; }
echo "PASS: server 2 got $n2 frames after server 1 was killed and the client reconnected"
