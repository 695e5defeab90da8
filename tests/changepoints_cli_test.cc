// gpucanary changepoints, run as a user runs it: stdout, stderr, exit code.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using gpucanary::testing::RunResult;

class ChangepointsCliTest : public gpucanary::testing::CliHarness {
 protected:
  ChangepointsCliTest() : CliHarness("gpucanary-changepoints") {}

  // Runs `gpucanary changepoints ARGS` (ARGS is shell syntax).
  RunResult Run(const std::string& args, const std::string& stdin_text = "") {
    return CliHarness::Run("changepoints " + args, stdin_text);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  static std::vector<std::size_t> ChangePoints(const RunResult& r) {
    return nlohmann::json::parse(r.out).at("change_points").get<std::vector<std::size_t>>();
  }
};

// `count` values around `level` (noise of 1) from a fixed seed, one per line.
std::string Values(std::mt19937_64& rng, int count, double level) {
  std::normal_distribution<double> noise(level, 1.0);
  std::string out;
  for (int i = 0; i < count; ++i) out += std::to_string(noise(rng)) + "\n";
  return out;
}

TEST_F(ChangepointsCliTest, ValueOnlyCsvFromStdin) {
  std::mt19937_64 rng(1);
  const std::string csv = "value\n" + Values(rng, 100, 50) + Values(rng, 100, 60);
  const RunResult r = Run("--input -", csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(ChangePoints(r), std::vector<std::size_t>{100});
}

TEST_F(ChangepointsCliTest, TimeValueCsvAndTextOutput) {
  std::string csv = "time,value\n";
  for (int i = 0; i < 60; ++i) {
    csv += std::to_string(1764680000 + i) + "," + (i < 40 ? "1980" : "1410") + "\n";
  }
  const std::string file = Write("clock.csv", csv);
  const RunResult json = Run("--input " + file);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(ChangePoints(json), std::vector<std::size_t>{40});
  const RunResult text = Run("--input " + file + " --output text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, "40 1764680040 1980 -> 1410\n");
}

// Empty cells are missing samples: they keep their row index and are not zeros
// (zeros would be a change of their own).
TEST_F(ChangepointsCliTest, EmptyValuesAreMissingNotZero) {
  std::string csv = "time,value\n";
  for (int i = 0; i < 80; ++i) {
    const bool gap = i % 7 == 3;
    csv += std::to_string(i) + "," + (gap ? "" : (i < 50 ? "10" : "20")) + "\n";
  }
  const RunResult r = Run("--input " + Write("gaps.csv", csv) + " -o text");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "50 50 10 -> 20\n");
}

TEST_F(ChangepointsCliTest, BadNumberIsAnErrorWithLineAndColumn) {
  const std::string file = Write("bad.csv", "time,value\n1,5\n2,\n3, 4x\n");
  const RunResult r = Run("--input " + file);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(file + ":4:4: bad number '4x' in column 'value'"));
}

TEST_F(ChangepointsCliTest, TimeMustIncrease) {
  const RunResult r = Run("--input -", "time,value\n1,5\n3,5\n2,5\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:4:1: time '2' is not after the previous row's"));
}

TEST_F(ChangepointsCliTest, ColumnChoice) {
  std::string csv = "time,latency,value\n";
  for (int i = 0; i < 60; ++i) {
    csv += std::to_string(i) + "," + (i < 25 ? "3" : "9") + ",1\n";
  }
  const std::string file = Write("two.csv", csv);
  const RunResult chosen = Run("--input " + file + " --column latency");
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(ChangePoints(chosen), std::vector<std::size_t>{25});
  const RunResult missing = Run("--input " + file + " --column p99");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr(":1:1: no column 'p99' in the header (columns: 'time', "
                                     "'latency', 'value')"));
}

// A recording of two GPUs: gpu 0's SM clock drops at its 30th scrape, one
// scrape (the 37th) is missing from the file; an energy counter (DCGM calls
// it a counter; the recording says "unknown") doubles its rate at scrape 20
// and restarts from 0 just before scrape 45.
std::string Recording() {
  std::string om =
      "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n";
  double energy = 0;
  for (int k = 0; k < 60; ++k) {
    const std::string t = std::to_string(1764680000 + k) + ".000";
    energy = k == 45 ? 600000 : energy + (k < 20 ? 300000 : 600000);
    if (k == 37) continue;
    for (int gpu = 0; gpu < 2; ++gpu) {
      const int clock = k >= 30 && gpu == 0 ? 1410 : 1980;
      om += "DCGM_FI_DEV_SM_CLOCK{gpu=\"" + std::to_string(gpu) + "\",Hostname=\"node-4\"} " +
            std::to_string(clock) + " " + t + "\n";
    }
    om += "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",Hostname=\"node-4\"} " +
          std::to_string(static_cast<long>(energy)) + " " + t + "\n";
  }
  return om + "# EOF\n";
}

