#include "sim/engine.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/scenario.h"

namespace gpucanary::sim {
namespace {

constexpr std::string_view kTwoReleases = R"(
seed: 3
duration: 600s
fleet:
  - {nodes: "node-[1-4]", gpu: h100-sxm}
releases:
  stable: {profile: baseline}
  next: {profile: baseline}
  slow: {profile: baseline, slowdown: 2.5}
  spiky: {profile: baseline, power_spikiness: 2.5}
traffic: {rps: 160}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

Scenario Parse(std::string_view text) {
  Result<Scenario> s = ParseScenario(text, "test.yaml");
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  return *s;
}

void RunFor(Engine& e, double seconds) {
  const auto steps = static_cast<int>(seconds / Engine::kStepSeconds + 0.5);
  for (int i = 0; i < steps; ++i) e.Step();
}

// Mean of `fn(engine)` over `seconds`, sampled every step.
template <typename Fn>
double MeanOver(Engine& e, double seconds, Fn fn) {
  const auto steps = static_cast<int>(seconds / Engine::kStepSeconds + 0.5);
  double sum = 0;
  for (int i = 0; i < steps; ++i) {
    e.Step();
    sum += fn(e);
  }
  return sum / steps;
}

double GpuClock(const Engine& e, std::size_t node, std::size_t gpu) {
  return e.fleet().nodes()[node].gpus[gpu].model.sm_clock_mhz();
}

TEST(EngineTest, FirstDeployServesAtOnceAndTrafficIsEvenPerNode) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 1);
  for (std::size_t i = 0; i < e.node_count(); ++i) {
    const Engine::NodeView v = e.node_view(i);
    EXPECT_EQ(v.release, "stable");
    EXPECT_TRUE(v.serving);
    EXPECT_NEAR(v.arrival_rate, e.fleet_rate() / 4, 1e-9);
  }
  // Traffic shapes the arrival rate around the scenario's mean.
  const double mean_rate = MeanOver(e, 60, [](const Engine& x) { return x.fleet_rate(); });
  EXPECT_NEAR(mean_rate, 160, 160 * 0.15);
}

TEST(EngineTest, WeightsSplitTrafficBetweenReleasesAndCordonRemovesANode) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 1);
  ASSERT_TRUE(e.Deploy("next", {"node-4"}).ok());
  RunFor(e, 11);  // node-4 restarts (10 s) and comes back with `next`
  EXPECT_EQ(e.node_view(3).release, "next");
  ASSERT_TRUE(e.SetTraffic({{"stable", 0.9}, {"next", 0.1}}).ok());
  RunFor(e, 0.1);
  EXPECT_NEAR(e.node_view(3).arrival_rate, e.fleet_rate() * 0.1, 1e-9);
  EXPECT_NEAR(e.node_view(0).arrival_rate, e.fleet_rate() * 0.9 / 3, 1e-9);

  ASSERT_TRUE(e.SetCordon("node-2", true).ok());
  RunFor(e, 0.1);
  EXPECT_FALSE(e.node_view(1).serving);
  EXPECT_EQ(e.node_view(1).arrival_rate, 0);
  EXPECT_NEAR(e.node_view(0).arrival_rate, e.fleet_rate() * 0.9 / 2, 1e-9);

  EXPECT_FALSE(e.SetTraffic({{"nope", 1}}).ok());
  EXPECT_FALSE(e.SetCordon("node-9", true).ok());
  EXPECT_FALSE(e.Deploy("nope", {"node-1"}).ok());
  EXPECT_FALSE(e.Deploy("next", {"node-9"}).ok());
}

TEST(EngineTest, DeployIsARollingRestartThatResetsServerCounters) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 30);
  const double before = e.node_view(0).server->state().generation_tokens_total;
  ASSERT_GT(before, 0);
  ASSERT_TRUE(e.Deploy("next", {"all"}).ok());
  RunFor(e, 0.2);
  // One node at a time: the first is down, the others still serve `stable`.
  EXPECT_TRUE(e.node_view(0).restarting);
  EXPECT_EQ(e.node_view(0).server, nullptr);
  EXPECT_TRUE(e.node_view(1).serving);
  EXPECT_EQ(e.node_view(1).release, "stable");
  RunFor(e, 10);
  EXPECT_EQ(e.node_view(0).release, "next");
  EXPECT_TRUE(e.node_view(0).serving);
  EXPECT_LT(e.node_view(0).server->state().generation_tokens_total, before);
  EXPECT_TRUE(e.node_view(1).restarting);
  RunFor(e, 31);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(e.node_view(i).release, "next");
  // The annotation names the first deploy's targets and what they ran.
  ASSERT_EQ(e.releases().size(), 2U);
  EXPECT_EQ(e.releases()[1].id, "next");
  EXPECT_EQ(e.releases()[1].previous, "stable");
  EXPECT_EQ(e.releases()[1].targets.size(), 4U);
}

