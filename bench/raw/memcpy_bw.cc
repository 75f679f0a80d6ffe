/**
 * @file memcpy_bw.cc
 * @brief The machine's memory-copy bandwidth: the physical ceiling of any software data path.
 *
 * Copies blocks of --size bytes between two buffers of 64 blocks each (at least 256 KiB): 4 KiB
 * copies then stay in the L2 cache, as a packet path's recycled buffers do, and 1 MiB copies go
 * to DRAM (64 MiB), as a large RDMA transfer does. Runs for --seconds and prints `MEMCPY
 * size=<bytes> gbps=<Gbit/s> gibps=<GiB/s>`. Usage: memcpy_bw [--size B] [--seconds S]
 */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  size_t size = 4096;
  double seconds = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--size")
      size = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--seconds")
      seconds = std::atof(argv[i + 1]);
  }
  const size_t span = std::max(size_t{256} << 10, size * 64);
  size_t blocks = span / size > 0 ? span / size : 1;
  std::vector<char> src(blocks * size, 1), dst(blocks * size, 0);
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto end = start + std::chrono::duration<double>(seconds);
  size_t copies = 0;
  while (clock::now() < end) {
    for (size_t k = 0; k < 64; ++k, ++copies) {
      size_t b = copies % blocks;
      std::memcpy(dst.data() + b * size, src.data() + b * size, size);
    }
  }
  double secs = std::chrono::duration<double>(clock::now() - start).count();
  double bytes = static_cast<double>(copies) * static_cast<double>(size);
  // Keep the copies observable so they are not optimised away.
  volatile char sink = dst[(copies % blocks) * size];
  (void)sink;
  std::printf("MEMCPY size=%zu gbps=%.2f gibps=%.2f\n", size, bytes * 8 / secs / 1e9,
              bytes / secs / (1 << 30));
  return 0;
}
