// The judge engine on hand-built ticks (no simulator): the switch of a
// canary node after its restart, history, verdicts without --release-start,
// missing data and out-of-order ticks.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/judge/test_fleet.h"
#include "analysis/policy/policy.h"

namespace gpucanary::analysis {
namespace {

constexpr std::int64_t kT0 = 1764680000;

// 2 canary nodes and 2 baseline nodes of 2 GPUs each; every tick carries
// each GPU's SM clock and clock-event reasons and each node's token counter
// and time-per-output-token histogram sum/count, shaped by callbacks.
struct Fleet {
  std::vector<GpuInfo> gpus;
  std::vector<NodeInfo> nodes;
  std::vector<MetricInfo> metrics = {
      {"DCGM_FI_DEV_SM_CLOCK", MetricKind::kGauge},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", MetricKind::kGauge},
      {"vllm:generation_tokens_total", MetricKind::kCounter},
      {"vllm:time_per_output_token_seconds_sum", MetricKind::kCounter},
      {"vllm:time_per_output_token_seconds_count", MetricKind::kCounter},
      {"vllm:request_errors_total", MetricKind::kCounter},
      {"DCGM_FI_DEV_PCIE_LINK_WIDTH", MetricKind::kGauge},
      {"DCGM_FI_DEV_PCIE_LINK_GEN", MetricKind::kGauge},
      {"DCGM_FI_DEV_GPU_UTIL", MetricKind::kGauge},
      {"DCGM_FI_DEV_GPU_TEMP", MetricKind::kGauge},
      {"DCGM_FI_DEV_POWER_USAGE", MetricKind::kGauge},
      {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", MetricKind::kGauge},
  };
  // (gpu, tick) -> PCIe link {width, gen} (no max-link fields, as many
  // exporters) and utilisation; unset: not exported.
  std::function<std::pair<double, double>(int, std::int64_t)> link;
  std::function<double(int, std::int64_t)> util;
  // (gpu, tick) -> temperature, C; power and enforced limit, W; SM clock,
  // MHz (unset: 1050 under the power brake, else about 1980). Unset: not
  // exported.
  std::function<double(int, std::int64_t)> temp;
  std::function<std::pair<double, double>(int, std::int64_t)> power;
  std::function<double(int, std::int64_t)> clock;
  bool reasons_exported = true;
  // Each node's token counter; a node not serving restarts (its counter
  // starts again from 0 when it is back), unless `hot_reload` (the gaps are
  // lost scrapes).
  std::vector<double> counters;
  std::vector<bool> down;
  bool hot_reload = false;
  // (node, tick) -> serving? ; (gpu, tick) -> reasons ; (node) -> TPOT factor
  std::function<bool(int, std::int64_t)> serving = [](int, std::int64_t) { return true; };
  std::function<std::uint64_t(int, std::int64_t)> reasons = [](int, std::int64_t) { return 0; };
  std::function<double(int, std::int64_t)> tpot_factor = [](int, std::int64_t) { return 1.0; };
  // Errors per 1,000 tokens, Poisson.
  std::function<double(int, std::int64_t)> error_rate = [](int, std::int64_t) { return 1.0; };
  std::mt19937_64 rng{3};

  Fleet() { judge_testing::AddTwoByTwoNodes(2, "H100", gpus, nodes); }
  Catalog catalog() const { return Catalog{&gpus, &nodes, &metrics}; }

  Tick Make(std::int64_t t) {
    std::normal_distribution<double> noise(0, 1);
    Tick tick;
    tick.time_s = t;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const std::uint64_t r = reasons(static_cast<int>(g), t);
      const double mhz = clock              ? clock(static_cast<int>(g), t) + 5 * noise(rng)
                         : (r & 0x80U) != 0 ? 1050
                                            : 1980 + 5 * noise(rng);
      tick.gpu_points.push_back({static_cast<std::int32_t>(g), 0, mhz, std::nullopt});
      if (reasons_exported) {
        tick.gpu_points.push_back(
            {static_cast<std::int32_t>(g), 1, static_cast<double>(r), std::nullopt});
      }
      if (power) {
        const auto [watts, limit] = power(static_cast<int>(g), t);
        tick.gpu_points.push_back({static_cast<std::int32_t>(g), 10, watts, std::nullopt});
        if (!std::isnan(limit)) {
          tick.gpu_points.push_back({static_cast<std::int32_t>(g), 11, limit, std::nullopt});
        }
      }
      if (link) {
        const auto [width, gen] = link(static_cast<int>(g), t);
        tick.gpu_points.push_back({static_cast<std::int32_t>(g), 6, width, std::nullopt});
        tick.gpu_points.push_back({static_cast<std::int32_t>(g), 7, gen, std::nullopt});
      }
      if (util) {
        tick.gpu_points.push_back(
            {static_cast<std::int32_t>(g), 8, util(static_cast<int>(g), t), std::nullopt});
      }
      if (temp) {
        tick.gpu_points.push_back(
            {static_cast<std::int32_t>(g), 9, temp(static_cast<int>(g), t), std::nullopt});
      }
      tick.gpus.push_back(static_cast<std::int32_t>(g));
    }
    counters.resize(nodes.size(), 1e6);
    down.resize(nodes.size(), false);
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (!serving(static_cast<int>(n), t)) {
        down[n] = true;  // the server restarts: its counter starts again from 0
        continue;
      }
      if (down[n] && !hot_reload) counters[n] = 0;
      down[n] = false;
      const double tokens = 2000 * (1 + 0.05 * noise(rng));
      counters[n] += tokens;
      const double tpot = 0.016 * tpot_factor(static_cast<int>(n), t) * (1 + 0.01 * noise(rng));
      tick.node_points.push_back({static_cast<std::int32_t>(n), 2, counters[n], tokens});
      tick.node_points.push_back({static_cast<std::int32_t>(n), 3, 1e3, tokens * tpot});
      tick.node_points.push_back({static_cast<std::int32_t>(n), 4, 1e6, tokens});
      std::poisson_distribution<int> errors(error_rate(static_cast<int>(n), t) * tokens / 1000);
      tick.node_points.push_back(
          {static_cast<std::int32_t>(n), 5, 0, static_cast<double>(errors(rng))});
      tick.nodes.push_back(static_cast<std::int32_t>(n));
    }
    return tick;
  }
};

Report JudgeFleet(Fleet& fleet, std::optional<std::int64_t> release_start, std::int64_t seconds,
                  std::vector<Report>* snapshots = nullptr,
                  const Policy& policy = DefaultPolicy()) {
  Judge judge({.policy = policy, .release_start_s = release_start});
  for (std::int64_t s = 0; s < seconds; ++s) {
    judge.Add(fleet.Make(kT0 + s), fleet.catalog());
    if (snapshots != nullptr && s % 60 == 59) snapshots->push_back(judge.Snapshot());
  }
  return judge.Finish();
}

const Cause* Find(const Report& r, std::string_view kind, std::string_view scope) {
  for (const Cause& c : r.causes) {
    if (vocab::Name(c.kind) == kind && vocab::Name(c.scope) == scope) return &c;
  }
  return nullptr;
}

TEST(JudgeUnitTest, HealthyCanaryPassesWithoutReleaseStart) {
  Fleet fleet;
  std::vector<Report> snapshots;
  const Report r = JudgeFleet(fleet, std::nullopt, 400, &snapshots);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  ASSERT_TRUE(r.decided_at.has_value());
  // Not before min_service_seconds (30) seconds of the critical per-token
  // latency, and well within the first minute and a half.
  EXPECT_GE(*r.decided_at, static_cast<double>(kT0 + 29));
  EXPECT_LE(*r.decided_at, static_cast<double>(kT0 + 90));
  EXPECT_EQ(snapshots.front().verdict, Verdict::kPass);
  EXPECT_TRUE(r.causes.empty());
  // Before that, inconclusive: never pass or fail on a few seconds.
  Fleet early;
  Judge judge({.policy = DefaultPolicy(), .release_start_s = std::nullopt});
  for (std::int64_t s = 0; s < 25; ++s) judge.Add(early.Make(kT0 + s), early.catalog());
  EXPECT_EQ(judge.Snapshot().verdict, Verdict::kInconclusive);
}

TEST(JudgeUnitTest, SlowerCanaryFailsAsSoftwareRegression) {
  Fleet fleet;
  fleet.tpot_factor = [](int node, std::int64_t) { return node < 2 ? 1.10 : 1.0; };
  const Report r = JudgeFleet(fleet, std::nullopt, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const Cause* c = Find(r, "software_regression", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->failing);
  ASSERT_FALSE(r.metrics.empty());
  EXPECT_EQ(r.metrics[0].name, "per_token_latency");  // the measure, from legacy vLLM names
  EXPECT_EQ(r.metrics[0].result, "high");
  EXPECT_NEAR(r.metrics[0].change, 0.10, 0.01);
  EXPECT_GT(r.metrics[0].interval_lo, 0.03);  // beyond the 3% margin
}

TEST(JudgeUnitTest, BrakeOnEveryCanaryGpuFailsOnTheFourthSecond) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  // The canary nodes restart for 10 s and serve the release from +10 s.
  fleet.serving = [&](int node, std::int64_t t) {
    return node >= 2 || t < start || t >= start + 10;
  };
  fleet.reasons = [&](int gpu, std::int64_t t) -> std::uint64_t {
    return gpu < 4 && t >= start + 30 ? 0x88 : 0;
  };
  const Report r = JudgeFleet(fleet, start, 300);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  ASSERT_TRUE(r.decided_at.has_value());
  EXPECT_EQ(*r.decided_at, static_cast<double>(start + 33));
  const Cause* c = Find(r, "power_brake", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->gpus.size(), 4U);
  EXPECT_EQ(c->since, static_cast<double>(start + 30));
  ASSERT_FALSE(c->evidence.empty());
  EXPECT_EQ(c->evidence[0].metric, "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_NEAR(c->evidence[0].canary, 1050, 1);
  EXPECT_NEAR(c->evidence[0].baseline, 1980, 10);
}

TEST(JudgeUnitTest, BrakeThatStartedBeforeTheNodeSwitchedIsTheNodes) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  // canary-0 restarts for 40 s (a big model loading); its GPUs brake from
  // +5 s, while it still runs nothing: the node, not the release.
  fleet.serving = [&](int node, std::int64_t t) {
    return node != 0 || t < start || t >= start + 40;
  };
  fleet.reasons = [&](int gpu, std::int64_t t) -> std::uint64_t {
    return gpu < 2 && t >= start + 5 ? 0x88 : 0;
  };
  const Report r = JudgeFleet(fleet, start, 400);
  EXPECT_NE(r.verdict, Verdict::kFail);
  const Cause* c = Find(r, "power_brake", "node");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->nodes, std::vector<std::string>{"canary-0"});
  EXPECT_FALSE(c->failing);
}

