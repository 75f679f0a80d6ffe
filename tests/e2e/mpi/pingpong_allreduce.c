/**
 * @file pingpong_allreduce.c
 * @brief A small MPI program whose every result is checked, for Open MPI over UCX over uroce
 * (tests/e2e/lib/ucx_cases.py runs it with two ranks, tests/host/hostd_e2e.py with four).
 *
 *   ping-pong  ranks pair up, r with r + N/2 (N ranks): the lower one sends a patterned
 *              message of each size, its partner checks every byte and sends back a different
 *              pattern, the sender checks that; sizes 1 B .. 1 MiB (eager and rendezvous
 *              protocols). With more than two ranks a second round pairs r with r ^ 1 (ranks
 *              placed by blocks, two per host: the first round crosses hosts, the second stays
 *              on one). Rank 0 prints its pair's one-way latency and bandwidth.
 *   allreduce  MPI_SUM and MPI_MAX over 64-bit integers whose result each rank knows in
 *              advance; every element is checked on every rank.
 *   rma        (-r) MPI_Put of a pattern into the first-round partner's window and MPI_Get of
 *              its window, with fences; every byte is checked (osc ucx: RDMA WRITE and READ).
 *
 * Usage: pingpong_allreduce [-n ITERS] [-r]. Needs an even number of ranks. Prints one "ok ..." line
 * per part, "rank R pingpong sent B bytes" per rank (for the harness's counter check) and "PASS" at
 * the end (rank 0); any mismatch prints where and exits 1 (MPI_Abort).
 * Units: bytes, microseconds, MB/s (10^6 bytes per second).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kTagPing = 1, kTagPong = 2 };
static const size_t kMaxSize = 1u << 20;
static const int kReduceCount = 65536;

static int g_rank;

/** The pattern of message `iter` of size `size` in direction `dir` (0 ping, 1 pong). */
static uint64_t seed_of(size_t size, int iter, int dir) {
  return (uint64_t)size * 40503u + (uint64_t)iter * 977u + (uint64_t)dir * 131u;
}

/** The byte at offset i of the pattern `seed`. */
static uint8_t pattern(size_t i, uint64_t seed) {
  uint64_t x = (uint64_t)i * 2654435761u + seed;
  return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

static void fill(uint8_t* buf, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) buf[i] = pattern(i, seed);
}

