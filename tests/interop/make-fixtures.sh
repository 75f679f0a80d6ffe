#!/usr/bin/env bash
# @file make-fixtures.sh
# @brief Regenerates tests/fixtures/rxe_*.pcap: RoCEv2 traffic between two Soft-RoCE guests.
#
# Each fixture is one run-guest.sh boot of two guests on one bridge (guest0 198.18.0.2 is the
# server, guest1 198.18.0.3 the client, both rxe0 on eth0, GID index 1 = the RoCEv2 GID
# ::ffff:198.18.0.x), captured on the bridge with the filter "udp port 4791", so the pcap holds
# only RoCEv2 frames (perftest's and pingpong's TCP exchange is left out). Path MTU 1024 (rxe's
# for a 1500-byte netdev). Then check-fixtures.py validates every file (tshark + ICRC).
# Time: about 40 s per fixture with TCG on this machine (two guests boot in parallel).
# Usage: make-fixtures.sh [name...]   (default: all; names as in the table below)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
fixtures=$(cd "$here/../fixtures" && pwd)

# Runs its arguments until they succeed (the server may not listen yet), at most 60 tries.
retry='retry() { n=0; until "$@"; do n=$((n + 1)); [ $n -ge 60 ] && return 1; sleep 0.5; done; }'
pt='-d rxe0 -x 1 -F -m 1024'   # perftest: device, RoCEv2 IPv4 GID, ignore cpufreq, path MTU

# name | guest0 (server) commands | guest1 (client) commands; ';'-separated runs in order.
declare -A server client
server[rc_send]="ibv_rc_pingpong -d rxe0 -g 1 -m 1024 -s 64 -n 2 && ibv_rc_pingpong -d rxe0 -g 1 -m 1024 -s 3000 -n 2"
client[rc_send]="retry ibv_rc_pingpong -d rxe0 -g 1 -m 1024 -s 64 -n 2 198.18.0.2 && retry ibv_rc_pingpong -d rxe0 -g 1 -m 1024 -s 3000 -n 2 198.18.0.2"
server[ud_send]="ibv_ud_pingpong -d rxe0 -g 1 -s 512 -n 2"
client[ud_send]="retry ibv_ud_pingpong -d rxe0 -g 1 -s 512 -n 2 198.18.0.2"
server[rc_write]="ib_write_bw $pt -s 4096 -n 5 && ib_write_bw $pt -s 64 -n 5"
client[rc_write]="retry ib_write_bw $pt -s 4096 -n 5 198.18.0.2 && retry ib_write_bw $pt -s 64 -n 5 198.18.0.2"
server[rc_read]="ib_read_bw $pt -s 4096 -n 5 && ib_read_bw $pt -s 64 -n 5"
client[rc_read]="retry ib_read_bw $pt -s 4096 -n 5 198.18.0.2 && retry ib_read_bw $pt -s 64 -n 5 198.18.0.2"
server[rc_atomic]="ib_atomic_bw $pt -A FETCH_AND_ADD -n 5 && ib_atomic_bw $pt -A CMP_AND_SWAP -n 5"
client[rc_atomic]="retry ib_atomic_bw $pt -A FETCH_AND_ADD -n 5 198.18.0.2 && retry ib_atomic_bw $pt -A CMP_AND_SWAP -n 5 198.18.0.2"
server[rc_send_bw]="ib_send_bw $pt -s 2500 -n 5"
client[rc_send_bw]="retry ib_send_bw $pt -s 2500 -n 5 198.18.0.2"
# Loss on the requester's egress: the responder sees a PSN gap and NAKs (PSN sequence error).
# 12 messages of 2 packets, at most 2 in flight (-t 2) so that go-back-N resends stay small;
# a run that happens to lose nothing (p = 0.9^24 = 8%) is repeated, at most 3 runs.
server[rc_write_loss]="ib_write_bw $pt -s 2048 -n 12 -t 2"
client[rc_write_loss]="tc qdisc add dev eth0 root netem loss 10% && retry ib_write_bw $pt -s 2048 -n 12 -t 2 198.18.0.2"

names=("$@")
((${#names[@]})) || names=(rc_send ud_send rc_write rc_read rc_atomic rc_send_bw rc_write_loss)
for n in "${names[@]}"; do
  [[ -n ${server[$n]:-} ]] || { echo "make-fixtures: no fixture $n" >&2; exit 2; }
  pcap=$fixtures/rxe_$n.pcap
  log=$(mktemp -d /tmp/uroce-fixture-$n.XXXXXX)
  echo "make-fixtures: $n"
  for try in 1 2 3; do
    "$here/run-guest.sh" --guests 2 --timeout 150 --capture "$pcap" --out "$log" \
      --cmd0 "set -x; ${server[$n]}" --cmd1 "$retry; set -x; ${client[$n]}"
    chmod 0644 "$pcap"
    [[ $n != rc_write_loss ]] && break
    naks=$(tshark -n -r "$pcap" -Y 'infiniband.aeth.syndrome == 0x60' 2>/dev/null | wc -l)
    ((naks > 0)) && break
    echo "make-fixtures: $n run $try saw no NAK, again"
  done
  rm -rf "$log"   # the guests' logs and initrd copies (~30 MB); run-guest exits non-zero on failure
done
/usr/bin/python3 "$here/check_fixtures.py" --write-expect "$fixtures"