// The seed's rule: a brake held more than 3 s on a canary GPU after its
// release halts the canary, though a clean canary node ran the release
// longer; with halt_on_canary off, that witness makes it the node's.
TEST(JudgeUnitTest, BrakeOnOneCanaryNodeHaltsUnlessWitnessesAreAllowed) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  fleet.reasons = [&](int gpu, std::int64_t t) -> std::uint64_t {
    return gpu < 2 && t >= start + 150 ? 0x88 : 0;  // canary-0 only, long after the switch
  };
  const Report halted = JudgeFleet(fleet, start, 400);
  EXPECT_EQ(halted.verdict, Verdict::kFail);
  const Cause* release = Find(halted, "power_brake", "release");
  ASSERT_NE(release, nullptr);
  EXPECT_EQ(release->gpus, (std::vector<std::string>{"canary-0/0", "canary-0/1"}));
  ASSERT_TRUE(halted.decided_at.has_value());
  EXPECT_EQ(*halted.decided_at, static_cast<double>(start + 150 + 3));  // the 4th second

  Policy witnesses = DefaultPolicy();
  witnesses.rules.throttle.halt_on_canary = false;
  const Report r = JudgeFleet(fleet, start, 400, nullptr, witnesses);
  EXPECT_NE(r.verdict, Verdict::kFail);
  const Cause* c = Find(r, "power_brake", "node");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->nodes, std::vector<std::string>{"canary-0"});
}

