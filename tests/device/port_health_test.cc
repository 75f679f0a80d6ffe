/**
 * @file port_health_test.cc
 * @brief The pause-storm watchdog's report (lib/device port_health.h): nothing while the storm
 * counters stand still, one log line per rise, and a port error event only for an error
 * (not a warning), naming the paused priorities.
 */
#include "device/port_health.h"

#include <gtest/gtest.h>

namespace uroce::device {
namespace {

TEST(PortHealth, QuietCountersReportNothing) {
  PortHealth h;
  PortCounters c;
  c.rx_prio_pause[3] = 10;  // pauses alone are not a storm
  auto r = h.update(c);
  EXPECT_FALSE(r.port_error);
  EXPECT_TRUE(r.lines.empty());
}

TEST(PortHealth, AWarningLogsButRaisesNoEvent) {
  PortHealth h;
  PortCounters c;
  c.tx_pause_storm_warning_events = 1;
  c.rx_prio_pause_duration[3] = 150000;
  auto r = h.update(c);
  EXPECT_FALSE(r.port_error);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("warning"), std::string::npos) << r.lines[0];
  EXPECT_NE(r.lines[0].find("priority 3 for 150000 us"), std::string::npos) << r.lines[0];
  EXPECT_TRUE(h.update(c).lines.empty());  // same counters again: nothing new
}

TEST(PortHealth, AnErrorRaisesThePortErrorOncePerRise) {
  PortHealth h;
  PortCounters c;
  c.tx_pause_storm_error_events = 1;
  c.rx_prio_pause_duration[0] = 5;
  c.rx_prio_pause_duration[6] = 7;
  auto r = h.update(c);
  EXPECT_TRUE(r.port_error);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("tx_pause_storm_error_events 1"), std::string::npos);
  EXPECT_NE(r.lines[0].find("priority 0 for 5 us, priority 6 for 7 us"), std::string::npos)
      << r.lines[0];
  EXPECT_FALSE(h.update(c).port_error);
  c.tx_pause_storm_error_events = 2;
  EXPECT_TRUE(h.update(c).port_error);
}

}  // namespace
}  // namespace uroce::device
