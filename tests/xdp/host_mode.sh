#!/bin/bash
# @file host_mode.sh
# @brief Host mode on a veth the kernel also uses: a net_af_xdp port with uroce's XDP program
# (xdp_port) on veth A in namespace a, which has kernel addresses (198.18.0.1/24, 2001:2::1/64);
# the kernel of namespace b is the peer. Asserts:
#   - ping (IPv4, IPv6), ARP and ND, TCP (v4 and v6) work while the port is open;
#   - 1000 UDP datagrams each to port 4791 over IPv4, IPv6 and 802.1Q (VID 100, written on a
#     packet socket: this kernel has no VLAN devices) reach the port, not the
#     kernel (whose socket on 4791 stays at 0, no ICMP unreachable sent); 1000 each to port 4792
#     over IPv4 and IPv6 reach the kernel socket; the program's counters agree;
#   - a live port's program is not reaped; after the port closes the program is gone;
#   - after kill -9 of the port process the program stays, and reap_stale removes it;
#   - doctor reports a veth whose peer MTU is too large for native XDP;
#   - a foreign XDP program is never removed and refuses the port.
# Namespaces carry the pid and are removed on any exit (trap). Waits poll for conditions.
# Usage: host_mode.sh <uroce_xdp_port> <uroce_xdp_tool>
set -u
port=$1 tool=$2
here=$(cd "$(dirname "$0")" && pwd)
peer="/usr/bin/python3 $here/peer.py"
tag=$$
nsa=uroce-xdp-$tag-a nsb=uroce-xdp-$tag-b
va=xa$tag vb=xb$tag
dir=$(mktemp -d /dev/shm/uroce-xdp.XXXXXX)  # a tmpfs: the run dir holds stats segments
export UROCE_RUN_DIR=$dir/run
pids=()
portpid=
cleanup() {
  for p in "${pids[@]}" $portpid; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip netns del "$nsa" 2>/dev/null
  ip netns del "$nsb" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
A() { ip netns exec "$nsa" "$@"; }
B() { ip netns exec "$nsb" "$@"; }
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.out "$dir"/*.err; do [ -s "$f" ] && { echo "== $f"; tail -20 "$f"; }; done
  exit 1
}
# wait_for SECONDS COMMAND...: polls COMMAND every 20 ms until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.02
  done
}
key() { sed -n "s/.*\b$2=\([0-9]*\).*/\1/p" "$1" 2>/dev/null; }
has_line() { grep -q "$2" "$1" 2>/dev/null; }
xdp_of() { A "$tool" attached "$va"; }
snmp() { A awk -v t="$1" -v f="$2" '$1 == t":" { if (!h) { for (i = 2; i <= NF; i++) c[$i] = i; h = 1 } else print $c[f] }' /proc/net/snmp; }

# READY printed, or the port process gone (then has_line fails again below).
port_up() { has_line "$dir/port.out" '^READY' || ! kill -0 "$portpid" 2>/dev/null; }
start_port() {
  : >"$dir/port.out"
  # Not through A(): a function in the background is a subshell, and $! must be the port.
  ip netns exec "$nsa" "$port" --ifname "$va" --ip 198.18.0.1/24 --status "$dir/status" \
    >"$dir/port.out" 2>"$dir/port.err" &
  portpid=$!
  wait_for 30 port_up && has_line "$dir/port.out" '^READY' || fail "the port did not open"
}

set -e
ip netns add "$nsa"
ip netns add "$nsb"
ip link add "$va" netns "$nsa" mtu 1500 type veth peer name "$vb" netns "$nsb" mtu 1500
A ip link set lo up
B ip link set lo up
A ip addr add 198.18.0.1/24 dev "$va"
B ip addr add 198.18.0.2/24 dev "$vb"
A ip addr add 2001:2::1/64 dev "$va" nodad
B ip addr add 2001:2::2/64 dev "$vb" nodad
A ip link set "$va" up
B ip link set "$vb" up
set +e

A "$tool" doctor "$va" >"$dir/doctor.out" || fail "doctor on a fresh veth: $(cat "$dir/doctor.out")"
grep -q 'CHECK ok native xdp' "$dir/doctor.out" || fail "doctor: $(cat "$dir/doctor.out")"
[ "$(xdp_of)" = "XDP id=0 name=- mode=none ours=0" ] || fail "doctor left a program: $(xdp_of)"

# Kernel ends in namespace a: a UDP socket on 4791 (must stay at 0) and 4792; TCP echo.
ip netns exec "$nsa" $peer udp-sink "$dir/sink" 4791 4792 >"$dir/sink.out" 2>&1 &
pids+=($!)
ip netns exec "$nsa" $peer tcp-echo 198.18.0.1 5001 "$dir/tcp4.ready" >"$dir/tcp4.out" 2>&1 &
pids+=($!)
ip netns exec "$nsa" $peer tcp-echo 2001:2::1 5001 "$dir/tcp6.ready" >"$dir/tcp6.out" 2>&1 &
pids+=($!)
wait_for 10 test -e "$dir/sink" -a -e "$dir/tcp4.ready" -a -e "$dir/tcp6.ready" ||
  fail "kernel sockets did not start"

start_port
xdp_of | grep -q 'name=uroce_roce mode=native ours=1' || fail "program after open: $(xdp_of)"
A ip -d link show "$va" | grep -q 'prog/xdp id' || fail "ip -d link shows no XDP program"
A "$tool" reap "$va" | grep -q '^REAP in-use:' || fail "a live port's program would be reaped"
xdp_of | grep -q 'ours=1' || fail "reap removed a live port's program"

icmp_unreach0=$(snmp Icmp OutDestUnreachs)
noports0=$(snmp Udp NoPorts)

B ping -c 3 -i 0.2 -W 2 198.18.0.1 >"$dir/ping4.out" 2>&1 || fail "ping 198.18.0.1"
B ping -6 -c 3 -i 0.2 -W 2 2001:2::1 >"$dir/ping6.out" 2>&1 || fail "ping 2001:2::1"
B ip neigh show 198.18.0.1 dev "$vb" | grep -qE 'REACHABLE|STALE|DELAY' || fail "ARP"
B ip -6 neigh show 2001:2::1 dev "$vb" | grep -qE 'REACHABLE|STALE|DELAY' || fail "ND"
B $peer tcp-check 198.18.0.1 5001 200000 >"$dir/tcp.out" 2>&1 || fail "TCP over IPv4"
B $peer tcp-check 2001:2::1 5001 200000 >"$dir/tcp.out" 2>&1 || fail "TCP over IPv6"

B $peer udp-send 198.18.0.1 4792 1000 "$dir/sink" 4792 >"$dir/send.out" 2>&1 ||
  fail "UDP 4792 (IPv4) to the kernel: $(cat "$dir/send.out")"
B $peer udp-send 2001:2::1 4792 1000 "$dir/sink" 4792 >"$dir/send.out" 2>&1 ||
  fail "UDP 4792 (IPv6) to the kernel: $(cat "$dir/send.out")"
B $peer udp-send 198.18.0.1 4791 1000 "$dir/status" v4 >"$dir/send.out" 2>&1 ||
  fail "UDP 4791 (IPv4) to the port: $(cat "$dir/send.out")"
B $peer udp-send 2001:2::1 4791 1000 "$dir/status" v6 >"$dir/send.out" 2>&1 ||
  fail "UDP 4791 (IPv6) to the port: $(cat "$dir/send.out")"
# This kernel has no VLAN devices: the tagged frames are written whole on a packet socket.
mac=$(A cat "/sys/class/net/$va/address")
B $peer vlan-send "$vb" "$mac" 100 198.18.0.2 198.18.0.1 4791 1000 "$dir/status" vlan \
  >"$dir/send.out" 2>&1 ||
  fail "UDP 4791 (VLAN 100) to the port: $(cat "$dir/send.out")"

cat "$dir/status" "$dir/sink"
[ "$(cat "$dir/status")" = "RX v4=1000 v6=1000 vlan=1000 other=0" ] ||
  fail "the port received $(cat "$dir/status"), want 1000 each and nothing else"
[ "$(cat "$dir/sink")" = "4791=0 4792=2000" ] ||
  fail "the kernel sockets received $(cat "$dir/sink"), want 4791=0 4792=2000"
[ "$(snmp Icmp OutDestUnreachs)" = "$icmp_unreach0" ] || fail "the kernel sent ICMP unreachable"
[ "$(snmp Udp NoPorts)" = "$noports0" ] || fail "the kernel counted UDP to closed ports"
counts=$(A "$tool" counts "$va")
echo "$counts"
[ "$(key <(echo "$counts") redirected)" = 3000 ] || fail "XDP counters: $counts"
[ "$(key <(echo "$counts") unbound)" = 0 ] || fail "XDP counters: $counts"

# Close: the PMD leaves the program (uroce's driver parks the ethdev); detach_if_last removes it.
kill -TERM "$portpid"
wait "$portpid"
rc=$?
portpid=
[ $rc -eq 0 ] || fail "the port exited $rc"
grep -q "^DETACH removed XDP program uroce_roce .*: the last uroce process closed it" "$dir/port.out" ||
  fail "close: $(grep DETACH "$dir/port.out")"
[ "$(xdp_of)" = "XDP id=0 name=- mode=none ours=0" ] || fail "program after close: $(xdp_of)"
A ip -d link show "$va" | grep -q 'prog/xdp' && fail "ip -d link still shows an XDP program"
B ping -c 1 -W 2 198.18.0.1 >/dev/null || fail "ping after close"

# kill -9: the program stays attached, nobody holds the lock: stale, reaped.
start_port
kill -9 "$portpid"
wait "$portpid" 2>/dev/null
portpid=
xdp_of | grep -q 'ours=1' || fail "after kill -9 the program is gone already: $(xdp_of)"
A "$tool" doctor "$va" | grep 'xdp program' | grep -q stale || fail "doctor does not say stale"
A "$tool" reap "$va" >"$dir/reap.out"
grep -q "^REAP removed: removed XDP program uroce_roce .*: stale" "$dir/reap.out" ||
  fail "reap: $(cat "$dir/reap.out")"
[ "$(xdp_of)" = "XDP id=0 name=- mode=none ours=0" ] || fail "program after reap: $(xdp_of)"

# A veth whose peer MTU is too large for native XDP: doctor says so and why.
B ip link set "$vb" mtu 9000
A "$tool" doctor "$va" >"$dir/doctor.out" && fail "doctor passed with peer MTU 9000"
grep 'native xdp' "$dir/doctor.out"
grep -q 'CHECK FAIL native xdp: the kernel refused: .*MTU' "$dir/doctor.out" ||
  fail "doctor with peer MTU 9000: $(cat "$dir/doctor.out")"
B ip link set "$vb" mtu 1500

# A foreign program: never removed, refuses the port.
A "$tool" foreign "$va" || fail "cannot attach the foreign program"
A "$tool" reap "$va" >"$dir/reap.out" && fail "reap accepted a foreign program"
grep -q "^REAP foreign: XDP program not_uroce .* is not uroce's" "$dir/reap.out" || fail "reap: $(cat "$dir/reap.out")"
A "$port" --ifname "$va" --ip 198.18.0.1/24 >"$dir/port.out" 2>"$dir/port.err" &&
  fail "the port opened over a foreign program"
grep -q "not uroce's" "$dir/port.err" || fail "port with a foreign program: $(cat "$dir/port.err")"
xdp_of | grep -q 'name=not_uroce' || fail "the foreign program was removed: $(xdp_of)"
echo "PASS: host mode on $va: kernel traffic passes, RoCEv2 to the port, lifecycle"