// Without max-link fields the link a GPU should have is its model's peers':
// a canary GPU that trains at x8 where every peer runs x16 after the release
// halts the canary; a baseline GPU whose idle link drops to Gen1 (power
// saving) is not a downtrain.
TEST(JudgeUnitTest, PcieLinkIsJudgedAgainstPeersAndIdleGenerationsAreNot) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  fleet.util = [&](int gpu, std::int64_t t) {
    return gpu >= 4 && t >= start + 100 && t < start + 160 ? 0.0 : 90.0;
  };
  fleet.link = [&](int gpu, std::int64_t t) {
    if (gpu == 0 && t >= start + 120) return std::pair{8.0, 5.0};
    if (gpu >= 4 && t >= start + 100 && t < start + 160) return std::pair{16.0, 1.0};
    return std::pair{16.0, 5.0};
  };
  const Report r = JudgeFleet(fleet, start, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const Cause* c = Find(r, "pcie_downtrain", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->gpus, std::vector<std::string>{"canary-0/0"});
  EXPECT_NE(c->summary.find("x8 Gen5 (peers x16 Gen5)"), std::string::npos) << c->summary;
  EXPECT_EQ(Find(r, "pcie_downtrain", "node"), nullptr);  // the idle Gen1 baseline links
  ASSERT_TRUE(r.decided_at.has_value());
  EXPECT_EQ(*r.decided_at, static_cast<double>(start + 120 + 3));

  Fleet idle_only = Fleet();
  idle_only.util = fleet.util;
  idle_only.link = [&](int gpu, std::int64_t t) {
    if (gpu >= 4 && t >= start + 100 && t < start + 160) return std::pair{16.0, 1.0};
    return std::pair{16.0, 5.0};
  };
  const Report healthy = JudgeFleet(idle_only, start, 400);
  EXPECT_EQ(healthy.verdict, Verdict::kPass);
  EXPECT_TRUE(healthy.causes.empty());
}

