#!/usr/bin/env bash
# Installs every Debian 12 package uroce needs to build, test and benchmark.
# Idempotent: packages already present are skipped; apt-get runs only when something is missing.
set -euo pipefail

PKGS=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev llvm
  # libraries
  libdpdk-dev dpdk libibverbs-dev libboost-dev libtomlplusplus-dev libcli11-dev
  libfmt-dev libspdlog-dev libisal-dev prometheus-cpp-dev libgtest-dev libgmock-dev
  libbenchmark-dev libpcap-dev libbsd-dev libnuma-dev libelf-dev nlohmann-json3-dev
  # the management API: its HTTP server (civetweb) and client (libcurl); Prometheus for the
  # fabric's scrape configuration test
  libcivetweb-dev libcurl4-openssl-dev prometheus
  # the Debian package (cpack -G DEB) and its check
  dpkg-dev lintian
  # host mode: netlink (addresses, routes, neighbours) and the XDP program (clang -target bpf)
  libnl-3-dev libnl-route-3-dev libbpf-dev libxdp-dev linux-libc-dev
  # the real RDMA programs that run over uroce, and tools the tests use
  ibverbs-utils perftest rdma-core rdmacm-utils qperf librdmacm-dev
  # fio (its rdma engine) and libfabric's fi_pingpong/fi_info (verbs provider) over uroce
  fio libfabric-bin
  # UCX and Open MPI over uroce (tests/e2e/ucx.py): ucx_perftest, mpirun with pml ucx, mpicc
  ucx-utils libucx0 openmpi-bin libopenmpi-dev
  # rdma-core's own test suite (pyverbs), run against uroce (tests/conformance)
  python3-pyverbs
  python3 python3-scapy python3-matplotlib python3-yaml tshark iperf3 iproute2 iputils-ping curl procps
  # bench/instructions: instructions per message (callgrind); gdb: stacks of a hung e2e run
  valgrind gdb
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer it up front.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
