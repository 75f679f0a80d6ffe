/**
 * @file udp_pingpong.cc
 * @brief Kernel UDP ping-pong latency: what a user without RDMA gets on the same veth.
 *
 *   udp_pingpong pong <bind-addr> <port>            echoes datagrams until a 0-byte one
 *   udp_pingpong ping <addr> <port> [count] [size]  prints one-way latency (RTT/2)
 * Output of ping: `UDP ping size=<B> samples=<n> median_us=<us> p99_us=<us>`. Blocking sockets,
 * as an ordinary program would use them. Units: microseconds.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: udp_pingpong pong|ping <addr> <port> [count] [size]\n");
    return 2;
  }
  std::string role = argv[1];
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[3])));
  if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) return 2;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  char buf[65536];
  if (role == "pong") {
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      std::perror("bind");
      return 1;
    }
    std::printf("UDP pong ready\n");
    std::fflush(stdout);
    timeval tv{30, 0};  // stop after 30 s without traffic
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (true) {
      sockaddr_in from{};
      socklen_t fl = sizeof(from);
      ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n <= 0) break;
      sendto(fd, buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), fl);
    }
    return 0;
  }
  int count = argc > 4 ? std::atoi(argv[4]) : 20000;
  size_t size = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 2;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
  timeval tv{1, 0};  // a lost datagram costs at most 1 s
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::memset(buf, 'u', size);
  std::vector<double> us;
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < count + 100; ++i) {
    auto t0 = clock::now();
    if (send(fd, buf, size, 0) < 0) return 1;
    if (recv(fd, buf, sizeof(buf), 0) <= 0) continue;
    double rtt = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
    if (i >= 100) us.push_back(rtt / 2);
  }
  for (int i = 0; i < 3; ++i) send(fd, buf, 0, 0);  // tell pong to stop
  if (us.empty()) return 1;
  std::sort(us.begin(), us.end());
  std::printf("UDP ping size=%zu samples=%zu median_us=%.2f p99_us=%.2f\n", size, us.size(),
              us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]);
  return 0;
}