// Service errors are counted per generated token: ten times the baseline's
// error rate fails; the same rate does not.
TEST(JudgeUnitTest, ServiceErrorsAreARatePerToken) {
  Result<Policy> policy = ParsePolicy(
      "metrics:\n"
      "  - {name: \"vllm:time_per_output_token_seconds\", kind: mean, better: lower, margin: "
      "0.03, critical: true}\n"
      "  - {name: \"vllm:request_errors_total\", kind: count, better: lower, margin: 1.0}\n",
      "p.yaml");
  ASSERT_TRUE(policy.has_value()) << policy.error().message();
  Fleet same;
  const Report ok = JudgeFleet(same, std::nullopt, 300, nullptr, *policy);
  EXPECT_EQ(ok.verdict, Verdict::kPass);
  Fleet worse;
  worse.error_rate = [](int node, std::int64_t) { return node < 2 ? 10.0 : 1.0; };
  const Report bad = JudgeFleet(worse, std::nullopt, 300, nullptr, *policy);
  EXPECT_EQ(bad.verdict, Verdict::kFail);
  ASSERT_EQ(bad.metrics.size(), 2U);
  EXPECT_EQ(bad.metrics[1].result, "high");
  EXPECT_NEAR(bad.metrics[1].canary / bad.metrics[1].baseline, 10.0, 1.0);
  EXPECT_NEAR(bad.metrics[1].baseline * 1000, 1.0, 0.1);  // errors per 1,000 tokens
}

