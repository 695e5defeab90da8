#include "sim/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gpucanary::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The example of docs/simulator.md, "Scenario files (YAML)", verbatim.
constexpr const char* kDocExample = R"(seed: 42
duration: 600s
fleet:
  - {nodes: "node-[1-8]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}   # trips the power brake
traffic: {rps: 400, diurnal: {amplitude: 0.2, period: 1h}, bursts: {rate: 1/5m}}
events:
  - {at: 0s,  deploy: stable, nodes: all}
  - {at: 60s, deploy: fp8-kernel, nodes: [node-4]}
  - {at: 90s, fault: power_brake, nodes: [node-4], gpus: "0-3"}
)";

TEST(ScenarioTest, DocExampleParses) {
  Result<Scenario> s = ParseScenario(kDocExample, "doc.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->file, "doc.yaml");
  EXPECT_EQ(s->seed, 42u);
  EXPECT_DOUBLE_EQ(s->duration_s, 600);

  ASSERT_EQ(s->fleet.size(), 1u);
  const NodeGroup& g = s->fleet[0];
  EXPECT_THAT(g.hostnames, ElementsAre("node-1", "node-2", "node-3", "node-4", "node-5", "node-6",
                                       "node-7", "node-8"));
  ASSERT_NE(g.profile, nullptr);
  EXPECT_EQ(g.profile, FindGpuProfile("h100-sxm"));
  EXPECT_EQ(g.driver, "580.105.08");
  EXPECT_EQ(g.gpus_per_node, 8);

  ASSERT_EQ(s->releases.size(), 2u);
  const ReleaseSpec& stable = s->releases.at("stable");
  EXPECT_EQ(stable.name, "stable");
  EXPECT_EQ(stable.profile, "baseline");
  EXPECT_DOUBLE_EQ(stable.power_spikiness, 1);
  const ReleaseSpec& fp8 = s->releases.at("fp8-kernel");
  EXPECT_DOUBLE_EQ(fp8.power_spikiness, 2.5);
  EXPECT_DOUBLE_EQ(fp8.slowdown, 1);
  EXPECT_DOUBLE_EQ(fp8.workload.dynamic_power_w, Workload{}.dynamic_power_w);
  EXPECT_EQ(fp8.xid, 0);

  EXPECT_DOUBLE_EQ(s->traffic.rps, 400);
  EXPECT_DOUBLE_EQ(s->traffic.diurnal_amplitude, 0.2);
  EXPECT_DOUBLE_EQ(s->traffic.diurnal_period_s, 3600);
  EXPECT_DOUBLE_EQ(s->traffic.burst_rate_per_s, 1.0 / 300);

  ASSERT_EQ(s->events.size(), 3u);
  EXPECT_EQ(s->events[0].kind, ScenarioEvent::kDeploy);
  EXPECT_DOUBLE_EQ(s->events[0].at_s, 0);
  EXPECT_EQ(s->events[0].release, "stable");
  EXPECT_EQ(s->events[0].nodes, g.hostnames);
  EXPECT_EQ(s->events[1].kind, ScenarioEvent::kDeploy);
  EXPECT_DOUBLE_EQ(s->events[1].at_s, 60);
  EXPECT_EQ(s->events[1].release, "fp8-kernel");
  EXPECT_THAT(s->events[1].nodes, ElementsAre("node-4"));
  EXPECT_EQ(s->events[2].kind, ScenarioEvent::kFault);
  EXPECT_DOUBLE_EQ(s->events[2].at_s, 90);
  EXPECT_EQ(s->events[2].fault, FaultKind::kPowerBrake);
  EXPECT_THAT(s->events[2].nodes, ElementsAre("node-4"));
  EXPECT_EQ(s->events[2].gpus, "0-3");
}

TEST(ScenarioTest, FullSchema) {
  Result<Scenario> s = ParseScenario(R"(duration: 1h
fleet:
  - {nodes: "gpu-[08-10]", gpu: h200, gpus: 4}
  - {nodes: [a100-a, a100-b], gpu: a100-sxm}
releases:
  slow: {slowdown: 1.3, xid: 79, xid_per_s: 1/10m, sm_active: 0.5, occupancy_factor: 0.4}
events:
  - {at: 250ms, deploy: slow, nodes: "gpu-[08-09]"}
  - {at: 90, fault: power_cap, nodes: [a100-b], gpus: "0,2,5-7", params: {limit_w: 300}}
  - {at: 2m, traffic: {slow: 0.5}}
  - {at: 3m, clear_fault: power_cap, nodes: [a100-b]}
  - {at: 3m, cordon: a100-a}
)",
                                     "full.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->seed, 1u);
  EXPECT_DOUBLE_EQ(s->duration_s, 3600);
  EXPECT_THAT(s->fleet[0].hostnames, ElementsAre("gpu-08", "gpu-09", "gpu-10"));
  EXPECT_EQ(s->fleet[0].gpus_per_node, 4);
  EXPECT_EQ(s->fleet[1].profile->key, "a100-sxm");
  const ReleaseSpec& slow = s->releases.at("slow");
  EXPECT_DOUBLE_EQ(slow.slowdown, 1.3);
  EXPECT_EQ(slow.xid, 79);
  EXPECT_DOUBLE_EQ(slow.xid_per_s, 1.0 / 600);
  EXPECT_DOUBLE_EQ(slow.workload.sm_active, 0.5);
  EXPECT_DOUBLE_EQ(slow.occupancy_factor, 0.4);
  ASSERT_EQ(s->events.size(), 5u);
  EXPECT_DOUBLE_EQ(s->events[0].at_s, 0.25);
  EXPECT_THAT(s->events[0].nodes, ElementsAre("gpu-08", "gpu-09"));
  EXPECT_EQ(s->events[1].fault, FaultKind::kPowerCap);
  EXPECT_EQ(s->events[1].params.at("limit_w"), 300);
  EXPECT_EQ(s->events[2].kind, ScenarioEvent::kTraffic);
  EXPECT_EQ(s->events[2].weights.at("slow"), 0.5);
  EXPECT_EQ(s->events[3].kind, ScenarioEvent::kClearFault);
  EXPECT_EQ(s->events[3].gpus, "all");
  EXPECT_EQ(s->events[4].kind, ScenarioEvent::kCordon);
  EXPECT_THAT(s->events[4].nodes, ElementsAre("a100-a"));
}

// `server:` names every server the simulator renders, or none; vllm by default.
TEST(ScenarioTest, ServerNames) {
  Result<Scenario> s = ParseScenario(R"(duration: 60s
fleet:
  - {nodes: n0, gpu: h100-sxm}
  - {nodes: n1, gpu: h100-sxm, server: vllm}
  - {nodes: n2, gpu: h100-sxm, server: vllm_legacy}
  - {nodes: n3, gpu: h100-sxm, server: sglang}
  - {nodes: n4, gpu: h100-sxm, server: tgi}
  - {nodes: n5, gpu: h100-sxm, server: triton_trtllm}
  - {nodes: n6, gpu: h100-sxm, server: none}
)",
                                     "servers.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ASSERT_EQ(s->fleet.size(), 7u);
  EXPECT_EQ(s->fleet[0].server, vocab::Server::kVllm);
  EXPECT_EQ(s->fleet[1].server, vocab::Server::kVllm);
  EXPECT_EQ(s->fleet[2].server, vocab::Server::kVllmLegacy);
  EXPECT_EQ(s->fleet[3].server, vocab::Server::kSglang);
  EXPECT_EQ(s->fleet[4].server, vocab::Server::kTgi);
  EXPECT_EQ(s->fleet[5].server, vocab::Server::kTritonTrtllm);
  EXPECT_EQ(s->fleet[6].server, std::nullopt);
  for (const NodeGroup& g : s->fleet) {
    const std::optional<ServerKind> back = ParseServerKind(ServerKindName(g.server));
    ASSERT_TRUE(back.has_value()) << ServerKindName(g.server);
    EXPECT_EQ(*back, g.server) << ServerKindName(g.server);
  }
  EXPECT_EQ(ParseServerKind("TGI"), std::nullopt);  // names are exact
  EXPECT_EQ(DefaultMetricsPort(vocab::Server::kVllmLegacy), 8000);
  EXPECT_EQ(DefaultMetricsPort(vocab::Server::kSglang), 30000);
  EXPECT_EQ(DefaultMetricsPort(vocab::Server::kTgi), 80);
  EXPECT_EQ(DefaultMetricsPort(vocab::Server::kTritonTrtllm), 8002);
  EXPECT_EQ(ServerJob(vocab::Server::kVllmLegacy), "vllm");
  EXPECT_EQ(ServerJob(vocab::Server::kTritonTrtllm), "triton_trtllm");
}

TEST(ScenarioTest, GpuSelector) {
  EXPECT_THAT(*ExpandGpuSelector("all", 4), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(*ExpandGpuSelector("0-3", 8), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(*ExpandGpuSelector("5,1-2,2", 8), ElementsAre(1, 2, 5));
  EXPECT_FALSE(ExpandGpuSelector("0-8", 8).has_value());
  EXPECT_FALSE(ExpandGpuSelector("3-1", 8).has_value());
  EXPECT_FALSE(ExpandGpuSelector("x", 8).has_value());
  EXPECT_FALSE(ExpandGpuSelector("", 8).has_value());
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* prefix;  // "file:line:col: field:"
  const char* detail;  // part of the reason
};

// Two nodes of 8 GPUs and one release; cases append from line 6 on.
constexpr const char* kHead = R"(duration: 600s
fleet:
  - {nodes: "node-[1-2]", gpu: h200}
releases:
  stable: {}
)";

const BadCase kBadCases[] = {
    {"unknown top-level key", "colour: red\n", "t.yaml:6:1: colour:", "unknown field"},
    {"unknown GPU profile", "duration: 60s\nfleet:\n  - nodes: n1\n    gpu: h300\n",
     "t.yaml:4:10: fleet[0].gpu:", "unknown GPU profile 'h300' (known: h100-sxm, h200"},
    {"unknown server", "duration: 60s\nfleet:\n  - {nodes: n1, gpu: h200, server: trtllm}\n",
     "t.yaml:3:36: fleet[0].server:",
     "unknown server 'trtllm' (known: vllm, vllm_legacy, sglang, tgi, triton_trtllm, none)"},
    {"bad hostname label",
     "duration: 60s\nfleet:\n  - {nodes: n1, gpu: h200, hostname_label: host}\n",
     "t.yaml:3:44: fleet[0].hostname_label:", "expected Hostname or hostname, got 'host'"},
    {"bad duration", "duration: 10x\nfleet: [{nodes: n1, gpu: h200}]\n",
     "t.yaml:1:11: duration:", "bad duration '10x'"},
    {"missing fleet", "seed: 3\nduration: 60s\n",
     "t.yaml:1:1: fleet:", "required field is missing"},
    {"missing duration", "fleet: [{nodes: n1, gpu: h200}]\n",
     "t.yaml:1:1: duration:", "required field is missing"},
    {"unknown release", "events:\n  - at: 0s\n    deploy: nope\n    nodes: all\n",
     "t.yaml:8:13: events[0].deploy:", "unknown release 'nope' (known: stable)"},
    {"unknown node", "events:\n  - at: 0s\n    deploy: stable\n    nodes: [node-3]\n",
     "t.yaml:9:13: events[0].nodes:", "unknown node 'node-3'"},
    {"gpu range outside the node",
     "events:\n  - at: 0s\n    fault: thermal\n    nodes: all\n    gpus: \"4-8\"\n",
     "t.yaml:10:11: events[0].gpus:", "outside 0..7"},
    {"events out of time order",
     "events:\n  - {at: 60s, deploy: stable, nodes: all}\n  - {at: 30s, cordon: node-1}\n",
     "t.yaml:8:10: events[1].at:", "out of time order"},
    {"unknown fault kind", "events:\n  - at: 0s\n    fault: overheat\n    nodes: all\n",
     "t.yaml:8:12: events[0].fault:", "unknown fault kind (valid: thermal, power_brake"},
    {"negative rate", "traffic: {rps: -5}\n", "t.yaml:6:16: traffic.rps:", "negative rate"},
    {"negative burst rate", "traffic:\n  rps: 10\n  bursts: {rate: -1/5m}\n",
     "t.yaml:8:18: traffic.bursts.rate:", "negative rate"},
    {"missing event nodes", "events:\n  - {at: 0s, deploy: stable}\n",
     "t.yaml:7:5: events[0].nodes:", "required field is missing"},
    {"unknown fault param",
     "events:\n  - {at: 0s, fault: power_cap, nodes: all, params: {limit: 300}}\n",
     "t.yaml:7:53: events[0].params.limit:", "unknown field (expected one of limit_w)"},
    {"unknown release field", "  other: {spikiness: 2}\n",
     "t.yaml:6:11: releases.other.spikiness:", "unknown field"},
    {"negative load shift", "events:\n  - {at: 10s, rps: -3}\n",
     "t.yaml:7:20: events[0].rps:", "negative rate"},
    {"nodes on a load shift", "events:\n  - {at: 10s, rps: 30, nodes: all}\n",
     "t.yaml:7:24: events[0].nodes:", "not allowed in a rps event"},
    {"unknown fault scope", "events:\n  - {at: 0s, fault: thermal, nodes: all, scope: rack}\n",
     "t.yaml:7:49: events[0].scope:", "unknown scope (valid: node, release)"},
    {"scope on a deploy", "events:\n  - {at: 0s, deploy: stable, nodes: all, scope: node}\n",
     "t.yaml:7:42: events[0].scope:", "not allowed in a deploy event"},
    {"PCIe generation out of range", "  other: {pcie_gen: 7}\n",
     "t.yaml:6:21: releases.other.pcie_gen:", "must be in 1..6"},
};

TEST(ScenarioTest, MalformedInputsNameFileLineColumnAndField) {
  for (const BadCase& c : kBadCases) {
    std::string text = c.yaml;
    // Inputs that define their own fleet stand alone; the rest extend kHead.
    if (text.find("fleet") == std::string::npos && text.find("duration") == std::string::npos) {
      text = kHead + text;
    }
    Result<Scenario> s = ParseScenario(text, "t.yaml");
    ASSERT_FALSE(s.has_value()) << c.name;
    EXPECT_EQ(s.error().code(), StatusCode::kParseError) << c.name;
    EXPECT_THAT(s.error().message(), StartsWith(c.prefix)) << c.name;
    EXPECT_THAT(s.error().message(), HasSubstr(c.detail)) << c.name;
  }
}

TEST(ScenarioTest, DuplicateHostnames) {
  Result<Scenario> s = ParseScenario(R"(duration: 60s
fleet:
  - {nodes: "node-[1-4]", gpu: h200}
  - {nodes: [node-9, node-3], gpu: h100-sxm}
)",
                                     "dup.yaml");
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(),
              StartsWith("dup.yaml:4:22: fleet[1].nodes: duplicate hostname 'node-3'"));
}

