// Runs the gpucanary binary and checks what a user sees: stdout, stderr, exit code.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using gpucanary::testing::RunResult;
using gpucanary::testing::Slurp;

class CliTest : public gpucanary::testing::CliHarness {
 protected:
  CliTest() : CliHarness("gpucanary-cli") {}

  std::string Shared(const std::string& rel) {
    return std::string(GPUCANARY_SHARED_DIR) + "/" + rel;
  }
};

TEST_F(CliTest, CheckRealScrapes) {
  RunResult r = Run("check " + Shared("data/dcgm-samples/l4-default-counters-kops.txt") + " " +
                    Shared("data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("l4-default-counters-kops.txt: ok (prometheus-0.0.4): 23 families, "
                               "23 series, 23 samples, no timestamps"));
  EXPECT_THAT(r.out, HasSubstr("h100x8-gpu-operator-k8s-aicr.txt: ok (prometheus-0.0.4): 4 "
                               "families, 30 series, 30 samples"));
  EXPECT_EQ(r.err, "");
}

TEST_F(CliTest, CheckRejectsBadInputWithLineAndColumn) {
  std::ofstream(dir_ / "bad.prom") << "good 1\nbad{gpu=\"0\" 1\n";
  RunResult r = Run("check " + (dir_ / "bad.prom").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.prom:2:13: expected ',' or '}' after label value, found '1'"));
  EXPECT_THAT(r.out, HasSubstr("INVALID"));
}

TEST_F(CliTest, CheckRecordingFromStdinWithTimeRange) {
  const std::string rec =
      "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-4\"} 1980 1764680000.000\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-4\"} 1050 1764680001.000\n"
      "# EOF\n";
  RunResult r = Run("check -", rec);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("<stdin>: ok (openmetrics): 1 families, 1 series, 2 samples, "
                               "2025-12-02T12:53:20.000Z .. 2025-12-02T12:53:21.000Z (1.000 s)"));
}

TEST_F(CliTest, CheckJsonOutput) {
  RunResult r = Run("check --output json -", "a 1\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"valid\": true"));
  EXPECT_THAT(r.out, HasSubstr("\"samples\": 1"));
}