// The canary nodes restart into the release at +60 s, serving from +70 s.
bool RestartIntoTheReleaseAt60(int node, std::int64_t t) {
  return node >= 2 || t < kT0 + 60 || t >= kT0 + 70;
}

// A heat event (docs/analysis-method.md, "Fleet-wide events"): from +100 s
// the canary GPUs warm `canary_rate` C a second from 55 C and hold at 86 C
// with SW thermal slowdown (0x20); the baseline's warm `baseline_rate` C a
// second up to `baseline_to`.
Fleet Warming(double canary_rate, double baseline_rate, double baseline_to) {
  Fleet fleet;
  fleet.serving = RestartIntoTheReleaseAt60;
  auto degrees = [=](int gpu, std::int64_t t) {
    const auto dt = static_cast<double>(std::max<std::int64_t>(t - kT0 - 100, 0));
    return gpu < 4 ? std::min(55 + canary_rate * dt, 86.0)
                   : std::min(55 + baseline_rate * dt, baseline_to);
  };
  fleet.temp = degrees;
  fleet.reasons = [=](int gpu, std::int64_t t) -> std::uint64_t {
    return degrees(gpu, t) >= 86 ? 0x20 : 0;
  };
  return fleet;
}

// The canary racks warm faster and reach the slowdown 21 s before the
// baseline (at +141 s; the baseline 9 C cooler, warming, when the rule's
// 3 s are up): the room, not the release.
TEST(JudgeUnitTest, HeatEventThatReachesTheCanaryFirstIsTheRooms) {
  Fleet fleet = Warming(0.75, 0.5, 86);
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_NE(r.verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, "thermal_throttle", "release"), nullptr);
  EXPECT_NE(Find(r, "thermal_throttle", "fleet"), nullptr);
}

// The canary GPUs alone overheat (86 C from +131 s): the release's, on the
// rule's fourth second (no wait: the baseline is not warming).
TEST(JudgeUnitTest, CanaryHeatingAloneFailsAtOnce) {
  Fleet fleet = Warming(1.0, 0, 55);
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  ASSERT_NE(Find(r, "thermal_throttle", "release"), nullptr);
  ASSERT_TRUE(r.decided_at.has_value());
  EXPECT_EQ(*r.decided_at, static_cast<double>(kT0 + 134));
}

// The baseline warms too but stops at 70 C, 16 C short of the canary's
// slowdown: the canary's throttling is the release's, decided within the
// 30 s the judge waits for a warming baseline to follow.
TEST(JudgeUnitTest, CanaryThrottlingWhileTheBaselineStaysCoolerFails) {
  Fleet fleet = Warming(1.0, 0.5, 70);
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  ASSERT_NE(Find(r, "thermal_throttle", "release"), nullptr);
  ASSERT_TRUE(r.decided_at.has_value());
  EXPECT_GE(*r.decided_at, static_cast<double>(kT0 + 134));
  EXPECT_LE(*r.decided_at, static_cast<double>(kT0 + 134 + 30));
}

// A release deployed without a restart (a hot reload: the token counters
// run on) brakes every canary GPU from its first second; 40 s later two
// scrapes of canary-0's server are lost. A lost scrape is no restart (the
// counter comes back where it was): the brake is the release's, not
// "already there before" a switch the judge would date to the lost scrapes.
TEST(JudgeUnitTest, LostScrapesAfterAHotReloadAreNoRestart) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  fleet.hot_reload = true;
  fleet.serving = [=](int node, std::int64_t t) {
    return node != 0 || t < start + 40 || t >= start + 42;
  };
  fleet.reasons = [=](int gpu, std::int64_t t) -> std::uint64_t {
    return gpu < 4 && t >= start ? 0x80 : 0;
  };
  const Report r = JudgeFleet(fleet, start, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const Cause* c = Find(r, "power_brake", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->gpus.size(), 4U);
}