TEST(EngineTest, ASpikyReleaseTripsThePowerBrakeOnlyWhereItRuns) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 20);
  ASSERT_TRUE(e.Deploy("spiky", {"node-2"}).ok());
  RunFor(e, 40);
  const double braked = MeanOver(e, 20, [](const Engine& x) { return GpuClock(x, 1, 0); });
  const double healthy = MeanOver(e, 20, [](const Engine& x) { return GpuClock(x, 0, 0); });
  EXPECT_NEAR(braked, 1050, 30);
  EXPECT_NEAR(healthy, 1980, 30);
  EXPECT_EQ(e.fleet().nodes()[1].gpus[3].model.clock_event_reasons() & 0x80, 0x80U);
  EXPECT_EQ(e.fleet().nodes()[0].gpus[3].model.clock_event_reasons() & 0x80, 0U);
  bool truth_found = false;
  for (const TruthRecord& r : e.Truth()) {
    if (r.type == TruthRecord::kFault && r.kind == vocab::CauseKind::kPowerBrake) {
      truth_found = true;
      EXPECT_EQ(r.scope, vocab::Scope::kRelease);
      EXPECT_EQ(r.release, "spiky");
      EXPECT_EQ(r.node, "node-2");
      EXPECT_EQ(r.gpus.size(), 8U);
      EXPECT_FALSE(r.until_ms.has_value());
    }
  }
  EXPECT_TRUE(truth_found);
}

TEST(EngineTest, ASlowerReleaseUnderLoadBlowsUpTailLatency) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 1);
  ASSERT_TRUE(e.Deploy("slow", {"node-3"}).ok());
  RunFor(e, 120);
  ASSERT_EQ(e.node_view(2).release, "slow");
  const auto p99 = [&](std::size_t node) {
    return HistogramQuantile(e.node_view(node).server->state().e2e_request_latency_seconds, 0.99);
  };
  EXPECT_GT(p99(2), 2 * p99(0));
  EXPECT_GT(e.node_view(2).server->num_waiting(), e.node_view(0).server->num_waiting());
  // No hardware signature: the GPUs of the slow node run at full clock.
  EXPECT_NEAR(GpuClock(e, 2, 0), 1980, 30);
}

TEST(EngineTest, InjectedFaultsAreNodeScopedAndClearable) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 1);
  Result<std::vector<int>> ids =
      e.InjectFault(FaultKind::kPcieDowntrain, {"node-1"}, "0-1", {{"width", 8}});
  ASSERT_TRUE(ids.has_value()) << ids.error().message();
  ASSERT_EQ(ids->size(), 1U);
  RunFor(e, 2);
  std::string text;
  e.RenderDcgm(0, text);
  EXPECT_NE(text.find("DCGM_FI_DEV_PCIE_LINK_WIDTH{gpu=\"0\""), std::string::npos);
  const dcgm::Readings r0 = e.fleet().nodes()[0].gpus[0].model.Read();
  const dcgm::Readings r2 = e.fleet().nodes()[0].gpus[2].model.Read();
  EXPECT_EQ(*r0.Get(dcgm::ExporterField::kPcieLinkWidth), 8);
  EXPECT_EQ(*r2.Get(dcgm::ExporterField::kPcieLinkWidth), 16);

  // Clearing GPU 0 keeps GPU 1 faulted: the truth interval splits.
  Result<int> cleared = e.ClearFaults(FaultKind::kPcieDowntrain, {"node-1"}, "0");
  ASSERT_TRUE(cleared.has_value());
  EXPECT_EQ(*cleared, 1);
  RunFor(e, 1);
  EXPECT_EQ(*e.fleet().nodes()[0].gpus[0].model.Read().Get(dcgm::ExporterField::kPcieLinkWidth),
            16);
  EXPECT_EQ(*e.fleet().nodes()[0].gpus[1].model.Read().Get(dcgm::ExporterField::kPcieLinkWidth), 8);
  ASSERT_TRUE(e.ClearFault((*ids)[0]).ok());
  EXPECT_TRUE(e.active_faults().empty());
  EXPECT_FALSE(e.ClearFault((*ids)[0]).ok());

  int intervals = 0;
  for (const TruthRecord& r : e.Truth()) {
    if (r.type != TruthRecord::kFault) continue;
    ++intervals;
    EXPECT_EQ(r.kind, vocab::CauseKind::kPcieDowntrain);
    EXPECT_EQ(r.scope, vocab::Scope::kNode);
    EXPECT_EQ(r.release, "stable");
    EXPECT_TRUE(r.until_ms.has_value());
  }
  EXPECT_EQ(intervals, 2);

  EXPECT_FALSE(e.InjectFault(FaultKind::kThermal, {"node-1"}, "9", {}).has_value());
  EXPECT_FALSE(e.InjectFault(FaultKind::kThermal, {"node-1"}, "all", {{"width", 8}}).has_value());
}

