#!/usr/bin/env bash
# @file run-guest.sh
# @brief Boots one or two Soft-RoCE guests (build-guest.sh's image) inside a network namespace
#        this script creates and deletes itself, runs a command in each, and reports.
#
# Topology, all inside the namespace uroce-interop-<pid> (nothing is routed out of it):
#   guest i, eth0 (RoCE link) -- tap r<i> --+-- bridge rocebr --- [veth up0/up0br, --host-port]
#                                           +-- dumpcap (--capture) listens here
#   guest i, eth1 (--oob only) -- tap o<i> --- bridge oobbr, kernel address 198.19.0.1/24
# Guest i gets eth0 198.18.0.<i+2>/24, MAC 02:00:00:00:00:<i+2>, rxe0 on eth0, and with --oob
# eth1 198.19.0.<i+2>/24. The RoCE link and the out-of-band TCP link are separate /24s so that
# neither guest nor host routes one over the other. --host-port adds a veth pair whose end up0
# has no kernel address: a userspace stack (uroce's DPDK net_af_packet port) drives it.
#
# Options:
#   --guests N           1 or 2 (default 1)
#   --cmd<i> TEXT|@FILE  shell script run in guest i (as /uroce-cmd.sh); default: ibv_devinfo
#   --timeout S          bound on each guest's command, seconds (default 120); the whole qemu run
#                        is bounded by S + 120 s of boot budget
#   --capture FILE       write RoCEv2 frames seen on rocebr to FILE (pcap, filter --filter)
#   --filter BPF         capture filter (default "udp port 4791")
#   --oob                give the guests eth1 on the out-of-band bridge
#   --host-port          add the veth up0 for a host-side userspace peer
#   --host-cmd TEXT      run TEXT on the host inside the namespace (bash -c) while the guests
#                        run; it is bounded by the same timeout and its status counts
#   --file PATH          copy PATH into every guest as /root/<name> (repeatable), e.g. a
#                        verbs program built here; it runs on the guest's rdma-core and rxe
#   --out DIR            keep logs there (default: a temporary folder, printed)
# Environment: UROCE_INTEROP_ACCEL=kvm|tcg (default: kvm only if the CPU shows vmx/svm; on the
#   project's machines /dev/kvm exists but a KVM guest never starts, so TCG it is).
#   UROCE_GUEST_SUITE=bookworm-backports: boot the guest whose kernel comes from that suite
#   (build-guest.sh; its own cache folder).
# Output: <out>/console<i>.log (kernel log, ttyS0), <out>/out<i>.log (command output, ttyS1),
#   and one summary line per guest: "run-guest: guest<i> rc=<n> boot=<s> cmd=<s> wall=<s>"
#   (boot and cmd in guest uptime seconds, wall in host seconds from qemu start to exit).
# Exit status: 0 if every guest's command (and --host-cmd) exited 0, else the first failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${UROCE_INTEROP_CACHE:-$here/cache}
guests=1 timeout_s=120 capture= filter="udp port 4791" oob= host_port= host_cmd= out=
declare -a cmds=() files=()
while (($#)); do
  case $1 in
    --guests) guests=$2; shift 2 ;;
    --cmd[0-9]) cmds[${1#--cmd}]=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --capture) capture=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --oob) oob=1; shift ;;
    --host-port) host_port=1; shift ;;
    --host-cmd) host_cmd=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    *) echo "run-guest: unknown option $1" >&2; exit 2 ;;
  esac
done
((guests >= 1 && guests <= 2)) || { echo "run-guest: --guests must be 1 or 2" >&2; exit 2; }

"$here/build-guest.sh"
img=$cache/guest${UROCE_GUEST_SUITE:+-$UROCE_GUEST_SUITE}
[[ -n $out ]] || out=$(mktemp -d /tmp/uroce-interop.XXXXXX)
mkdir -p "$out"

accel=${UROCE_INTEROP_ACCEL:-}
if [[ -z $accel ]]; then
  accel=tcg
  grep -qwE 'vmx|svm' /proc/cpuinfo && [[ -w /dev/kvm ]] && accel=kvm
fi

ns=uroce-interop-$$
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nsx() { ip netns exec "$ns" "$@"; }
ip netns add "$ns"
nsx ip link set lo up
nsx ip link add name rocebr type bridge
nsx ip link set rocebr up
if [[ -n $oob ]]; then
  nsx ip link add name oobbr type bridge
  nsx ip addr add 198.19.0.1/24 dev oobbr
  nsx ip link set oobbr up
fi
if [[ -n $host_port ]]; then
  nsx ip link add name up0 type veth peer name up0br
  nsx ip link set up0br master rocebr
  nsx ip link set up0br up
  nsx ip link set up0 up
fi
# No kernel chatter (IPv6 router/neighbour solicitations) on the namespace's links.
nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1

# The capture must be live before any guest can send: wait (bounded) for dumpcap's banner.
if [[ -n $capture ]]; then
  # (ip netns exec execs its command, so $! is dumpcap itself and the kill below reaches it)
  ip netns exec "$ns" dumpcap -q -P -i rocebr -f "$filter" -w "$capture" 2>"$out/dumpcap.log" &
  cap_pid=$!
  pids+=("$cap_pid")
  for _ in $(seq 100); do
    grep -q "Capturing on" "$out/dumpcap.log" && break
    kill -0 "$cap_pid" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "Capturing on" "$out/dumpcap.log" ||
    { echo "run-guest: dumpcap did not start:" >&2; cat "$out/dumpcap.log" >&2; exit 1; }
