/**
 * @file capture_ring_test.cc
 * @brief The `uroce capture` ring (lib/stats capture.h): a program-side writer and a tool-side
 * reader over one file: frames arrive byte for byte in order with direction, length and time;
 * a full ring drops and counts instead of blocking; long frames are cut at the snaplen; a
 * file that is not a ring is refused; unlinking by the reader tells the writer to let go.
 */
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "stats/capture.h"

namespace uroce::stats {
namespace {

class CaptureRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/uroce-capture-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = capture_path(dir_, "uroce0", getpid());
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  static std::vector<uint8_t> frame(size_t len, uint8_t seed) {
    std::vector<uint8_t> f(len);
    for (size_t i = 0; i < len; ++i) f[i] = static_cast<uint8_t>(seed + i * 7);
    return f;
  }
  struct Got {
    CaptureSlot meta;
    std::vector<uint8_t> data;
  };
  static std::vector<Got> drain(CaptureReader& r) {
    std::vector<Got> out;
    r.drain([&](const CaptureSlot& s, std::span<const uint8_t> d) {
      out.push_back({s, std::vector<uint8_t>(d.begin(), d.end())});
    });
    return out;
  }
  std::string dir_, path_;
};

TEST_F(CaptureRingTest, NoRingNoWriter) { EXPECT_EQ(CaptureWriter::attach(path_), nullptr); }

TEST_F(CaptureRingTest, FramesArriveInOrderByteForByte) {
  std::string err;
  auto r = CaptureReader::create(path_, 16, &err);
  ASSERT_TRUE(r) << err;
  auto w = CaptureWriter::attach(path_);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->wanted());
  for (uint8_t i = 0; i < 10; ++i) w->write(frame(60 + i * 100, i), i % 2 == 1, 1000 + i);
  auto got = drain(*r);
  ASSERT_EQ(got.size(), 10u);
  for (uint8_t i = 0; i < 10; ++i) {
    EXPECT_EQ(got[i].meta.ts_ns, 1000u + i);
    EXPECT_EQ(got[i].meta.dir, i % 2 == 1 ? 1u : 0u);
    EXPECT_EQ(got[i].meta.len, 60u + i * 100);
    EXPECT_EQ(got[i].data, frame(60 + i * 100, i)) << int{i};
  }
  EXPECT_TRUE(drain(*r).empty());  // consumed
  EXPECT_EQ(r->dropped(), 0u);
}

TEST_F(CaptureRingTest, AFullRingDropsAndCountsThenResumes) {
  std::string err;
  auto r = CaptureReader::create(path_, 4, &err);
  ASSERT_TRUE(r) << err;
  auto w = CaptureWriter::attach(path_);
  ASSERT_TRUE(w);
  for (uint8_t i = 0; i < 7; ++i) w->write(frame(100, i), false, i);
  EXPECT_EQ(r->dropped(), 3u);
  auto got = drain(*r);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3].data, frame(100, 3));  // the first four kept, the rest dropped
  w->write(frame(100, 9), true, 9);       // room again after the drain
  got = drain(*r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, frame(100, 9));
}

TEST_F(CaptureRingTest, LongFramesAreCutAtTheSnaplen) {
  std::string err;
  auto r = CaptureReader::create(path_, 4, &err);
  ASSERT_TRUE(r) << err;
  auto w = CaptureWriter::attach(path_);
  ASSERT_TRUE(w);
  auto big = frame(kCaptureSnaplen + 500, 1);
  w->write(big, false, 0);
  auto got = drain(*r);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].meta.len, kCaptureSnaplen + 500);
  ASSERT_EQ(got[0].data.size(), kCaptureSnaplen);
  EXPECT_TRUE(std::equal(got[0].data.begin(), got[0].data.end(), big.begin()));
}

TEST_F(CaptureRingTest, AFileThatIsNotARingIsRefused) {
  { std::ofstream(path_) << std::string(8192, 'x'); }
  EXPECT_EQ(CaptureWriter::attach(path_), nullptr);
  std::string err;
  EXPECT_EQ(CaptureReader::create(path_, 4, &err), nullptr);  // exists: not overwritten
  EXPECT_NE(err.find(path_ + ": cannot create the capture ring: File exists"), std::string::npos)
      << err;
}

TEST_F(CaptureRingTest, TheWriterSeesTheToolLetGo) {
  std::string err;
  auto r = CaptureReader::create(path_, 4, &err);
  ASSERT_TRUE(r) << err;
  auto w = CaptureWriter::attach(path_);
  ASSERT_TRUE(w);
  r.reset();  // the tool is done: unlinks the file
  EXPECT_FALSE(w->wanted());
  w->write(frame(64, 0), false, 0);  // still safe: the mapping stays valid
  EXPECT_EQ(access(path_.c_str(), F_OK), -1);
}

}  // namespace
}  // namespace uroce::stats
