// The default policy, end to end through the real binary, on every kind of
// canary a fleet runs (issue 17): the inference servers of the measure table
// (vLLM current and legacy, SGLang, TGI, Triton/TensorRT-LLM) and a canary
// without any service metrics (DCGM only). For each, the simulator records a
// healthy and a bad release as that server exposes its metrics, and
// `gpucanary judge` with the default policy passes the first and fails the
// second. The DCGM-only kind is also judged on real traces (8x H100 at
// 100 ms, ../shared/data/gpu-traces): an A/A split passes, a canary whose
// GPUs sit at the SW power cap fails (docs/analysis-method.md, "Without
// service metrics").

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::testing::RunResult;
using gpucanary::testing::Slurp;
using ::testing::HasSubstr;

const nlohmann::json* FindMetric(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& m : report["metrics"]) {
    if (m["name"] == name) return &m;
  }
  return nullptr;
}

std::string Notes(const nlohmann::json& report) {
  std::string out;
  for (const nlohmann::json& n : report["notes"]) out += n.get<std::string>() + "\n";
  return out;
}

// ---------------------------------------------------------------------------
// Real DCGM traces: no service metrics at all.

class DcgmOnlyTraceTest : public gpucanary::testing::CliHarness {
 protected:
  DcgmOnlyTraceTest() : CliHarness("gpucanary-dcgm-only") {}

  // The trace imported as two 8-GPU nodes; the baseline keeps node-a's GPUs
  // 0-3, the canary node-b's GPUs 4-7 (metadata lines stay).
  void Split(const std::string& trace) {
    const std::string csv = std::string(GPUCANARY_SHARED_DIR) +
                            "/data/gpu-traces/atharvanihalani-gpu-telemetry-exploration/" + trace;
    for (const char* host : {"node-a", "node-b"}) {
      RunResult r = Run("import dcgm-csv " + csv + " -o " +
                        (dir_ / (std::string(host) + ".om")).string() + " --hostname " + host);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const auto keep = [&](const std::string& host, bool low, const std::string& to) {
      std::ifstream in(dir_ / (host + ".om"));
      std::ofstream out(dir_ / to);
      for (std::string line; std::getline(in, line);) {
        const std::size_t at = line.find("gpu=\"");
        if (line.starts_with('#') || at == std::string::npos || (line[at + 5] < '4') == low) {
          out << line << "\n";
        }
      }
    };
    keep("node-a", true, "baseline.om");
    keep("node-b", false, "canary.om");
  }

  nlohmann::json Judge(int expected_exit) {
    RunResult r = Run("judge --baseline " + (dir_ / "baseline.om").string() + " --canary " +
                      (dir_ / "canary.om").string());
    EXPECT_EQ(r.exit_code, expected_exit) << r.err << r.out;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.err << r.out;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

// I4: the same speculative-decoding inference on all 8 GPUs. GPUs 4-7
// against 0-3 is an A/A: it passes on tensor activity per DRAM activity (the
// trace has no SM clock, so work per joule has no data), and says why.
TEST_F(DcgmOnlyTraceTest, SameWorkloadOnBothHalvesPasses) {
  ASSERT_NO_FATAL_FAILURE(Split("i4_telemetry.csv"));
  const nlohmann::json j = Judge(0);
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["service_metrics_seen"], false);
  EXPECT_THAT(Notes(j), HasSubstr("no service metrics seen"));
  EXPECT_THAT(Notes(j), HasSubstr("a pass needs tokens_per_dram_active shown not worse (no "
                                  "data: DCGM_FI_DEV_SM_CLOCK, work_per_joule)"));
  const nlohmann::json* dram = FindMetric(j, "tokens_per_dram_active");
  ASSERT_NE(dram, nullptr);
  EXPECT_EQ((*dram)["result"], "pass");
  EXPECT_EQ((*dram)["critical"], true);
  const nlohmann::json* tpot = FindMetric(j, "per_token_latency");
  ASSERT_NE(tpot, nullptr);
  EXPECT_EQ((*tpot)["result"], "no_data");
  EXPECT_EQ((*tpot)["critical"], false);
}

// E2: inference on GPUs 0-3, DDP training on 4-7, which hold the SW power
// cap (0x4) for 2,597 of 2,611 steady samples while 0-3 never do: the
// canary fails for the power cap from GPU telemetry alone.
TEST_F(DcgmOnlyTraceTest, CanaryAtThePowerCapFails) {
  ASSERT_NO_FATAL_FAILURE(Split("e2_telemetry.csv"));
  const nlohmann::json j = Judge(1);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["service_metrics_seen"], false);
  ASSERT_FALSE(j["causes"].empty()) << j.dump();
  EXPECT_EQ(j["causes"][0]["kind"], "power_cap");
  EXPECT_EQ(j["causes"][0]["scope"], "release");
  EXPECT_THAT(Notes(j), HasSubstr("no service metrics seen"));
}

// ---------------------------------------------------------------------------
// Simulated fleets, one per kind of server.

// 6 nodes of 2 H100s, every one running `server`; the canary release goes
// to node-4 and node-5 at 60 s (a rolling restart of their servers).
std::string Fleet(const std::string& server, const std::string& next) {
  return R"(seed: 23
duration: 600s
fleet:
  - {nodes: "node-[1-6]", gpu: h100-sxm, gpus: 2, server: )" +
         server + R"(}
releases:
  stable: {profile: baseline}
  next: {profile: baseline)" +
         next + R"(}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 60s, deploy: next, nodes: [node-4, node-5]}
)";
}

