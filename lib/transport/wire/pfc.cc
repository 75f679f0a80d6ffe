/**
 * @file pfc.cc
 * @brief 802.1Qbb PFC and 802.3x PAUSE MAC Control frames (IEEE 802.3 Annex 31B/31D).
 * Units: quanta of 512 bit times, bytes.
 */
#include "transport/wire/pfc.h"

#include <cstring>

namespace uroce::wire {

size_t build_pause_frame(std::span<uint8_t> buf, const MacAddr& src, const PauseFrame& f) {
  if (buf.size() < kMacControlFrameLen) return 0;
  uint8_t* p = buf.data();
  std::memset(p, 0, kMacControlFrameLen);
  std::memcpy(p, kMacControlDst.b.data(), 6);
  std::memcpy(p + 6, src.b.data(), 6);
  store_be16(p + 12, kEtherTypeMacControl);
  uint8_t* b = p + sizeof(EthHdr);
  if (f.global) {
    store_be16(b, kMacControlOpPause);
    store_be16(b + 2, f.quanta[0]);
    return kMacControlFrameLen;
  }
  store_be16(b, kMacControlOpPfc);
  store_be16(b + 2, f.class_enable);
  for (size_t i = 0; i < 8; ++i) store_be16(b + 4 + 2 * i, f.quanta[i]);
  return kMacControlFrameLen;
}

MacControlParse parse_mac_control(std::span<const uint8_t> frame, MacControlFrame* out) {
  const uint8_t* p = frame.data();
  const size_t n = frame.size();
  if (n < sizeof(EthHdr) || load_be16(p + 12) != kEtherTypeMacControl) {
    return MacControlParse::kNotMacControl;
  }
  if (n < sizeof(EthHdr) + 2) return MacControlParse::kTruncated;
  MacAddr dst;
  std::memcpy(dst.b.data(), p, 6);
  std::memcpy(out->src.b.data(), p + 6, 6);
  const uint8_t* b = p + sizeof(EthHdr);
  const uint16_t op = load_be16(b);
  PauseFrame& f = out->pause;
  if (op == kMacControlOpPfc) {
    if (n < sizeof(EthHdr) + sizeof(PfcBody)) return MacControlParse::kTruncated;
    f.global = false;
    f.class_enable = static_cast<uint8_t>(load_be16(b + 2));
    for (size_t i = 0; i < 8; ++i) f.quanta[i] = load_be16(b + 4 + 2 * i);
  } else if (op == kMacControlOpPause) {
    if (n < sizeof(EthHdr) + sizeof(PauseBody)) return MacControlParse::kTruncated;
    f.global = true;
    f.class_enable = 0xff;
    f.quanta.fill(load_be16(b + 2));
  } else {
    return MacControlParse::kUnknownOpcode;
  }
  // 802.3 Annex 31B.3.1: PAUSE may also be sent to the station's own address; PFC uses only
  // the reserved multicast address. kOk for the reserved address only.
  if (!(dst == kMacControlDst)) return MacControlParse::kBadDestination;
  return MacControlParse::kOk;
}

}  // namespace uroce::wire