fi

qemu_bound=$((timeout_s + 120))
declare -a qpids=() starts=() ends=()
for ((i = 0; i < guests; i++)); do
  # Deep queues: a host-side peer sends 128-packet go-back-N windows at full speed into a
  # TCG guest that drains them slowly.
  nsx ip tuntap add "r$i" mode tap
  nsx ip link set "r$i" txqueuelen 10000
  nsx ip link set "r$i" master rocebr
  nsx ip link set "r$i" up
  net=(-netdev "tap,id=r,ifname=r$i,script=no,downscript=no"
       -device "virtio-net-pci,netdev=r,mac=02:00:00:00:00:0$((i + 2)),rx_queue_size=1024,romfile=")
  append="console=ttyS0 panic=-1 quiet uroce.ip=198.18.0.$((i + 2))/24 uroce.timeout=$timeout_s"
  if [[ -n $oob ]]; then
    nsx ip tuntap add "o$i" mode tap
    nsx ip link set "o$i" master oobbr
    nsx ip link set "o$i" up
    net+=(-netdev "tap,id=o,ifname=o$i,script=no,downscript=no"
          -device "virtio-net-pci,netdev=o,mac=02:00:00:00:01:0$((i + 2)),romfile=")
    append+=" uroce.ip1=198.19.0.$((i + 2))/24"
  fi

  # The command travels as a second cpio archive appended to the initrd (the kernel unpacks
  # concatenated archives in order).
  c=${cmds[$i]:-ibv_devinfo}
  [[ $c == @* ]] && c=$(cat "${c#@}")
  mkdir -p "$out/cmd$i"
  printf '#!/bin/sh\n%s\n' "$c" >"$out/cmd$i/uroce-cmd.sh"
  chmod 0755 "$out/cmd$i/uroce-cmd.sh"
  mkdir -p "$out/cmd$i/root"
  for f in "${files[@]}"; do cp "$f" "$out/cmd$i/root/"; done
  (cd "$out/cmd$i" && find uroce-cmd.sh root | cpio -o -H newc --quiet | gzip -1) >"$out/cmd$i.gz"
  cat "$img/initrd.gz" "$out/cmd$i.gz" >"$out/initrd$i"

  : >"$out/out$i.log"
  starts[$i]=$(date +%s.%N)
  ip netns exec "$ns" nice -n 5 timeout "$qemu_bound" qemu-system-x86_64 -accel "$accel" -cpu max -m 320 -smp 1 \
    -display none -monitor none -no-reboot -kernel "$img/vmlinuz" -initrd "$out/initrd$i" \
    -append "$append" -serial "file:$out/console$i.log" -serial "file:$out/out$i.log" \
    "${net[@]}" >"$out/qemu$i.log" 2>&1 &
  qpids[$i]=$!
  pids+=("$!")
done

host_rc=0
if [[ -n $host_cmd ]]; then
  # In the background and waited for, so that a signal runs the cleanup trap at once (bash
  # defers traps while a foreground command runs).
  UROCE_INTEROP_OUT=$out ip netns exec "$ns" timeout "$qemu_bound" bash -c "$host_cmd" \
    >"$out/host.log" 2>&1 &
  host_pid=$!
  pids+=("$host_pid")
  set +e
  wait "$host_pid"
  host_rc=$?
  set -e
fi

rc=0
for ((i = 0; i < guests; i++)); do
  set +e
  wait "${qpids[$i]}"
  qrc=$?
  set -e
  ends[$i]=$(date +%s.%N)
  grc=$(sed -n 's/^UROCE-GUEST-RC=\([0-9]*\).*/\1/p' "$out/out$i.log" | tr -d '\r' | tail -1)
  ready=$(sed -n 's/^UROCE-GUEST-READY uptime=\([0-9.]*\).*/\1/p' "$out/out$i.log" | tr -d '\r')
  done_t=$(sed -n 's/^UROCE-GUEST-DONE uptime=\([0-9.]*\).*/\1/p' "$out/out$i.log" | tr -d '\r')
  [[ -n $grc ]] || grc=$((qrc == 124 ? 124 : 210))   # 210: no report at all (qemu died)
  cmd_t=-
  [[ -n $ready && -n $done_t ]] && cmd_t=$(awk -v a="$ready" -v b="$done_t" 'BEGIN{printf "%.2f", b - a}')
  wall=$(awk -v a="${starts[$i]}" -v b="${ends[$i]}" 'BEGIN{printf "%.2f", b - a}')
  echo "run-guest: guest$i rc=$grc boot=${ready:--} cmd=$cmd_t wall=$wall accel=$accel"
  ((rc == 0 && grc != 0)) && rc=$grc
done
if [[ -n $host_cmd ]]; then
  echo "run-guest: host rc=$host_rc"
  ((rc == 0 && host_rc != 0)) && rc=$host_rc
fi
if [[ -n $capture ]]; then
  kill "$cap_pid" 2>/dev/null || true
  wait "$cap_pid" 2>/dev/null || true
fi
echo "run-guest: logs in $out"
exit "$rc"