TEST(ScenarioTest, SyntaxErrorsGiveLineAndColumn) {
  const char* inputs[] = {
      "duration: 60s\nfleet: [{nodes: n1, gpu: h200}\n",
      "duration: 60s\n  fleet: x\n bad",
      "events:\n  - {at: 0s\n",
      "duration: \"60s\nfleet: []\n",
      "\t- x",
      "key: [}",
  };
  for (const char* input : inputs) {
    Result<Scenario> s = ParseScenario(input, "syn.yaml");
    ASSERT_FALSE(s.has_value()) << input;
    EXPECT_THAT(s.error().message(), ::testing::MatchesRegex("syn\\.yaml:[0-9]+:[0-9]+: .*"))
        << input;
  }
}

TEST(ScenarioTest, NotAMapOrEmpty) {
  for (const char* input : {"", "42", "- a\n- b\n", "~"}) {
    Result<Scenario> s = ParseScenario(input, "e.yaml");
    ASSERT_FALSE(s.has_value()) << input;
    EXPECT_THAT(s.error().message(), StartsWith("e.yaml:1:1: scenario: expected a map")) << input;
  }
}

TEST(ScenarioTest, LoadMissingFile) {
  Result<Scenario> s = LoadScenario("/nonexistent/scenario.yaml");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), StatusCode::kNotFound);
}

