/**
 * @file host_events.cc
 * @brief e2e program for host mode: opens a device and prints, one line each, its port state,
 * its GID table, and every asynchronous event until stdin closes or --seconds pass, so the
 * harness (tests/e2e/lib/host_cases.py) can change the netdev under it and check what the
 * verbs layer reports.
 *
 *   e2e_host_events [--device D] [--seconds S]
 *
 * Output lines: "READY", "PORT state=<ACTIVE|DOWN|...> active_mtu=<n>", "GID <i> <address>"
 * (non-zero entries, after "GIDS" and before "END"), "EVENT <name>"; after GID_CHANGE and
 * PORT_* events the port and GID table are printed again. An application of the ABI: links the
 * system libibverbs, LD_LIBRARY_PATH puts uroce's first.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

void print_port(ibv_context* ctx) {
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, 1, &pa) != 0) {
    std::printf("FAIL ibv_query_port\n");
    return;
  }
  std::printf("PORT state=%s active_mtu=%d\n", ibv_port_state_str(pa.state), 128 << pa.active_mtu);
  std::printf("GIDS\n");
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx, 1, i, &g) != 0) continue;
    static const uint8_t zero[16] = {};
    if (std::memcmp(g.raw, zero, 16) == 0) continue;
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, g.raw, text, sizeof text);
    std::printf("GID %d %s\n", i, text);
  }
  std::printf("END\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "uroce0";
  double seconds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
  }
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = nullptr;
  for (int i = 0; list && i < n; ++i)
    if (device == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
  if (!ctx) {
    std::printf("FAIL cannot open %s\n", device.c_str());
    return 1;
  }
  print_port(ctx);
  std::printf("READY\n");
  std::fflush(stdout);
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = seconds - (now.tv_sec - start.tv_sec) - (now.tv_nsec - start.tv_nsec) / 1e9;
    if (left <= 0) break;
    pollfd fds[2] = {{ctx->async_fd, POLLIN, 0}, {0, POLLIN, 0}};
    int r = poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (r < 0) break;
    if (fds[1].revents) {  // stdin readable: closed or a line: either ends the program
      char buf[64];
      if (!fgets(buf, sizeof buf, stdin)) break;
      print_port(ctx);
      continue;
    }
    if (!fds[0].revents) continue;
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx, &ev) != 0) continue;
    std::printf("EVENT %s\n", ibv_event_type_str(ev.event_type));
    ibv_ack_async_event(&ev);
    print_port(ctx);
  }
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  std::printf("DONE\n");
  return 0;
}