class ServersCliTest : public gpucanary::testing::CliHarness,
                       public ::testing::WithParamInterface<const char*> {
 protected:
  ServersCliTest() : CliHarness("gpucanary-servers") {}

  bool Dcgm() const { return std::string(GetParam()) == "none"; }

  // The release recorded and judged with the default policy.
  nlohmann::json SimulateAndJudge(const std::string& next, const std::string& name,
                                  int* exit_code) {
    std::ofstream(dir_ / (name + ".yaml")) << Fleet(GetParam(), next);
    const fs::path out = dir_ / name;
    RunResult r = Run("sim --scenario " + (dir_ / (name + ".yaml")).string() + " --offline " +
                      out.string() + " --canary-nodes node-4,node-5");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = Run("judge --baseline " + (out / "baseline.om").string() + " --canary " +
            (out / "canary.om").string() + " --release-start 1764680060");
    *exit_code = r.exit_code;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.err << r.out;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

TEST_P(ServersCliTest, DefaultPolicyPassesAHealthyRelease) {
  int exit_code = -1;
  const nlohmann::json j = SimulateAndJudge("", "healthy", &exit_code);
  EXPECT_EQ(exit_code, 0) << j.dump();
  EXPECT_EQ(j["verdict"], "pass") << j.dump();
  EXPECT_EQ(j["canary_gpus"], 4);
  EXPECT_EQ(j["baseline_gpus"], 8);
  EXPECT_EQ(j["service_metrics_seen"], !Dcgm());
  const nlohmann::json* tpot = FindMetric(j, "per_token_latency");
  ASSERT_NE(tpot, nullptr);
  if (Dcgm()) {
    EXPECT_EQ((*tpot)["result"], "no_data");
    EXPECT_THAT(Notes(j), HasSubstr("no service metrics seen"));
    const nlohmann::json* work = FindMetric(j, "work_per_joule");
    ASSERT_NE(work, nullptr) << j.dump();
    EXPECT_EQ((*work)["result"], "pass") << j.dump();
  } else {
    // The server's own per-token latency decided it.
    EXPECT_EQ((*tpot)["result"], "pass") << j.dump();
    EXPECT_EQ(FindMetric(j, "work_per_joule"), nullptr);
  }
}

// With service metrics, a pure software regression (40% more work per
// token, no hardware signature): only the server's metrics show it. Without
// them, a release whose kernel re-reads the KV cache (DRAM busy, tensor pipes
// idle): GPU telemetry shows it.
TEST_P(ServersCliTest, DefaultPolicyFailsABadRelease) {
  int exit_code = -1;
  const nlohmann::json j =
      SimulateAndJudge(Dcgm() ? ", dram_thrash: 1.8" : ", slowdown: 1.4", "bad", &exit_code);
  EXPECT_EQ(exit_code, 1) << j.dump();
  EXPECT_EQ(j["verdict"], "fail") << j.dump();
  ASSERT_FALSE(j["causes"].empty()) << j.dump();
  const nlohmann::json& cause = j["causes"][0];
  EXPECT_EQ(cause["scope"], "release") << j.dump();
  EXPECT_EQ(cause["kind"], Dcgm() ? "memory_thrash" : "software_regression") << j.dump();
  for (const nlohmann::json& gpu : cause["gpus"]) {
    const std::string g = gpu.get<std::string>();
    EXPECT_TRUE(g.starts_with("node-4/") || g.starts_with("node-5/")) << g;
  }
  if (!Dcgm()) {
    const nlohmann::json* tpot = FindMetric(j, "per_token_latency");
    ASSERT_NE(tpot, nullptr);
    EXPECT_EQ((*tpot)["result"], "high") << j.dump();
  }
}

// TensorRT-LLM puts its queue depth and KV-cache usage in one family each,
// told apart by a label (src/vocab/testdata/triton_trtllm.prom): the judge
// reads request_type="waiting" and kv_cache_block_type="fraction", not the
// family's sum (max 512, free 6239 blocks, ...).
class TritonSelectorTest : public gpucanary::testing::CliHarness {
 protected:
  TritonSelectorTest() : CliHarness("gpucanary-triton-selector") {}

  // 300 s of one node's two families as Triton exposes them, scraped at 1 s
  // (instance names the node, as for a server without a host label).
  void Write(const std::string& file, const std::string& node, double waiting, double fraction) {
    std::ofstream out(dir_ / file);
    out << "# TYPE nv_trt_llm_request_metrics gauge\n"
           "# TYPE nv_trt_llm_kv_cache_block_metrics gauge\n"
           "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
    for (int t = 0; t < 300; ++t) {
      const std::string at = " " + std::to_string(1764680000 + t) + ".000\n";
      const std::string l = "model=\"tensorrt_llm\",version=\"1\",instance=\"" + node + ":8002\"";
      for (const auto& [type, v] : {std::pair{"waiting", waiting},
                                    {"context", 3.0},
                                    {"scheduled", 7.0},
                                    {"max", 512.0},
                                    {"active", 40.0}}) {
        out << "nv_trt_llm_request_metrics{" << l << ",request_type=\"" << type << "\"} " << v
            << at;
      }
      for (const auto& [type, v] : {std::pair{"fraction", fraction},
                                    {"tokens_per", 64.0},
                                    {"used", 100.0},
                                    {"free", 6239.0},
                                    {"max", 6239.0}}) {
        out << "nv_trt_llm_kv_cache_block_metrics{" << l << ",kv_cache_block_type=\"" << type
            << "\"} " << v << at;
      }
      out << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"" << node << "\"} 1980" << at;
    }
    out << "# EOF\n";
  }
};

TEST_F(TritonSelectorTest, QueueDepthAndKvCacheUsageReadTheirLabel) {
  Write("base.om", "node-1", 4, 0.25);
  Write("canary.om", "node-2", 8, 0.5);
  std::ofstream(dir_ / "policy.yaml")
      << "metrics:\n"
         "  - {measure: queue_depth, kind: gauge, better: lower, margin: 0.5}\n"
         "  - {measure: kv_cache_usage, kind: gauge, better: lower, margin: 0.5}\n";
  RunResult r = Run("judge --baseline " + (dir_ / "base.om").string() + " --canary " +
                    (dir_ / "canary.om").string() + " --policy " + (dir_ / "policy.yaml").string());
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json* queue = FindMetric(j, "queue_depth");
  ASSERT_NE(queue, nullptr) << r.out;
  EXPECT_EQ((*queue)["baseline"], 4.0) << r.out;
  EXPECT_EQ((*queue)["canary"], 8.0) << r.out;
  EXPECT_EQ((*queue)["result"], "high") << r.out;
  const nlohmann::json* kv = FindMetric(j, "kv_cache_usage");
  ASSERT_NE(kv, nullptr) << r.out;
  EXPECT_EQ((*kv)["baseline"], 0.25) << r.out;
  EXPECT_EQ((*kv)["canary"], 0.5) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

// After the fact: `gpucanary correlate` names the release that made the
// service 15% slower per token (no hardware signature: only the server's
// latency shows it) on a fleet of SGLang or TGI servers, as on vLLM. The
// scenario is scenarios/correlate/guilty-software-regression-1.yaml with
// the fleet's server changed (vLLM's run is the correlation suite's own).
class CorrelateServersTest : public gpucanary::testing::CliHarness,
                             public ::testing::WithParamInterface<const char*> {
 protected:
  CorrelateServersTest() : CliHarness("gpucanary-correlate-servers") {}
};

TEST_P(CorrelateServersTest, NamesTheSlowerReleaseFromTheServersLatency) {
  std::string scenario = Slurp(std::string(GPUCANARY_SOURCE_DIR) +
                               "/scenarios/correlate/guilty-software-regression-1.yaml");
  const std::string fleet = "gpus: 2}";
  ASSERT_NE(scenario.find(fleet), std::string::npos);
  scenario.replace(scenario.find(fleet), fleet.size(),
                   std::string("gpus: 2, server: ") + GetParam() + "}");
  std::ofstream(dir_ / "fleet.yaml") << scenario;
  // At a 5 s scrape, as the correlation suite records (a Prometheus's view).
  RunResult r = Run("sim --scenario " + (dir_ / "fleet.yaml").string() + " --offline " +
                    (dir_ / "sim").string() + " --scrape-interval 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run("correlate --telemetry " + (dir_ / "sim" / "telemetry.om").string() + " --releases " +
          (dir_ / "sim" / "releases.jsonl").string() + " --output json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  bool named = false;
  for (const nlohmann::json& reg : j["regressions"]) {
    if (reg["suspects"].empty()) continue;
    const std::string top = reg["suspects"][0]["release"];
    EXPECT_EQ(top, "max-seqs-384") << reg.dump();  // no other release is anyone's top suspect
    if (top == "max-seqs-384" && reg["metric"] == "vllm:time_per_output_token_seconds") {
      named = true;
    }
  }
  EXPECT_TRUE(named) << r.out;
}

INSTANTIATE_TEST_SUITE_P(OtherServers, CorrelateServersTest, ::testing::Values("sglang", "tgi"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           return std::string(param_info.param);
                         });

INSTANTIATE_TEST_SUITE_P(EveryServer, ServersCliTest,
                         ::testing::Values("vllm", "vllm_legacy", "sglang", "tgi", "triton_trtllm",
                                           "none"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           return std::string(param_info.param);
                         });

}  // namespace
