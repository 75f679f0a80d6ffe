// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * uroce's XDP program for host mode: RoCEv2 frames go to the AF_XDP socket of the queue they
 * arrived on (DPDK's net_af_xdp PMD, devarg xdp_prog=, inserts its sockets into xsks_map with
 * key = queue index); every other frame goes to the kernel untouched. README.md in this folder
 * says what matches and why.
 *
 * Built with: clang -O2 -g -target bpf -c roce_steer.bpf.c (drivers/xdp/CMakeLists.txt).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCEV2_PORT 4791 /* IBA Annex 17, A17.2: the RoCEv2 UDP destination port */
#define MAX_QUEUES 256   /* RX queue indices a port may bind */
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* The PMD looks this map up by name and inserts one socket per bound queue. */
struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, MAX_QUEUES);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

/* Per-CPU frame counts for `uroce doctor` (index: enum below). */
enum {
  UROCE_XDP_REDIRECTED = 0, /* RoCEv2, handed to the queue's socket */
  UROCE_XDP_PASSED = 1,     /* not RoCEv2, to the kernel */
  UROCE_XDP_UNBOUND = 2,    /* RoCEv2 on a queue without a socket, to the kernel */
  UROCE_XDP_NCOUNTS = 3,
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, UROCE_XDP_NCOUNTS);
  __type(key, __u32);
  __type(value, __u64);
} uroce_counts SEC(".maps");

struct vlan_tag {
  __be16 tci;
  __be16 proto; /* the encapsulated EtherType */
};

static __always_inline int count(__u32 what, int action) {
  __u64* n = bpf_map_lookup_elem(&uroce_counts, &what);
  if (n) *n += 1;
  return action;
}

/* Returns the UDP header of a RoCEv2 frame, NULL for anything else. */
static __always_inline struct udphdr* rocev2_udp(void* data, void* end) {
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return NULL;
  __be16 proto = eth->h_proto;
  void* l3 = eth + 1;
  /* One 802.1Q or 802.1ad tag, or two (QinQ: 802.1ad outer, 802.1Q inner). */
#pragma unroll
  for (int i = 0; i < 2; i++) {
    if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD)) break;
    struct vlan_tag* tag = l3;
    if ((void*)(tag + 1) > end) return NULL;
    proto = tag->proto;
    l3 = tag + 1;
  }
  struct udphdr* udp;
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = l3;
    if ((void*)(ip + 1) > end) return NULL;
    if (ip->protocol != IPPROTO_UDP) return NULL;
    /* Any fragment (RoCEv2 sets DF and is never fragmented): the kernel reassembles the whole
     * datagram rather than getting all but the first piece. */
    if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) return NULL;
    __u32 ihl = ip->ihl * 4u;
    if (ihl < sizeof(*ip)) return NULL;
    udp = (void*)ip + ihl; /* options included */
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = l3;
    if ((void*)(ip6 + 1) > end) return NULL;
    /* UDP right after the fixed header only; extension headers go to the kernel. */
    if (ip6->nexthdr != IPPROTO_UDP) return NULL;
    udp = (void*)(ip6 + 1);
  } else {
    return NULL;
  }
  if ((void*)(udp + 1) > end) return NULL;
  if (udp->dest != bpf_htons(ROCEV2_PORT)) return NULL;
  return udp;
}

SEC("xdp")
int uroce_roce(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  if (!rocev2_udp(data, end)) return count(UROCE_XDP_PASSED, XDP_PASS);
  /* XDP_PASS in the flags: a queue without a socket hands the frame to the kernel. */
  int action = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
  return count(action == XDP_REDIRECT ? UROCE_XDP_REDIRECTED : UROCE_XDP_UNBOUND, action);
}

char _license[] SEC("license") = "Dual BSD/GPL";
