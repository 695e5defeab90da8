#include "sim/offline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "expfmt/reader.h"
#include "sim/scenario.h"

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

// One node per server kind, under load from t = 0.
std::string ServersScenario(std::string_view node4_server) {
  return "seed: 3\nduration: 40s\nfleet:\n"
         "  - {nodes: node-1, gpu: h100-sxm, server: sglang}\n"
         "  - {nodes: node-2, gpu: h100-sxm, server: tgi}\n"
         "  - {nodes: node-3, gpu: h100-sxm, server: triton_trtllm}\n"
         "  - {nodes: node-4, gpu: h100-sxm, server: " +
         std::string(node4_server) +
         "}\n"
         "releases: {a: {profile: baseline}}\ntraffic: {rps: 80}\n"
         "events: [{at: 0s, deploy: a, nodes: all}]\n";
}

fs::path RecordScenario(const std::string& yaml, const std::string& name) {
  Result<Scenario> scenario = ParseScenario(yaml, name + ".yaml");
  EXPECT_TRUE(scenario.has_value()) << scenario.error().message();
  Engine engine(*scenario);
  const fs::path path = fs::temp_directory_path() / (name + ".om");
  auto writer = recording::RecordingWriter::Open(path.string());
  EXPECT_TRUE(writer.has_value());
  OfflineOptions options;
  options.duration_s = 40;
  EXPECT_TRUE(WriteScenarioRecording(engine, options, **writer).has_value());
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

// Each node's server records its own families, with job = the server and
// instance = <node>:<the server's default port>; a `none` node records its
// GPUs and no service series at all.
TEST(OfflineTest, EachServerRecordsItsFamiliesAndANoneNodeOnlyItsGpus) {
  const fs::path path = RecordScenario(ServersScenario("none"), "gpucanary-offline-servers");
  std::map<std::string, std::set<std::string>> targets;  // family prefix -> job/instance seen
  std::map<std::string, model::MetricType> types;
  std::set<std::string> dcgm_hosts;
  std::set<std::string> instances;
  auto report = expfmt::ReadFile(
      path.string(), expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view family, model::MetricType type) {
        types[std::string(family)] = type;
        if (s.name.starts_with("DCGM_")) {
          dcgm_hosts.emplace(*s.Label("Hostname"));
          EXPECT_FALSE(s.Label("job").has_value());
          return;
        }
        const std::string prefix(s.name.substr(0, s.name.find_first_of(":_")));
        targets[prefix].emplace(std::string(s.Label("job").value_or("")) + " " +
                                std::string(s.Label("instance").value_or("")));
        instances.emplace(s.Label("instance").value_or(""));
        EXPECT_FALSE(s.Label("Hostname").has_value());
      });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(dcgm_hosts, (std::set<std::string>{"node-1", "node-2", "node-3", "node-4"}));
  EXPECT_EQ(targets["sglang"], (std::set<std::string>{"sglang node-1:30000"}));
  EXPECT_EQ(targets["tgi"], (std::set<std::string>{"tgi node-2:80"}));
  EXPECT_EQ(targets["nv"], (std::set<std::string>{"triton_trtllm node-3:8002"}));
  EXPECT_EQ(targets.size(), 3u);  // no vllm:*, nothing from node-4
  EXPECT_FALSE(instances.contains("node-4:8000"));
  EXPECT_EQ(types["sglang:time_per_output_token_seconds"], model::MetricType::kHistogram);
  EXPECT_EQ(types["sglang:generation_tokens"], model::MetricType::kCounter);
  EXPECT_EQ(types["tgi_request_mean_time_per_token_duration"], model::MetricType::kHistogram);
  EXPECT_EQ(types["tgi_queue_size"], model::MetricType::kGauge);
  EXPECT_EQ(types["nv_trt_llm_kv_cache_block_metrics"], model::MetricType::kGauge);
  EXPECT_EQ(types["nv_llm_output_token_len"], model::MetricType::kHistogram);
  // Counters without "_total" keep their names (the recording's counter rule).
  EXPECT_TRUE(types.contains("tgi_request_success"));
  EXPECT_TRUE(types.contains("nv_inference_request_duration_us"));
  fs::remove(path);
}

// A node's `server:` changes what it exposes, not what its GPUs do: the
// same scenario with node-4 on vLLM or on none records the same GPU series.
TEST(OfflineTest, ANoneNodesGpusAreThoseOfTheSameNodeWithAServer) {
  const fs::path none = RecordScenario(ServersScenario("none"), "gpucanary-offline-none");
  const fs::path vllm = RecordScenario(ServersScenario("vllm"), "gpucanary-offline-vllm");
  const auto dcgm_lines = [](const fs::path& p) {
    std::vector<std::string> lines;
    std::istringstream in(Slurp(p));
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("DCGM_")) lines.push_back(line);
    }
    return lines;
  };
  const std::vector<std::string> a = dcgm_lines(none);
  EXPECT_GT(a.size(), 4u * 8u * 40u);
  EXPECT_EQ(a, dcgm_lines(vllm));
  EXPECT_NE(Slurp(vllm).find("instance=\"node-4:8000\""), std::string::npos);
  EXPECT_EQ(Slurp(none).find("node-4:"), std::string::npos);
  fs::remove(none);
  fs::remove(vllm);
}

// releases.jsonl's framework is the server of the release's first target.
TEST(OfflineTest, ReleaseAnnotationNamesTheServer) {
  for (const auto& [yaml, framework] :
       {std::pair{ServersScenario("none"), "sglang"},
        std::pair{
            std::string("duration: 10s\nfleet:\n  - {nodes: n1, gpu: h100-sxm, server: none}\n"
                        "releases: {a: {profile: baseline}}\n"
                        "events: [{at: 0s, deploy: a, nodes: all}]\n"),
            ""}}) {
    Result<Scenario> scenario = ParseScenario(yaml, "r.yaml");
    ASSERT_TRUE(scenario.has_value()) << scenario.error().message();
    Engine engine(*scenario);
    engine.Step();
    ASSERT_EQ(engine.releases().size(), 1u);
    EXPECT_EQ(engine.releases()[0].framework, framework);
    const fs::path path = fs::temp_directory_path() / "gpucanary-offline-releases.jsonl";
    ASSERT_TRUE(WriteReleasesJsonl(engine.releases(), path.string()).ok());
    if (framework[0] != '\0') {
      EXPECT_NE(Slurp(path).find("\"framework\":\"sglang\""), std::string::npos);
    } else {
      EXPECT_EQ(Slurp(path).find("\"framework\""), std::string::npos);
    }
    fs::remove(path);
  }
}

}  // namespace
}  // namespace gpucanary::sim
