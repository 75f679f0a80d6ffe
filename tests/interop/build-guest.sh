#!/usr/bin/env bash
# @file build-guest.sh
# @brief Builds, once, the small Linux guest that runs Soft-RoCE (rdma_rxe) as uroce's
#        independent peer (issue #7), and caches it under tests/interop/cache/.
#
# Everything comes from the Debian 12 package registry with `apt-get download`:
#   - the kernel: linux-image-<abi>-amd64, the version the linux-image-amd64 meta-package
#     points at (override with UROCE_GUEST_KERNEL=linux-image-6.1.0-57-amd64); unpacked with
#     dpkg-deb -x, and only the modules the guest loads (and their dependencies) are kept;
#     with UROCE_GUEST_SUITE=bookworm-backports the kernel comes from that suite of
#     deb.debian.org (6.12 in 2026-12: rxe with IBA 1.5's ATOMIC WRITE and FLUSH, which 6.1
#     lacks), looked up and downloaded through a private apt configuration under
#     cache/apt-<suite>/ (the host's apt sources are not touched); everything else stays
#     bookworm's, rdma-core 44 included;
#   - the root filesystem: an initramfs (newc cpio, gzip) holding busybox-static, iproute2
#     (ip, tc, rdma), dash as /bin/sh, ibverbs-utils, perftest, rdmacm-utils (rping),
#     rdma-core, librdmacm and libibverbs with the rxe provider,
#     plus every shared library they need (the lib* packages of their Depends, recursively;
#     the build fails if any ELF file's DT_NEEDED is still missing);
#   - tests/interop/guest/init, the boot-time script (see that file).
#
# Output (the cache key is a hash of this script, the init script, the suite and the kernel
# name):
#   cache/guest/vmlinuz      the kernel (cache/guest-<suite>/ with UROCE_GUEST_SUITE)
#   cache/guest/initrd.gz    the initramfs
#   cache/guest/manifest.txt package versions that went in (quoted by tests/fixtures/NOTES.md)
# Time: about 1-2 min the first time (a 70 MB kernel download), 0 s when cached.
# Usage: [UROCE_GUEST_SUITE=bookworm-backports] build-guest.sh [--force]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${UROCE_INTEROP_CACHE:-$here/cache}
suite=${UROCE_GUEST_SUITE:-}
out=$cache/guest${suite:+-$suite}
debs=$cache/debs
force=${1:-}

"$here/install.sh" >/dev/null

# The kernel's apt: the host's configuration, or for a suite a private one (its own sources
# list, package lists and archive folder) so that the host's apt sources stay as they are.
kapt=()
if [[ -n $suite ]]; then
  [[ $suite =~ ^[a-z]+(-[a-z]+)?$ ]] || { echo "build-guest: bad suite '$suite'" >&2; exit 2; }
  adir=$cache/apt-$suite
  mkdir -p "$adir/lists/partial" "$adir/archives/partial"
  echo "deb http://deb.debian.org/debian $suite main" >"$adir/sources.list"
  kapt=(-o "Dir::Etc::SourceList=$adir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$adir/lists" -o "Dir::Cache::archives=$adir/archives")
fi