TEST_F(ChangepointsCliTest, TelemetrySeriesOnItsScrapeGrid) {
  const std::string file = Write("rec.om", Recording());
  const RunResult r = Run("--input " + file +
                          " --series '{__name__=\"DCGM_FI_DEV_SM_CLOCK\",Hostname=\"node-4\","
                          "gpu=\"0\"}' -o text");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "30 2025-12-02T12:53:50.000Z 1980 -> 1410\n");
}

// The counter becomes its rate (mJ/s): 300000, then 600000 from scrape 20.
// Across the missing scrape the increase is spread over its 2 s, and the
// reset at 45 counts the new value as the increase (Prometheus's rule), so
// neither looks like a change.
TEST_F(ChangepointsCliTest, CounterBecomesItsPerSecondRate) {
  const std::string file = Write("rec.om", Recording());
  const RunResult r =
      Run("--input " + file + " --series DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION -o text");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "20 2025-12-02T12:53:40.000Z 300000 -> 600000\n");
}

TEST_F(ChangepointsCliTest, AmbiguousOrUnmatchedSelectorIsAnError) {
  const std::string file = Write("rec.om", Recording());
  const RunResult two = Run("--input " + file + " --series DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(two.exit_code, 3);
  EXPECT_EQ(two.out, "");
  EXPECT_THAT(two.err, HasSubstr("2 series match DCGM_FI_DEV_SM_CLOCK; the selector must match "
                                 "exactly one:\n  DCGM_FI_DEV_SM_CLOCK{Hostname=\"node-4\","
                                 "gpu=\"0\"}\n  DCGM_FI_DEV_SM_CLOCK{Hostname=\"node-4\","
                                 "gpu=\"1\"}\n"));
  const RunResult none = Run("--input " + file + " --series '{gpu=\"7\"}'");
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_THAT(none.err, HasSubstr("no series matches {gpu=\"7\"}"));
  const RunResult bad = Run("--input " + file + " --series '{gpu=}'");
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_THAT(bad.err, HasSubstr("--series: "));
  const RunResult no_selector = Run("--input " + file);
  EXPECT_EQ(no_selector.exit_code, 3);
  EXPECT_THAT(no_selector.err, HasSubstr("pass --series SELECTOR"));
}

// Otava on the TigerBeetle series with the settings of Otava's
// test_tb_magnitude0_p001: the port gives Otava's list.
TEST_F(ChangepointsCliTest, OtavaMethodOnTigerBeetle) {
  const std::string csv =
      std::string(GPUCANARY_SHARED_DIR) + "/data/otava-tigerbeetle/tigerbeetle_series.csv";
  const RunResult r =
      Run("--input " + csv + " --column value --method otava --window-len 30 --max-pvalue 0.001");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ChangePoints(r),
            (std::vector<std::size_t>{15, 61, 71, 95, 117, 131, 142, 148, 192, 212, 260}));
  const RunResult flags_without_otava = Run("--input " + csv + " --window-len 30");
  EXPECT_EQ(flags_without_otava.exit_code, 3);
  EXPECT_THAT(flags_without_otava.err, HasSubstr("need --method otava"));
}

TEST_F(ChangepointsCliTest, OnlineMethodSeesTheStepFromThePastOnly) {
  std::mt19937_64 rng(3);
  // A 10-sigma step at 300, with a missing sample (an empty value) before it.
  const std::string csv =
      "value\n" + Values(rng, 200, 50) + "\n" + Values(rng, 99, 50) + Values(rng, 300, 60);
  const RunResult r = Run("--input - --method online", csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::size_t> points = ChangePoints(r);
  ASSERT_EQ(points.size(), 1u) << r.out;
  // Its estimate of where the new level began: within a few samples.
  EXPECT_NEAR(static_cast<double>(points[0]), 300.0, 3.0);
  // Noise alone: no change.
  const RunResult quiet = Run("--input - --method online", "value\n" + Values(rng, 1000, 50));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(ChangePoints(quiet).empty()) << quiet.out;
}

TEST_F(ChangepointsCliTest, UsageErrorsExitThree) {
  EXPECT_EQ(Run("").exit_code, 3);  // --input is required
  EXPECT_EQ(Run("--input - --method nope", "value\n1\n").exit_code, 3);
  EXPECT_EQ(Run("--input - --method otava --window-len 1", "value\n1\n").exit_code, 3);
  const RunResult missing = Run("--input /nonexistent/x.csv");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr("cannot open /nonexistent/x.csv"));
}

}  // namespace
