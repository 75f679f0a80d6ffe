#!/usr/bin/env bash
# @file install.sh
# @brief Installs the Debian 12 packages that only the rxe-in-a-VM interop test needs (issue #7).
#
# Kept apart from scripts/install-deps.sh because none of the ordinary build or unit tests need
# them: qemu runs the guest, busybox-static/cpio/kmod build its initramfs. Idempotent: apt-get
# runs only when something is missing. The guest's own packages (kernel, rdma-core, perftest,
# iproute2, ...) are fetched by build-guest.sh with `apt-get download`, not installed here.
set -euo pipefail

PKGS=(qemu-system-x86 busybox-static cpio kmod)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "interop/install: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "interop/install: all packages present"
fi