kernel_pkg=${UROCE_GUEST_KERNEL:-}
if [[ -z $kernel_pkg ]]; then
  # (a private configuration's first run has no package lists yet: apt-cache fails)
  kernel_pkg=$(apt-cache "${kapt[@]}" depends linux-image-amd64 2>/dev/null |
    awk '/Depends: linux-image-[0-9]/ {print $2; exit}' || true)
  if [[ -z $kernel_pkg ]]; then
    apt-get "${kapt[@]}" update -q >/dev/null
    kernel_pkg=$(apt-cache "${kapt[@]}" depends linux-image-amd64 |
      awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  fi
fi
[[ -n $kernel_pkg ]] || { echo "build-guest: cannot find the kernel package" >&2; exit 1; }
kver=${kernel_pkg#linux-image-}

key=$( (cat "$0" "$here/guest/init"; echo "$suite $kernel_pkg") | sha256sum | cut -c1-16)
if [[ $force != --force && -f $out/key && $(cat "$out/key") == "$key" &&
      -f $out/vmlinuz && -f $out/initrd.gz ]]; then
  echo "build-guest: cached ($out, key $key)"
  exit 0
fi

# Userland packages named by issue #7, plus busybox for the shell and coreutils.
# libcap2-bin is in iproute2's Depends but only ships setcap: left out.
# zlib1g is named here because the closure below follows only lib* names; libstdc++6 lets the
# project's own C++ verbs programs (examples/uroce_verify) run in the guest on rxe.
# dash is /bin/sh: Debian's busybox-static shell prefers its own applets over PATH (its
# "tc" and "ip" would shadow iproute2's).
# rdmacm-utils: rping, for the RDMA CM interop cases (the kernel CM and rdma_ucm under
# librdmacm1 against uroce's librdmacm on the host).
top_pkgs=(busybox-static dash iproute2 ibverbs-utils perftest rdma-core libibverbs1 ibverbs-providers
  librdmacm1 rdmacm-utils libibumad3 zlib1g libstdc++6)

# Recursively follows Depends/PreDepends, keeping only lib* packages beyond the top ones.
closure() {
  local -A seen=()
  local queue=("$@") p d
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    [[ -n ${seen[$p]:-} ]] && continue
    seen[$p]=1
    echo "$p"
    while read -r d; do
      [[ $d == lib* && $d != libcap2-bin && $d != libc-bin && -z ${seen[$d]:-} ]] && queue+=("$d")
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
               --no-replaces --no-enhances "$p" 2>/dev/null |
             awk '/^ *\|?(Pre)?Depends: [^<]/ {sub(/:any$/, "", $2); print $2}')
  done
}

mkdir -p "$debs" "$out"
mapfile -t pkgs < <(closure "${top_pkgs[@]}")
pkgs+=("$kernel_pkg")
echo "build-guest: ${#pkgs[@]} packages: ${pkgs[*]}"

# apt-get download writes <name>_<version>_<arch>.deb into the current folder.
(
  cd "$debs"
  need=()
  for p in "${pkgs[@]}"; do
    [[ $p == "$kernel_pkg" ]] && continue
    ls "${p}"_*.deb >/dev/null 2>&1 || need+=("$p")
  done
  if ((${#need[@]})); then
    # (apt warns that _apt cannot write here and downloads as root: harmless)
    apt-get download -q "${need[@]}" || { apt-get update -q && apt-get download -q "${need[@]}"; }
  fi
  if ! ls "${kernel_pkg}"_*.deb >/dev/null 2>&1; then
    apt-get "${kapt[@]}" download -q "$kernel_pkg" ||
      { apt-get "${kapt[@]}" update -q && apt-get "${kapt[@]}" download -q "$kernel_pkg"; }
  fi
)

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
kroot=$work/kernel
mkdir -p "$root" "$kroot"

: >"$work/manifest.txt"
for p in "${pkgs[@]}"; do
  deb=$(ls "$debs/${p}"_*.deb | sort -V | tail -1)
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$work/manifest.txt"
  if [[ $p == "$kernel_pkg" ]]; then
    dpkg-deb -x "$deb" "$kroot"
  else
    dpkg-deb -x "$deb" "$root"
  fi
done

# --- kernel and the module closure --------------------------------------------------------
cp "$kroot/boot/vmlinuz-$kver" "$work/vmlinuz"
depmod -b "$kroot" "$kver"
# virtio_pci/virtio_net: the NICs; rdma_rxe + ib_uverbs: Soft-RoCE and /dev/infiniband;
# sch_netem: loss injection for the NAK fixture; af_packet: tcpdump-style sockets if wanted;
# crc32_generic: the "crc32" shash rdma_rxe asks the crypto API for (its ICRC).
# sch_ingress + cls_u32 + act_pedit + act_csum: rewrite the IP ECN field to CE on egress (the
# VM test's ECN/CNP case), loaded on demand by its command.
want_mods=(virtio_pci virtio_net rdma_rxe ib_uverbs rdma_ucm sch_netem af_packet crc32_generic
  sch_ingress cls_u32 act_pedit act_csum)
mkdir -p "$root/lib/modules/$kver"
for m in "${want_mods[@]}"; do
  # "builtin <name>" lines are skipped: those are compiled into vmlinuz.
  modprobe -d "$kroot" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
  rel=${ko#"$kroot"/lib/modules/"$kver"/}
  mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
  case $ko in
    *.ko.xz) xz -dc "$ko" >"$root/lib/modules/$kver/${rel%.xz}" ;;
    *.ko.zst) zstd -qdc "$ko" >"$root/lib/modules/$kver/${rel%.zst}" ;;
    *) cp "$ko" "$root/lib/modules/$kver/$rel" ;;
  esac
done
for f in modules.builtin modules.builtin.modinfo modules.order; do
  cp "$kroot/lib/modules/$kver/$f" "$root/lib/modules/$kver/"
done
depmod -b "$root" "$kver"
echo "build-guest: $(find "$root/lib/modules" -name '*.ko' | wc -l) modules for $kver"

# --- root filesystem ------------------------------------------------------------------------
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" \
  "$root/usr/share/lintian" "$root/usr/share/bash-completion" \
  "$root/usr/lib/x86_64-linux-gnu/gconv" "$root/usr/lib/x86_64-linux-gnu/tc/q_atm.so"
# (gconv: charset converters nothing here uses; q_atm.so: a tc plugin that needs libatm.)
mkdir -p "$root"/{proc,sys,dev,tmp,run,etc,root,var/tmp,mnt}
# Merged-/usr is done by the usrmerge package on real systems; here both trees just exist.
# busybox fills in every applet that the Debian binaries do not provide.
for a in $("$root/bin/busybox" --list-full); do
  name=$(basename "$a")
  [[ $name == busybox ]] && continue
  have=
  for d in bin sbin usr/bin usr/sbin; do [[ -e $root/$d/$name ]] && have=1; done
  if [[ -z $have ]]; then
    mkdir -p "$root/$(dirname "$a")"
    ln -s /bin/busybox "$root/$a"
  fi
done
ln -sf dash "$root/bin/sh"
printf 'include /etc/ld.so.conf.d/*.conf\n' >"$root/etc/ld.so.conf"
ldconfig -r "$root"
printf '127.0.0.1 localhost\n198.18.0.2 guest0\n198.18.0.3 guest1\n' >"$root/etc/hosts"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
install -m 0755 "$here/guest/init" "$root/init"
echo "$kver" >"$root/etc/uroce-kernel"

# Every DT_NEEDED of every ELF file must resolve inside the image.
missing=0
while read -r f; do
  while read -r so; do
    found=
    for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib usr/lib lib64; do
      [[ -e $root/$d/$so ]] && found=1
    done
    if [[ -z $found ]]; then
      echo "build-guest: $f needs $so, which is not in the image" >&2
      missing=1
    fi
  done < <(readelf -d "$f" 2>/dev/null | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}')
done < <(find "$root" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
           'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
((missing == 0)) || exit 1

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$work/initrd.gz"
mv "$work/vmlinuz" "$work/initrd.gz" "$work/manifest.txt" "$out/"
echo "$key" >"$out/key"
echo "build-guest: built $out ($(du -h "$out/initrd.gz" | cut -f1) initrd, kernel $kver)"
