/**
 * @file fabric_settings.cc
 * @brief libFuzzer target: arbitrary bytes as the body of a node API write (PATCH and PUT of
 * /v1/settings, lib/fabric/node_api.h) on a switch and on a host. A refused document answers a
 * 4xx with an error and leaves the settings exactly as they were; an accepted one leaves
 * settings that validate and survive their own JSON round trip; nothing throws or trips a
 * sanitizer. The same bytes as the fabric's desired state (lib/fabric/desired.h): refused with
 * a line, or settings that validate.
 */
#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/desired.h"
#include "fabric/node_api.h"
#include "fabric/settings.h"

namespace {

using uroce::fabric::Role;
using uroce::fabric::Settings;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

class Node : public uroce::fabric::NodeBackend {
 public:
  explicit Node(Role r) : r_(r), s_(uroce::fabric::defaults(r)) {}
  Role role() const override { return r_; }
  std::string name() const override { return "fuzz"; }
  Settings settings() const override { return s_; }
  std::string apply(const Settings& s) override {
    s_ = s;
    return "";
  }
  std::string state_json() const override { return "{}"; }

 private:
  Role r_;
  Settings s_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (Role r : {Role::kHost, Role::kSwitch}) {
    std::string derr;
    if (auto d = uroce::fabric::desired_for(body, "h1", r, &derr))
      check(uroce::fabric::validate(*d, r, &derr));
    else
      check(!derr.empty());
    for (const char* method : {"PATCH", "PUT"}) {
      Node node(r);
      uroce::fabric::NodeApi api(&node);
      const Settings before = node.settings();
      uroce::mgmt::Response resp = api.handle({method, "/v1/settings", "", body});
      std::string err;
      if (resp.status != 200) {
        check(resp.status == 400 && resp.body.find("\"error\"") != std::string::npos);
        check(node.settings() == before);
        continue;
      }
      const Settings after = node.settings();
      check(uroce::fabric::validate(after, r, &err));
      Settings again = uroce::fabric::defaults(r);
      check(uroce::fabric::apply_json(uroce::fabric::to_json(after, r), r, &again, &err));
      check(again == after);
    }
  }
  return 0;
}