// A canary GPU that overheats from before the release (its node lost
// airflow), under a hot reload: its streak breaks for 5 s after the release
// start and comes back. Both streaks are the node's (the second is a kind
// the GPU showed before the release), not the release's.
TEST(JudgeUnitTest, AStreakBackAfterTheReleaseOfAKindSeenBeforeIsTheNodes) {
  Fleet fleet;
  const std::int64_t start = kT0 + 60;
  fleet.hot_reload = true;
  fleet.reasons = [=](int gpu, std::int64_t t) -> std::uint64_t {
    return gpu == 0 && (t < start + 20 || t >= start + 25) ? 0x20 : 0;
  };
  fleet.temp = [](int gpu, std::int64_t) { return gpu == 0 ? 86.0 : 50.0; };
  const Report r = JudgeFleet(fleet, start, 400);
  EXPECT_NE(r.verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, "thermal_throttle", "release"), nullptr);
  EXPECT_NE(Find(r, "thermal_throttle", "node"), nullptr);
}

// One canary GPU in HW thermal slowdown with HW slowdown (0x48, clock
// halved) for 8 s at 45 C, the baseline at 48 C: no room is hot at 45 C
// (the slowdown thresholds are near 87 C), so a baseline "as hot" explains
// nothing: the release's.
TEST(JudgeUnitTest, ThermalReasonsOnACoolGpuAreNotTheRooms) {
  Fleet fleet;
  fleet.serving = RestartIntoTheReleaseAt60;
  auto slowed = [](int gpu, std::int64_t t) { return gpu == 1 && t >= kT0 + 140 && t < kT0 + 148; };
  fleet.reasons = [=](int gpu, std::int64_t t) -> std::uint64_t {
    return slowed(gpu, t) ? 0x48 : 0;
  };
  fleet.clock = [=](int gpu, std::int64_t t) { return slowed(gpu, t) ? 950.0 : 1980.0; };
  fleet.temp = [](int gpu, std::int64_t) { return gpu < 4 ? 45.0 : 48.0; };
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, "thermal_throttle", "fleet"), nullptr);
  EXPECT_EQ(Find(r, "hw_slowdown", "fleet"), nullptr);
  // Nor is it heat at all: a HW slowdown signal on a cool GPU.
  EXPECT_EQ(Find(r, "thermal_throttle", "release"), nullptr);
  const Cause* c = Find(r, "hw_slowdown", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->summary.find("at 45 C"), std::string::npos) << c->summary;
  // The evidence is the throttled seconds': the clock halved for 8 s, not
  // its mean over the rest of the recording.
  ASSERT_FALSE(c->evidence.empty());
  EXPECT_EQ(c->evidence[0].metric, "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_NEAR(c->evidence[0].canary, 950, 15) << c->summary;
  EXPECT_NE(c->summary.find("for 8 s"), std::string::npos) << c->summary;
}

// Power capping without throttle reasons (nvidia-smi logs, exporters
// without field 112): the canary nodes restart into the release at +60 s;
// from +75 s `canary` and `baseline` give each GPU's (power, limit, clock).
Fleet PowerCapped(const std::function<std::array<double, 3>(std::int64_t)>& canary,
                  const std::function<std::array<double, 3>(std::int64_t)>& baseline) {
  Fleet fleet;
  fleet.reasons_exported = false;
  fleet.serving = RestartIntoTheReleaseAt60;
  auto at = [=](int gpu, std::int64_t t) {
    return t < kT0 + 75 ? std::array<double, 3>{560, 700, 1980}
                        : (gpu < 4 ? canary(t) : baseline(t));
  };
  fleet.power = [=](int gpu, std::int64_t t) {
    const std::array<double, 3> v = at(gpu, t);
    return std::pair<double, double>{v[0], v[1]};
  };
  fleet.clock = [=](int gpu, std::int64_t t) { return at(gpu, t)[2]; };
  return fleet;
}