TEST_F(CliTest, CheckMissingFile) {
  RunResult r = Run("check " + (dir_ / "nope.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("nope.om: No such file or directory"));
}

TEST_F(CliTest, ForcedOpenMetricsNeedsEof) {
  RunResult r = Run("check --format openmetrics -", "a 1\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("must end with '# EOF'"));
}

TEST_F(CliTest, SummarizeShowsEachGpuAndNoDataAsDash) {
  RunResult r = Run("summarize " + Shared("data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("8 GPU(s), 30 series"));
  EXPECT_THAT(r.out, HasSubstr("gpu-node-1/7"));
  // GPU 0 draws 113.6 W and runs the vLLM pod; SM clock is not in this capture.
  EXPECT_THAT(r.out, ::testing::ContainsRegex("gpu-node-1/0 +NVIDIA H100 80GB HBM3 +- +- +113.6"));
  EXPECT_THAT(r.out, HasSubstr("dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5"));
}

TEST_F(CliTest, UsageErrorsExitThree) {
  EXPECT_EQ(Run("check").exit_code, 3);
  EXPECT_EQ(Run("no-such-command").exit_code, 3);
  EXPECT_EQ(Run("check --format xml -", "a 1\n").exit_code, 3);
}

TEST_F(CliTest, ImportNvidiaSmiThenCheck) {
  const std::string out = (dir_ / "h100.om.gz").string();
  RunResult r = Run("import nvidia-smi " +
                    Shared("data/gpu-traces/yqg9651-cuda_test/h100pcie350w_fp8gemm_maxpower.csv") +
                    " -o " + out + " --hostname h100pcie");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rows: 8491 read, 8491 imported, 0 skipped"));
  r = Run("check " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok (openmetrics): 7 families, 7 series, 59437 samples, "
                               "2023-08-24T14:41:23.886Z .. 2023-08-24T14:42:36.141Z"));
  r = Run("summarize " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("h100pcie/0"));
}

// Real logs of an A100 and an H100 (no name column), shifted to overlap: the
// judge compares GPUs only within a model. Without --model both are the
// unknown model (compared, with a note); with it, the H100 canary has no
// baseline of its model and is not compared.
TEST_F(CliTest, ImportModelKeepsGpuModelsApartInTheJudge) {
  const std::string dir = Shared("data/gpu-traces/yqg9651-cuda_test/");
  const auto import = [&](const std::string& file, const std::string& out,
                          const std::string& flags) {
    RunResult r = Run("import nvidia-smi " + dir + file + " -o " + (dir_ / out).string() + flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  const auto sm_clock = [](const nlohmann::json& report) {
    for (const nlohmann::json& m : report["metrics"]) {
      if (m["name"] == "DCGM_FI_DEV_SM_CLOCK") return m["result"].get<std::string>();
    }
    return std::string("missing");
  };
  import("a100pcie250w_fp16gemm_maxpower.csv", "a100.om", " --hostname a100 --utc-offset +07:39");
  import("h100pcie350w_fp8gemm_maxpower.csv", "h100.om", " --hostname h100");
  RunResult r = Run("judge --baseline " + (dir_ / "a100.om").string() + " --canary " +
                    (dir_ / "h100.om").string());
  // Compared as one model: decided on the data (the H100's clock is not the
  // A100's), never refused.
  ASSERT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.exit_code << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(sm_clock(j), "no_data");
  EXPECT_THAT(j["notes"].dump(), HasSubstr("1 canary and 1 baseline GPU(s) carry no modelName "
                                           "label: compared as one model"));

  import("a100pcie250w_fp16gemm_maxpower.csv", "a100m.om",
         " --hostname a100 --utc-offset +07:39 --model 'NVIDIA A100-PCIE-40GB'");
  import("h100pcie350w_fp8gemm_maxpower.csv", "h100m.om",
         " --hostname h100 --model 'NVIDIA H100 PCIe'");
  r = Run("judge --baseline " + (dir_ / "a100m.om").string() + " --canary " +
          (dir_ / "h100m.om").string());
  ASSERT_EQ(r.exit_code, 2) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(sm_clock(j), "no_data");
  EXPECT_THAT(j["notes"].dump(), HasSubstr("1 canary GPU(s) of model 'NVIDIA H100 PCIe' have no "
                                           "baseline GPU of the same model: not compared"));
  EXPECT_EQ(j["causes"].size(), 0u);
}

TEST_F(CliTest, ImportRejectsMalformedCsvWithPosition) {
  std::ofstream(dir_ / "bad.csv") << "timestamp,phase,gpu,gpu_model,power_w\n"
                                     "1775016266.006,init,0,NVIDIA H100 80GB HBM3,71.4\n"
                                     "1775016266.106,init,0,NVIDIA H100 80GB HBM3,7x1.4\n";
  RunResult r =
      Run("import dcgm-csv " + (dir_ / "bad.csv").string() + " -o " + (dir_ / "bad.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.csv:3:"));
  EXPECT_THAT(r.err, HasSubstr("power_w"));
}

// --gpus and --start-at: a bad time or an empty index is refused with the
// flag named, and no output file is left behind; good ones split and move.
TEST_F(CliTest, ImportGpusAndStartAtFlags) {
  std::ofstream(dir_ / "split.csv") << "timestamp,gpu,power_w\n"
                                       "1775016266.006,0,71.4\n"
                                       "1775016266.006,1,72.4\n";
  const std::string base =
      "import dcgm-csv " + (dir_ / "split.csv").string() + " -o " + (dir_ / "split.om").string();
  RunResult r = Run(base + " --start-at yesterday");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--start-at"));
  EXPECT_FALSE(fs::exists(dir_ / "split.om"));
  r = Run(base + " --gpus ''");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--gpus: an empty GPU index"));
  EXPECT_FALSE(fs::exists(dir_ / "split.om"));
  // No row of the GPUs asked for: an error, not an empty recording.
  r = Run(base + " --gpus 7");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("no row of GPU(s) 7 (--gpus): all 2 rows are of other GPUs"));
  EXPECT_FALSE(fs::exists(dir_ / "split.om"));
  r = Run(base + " --gpus 1 --start-at 2027-01-15T08:00:00Z");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 of other GPUs left out"));
  EXPECT_THAT(r.out, HasSubstr("2027-01-15T08:00:00.000Z"));
  r = Run("check " + (dir_ / "split.om").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliTest, ExplainThrottleAndXid) {
  RunResult r = Run("explain-throttle 0x88");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("HW power brake"));
  r = Run("explain-xid 79");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("fallen off the bus"));
  EXPECT_EQ(Run("explain-throttle 0xZZ").exit_code, 3);
  EXPECT_EQ(Run("explain-xid -4").exit_code, 3);
}

// Ground truth from the trace's README: SW power cap holds on the training half
// (GPUs 4-7) of the e2 run and never on the inference half (GPUs 0-3).
TEST_F(CliTest, SummarizeRecordingShowsWhichGpusWereThrottled) {
  const std::string out = (dir_ / "e2.om.gz").string();
  RunResult r = Run("import dcgm-csv " +
                    Shared("data/gpu-traces/atharvanihalani-gpu-telemetry-exploration/"
                           "e2_telemetry.csv") +
                    " -o " + out + " --hostname node-e2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run("summarize " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("a recording of 307.2 s"));
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string row = "node-e2/" + std::to_string(gpu) + " ";
    const std::size_t at = r.out.find(row);
    ASSERT_NE(at, std::string::npos) << row;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    if (gpu < 4) {
      EXPECT_THAT(line, ::testing::ContainsRegex(" 0% ")) << line;
    } else {
      EXPECT_THAT(line, ::testing::ContainsRegex(" (8[0-9]|9[0-9])% sw_power_cap")) << line;
    }
  }
}

TEST_F(CliTest, SummarizeReportsBadLinesAndExitsThree) {
  std::ofstream(dir_ / "bad.prom") << "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n\"} 41\n"
                                      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\" 1980\n";
  RunResult r = Run("summarize " + (dir_ / "bad.prom").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.prom:2:"));
  EXPECT_THAT(r.out, HasSubstr("n/0"));  // the good line is still summarised
  r = Run("summarize " + (dir_ / "missing.prom").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("No such file or directory"));
}

TEST_F(CliTest, SimOfflineWritesACheckableRecordingTruthAndReleases) {
  const fs::path scenario = dir_ / "s.yaml";
  std::ofstream(scenario) << "seed: 2\nduration: 30s\n"
                             "fleet: [{nodes: \"n[1-2]\", gpu: h100-sxm}]\n"
                             "releases: {a: {profile: baseline}, b: {profile: baseline, "
                             "power_spikiness: 2.5}}\n"
                             "traffic: {rps: 60}\n"
                             "events:\n  - {at: 0s, deploy: a, nodes: all}\n"
                             "  - {at: 5s, deploy: b, nodes: [n2]}\n"
                             "  - {at: 10s, fault: ecc_errors, nodes: [n1], gpus: \"3\"}\n";
  RunResult r =
      Run("sim --scenario " + scenario.string() + " --offline " + (dir_ / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 nodes, 16 GPUs, 30 s simulated"));
  RunResult check = Run("check " + (dir_ / "out" / "telemetry.om").string());
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("ok (openmetrics)"));
  const std::string truth = Slurp(dir_ / "out" / "truth.jsonl");
  EXPECT_THAT(truth, HasSubstr(R"("kind":"power_brake","scope":"release","release":"b")"));
  EXPECT_THAT(truth, HasSubstr(R"("kind":"ecc_errors","scope":"node","release":"a")"));
  const std::string releases = Slurp(dir_ / "out" / "releases.jsonl");
  EXPECT_THAT(releases, HasSubstr(R"("id":"b")"));
  EXPECT_THAT(releases, HasSubstr(R"("targets":["n2"],"previous":"a")"));
  // The same scenario again: byte-identical output.
  RunResult again =
      Run("sim --scenario " + scenario.string() + " --offline " + (dir_ / "again").string());
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_EQ(Slurp(dir_ / "out" / "telemetry.om"), Slurp(dir_ / "again" / "telemetry.om"));
}

TEST_F(CliTest, SimOfflineSplitsCanaryAndBaselineNodes) {
  const fs::path scenario = dir_ / "s.yaml";
  std::ofstream(scenario) << "duration: 20s\nfleet: [{nodes: \"n[1-3]\", gpu: h100-sxm, gpus: 2}]\n"
                             "releases: {a: {profile: baseline}}\ntraffic: {rps: 30}\n"
                             "events:\n  - {at: 0s, deploy: a, nodes: all}\n";
  const fs::path out = dir_ / "out";
  RunResult r = Run("sim --scenario " + scenario.string() + " --offline " + out.string() +
                    " --canary-nodes n2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(out / "telemetry.om"));
  const std::string canary = Slurp(out / "canary.om");
  const std::string baseline = Slurp(out / "baseline.om");
  EXPECT_NE(canary.find("Hostname=\"n2\""), std::string::npos);
  EXPECT_EQ(canary.find("Hostname=\"n1\""), std::string::npos);
  EXPECT_EQ(baseline.find("Hostname=\"n2\""), std::string::npos);
  EXPECT_NE(baseline.find("Hostname=\"n3\""), std::string::npos);
  EXPECT_EQ(Run("check " + (out / "canary.om").string()).exit_code, 0);
  EXPECT_EQ(Run("check " + (out / "baseline.om").string()).exit_code, 0);

  const fs::path bad = dir_ / "bad";
  r = Run("sim --scenario " + scenario.string() + " --offline " + bad.string() +
          " --canary-nodes n9");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--canary-nodes: unknown node 'n9'"));
  EXPECT_FALSE(fs::exists(bad / "canary.om"));
}

TEST_F(CliTest, SimRejectsABadScenarioWithItsPosition) {
  const fs::path scenario = dir_ / "bad.yaml";
  std::ofstream(scenario) << "duration: 30s\nfleet: [{nodes: n1, gpu: h100-sxm}]\n"
                             "releases: {a: {profile: baseline}}\n"
                             "events:\n  - {at: 0s, deploy: nope, nodes: all}\n";
  RunResult r = Run("sim --scenario " + scenario.string() + " --offline " + (dir_ / "o").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:5:"));
  EXPECT_THAT(r.err, HasSubstr("unknown release 'nope'"));
  EXPECT_FALSE(fs::exists(dir_ / "o" / "telemetry.om"));
  r = Run("sim --scenario " + (dir_ / "missing.yaml").string() + " --offline " +
          (dir_ / "o").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("missing.yaml"));
}

// gpucanary judge (docs/contracts.md §6, docs/cli.md).

// A two-GPU-node recording pair, hand-written: the baseline on node-1, the
// canary on node-4, `seconds` 1 s samples of the SM clock from t0.
void WriteTinyRecordings(const fs::path& dir, int seconds = 5) {
  std::ofstream base(dir / "base.om");
  std::ofstream canary(dir / "canary.om");
  base << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
  canary << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
  for (int t = 0; t < seconds; ++t) {
    const std::string ts = " " + std::to_string(1764680000 + t) + ".000\n";
    base << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-1\"} 1980" << ts;
    canary << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-4\"} 1980" << ts;
  }
  base << "# EOF\n";
  canary << "# EOF\n";
}

TEST_F(CliTest, JudgeUsageErrorsExitThreeWithAMessage) {
  WriteTinyRecordings(dir_);
  const std::string files =
      " --baseline " + (dir_ / "base.om").string() + " --canary " + (dir_ / "canary.om").string();
  RunResult r = Run("judge");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("give --baseline FILE and --canary FILE (recordings), or "
                               "--prometheus URL"));
  r = Run("judge --baseline " + (dir_ / "base.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("give --baseline FILE and --canary FILE"));
  r = Run("judge" + files + " --output text");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("gpucanary judge: --output: 'text' is not supported (only json"));
  EXPECT_EQ(r.out, "");
  r = Run("judge" + files + " --release-start yesterday");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--release-start: expected Unix seconds (1764680060, 1764680060.5) "
                               "or an RFC 3339 time (2025-12-02T13:00:00Z), got 'yesterday'"));
  r = Run("judge" + files + " --release-start 2025-12-02T13:00:00");  // no offset
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--release-start: expected"));
  r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
          (dir_ / "." / "base.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--baseline and --canary are the same file"));
  r = Run("judge --baseline " + (dir_ / "missing.om").string() + " --canary " +
          (dir_ / "canary.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("missing.om: No such file or directory"));
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, JudgeRejectsABadPolicyWithItsPosition) {
  WriteTinyRecordings(dir_);
  std::ofstream(dir_ / "p.yaml") << "alpha: 0.01\nrules:\n  throttle: {reasons: [hw_slowdwn]}\n";
  RunResult r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
                    (dir_ / "canary.om").string() + " --policy " + (dir_ / "p.yaml").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("p.yaml:3:"));
  EXPECT_THAT(r.err, HasSubstr("rules.throttle.reasons[0]: unknown reason 'hw_slowdwn'"));
  EXPECT_EQ(r.out, "");
  r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
          (dir_ / "canary.om").string() + " --policy " + (dir_ / "nope.yaml").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("nope.yaml: No such file or directory"));
}

TEST_F(CliTest, JudgeRejectsAMalformedRecordingWithFileAndLine) {
  WriteTinyRecordings(dir_);
  std::ofstream(dir_ / "bad.om") << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
                                    "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-4\"} 1980 "
                                    "1764680000.000\n"
                                    "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-4\" 1980 "
                                    "1764680001.000\n"
                                    "# EOF\n";
  RunResult r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
                    (dir_ / "bad.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.om:3:"));
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, JudgeNeedsGpuSeriesInBothFiles) {
  WriteTinyRecordings(dir_);
  std::ofstream(dir_ / "vllm.om") << "# TYPE vllm:num_requests_running gauge\n"
                                     "vllm:num_requests_running{Hostname=\"node-4\"} 3 "
                                     "1764680000.000\n"
                                     "# EOF\n";
  RunResult r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
                    (dir_ / "vllm.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("no GPU series in " + (dir_ / "vllm.om").string()));
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, JudgeReleaseStartOutsideTheRecordings) {
  WriteTinyRecordings(dir_, 30);
  const std::string files =
      " --baseline " + (dir_ / "base.om").string() + " --canary " + (dir_ / "canary.om").string();
  // After the last sample: nothing of the release to judge.
  RunResult r = Run("judge" + files + " --release-start 1764680060");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--release-start 1764680060 (2025-12-02T12:54:20.000Z) is after "
                               "the last sample, 1764680029"));
  r = Run("judge" + files + " --release-start 1764680060000");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("(milliseconds? give seconds)"));
  // Before the first sample: judged, with a note.
  r = Run("judge" + files + " --release-start 2025-12-02T12:00:00Z");
  EXPECT_NE(r.exit_code, 3) << r.err;
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["notes"].is_array());
  EXPECT_THAT(j["notes"].dump(), HasSubstr("is not after the first sample"));
  // Inside, as RFC 3339 with an offset and as fractional seconds: the same second.
  RunResult rfc = Run("judge" + files + " --release-start 2025-12-02T13:53:30.5+01:00");
  RunResult unix_s = Run("judge" + files + " --release-start 1764680010.9");
  EXPECT_NE(rfc.exit_code, 3) << rfc.err;
  EXPECT_EQ(rfc.out, unix_s.out);
  EXPECT_EQ(nlohmann::json::parse(rfc.out)["release_start"], 1764680010.0) << rfc.out;
}

class CliJudgeScenarioTest : public CliTest {
 protected:
  // `gpucanary sim --offline` with node-4 as the canary: DIR/{baseline,canary}.om,
  // truth.jsonl, releases.jsonl.
  fs::path Simulate(const std::string& scenario) {
    fs::path out = dir_ / "sim";
    RunResult r = Run("sim --scenario " + std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/" +
                      scenario + " --offline " + out.string() + " --canary-nodes node-4");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  // The first line of a JSON-lines file whose field `key` equals `value`.
  static nlohmann::json FindLine(const fs::path& file, const std::string& key,
                                 const std::string& value) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains(key) && j[key] == value) return j;
    }
    return nullptr;
  }

  RunResult Judge(const fs::path& sim, double release_start) {
    char start[32];
    std::snprintf(start, sizeof start, "%.3f", release_start);
    return Run("judge --baseline " + (sim / "baseline.om").string() + " --canary " +
               (sim / "canary.om").string() + " --release-start " + start + " --output json");
  }
};

