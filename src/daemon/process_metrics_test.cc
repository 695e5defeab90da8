#include "daemon/process_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gpucanary::daemon {
namespace {

// A stat line as Linux writes it (proc(5)); the command name holds a space
// and a parenthesis, which is why the fields are counted from the last ')'.
constexpr std::string_view kStat =
    "4242 (gpu canary) d) S 1 4242 4242 0 -1 4194560 1234 0 0 0 "
    "250 150 0 0 20 0 18 0 123400 987654321 5000 18446744073709551615 "
    "1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ParsesAStatLineCountingFromTheLastParenthesis) {
  ProcessStats s;
  ParseProcStat(kStat, 100, 4096, 1'700'000'000, s);
  ASSERT_TRUE(s.cpu_seconds.has_value());
  EXPECT_DOUBLE_EQ(*s.cpu_seconds, 4.0);  // (250 + 150) ticks / 100
  EXPECT_DOUBLE_EQ(*s.start_time_seconds, 1'700'000'000 + 1234.0);
  EXPECT_DOUBLE_EQ(*s.virtual_bytes, 987654321);
  EXPECT_DOUBLE_EQ(*s.resident_bytes, 5000.0 * 4096);
}

TEST(ProcessMetricsTest, ATruncatedOrForeignLineIsNoData) {
  for (std::string_view bad :
       {std::string_view("4242 (x) S 1 2 3"), std::string_view(""),
        std::string_view("no parenthesis here"), kStat.substr(0, kStat.find("987654321"))}) {
    ProcessStats s;
    ParseProcStat(bad, 100, 4096, 0, s);
    EXPECT_FALSE(s.cpu_seconds.has_value()) << bad;
    EXPECT_FALSE(s.resident_bytes.has_value()) << bad;
  }
}

// This process's own figures: plausible, and the heap in use follows an
// allocation the test holds.
TEST(ProcessMetricsTest, ReadsThisProcess) {
  const ProcessStats before = ReadProcessStats();
  ASSERT_TRUE(before.resident_bytes.has_value());
  EXPECT_GT(*before.resident_bytes, 1 << 20);
  EXPECT_GE(*before.virtual_bytes, *before.resident_bytes);
  EXPECT_GE(*before.open_fds, 3);
  ASSERT_TRUE(before.start_time_seconds.has_value());
  EXPECT_LE(*before.start_time_seconds, static_cast<double>(time(nullptr)) + 1);
  EXPECT_GT(*before.start_time_seconds, static_cast<double>(time(nullptr)) - 3600);
  if (!HeapFiguresAvailable()) {
    EXPECT_FALSE(before.heap_inuse_bytes.has_value());  // ASan's heap: not measured
    return;
  }
  ASSERT_TRUE(before.heap_inuse_bytes.has_value());
  constexpr std::size_t kBlock = 64 << 20;
  auto block = std::make_unique<char[]>(kBlock);
  block[kBlock - 1] = 1;
  const ProcessStats after = ReadProcessStats();
  EXPECT_GE(*after.heap_inuse_bytes - *before.heap_inuse_bytes, kBlock);
}

// A transient peak on another thread (its own arena), freed: resident until
// ReturnFreedHeap gives the pages back (glibc; under ASan there is nothing
// to give back through it).
TEST(ProcessMetricsTest, ReturnFreedHeapGivesBackAThreadsFreedPeak) {
  if (!HeapFiguresAvailable()) GTEST_SKIP() << "AddressSanitizer's heap";
  constexpr std::size_t kBlocks = 1024, kBlock = 64 << 10;  // 64 MB under the mmap threshold
  std::thread([&] {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (std::size_t i = 0; i < kBlocks; ++i) {
      blocks.push_back(std::make_unique<char[]>(kBlock));
      blocks.back()[0] = 1;
      blocks.back()[kBlock - 1] = 1;
    }
    // The last block stays: the arena's top is not free, so glibc's own
    // trim on free cannot give the rest back.
    auto last = std::move(blocks.back());
    blocks.clear();
    const double before = *ReadProcessStats().resident_bytes;
    ReturnFreedHeap();
    const double after = *ReadProcessStats().resident_bytes;
    EXPECT_GT(before - after, 32 << 20) << "resident " << before << " -> " << after;
  }).join();
}

TEST(ProcessMetricsTest, WritesTheFamiliesItHasAndLeavesOutTheRest) {
  ProcessStats s;
  s.cpu_seconds = 4;
  s.resident_bytes = 20480000;
  std::string out;
  AppendProcessMetrics(out, s);
  EXPECT_EQ(out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total 4\n"
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes 20480000\n");
}

}  // namespace
}  // namespace gpucanary::daemon
