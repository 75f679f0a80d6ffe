#!/bin/bash
# @file memif_two_process.sh
# @brief Two processes, each with one uroce DpdkPort, over net_memif: the client resolves the
# server by ARP, sends frames for 2 s, the server checks every frame byte for byte and that
# none was lost. Prints both PORT lines (frames/s through the Port interface).
# Usage: memif_two_process.sh <port_tool> [size] [mtu]
set -u
tool=$1 size=${2:-1082} mtu=${3:-1024}
dir=$(mktemp -d /tmp/uroce-memif2p.XXXXXX)
sock=$dir/memif.sock
rxpid=
cleanup() { [ -n "$rxpid" ] && kill "$rxpid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
"$tool" --role rx --port "net_memif0,role=server,id=0,socket=$sock" --ip 198.18.0.1/15 \
  --mtu "$mtu" --seconds 15 >"$dir/rx.out" 2>"$dir/rx.err" &
rxpid=$!
"$tool" --role tx --port "net_memif0,role=client,id=0,socket=$sock" --ip 198.18.0.2/15 \
  --peer 198.18.0.1 --mtu "$mtu" --size "$size" --seconds 2 >"$dir/tx.out" 2>"$dir/tx.err"
txrc=$?
wait "$rxpid"; rxrc=$?; rxpid=
cat "$dir/tx.out" "$dir/rx.out"; cat "$dir/tx.err" "$dir/rx.err" >&2
[ $txrc -eq 0 ] || { echo "FAIL: tx exited $txrc"; exit 1; }
[ $rxrc -eq 0 ] || { echo "FAIL: rx exited $rxrc (bad frames or none)"; exit 1; }
grep -q 'ended=1' "$dir/rx.out" || { echo "FAIL: the end frame was lost (memif must not lose)"; exit 1; }
sent=$(sed -n 's/.*PORT tx frames=\([0-9]*\).*/\1/p' "$dir/tx.out")
got=$(sed -n 's/.*PORT rx frames=\([0-9]*\).*/\1/p' "$dir/rx.out")
[ -n "$sent" ] && [ "$sent" -gt 0 ] || { echo "FAIL: nothing sent"; exit 1; }
[ "$sent" = "$got" ] || { echo "FAIL: sent $sent, received $got"; exit 1; }
echo "PASS: $got frames of $size bytes, none lost or corrupted"
