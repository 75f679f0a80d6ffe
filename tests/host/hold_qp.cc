/**
 * @file hold_qp.cc
 * @brief Run by hostd_e2e.py's case `many`, hundreds at once: opens the device, creates a PD, a
 * CQ and an RC QP, prints "up <qpn>", and holds them until its standard input closes (or the
 * test kills it); then exits without closing anything (the exit ends its daemon session).
 *
 * Usage: hold_qp DEVICE
 */
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* c = nullptr;
  for (int i = 0; i < n && !c; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) c = ibv_open_device(list[i]);
  if (!c) return 3;
  ibv_pd* pd = ibv_alloc_pd(c);
  ibv_cq* cq = pd ? ibv_create_cq(c, 4, nullptr, nullptr, 0) : nullptr;
  if (!cq) return 4;
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  if (!qp) return 5;
  std::printf("up %#x\n", qp->qp_num);
  std::fflush(stdout);
  char b[64];
  while (read(0, b, sizeof b) > 0) {
  }
  return 0;
}
