#!/bin/bash
# @file memif_client_restart.sh
# @brief A memif server survives its client: client 1 is killed (SIGKILL) mid-transfer, client 2
# connects to the same server port, resolves it by ARP and sends; the server must not crash
# (memif_guard.h), must check every frame of client 2 intact, and end on client 2's end frame.
# Usage: memif_client_restart.sh <port_tool>
set -u
tool=$1
dir=$(mktemp -d /tmp/uroce-memifcr.XXXXXX)
sock=$dir/memif.sock
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
cli() { exec "$tool" --role tx --port "net_memif0,role=client,id=0,socket=$sock" \
  --ip 198.18.0.2/15 --peer 198.18.0.1 --seconds "$1"; }
"$tool" --role rx --port "net_memif0,role=server,id=0,socket=$sock" --ip 198.18.0.1/15 \
  --seconds 20 >"$dir/rx.out" 2>"$dir/rx.err" &
rx=$!; pids="$rx"
cli 10 >"$dir/tx1.out" 2>"$dir/tx1.err" &
tx1=$!; pids="$pids $tx1"
# Fault injection, not synchronisation: kill client 1 mid-transfer, ~1.5 s in.
sleep 1.5
kill -9 "$tx1"; wait "$tx1" 2>/dev/null
(cli 2) >"$dir/tx2.out" 2>"$dir/tx2.err"; tx2rc=$?
wait "$rx"; rxrc=$?; pids=
cat "$dir/tx2.out" "$dir/rx.out"; cat "$dir/tx2.err" "$dir/rx.err" >&2
[ $tx2rc -eq 0 ] || { echo "FAIL: client 2 exited $tx2rc"; exit 1; }
[ $rxrc -eq 0 ] || { echo "FAIL: server exited $rxrc (crash, bad frames or no end frame)"; exit 1; }
echo "PASS: the server outlived client 1 and took client 2's frames intact"