/** Aborts the job at the first byte that differs from the pattern. */
static void check(const uint8_t* buf, size_t n, uint64_t seed, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t want = pattern(i, seed);
    if (buf[i] != want) {
      fprintf(stderr, "FAIL rank %d: %s (%zu bytes): byte %zu is 0x%02x, expected 0x%02x\n",
              g_rank, what, n, i, buf[i], want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

/** Ping-pong with `partner`; returns the bytes this rank sent (= received). */
static unsigned long long pingpong(uint8_t* buf, int iters, int partner, const char* round) {
  static const size_t sizes[] = {1, 64, 4096, 65536, 1u << 20};
  const int pinger = g_rank < partner;
  unsigned long long bytes = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    size_t size = sizes[s];
    int n = size >= 65536 ? (iters + 9) / 10 : iters;  // big messages: fewer rounds
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < n; ++it) {
      if (pinger) {
        fill(buf, size, seed_of(size, it, 0));
        MPI_Send(buf, (int)size, MPI_BYTE, partner, kTagPing, MPI_COMM_WORLD);
        memset(buf, 0, size);
        MPI_Recv(buf, (int)size, MPI_BYTE, partner, kTagPong, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(buf, size, seed_of(size, it, 1), "pong");
      } else {
        MPI_Status st;
        int got = -1;
        memset(buf, 0, size);
        MPI_Recv(buf, (int)size, MPI_BYTE, partner, kTagPing, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        if ((size_t)got != size) {
          fprintf(stderr, "FAIL rank %d: ping size %zu arrived with %d bytes\n", g_rank, size,
                  got);
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        check(buf, size, seed_of(size, it, 0), "ping");
        fill(buf, size, seed_of(size, it, 1));
        MPI_Send(buf, (int)size, MPI_BYTE, partner, kTagPong, MPI_COMM_WORLD);
      }
    }
    double dt = MPI_Wtime() - t0;
    bytes += (unsigned long long)size * (unsigned long long)n;
    if (g_rank == 0)
      printf("ok pingpong%s size %zu iterations %d: %.2f us one-way, %.1f MB/s\n", round, size,
             n, dt / n / 2 * 1e6, 2.0 * (double)size * n / dt / 1e6);
  }
  return bytes;
}

static void allreduce(void) {
  int64_t* in = malloc(sizeof(int64_t) * kReduceCount);
  int64_t* out = malloc(sizeof(int64_t) * kReduceCount);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < kReduceCount; ++i) in[i] = (int64_t)i * (g_rank + 1) - g_rank * 7;
  MPI_Allreduce(in, out, kReduceCount, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < kReduceCount; ++i) {
    int64_t want = 0;
    for (int r = 0; r < size; ++r) want += (int64_t)i * (r + 1) - r * 7;
    if (out[i] != want) {
      fprintf(stderr, "FAIL rank %d: allreduce sum [%d] = %lld, expected %lld\n", g_rank, i,
              (long long)out[i], (long long)want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  // MAX: rank r holds r at even indices and -r at odd ones.
  for (int i = 0; i < kReduceCount; ++i) in[i] = (i % 2) ? -g_rank : g_rank;
  MPI_Allreduce(in, out, kReduceCount, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < kReduceCount; ++i) {
    int64_t want = (i % 2) ? 0 : size - 1;
    if (out[i] != want) {
      fprintf(stderr, "FAIL rank %d: allreduce max [%d] = %lld, expected %lld\n", g_rank, i,
              (long long)out[i], (long long)want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (g_rank == 0) printf("ok allreduce sum and max of %d int64 on %d ranks\n", kReduceCount, size);
  free(in);
  free(out);
}

static void rma(int peer) {
  const size_t size = 256 * 1024;
  uint8_t* base = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  fill(base, size, seed_of(size, 100 + g_rank, 0));  // each window starts with its owner's pattern
  uint8_t* local = malloc(size);
  MPI_Win_fence(0, win);
  // Get the peer's window as it was filled.
  MPI_Get(local, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
  MPI_Win_fence(0, win);
  check(local, size, seed_of(size, 100 + peer, 0), "rma get");
  // Put a new pattern into the second half of the peer's window.
  fill(local, size / 2, seed_of(size, 200 + g_rank, 1));
  MPI_Put(local, (int)(size / 2), MPI_BYTE, peer, (MPI_Aint)(size / 2), (int)(size / 2), MPI_BYTE,
          win);
  MPI_Win_fence(0, win);
  check(base, size / 2, seed_of(size, 100 + g_rank, 0), "rma untouched half");
  check(base + size / 2, size / 2, seed_of(size, 200 + peer, 1), "rma put");
  if (g_rank == 0) printf("ok rma get %zu bytes and put %zu bytes each way\n", size, size / 2);
  free(local);
  MPI_Win_free(&win);
}

int main(int argc, char** argv) {
  int iters = 100, with_rma = 0, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-r")) {
      with_rma = 1;
    } else {
      if (g_rank == 0) fprintf(stderr, "usage: %s [-n ITERS] [-r]\n", argv[0]);
      MPI_Finalize();
      return 2;
    }
  }
  if (size < 2 || size % 2 || iters < 1) {
    if (g_rank == 0)
      fprintf(stderr, "FAIL: needs an even number of ranks (got %d) and -n >= 1\n", size);
    MPI_Finalize();
    return 2;
  }
  char host[256] = "?";
  gethostname(host, sizeof host);
  printf("rank %d of %d on %s pid %d\n", g_rank, size, host, (int)getpid());
  fflush(stdout);
  uint8_t* buf = malloc(kMaxSize);
  const int partner = (g_rank + size / 2) % size;
  unsigned long long sent = pingpong(buf, iters, partner, "");
  if (size > 2) sent += pingpong(buf, iters, g_rank ^ 1, " neighbour");
  printf("rank %d pingpong sent %llu bytes\n", g_rank, sent);
  fflush(stdout);
  allreduce();
  if (with_rma) rma(partner);
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) printf("PASS\n");
  MPI_Finalize();
  return 0;
}