// The release fp8-kernel (power_spikiness 2.5) goes to node-4 at t = 60 s and
// trips the power brake there once its server is up (truth.jsonl's `since`).
TEST_F(CliJudgeScenarioTest, PowerBrakeReleaseFails) {
  const fs::path sim = Simulate("power-brake.yaml");
  const nlohmann::json release = FindLine(sim / "releases.jsonl", "id", "fp8-kernel");
  ASSERT_TRUE(release.is_object());
  const double release_start = release["started_at"].get<double>();
  EXPECT_EQ(release_start, 1764680060.0);
  const nlohmann::json brake = FindLine(sim / "truth.jsonl", "kind", "power_brake");
  ASSERT_TRUE(brake.is_object());
  const double first_brake = brake["since"].get<double>();

  RunResult r = Judge(sim, release_start);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  ASSERT_TRUE(r.out.ends_with("}\n")) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line";
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "fail");
  ASSERT_TRUE(j["causes"].is_array() && !j["causes"].empty()) << r.out;
  const nlohmann::json& cause = j["causes"][0];
  EXPECT_EQ(cause["kind"], "power_brake") << r.out;
  EXPECT_EQ(cause["scope"], "release") << r.out;
  ASSERT_TRUE(cause["gpus"].is_array() && !cause["gpus"].empty()) << r.out;
  for (const nlohmann::json& gpu : cause["gpus"]) {
    EXPECT_TRUE(gpu.get<std::string>().starts_with("node-4/")) << gpu;
  }
  ASSERT_TRUE(j["decided_at"].is_number()) << r.out;
  const double decided_at = j["decided_at"].get<double>();
  EXPECT_GE(decided_at, first_brake) << r.out;
  EXPECT_LE(decided_at, first_brake + 4) << r.out;
  EXPECT_TRUE(j["metrics"].is_array());
}

