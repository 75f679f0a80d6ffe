/**
 * @file cm_mad.cc
 * @brief Fuzz target: transport/wire/cm.h parse_cm_mad() on arbitrary bytes. It never reads
 * past the input, and any MAD it accepts is rebuilt by build_cm_mad() into one that parses
 * to the same message (what the CM would answer from is what it read). A REQ's or SIDR_REQ's
 * private data also goes through the RDMA IP CM header parser, whose accepted headers rebuild the
 * same.
 */
#include <cstdint>
#include <cstdlib>

#include "transport/wire/cm.h"
#include "transport/wire/cm_ip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce::wire::cm;
  ParseError err{};
  auto mad = parse_cm_mad(std::span<const uint8_t>(data, size), &err);
  if (!mad) {
    if (!to_string(err)[0]) std::abort();
    return 0;
  }
  uint8_t out[kMadLen];
  build_cm_mad(*mad, std::span<uint8_t, kMadLen>(out, kMadLen));
  auto again = parse_cm_mad(out);
  if (!again || !(*again == *mad)) std::abort();
  std::span<const uint8_t> pdata;
  if (const Req* req = std::get_if<Req>(&mad->msg)) pdata = req->private_data;
  if (const SidrReq* sreq = std::get_if<SidrReq>(&mad->msg)) pdata = sreq->private_data;
  if (!pdata.empty()) {
    if (auto ip = parse_ip_cm_header(pdata)) {
      uint8_t pd[kIpCmHeaderLen];
      if (!build_ip_cm_header(*ip, pd) || parse_ip_cm_header(pd) != ip) std::abort();
    }
  }
  return 0;
}
