// Every reader of recordings takes every valid layout (docs/recorded-telemetry.md,
// "Layouts"): the same telemetry time-blocked (as `gpucanary sim --offline`
// and the recorder write it), series-grouped (as a strict OpenMetrics writer
// or a Prometheus export write it) and mixed gives the same verdicts and
// reports from judge, correlate and summarize; promtool takes the
// series-grouped files too.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "analysis/replay/layout.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::testing::RunResult;
using gpucanary::testing::Slurp;
using ::testing::HasSubstr;

class LayoutCliTest : public gpucanary::testing::CliHarness {
 protected:
  LayoutCliTest() : CliHarness("gpucanary-layout") {}

  // `from` rewritten series by series into `to` (gzip when it ends in ".gz").
  static void WriteSeriesGrouped(const fs::path& from, const fs::path& to) {
    const std::string text = gpucanary::analysis::SeriesGroupedText(Slurp(from));
    ASSERT_FALSE(text.empty());
    if (to.extension() == ".gz") {
      gzFile f = gzopen(to.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
                static_cast<int>(text.size()));
      ASSERT_EQ(gzclose(f), Z_OK);
    } else {
      std::ofstream(to, std::ios::binary) << text;
    }
  }

  RunResult Judge(const fs::path& base, const fs::path& canary, const std::string& extra = "") {
    return Run("judge --baseline " + base.string() + " --canary " + canary.string() + extra);
  }

  static bool HavePromtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }
};

// The simulator's power-brake scenario, node-4 the canary: the judge fails it
// for the power brake whatever the layout, with the same report to the byte;
// correlate over both files says the same in both layouts.
TEST_F(LayoutCliTest, JudgeAndCorrelateGiveTheSameAnswerInEveryLayout) {
  const fs::path sim = dir_ / "sim";
  RunResult r = Run("sim --scenario " + std::string(GPUCANARY_SOURCE_DIR) +
                    "/scenarios/power-brake.yaml --offline " + sim.string() +
                    " --canary-nodes node-4 --duration 240");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WriteSeriesGrouped(sim / "baseline.om", dir_ / "baseline.grouped.om");
  WriteSeriesGrouped(sim / "canary.om", dir_ / "canary.grouped.om.gz");

  // Streamed as it is, the series-grouped file would have been refused here.
  const std::string start = " --release-start 1764680060";
  const RunResult blocked = Judge(sim / "baseline.om", sim / "canary.om", start);
  ASSERT_EQ(blocked.exit_code, 1) << blocked.err << blocked.out;
  const nlohmann::json j = nlohmann::json::parse(blocked.out);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["causes"][0]["kind"], "power_brake") << blocked.out;
  const RunResult grouped =
      Judge(dir_ / "baseline.grouped.om", dir_ / "canary.grouped.om.gz", start);
  EXPECT_EQ(grouped.exit_code, blocked.exit_code) << grouped.err;
  EXPECT_EQ(grouped.out, blocked.out);
  const RunResult mixed = Judge(dir_ / "baseline.grouped.om", sim / "canary.om", start);
  EXPECT_EQ(mixed.exit_code, blocked.exit_code) << mixed.err;
  EXPECT_EQ(mixed.out, blocked.out);

  const std::string releases = " --releases " + (sim / "releases.jsonl").string();
  const RunResult corr_blocked = Run("correlate --telemetry " + (sim / "baseline.om").string() +
                                     " --telemetry " + (sim / "canary.om").string() + releases);
  ASSERT_EQ(corr_blocked.exit_code, 0) << corr_blocked.err;
  EXPECT_THAT(corr_blocked.out, HasSubstr("fp8-kernel"));
  const RunResult corr_grouped =
      Run("correlate --telemetry " + (dir_ / "baseline.grouped.om").string() + " --telemetry " +
          (dir_ / "canary.grouped.om.gz").string() + releases);
  EXPECT_EQ(corr_grouped.exit_code, 0) << corr_grouped.err;
  EXPECT_EQ(corr_grouped.out, corr_blocked.out);

  // The readers that never needed time order agree too.
  const RunResult sum_blocked = Run("summarize " + (sim / "canary.om").string());
  const RunResult sum_grouped = Run("summarize " + (dir_ / "canary.grouped.om.gz").string());
  EXPECT_EQ(sum_blocked.exit_code, 0) << sum_blocked.err;
  EXPECT_EQ(sum_grouped.exit_code, 0) << sum_grouped.err;
  EXPECT_EQ(sum_grouped.out.substr(sum_grouped.out.find('\n')),
            sum_blocked.out.substr(sum_blocked.out.find('\n')));  // the title names the file
  EXPECT_EQ(Run("check " + (dir_ / "baseline.grouped.om").string()).exit_code, 0);

  // promtool (Prometheus's own backfill) takes the series-grouped file.
  if (!HavePromtool()) GTEST_SKIP() << "promtool not installed (scripts/install-deps.sh)";
  const std::string cmd = "promtool tsdb create-blocks-from openmetrics " +
                          (dir_ / "baseline.grouped.om").string() + " " + (dir_ / "tsdb").string() +
                          " >" + (dir_ / "promtool.log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir_ / "promtool.log");
}