TEST(ScenarioTest, EveryShippedScenarioParses) {
  const std::filesystem::path dir = std::filesystem::path(GPUCANARY_SOURCE_DIR) / "scenarios";
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    Result<Scenario> s = LoadScenario(entry.path().string());
    EXPECT_TRUE(s.has_value()) << s.error().ToString();
    ++parsed;
  }
  EXPECT_GE(parsed, 12);
}

TEST(ScenarioTest, BadNodePowerBrakeScenarioShape) {
  Result<Scenario> s =
      LoadScenario(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/bad-node-power-brake.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ASSERT_EQ(s->events.size(), 3u);
  EXPECT_DOUBLE_EQ(s->events[1].at_s, 60);
  EXPECT_EQ(s->events[2].fault, FaultKind::kPowerBrake);
  EXPECT_DOUBLE_EQ(s->events[2].at_s, 90);
  EXPECT_THAT(s->events[2].nodes, ElementsAre("node-6"));
  EXPECT_THAT(*ExpandGpuSelector(s->events[2].gpus, 8), ElementsAre(0, 1, 2, 3));
}

TEST(ScenarioTest, LoadShiftsFaultScopesAndReleaseLinks) {
  Result<Scenario> s = ParseScenario(R"(duration: 60s
fleet: [{nodes: "n[1-2]", gpu: h100-sxm, gpus: 4}]
releases: {a: {}, gen4: {pcie_gen: 4, pcie_width: 8}}
traffic: {rps: 80}
events:
  - {at: 0s, deploy: a, nodes: all}
  - {at: 10s, rps: 120}
  - {at: 20s, rps: 30/m}
  - {at: 30s, fault: thermal, nodes: [n2], scope: release}
  - {at: 31s, fault: thermal, nodes: [n1]}
)",
                                     "t.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  const ReleaseSpec& gen4 = s->releases.at("gen4");
  EXPECT_EQ(gen4.pcie_gen, 4);
  EXPECT_EQ(gen4.pcie_width, 8);
  EXPECT_EQ(s->releases.at("a").pcie_gen, 0);
  ASSERT_EQ(s->events.size(), 5u);
  EXPECT_EQ(s->events[1].kind, ScenarioEvent::kRps);
  EXPECT_DOUBLE_EQ(s->events[1].rps, 120);
  EXPECT_DOUBLE_EQ(s->events[2].rps, 0.5);
  EXPECT_EQ(s->events[3].scope, vocab::Scope::kRelease);
  EXPECT_EQ(s->events[4].scope, vocab::Scope::kNode);
}

TEST(ScenarioTest, TrafficEvenDropsTheWeights) {
  Result<Scenario> s = ParseScenario(R"(
duration: 60s
fleet: [{nodes: "n[1-2]", gpu: h100-sxm}]
releases: {a: {profile: baseline}}
events:
  - {at: 0s, traffic: {a: 1}}
  - {at: 1s, traffic: even}
  - {at: 2s, traffic: uneven}
)",
                                     "t.yaml");
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("t.yaml:8:"));
  EXPECT_THAT(s.error().message(), HasSubstr("or `even`"));
}

}  // namespace
}  // namespace gpucanary::sim