TEST(EngineTest, ALoadShiftChangesTheFleetRateAndIsInTheTruth) {
  Engine e(Parse(kTwoReleases));
  const double before = MeanOver(e, 60, [](const Engine& x) { return x.fleet_rate(); });
  ASSERT_TRUE(e.SetFleetRate(320).ok());
  const double after = MeanOver(e, 60, [](const Engine& x) { return x.fleet_rate(); });
  EXPECT_NEAR(before, 160, 160 * 0.15);  // drift: sd 5%
  EXPECT_NEAR(after / before, 2, 0.1);   // the drift barely moves in a minute
  EXPECT_NEAR(e.node_view(0).arrival_rate, e.fleet_rate() / 4, 1e-9);  // still even per node
  EXPECT_FALSE(e.SetFleetRate(-1).ok());
  ASSERT_TRUE(e.SetFleetRate(100).ok());
  int loads = 0;
  for (const TruthRecord& r : e.Truth()) {
    if (r.type != TruthRecord::kLoad) continue;
    ++loads;
    EXPECT_EQ(r.rps, loads == 1 ? 320 : 100);
    EXPECT_EQ(r.until_ms.has_value(), loads == 1);
  }
  EXPECT_EQ(loads, 2);
  EXPECT_NE(TruthRecordJson(e.Truth().back()).find(R"("type":"load","rps":100.0)"),
            std::string::npos);
}

TEST(EngineTest, ReleaseScopedFaultsAndAReleaseThatTrainsTheLinkLower) {
  Engine e(Parse(R"(
duration: 60s
fleet: [{nodes: "node-[1-2]", gpu: h100-sxm, gpus: 2}]
releases: {stable: {}, gen4: {pcie_gen: 4}}
traffic: {rps: 60}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 10s, deploy: gen4, nodes: [node-2]}
  - {at: 30s, fault: hw_slowdown, nodes: [node-2], scope: release}
)"));
  RunFor(e, 40);
  const dcgm::Readings canary = e.fleet().nodes()[1].gpus[0].model.Read();
  const dcgm::Readings other = e.fleet().nodes()[0].gpus[0].model.Read();
  EXPECT_EQ(*canary.Get(dcgm::ExporterField::kPcieLinkGen), 4);
  EXPECT_EQ(*canary.Get(dcgm::ExporterField::kPcieLinkWidth), 16);
  EXPECT_EQ(*other.Get(dcgm::ExporterField::kPcieLinkGen), 5);
  EXPECT_EQ(static_cast<int>(*canary.Get(dcgm::ExporterField::kClockEventReasons)) & 0x8, 0x8);
  int seen = 0;
  for (const TruthRecord& r : e.Truth()) {
    if (r.type != TruthRecord::kFault) continue;
    EXPECT_EQ(r.node, "node-2");
    EXPECT_EQ(r.scope, vocab::Scope::kRelease);
    EXPECT_EQ(r.release, "gen4");
    EXPECT_FALSE(r.until_ms.has_value());
    if (r.kind == vocab::CauseKind::kPcieDowntrain) {
      EXPECT_EQ(r.source, "release");
      EXPECT_EQ(r.since_ms, e.Truth().front().since_ms + 20000);  // serving after the restart
      ++seen;
    } else if (r.kind == vocab::CauseKind::kHwSlowdown) {
      EXPECT_EQ(r.source, "scenario");
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(
      e.InjectFault(FaultKind::kThermal, {"node-1"}, "all", {}, "api", vocab::Scope::kFleet));
}

TEST(EngineTest, XidSeventyNineLosesTheGpuAndTheNodeStopsServing) {
  Engine e(Parse(kTwoReleases));
  RunFor(e, 5);
  ASSERT_TRUE(e.InjectFault(FaultKind::kXidErrors, {"node-1"}, "5", {{"xid", 79}, {"per_s", 10}})
                  .has_value());
  RunFor(e, 1);
  std::string text;
  e.RenderDcgm(0, text);
  EXPECT_NE(text.find("err_code=\"79\""), std::string::npos);  // seen before it vanishes
  RunFor(e, 3);
  EXPECT_FALSE(e.GpuReported(0, 5));
  EXPECT_TRUE(e.GpuReported(0, 4));
  text.clear();
  e.RenderDcgm(0, text);
  EXPECT_EQ(text.find("gpu=\"5\""), std::string::npos);
  EXPECT_NE(text.find("gpu=\"4\""), std::string::npos);
  EXPECT_FALSE(e.node_view(0).serving);
  EXPECT_EQ(e.node_view(0).arrival_rate, 0);
}

TEST(EngineTest, SameSeedSameFleetDifferentSeedDifferentFleet) {
  const Scenario s = Parse(kTwoReleases);
  Engine a(s);
  Engine b(s);
  Scenario other = s;
  other.seed = 4;
  Engine c(other);
  RunFor(a, 30);
  RunFor(b, 30);
  RunFor(c, 30);
  std::string ta, tb, tc;
  a.RenderDcgm(2, ta);
  b.RenderDcgm(2, tb);
  c.RenderDcgm(2, tc);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  ta.clear();
  tb.clear();
  a.RenderServer(2, ta);
  b.RenderServer(2, tb);
  EXPECT_EQ(ta, tb);
  EXPECT_FALSE(ta.empty());
}

}  // namespace
}  // namespace gpucanary::sim
