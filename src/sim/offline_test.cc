#include "sim/offline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "expfmt/reader.h"

namespace gpucanary::sim {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kStart = 1764680000000;

// One node of 8 H100s at 85% load; from t = 30 s an external power brake holds
// GPUs 0-3.
Fleet::Driver BrakeAt30s() {
  return [](const SimNode&, int gpu, std::int64_t now_ms, Workload& w, Faults& f) {
    w.load = 0.85;
    w.dynamic_power_w = 450;
    f.power_brake = gpu < 4 && now_ms >= kStart + 30000;
  };
}

fs::path Record(const std::string& name, std::uint64_t seed) {
  const fs::path path = fs::temp_directory_path() / name;
  Fleet fleet(seed);
  fleet.AddNode("node-4", *FindGpuProfile("h100-sxm"), 8, "580.105.08");
  auto writer = recording::RecordingWriter::Open(path.string());
  EXPECT_TRUE(writer.has_value());
  OfflineOptions options;
  options.duration_s = 60;
  options.start_ms = kStart;
  auto stats = WriteRecording(fleet, BrakeAt30s(), options, **writer);
  EXPECT_TRUE(stats.has_value());
  EXPECT_EQ(stats->scrapes, 60u);
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OfflineTest, RecordingIsValidAndShowsTheBrakeFromItsOnset) {
  const fs::path path = Record("gpucanary-offline-test.om", 42);
  std::map<std::pair<std::string, std::int64_t>, double> clock;  // (gpu, t) -> MHz
  auto report =
      expfmt::ReadFile(path.string(), expfmt::ReadOptions{},
                       [&](const expfmt::SampleView& s, std::string_view, auto) {
                         if (s.name == "DCGM_FI_DEV_SM_CLOCK") {
                           clock[{std::string(*s.Label("gpu")), s.timestamp_ms}] = s.value;
                         }
                       });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(report->format, expfmt::Format::kOpenMetrics);
  EXPECT_EQ(report->stats.min_timestamp_ms, kStart + 1000);
  EXPECT_EQ(report->stats.max_timestamp_ms, kStart + 60000);
  EXPECT_EQ(clock.size(), 8u * 60u);
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string g = std::to_string(gpu);
    EXPECT_EQ((clock[{g, kStart + 20000}]), 1980) << g;
    EXPECT_EQ((clock[{g, kStart + 45000}]), gpu < 4 ? 1050 : 1980) << g;
  }
  fs::remove(path);
}

TEST(OfflineTest, SameSeedGivesByteIdenticalRecordings) {
  const fs::path a = Record("gpucanary-offline-a.om", 7);
  const fs::path b = Record("gpucanary-offline-b.om", 7);
  const fs::path c = Record("gpucanary-offline-c.om", 8);
  EXPECT_EQ(Slurp(a), Slurp(b));
  EXPECT_NE(Slurp(a), Slurp(c));
  fs::remove(a);
  fs::remove(b);
  fs::remove(c);
}

}  // namespace
}  // namespace gpucanary::sim
