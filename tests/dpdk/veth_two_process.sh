#!/bin/bash
# @file veth_two_process.sh
# @brief Two processes in two network namespaces joined by a veth pair that this script
# creates and deletes (trap), each driving its veth end with one uroce DpdkPort on the given
# PMD (af_packet, af_xdp or pcap). No kernel IP address on the veths (IPv6 disabled too), ARP
# answered in userspace; addresses from 198.18.0.0/15. The receiver checks every frame byte for
# byte. The sender is paced (default 5000 frames/s: the kernel path drops when the receiving
# process gets no CPU, and this is a correctness test); loss must stay below 5 %.
# Usage: veth_two_process.sh <port_tool> <af_packet|af_xdp|pcap> [size] [mtu] [veth_mtu] [pace]
set -u
tool=$1 pmd=$2 size=${3:-1082} mtu=${4:-1024} vmtu=${5:-1500} pace=${6:-5000}
tag=$$
nsa=uroce-dpdk-$tag-a nsb=uroce-dpdk-$tag-b
dir=$(mktemp -d /tmp/uroce-veth2p.XXXXXX)
rxpid=
cleanup() {
  [ -n "$rxpid" ] && kill "$rxpid" 2>/dev/null
  ip netns del "$nsa" 2>/dev/null; ip netns del "$nsb" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
set -e
ip netns add "$nsa"; ip netns add "$nsb"
ip link add "ua$tag" netns "$nsa" mtu "$vmtu" type veth peer name "ub$tag" netns "$nsb" mtu "$vmtu"
for ns in "$nsa:ua$tag" "$nsb:ub$tag"; do
  n=${ns%%:*} i=${ns#*:}
  ip netns exec "$n" sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
  ip -n "$n" link set "$i" up
done
set +e
port() { echo "net_${pmd}0,iface=$1"; }
ip netns exec "$nsb" "$tool" --role rx --port "$(port "ub$tag")" --ip 198.18.0.1/15 --mtu "$mtu" \
  --seconds 15 >"$dir/rx.out" 2>"$dir/rx.err" &
rxpid=$!
# The sender retries ARP every 100 ms for 10 s, which covers the receiver starting up.
ip netns exec "$nsa" "$tool" --role tx --port "$(port "ua$tag")" --ip 198.18.0.2/15 \
  --peer 198.18.0.1 --mtu "$mtu" --size "$size" --seconds 2 --pace "$pace" >"$dir/tx.out" 2>"$dir/tx.err"
txrc=$?
wait "$rxpid"; rxrc=$?; rxpid=
cat "$dir/tx.out" "$dir/rx.out"; grep -v '^$' "$dir/tx.err" "$dir/rx.err" >&2
[ $txrc -eq 0 ] || { echo "FAIL: tx exited $txrc"; exit 1; }
[ $rxrc -eq 0 ] || { echo "FAIL: rx exited $rxrc (bad frames or none)"; exit 1; }
sent=$(sed -n 's/.*PORT tx frames=\([0-9]*\).*/\1/p' "$dir/tx.out")
got=$(sed -n 's/.*PORT rx frames=\([0-9]*\).*/\1/p' "$dir/rx.out")
[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ -n "$got" ] || { echo "FAIL: nothing sent"; exit 1; }
[ $((got * 100)) -ge $((sent * 95)) ] || { echo "FAIL: sent $sent, received $got"; exit 1; }
echo "PASS: $pmd $got/$sent frames of $size bytes received intact"