// A healthy release must never fail (pass, or inconclusive at worst).
TEST_F(CliJudgeScenarioTest, HealthyRolloutDoesNotFail) {
  const fs::path sim = Simulate("healthy-rollout.yaml");
  const nlohmann::json release = FindLine(sim / "releases.jsonl", "id", "next");
  ASSERT_TRUE(release.is_object());
  RunResult r = Judge(sim, release["started_at"].get<double>());
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err << r.out;
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], r.exit_code == 0 ? "pass" : "inconclusive") << r.out;
}

// A fleet as real ones are: half the nodes on a current vLLM with
// dcgm-exporter's `Hostname`, half on a legacy vLLM with the newer exporter's
// `hostname`; the canary, node-4, is one of the latter. No vLLM series has a
// host label (the recording has the scrape's instance). The default policy
// judges the service measures across both versions: a healthy release
// passes with per-token latency compared, a braking one fails on node-4.
std::string MixedFleet(const std::string& next) {
  return R"(seed: 7
duration: 600s
fleet:
  - {nodes: "node-[1-3]", gpu: h100-sxm, gpus: 2}
  - {nodes: "node-[4-6]", gpu: h100-sxm, gpus: 2, server: vllm_legacy, hostname_label: hostname}
releases:
  stable: {profile: baseline}
  next: {profile: baseline)" +
         next + R"(}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 60s, deploy: next, nodes: [node-4]}
)";
}