// The facility caps every GPU at 330 W: every GPU sits at the cap, the
// baseline's clock at 1320 MHz and the canary's 9% lower (GPUs differ in
// the clock a watt buys). The room's cap, not the release.
TEST(JudgeUnitTest, FacilityPowerCapWithoutReasonsIsTheFleets) {
  Fleet fleet = PowerCapped(
      [](std::int64_t) {
        return std::array<double, 3>{328, 330, 1200};
      },
      [](std::int64_t) {
        return std::array<double, 3>{328, 330, 1320};
      });
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_NE(r.verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, "power_cap", "release"), nullptr);
  EXPECT_NE(Find(r, "power_cap", "fleet"), nullptr);
}

// No facility event: the release draws more power and sits at the 700 W
// limit at 1500 MHz while the baseline runs 560 W at full clock. The
// release's power cap.
TEST(JudgeUnitTest, ReleaseHeldAtItsPowerLimitWithoutReasonsFails) {
  Fleet fleet = PowerCapped(
      [](std::int64_t) {
        return std::array<double, 3>{695, 700, 1500};
      },
      [](std::int64_t) {
        return std::array<double, 3>{560, 700, 1980};
      });
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(Find(r, "power_cap", "release"), nullptr);
}

// The baseline runs at its 700 W limit at full clock (a power-hungry
// workload, no cap holding it); the release holds the clock at 1500 MHz at
// the same power. The release's: the baseline's clock is not held down.
TEST(JudgeUnitTest, BaselineAtItsLimitAtFullClockExplainsNothing) {
  Fleet fleet = PowerCapped(
      [](std::int64_t) {
        return std::array<double, 3>{695, 700, 1500};
      },
      [](std::int64_t) {
        return std::array<double, 3>{690, 700, 1980};
      });
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(Find(r, "power_cap", "release"), nullptr);
}

// Neither reasons, nor the enforced limit, nor the model's name (a
// dcgm-exporter without modelName): the canary's power sits flat at 685 W
// (±0.3%) while its clock wanders 1200-1400 MHz with the work, the
// baseline's power follows its load at full clock. A power controller
// holding its setpoint: `power_cap`, not a slowdown of unknown reason.
TEST(JudgeUnitTest, PowerPinnedWithoutLimitOrModelIsThePowerCap) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto wave = [](std::int64_t t, double period) {
    return std::sin(2 * 3.141592653589793 * static_cast<double>(t) / period);
  };
  Fleet fleet = PowerCapped(
      [=](std::int64_t t) {
        return std::array<double, 3>{685 + 2 * wave(t, 7), nan, 1300 + 100 * wave(t, 41)};
      },
      [=](std::int64_t t) {
        return std::array<double, 3>{580 + 40 * wave(t, 41), nan, 1980};
      });
  for (GpuInfo& g : fleet.gpus) g.model_name.clear();
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const Cause* cap = Find(r, "power_cap", "release");
  ASSERT_NE(cap, nullptr);
  EXPECT_NE(cap->summary.find("held at its ceiling as the clock fell"), std::string::npos)
      << cap->summary;
  EXPECT_EQ(Find(r, "hw_slowdown", "release"), nullptr);
}

// The same missing limit and model, but the canary's clock falls to 1500
// MHz with its power falling with it (450 W, steady, against the baseline's
// 560 W at full clock): the same work at a lower clock and less power is no
// power controller at a ceiling. A slowdown whose reason the telemetry does
// not give, said so, not the power cap.
TEST(JudgeUnitTest, ClockDownWithLessPowerIsNotThePowerCap) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Fleet fleet = PowerCapped(
      [=](std::int64_t) {
        return std::array<double, 3>{450, nan, 1500};
      },
      [=](std::int64_t) {
        return std::array<double, 3>{560, nan, 1980};
      });
  for (GpuInfo& g : fleet.gpus) g.model_name.clear();
  const Report r = JudgeFleet(fleet, kT0 + 60, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, "power_cap", "release"), nullptr);
  const Cause* slow = Find(r, "hw_slowdown", "release");
  ASSERT_NE(slow, nullptr);
  EXPECT_NE(slow->summary.find("does not report"), std::string::npos) << slow->summary;
}