// A real trace (8x H100, DCGM at 100 ms; its README: SW power cap on GPUs 4-7,
// the training half, never on 0-3), imported as two nodes, GPUs 0-3 the
// baseline and 4-7 the canary, then reordered series by series: same report.
TEST_F(LayoutCliTest, RealTraceJudgedTheSameSeriesGrouped) {
  const std::string csv = std::string(GPUCANARY_SHARED_DIR) +
                          "/data/gpu-traces/atharvanihalani-gpu-telemetry-exploration/"
                          "e2_telemetry.csv";
  for (const char* host : {"node-a", "node-b"}) {
    RunResult r = Run("import dcgm-csv " + csv + " -o " +
                      (dir_ / (std::string(host) + ".om")).string() + " --hostname " + host);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Keep GPUs 0-3 of node-a and 4-7 of node-b (metadata lines stay).
  auto keep = [&](const std::string& host, bool low) {
    std::ifstream in(dir_ / (host + ".om"));
    std::ofstream out(dir_ / (host + ".half.om"));
    for (std::string line; std::getline(in, line);) {
      const std::size_t at = line.find("gpu=\"");
      if (line.starts_with('#') || at == std::string::npos || (line[at + 5] < '4') == low) {
        out << line << "\n";
      }
    }
  };
  keep("node-a", true);
  keep("node-b", false);
  WriteSeriesGrouped(dir_ / "node-a.half.om", dir_ / "node-a.grouped.om");
  WriteSeriesGrouped(dir_ / "node-b.half.om", dir_ / "node-b.grouped.om.gz");
  const RunResult blocked = Judge(dir_ / "node-a.half.om", dir_ / "node-b.half.om");
  ASSERT_NE(blocked.exit_code, 3) << blocked.err;
  ASSERT_TRUE(nlohmann::json::accept(blocked.out)) << blocked.out;
  const RunResult grouped = Judge(dir_ / "node-a.grouped.om", dir_ / "node-b.grouped.om.gz");
  EXPECT_EQ(grouped.exit_code, blocked.exit_code) << grouped.err;
  EXPECT_EQ(grouped.out, blocked.out);
  if (HavePromtool()) {
    const std::string cmd = "promtool tsdb create-blocks-from openmetrics " +
                            (dir_ / "node-a.grouped.om").string() + " " + (dir_ / "tsdb").string() +
                            " >" + (dir_ / "promtool.log").string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir_ / "promtool.log");
  }
}

// A bad line in a series-grouped file is still reported with its position.
TEST_F(LayoutCliTest, BadLineInASeriesGroupedFileNamesFileAndLine) {
  std::ofstream(dir_ / "base.om") << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
                                     "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"b\"} 1980 100.000\n"
                                     "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"b\"} 1980 101.000\n"
                                     "# EOF\n";
  std::ofstream(dir_ / "canary.om")
      << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"c\"} 1980 100.000\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"c\"} 1980 109.000\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"1\",Hostname=\"c\"} 1980 100.000\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"1\",Hostname=\"c\" 1980 101.000\n"
         "# EOF\n";
  const RunResult r = Judge(dir_ / "base.om", dir_ / "canary.om");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr((dir_ / "canary.om").string() + ":5:"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("time-blocked")));
  EXPECT_EQ(r.out, "");
}

}  // namespace