TEST_F(CliJudgeScenarioTest, MixedServerAndExporterVersionsAreJudgedByOnePolicy) {
  for (const bool bad : {false, true}) {
    SCOPED_TRACE(bad ? "braking release" : "healthy release");
    std::ofstream(dir_ / "mixed.yaml") << MixedFleet(bad ? ", power_spikiness: 2.5" : "");
    const fs::path out = dir_ / (bad ? "bad" : "good");
    RunResult r = Run("sim --scenario " + (dir_ / "mixed.yaml").string() + " --offline " +
                      out.string() + " --canary-nodes node-4");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string canary = Slurp(out / "canary.om");
    EXPECT_THAT(canary, HasSubstr("vllm:time_per_output_token_seconds_bucket{"));
    EXPECT_THAT(canary, HasSubstr(",hostname=\"node-4\""));
    EXPECT_THAT(Slurp(out / "baseline.om"), HasSubstr("vllm:inter_token_latency_seconds_bucket{"));
    r = Judge(out, 1764680060);
    ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.err << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["canary_gpus"], 2);
    EXPECT_EQ(j["baseline_gpus"], 10);
    if (bad) {
      EXPECT_EQ(r.exit_code, 1) << r.out;
      ASSERT_FALSE(j["causes"].empty()) << r.out;
      EXPECT_EQ(j["causes"][0]["kind"], "power_brake");
      EXPECT_EQ(j["causes"][0]["gpus"], nlohmann::json::array({"node-4/0", "node-4/1"}));
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.out;
      EXPECT_EQ(j["verdict"], "pass") << r.out;
    }
    bool per_token = false;
    for (const nlohmann::json& m : j["metrics"]) {
      if (m["name"] == "per_token_latency") {
        per_token = true;
        EXPECT_NE(m["result"], "no_data") << m.dump();
      }
    }
    EXPECT_TRUE(per_token) << r.out;
  }
}