// A canary whose per-token latency is `slower` times the baseline's, with
// 25% noise per node-second (a bursty server), judged for `seconds`.
Report NoisyLatency(double slower, std::uint64_t seed, std::int64_t seconds,
                    const Policy& policy = DefaultPolicy()) {
  Fleet fleet;
  fleet.rng.seed(seed);
  auto noise = std::make_shared<std::mt19937_64>(seed + 1);
  fleet.tpot_factor = [noise, slower](int node, std::int64_t) {
    std::normal_distribution<double> n(0, 0.25);
    return std::max(0.2, (node < 2 ? slower : 1.0) * (1 + n(*noise)));
  };
  return JudgeFleet(fleet, std::nullopt, seconds, nullptr, policy);
}

// Issue 18: a pass is decided on its own interval, at pass_alpha (a pass
// needs every required metric shown not worse: no split over metrics), a
// failure on the comparison's share of alpha. A healthy canary within the
// margin passes sooner than when a pass needed the failure interval; its
// report shows the interval the pass was decided on, inside the margin.
TEST(JudgeUnitTest, APassIsDecidedOnThePassInterval) {
  Policy strict = DefaultPolicy();
  strict.pass_alpha = 1e-4;  // about each comparison's share of alpha: as before
  const Report r = NoisyLatency(1.01, 7, 600);
  const Report s = NoisyLatency(1.01, 7, 600, strict);
  ASSERT_EQ(r.verdict, Verdict::kPass);
  ASSERT_TRUE(r.decided_at.has_value());
  const double strict_at = s.decided_at.value_or(kT0 + 600);
  EXPECT_LT(*r.decided_at + 20, strict_at)
      << "pass_alpha 0.05 at " << *r.decided_at - kT0 << " s, 1e-4 at " << strict_at - kT0 << " s";
  const MetricResult& m = r.metrics[0];
  ASSERT_EQ(m.name, "per_token_latency");
  EXPECT_EQ(m.result, "pass");
  EXPECT_LT(m.interval_hi, m.margin);
  EXPECT_LE(m.interval_lo, m.change);
  EXPECT_GE(m.interval_hi, m.change);
}

// The bound the pass interval keeps: a release 5% slower per token (the
// margin is 3%) at the same noise is not passed in 40 seeds (at most
// pass_alpha / 2 of them expected), while its estimates read the 5%.
TEST(JudgeUnitTest, AReleaseWorseThanItsMarginIsNotPassed) {
  int passed = 0;
  double sum = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Report r = NoisyLatency(1.05, seed, 600);
    passed += r.verdict == Verdict::kPass;
    ASSERT_EQ(r.metrics[0].name, "per_token_latency");
    sum += r.metrics[0].change;
  }
  EXPECT_LE(passed, 1);
  EXPECT_NEAR(sum / 40, 0.05, 0.01);
}

TEST(JudgeUnitTest, NoDataIsNeverZeroAndOutOfOrderTicksAreIgnored) {
  Fleet fleet;
  Judge judge({.policy = DefaultPolicy(), .release_start_s = std::nullopt});
  for (std::int64_t s = 0; s < 25; ++s) judge.Add(fleet.Make(kT0 + s), fleet.catalog());
  judge.Add(fleet.Make(kT0 + 10), fleet.catalog());  // back in time
  const Report r = judge.Finish();
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("out of time order") != std::string::npos;
  EXPECT_TRUE(noted);
  // Metrics the ticks never carry are no_data, with NaN values, not zeros.
  for (const MetricResult& m : r.metrics) {
    if (m.name != "DCGM_FI_PROF_SM_OCCUPANCY") continue;
    EXPECT_EQ(m.result, "no_data");
    EXPECT_TRUE(std::isnan(m.canary));
    EXPECT_TRUE(std::isnan(m.baseline));
  }
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);  // 25 s: fewer than min_service_seconds
}

}  // namespace
}  // namespace gpucanary::analysis