// gpucanary correlate: a small fleet recording and release log, then the
// ways its input can be wrong.
class CorrelateCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::ofstream om(dir_ / "fleet.om");
    om << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
    for (int t = 0; t < 300; ++t) {
      om << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-1\"} 1980 " << (1764680000 + t)
         << ".000\n";
    }
    om << "# EOF\n";
    std::ofstream(dir_ / "releases.jsonl")
        << "{\"id\":\"r1\",\"started_at\":1764680100,\"targets\":[\"node-1\"]}\n";
  }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }
};

TEST_F(CorrelateCliTest, ASteadyFleetHasNoRegression) {
  RunResult r =
      Run("correlate --telemetry " + Path("fleet.om") + " --releases " + Path("releases.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["regressions"].empty()) << r.out;
  EXPECT_EQ(j["gpus"], 1);
  ASSERT_EQ(j["releases"].size(), 1u);
  EXPECT_EQ(j["releases"][0]["arrivals"][0]["node"], "node-1");
  EXPECT_EQ(r.err, "");
}

TEST_F(CorrelateCliTest, AMalformedReleaseLineNamesFileLineAndField) {
  std::ofstream(dir_ / "bad.jsonl") << "{\"id\":\"r1\",\"started_at\":1764680100}\n"
                                       "{\"id\":\"r2\",\"started_at\":\"yesterday\"}\n";
  RunResult r =
      Run("correlate --telemetry " + Path("fleet.om") + " --releases " + Path("bad.jsonl"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("bad.jsonl:2:"));
  EXPECT_THAT(r.err, HasSubstr("started_at"));
}

TEST_F(CorrelateCliTest, AMalformedRecordingNamesFileAndLine) {
  std::ofstream(dir_ / "bad.om")
      << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-1\"} 1980 1764680000.000\n"
         "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"node-1\" 1980 1764680001.000\n"
         "# EOF\n";
  RunResult r =
      Run("correlate --telemetry " + Path("bad.om") + " --releases " + Path("releases.jsonl"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("bad.om:3:"));
}

TEST_F(CorrelateCliTest, BadFlagsAndEmptyInputAreUsageErrors) {
  const std::string base =
      "correlate --telemetry " + Path("fleet.om") + " --releases " + Path("releases.jsonl");
  RunResult r = Run(base + " --from 1764680000000");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("milliseconds?"));
  r = Run(base + " --output yaml");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--output: 'yaml' is not one of json, text"));
  r = Run(base + " --min-score 2");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--min-score"));
  r = Run(base + " --from 1764680200 --to 1764680100");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("from must be before to"));
  std::ofstream(dir_ / "nogpu.om")
      << "# TYPE up gauge\nup{instance=\"a\"} 1 1764680000.000\n# EOF\n";
  r = Run("correlate --telemetry " + Path("nogpu.om") + " --releases " + Path("releases.jsonl"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("no GPU series"));
  r = Run("correlate --telemetry " + Path("missing.om") + " --releases " + Path("releases.jsonl"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("missing.om"));
}

}  // namespace
