// Every scenario shipped in scenarios/ produces the telemetry signature of its
// fault (docs/simulator.md, "Shipped scenarios"): each test runs the file on
// simulated time and compares the faulted GPUs with the rest of the fleet,
// and with themselves before the fault, the way an operator would read the
// dcgm-exporter and vLLM metrics.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dcgm/exposition.h"
#include "sim/engine.h"
#include "sim/scenario.h"

namespace gpucanary::sim {
namespace {

// One run of a scenario, sampled every simulated second: what a 1 s scrape
// of every GPU and every vLLM server would have seen.
class ScenarioRun {
 public:
  explicit ScenarioRun(const std::string& name) {
    Result<Scenario> s = LoadScenario(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/" + name);
    if (!s) {
      ADD_FAILURE() << s.error().message();
      return;
    }
    Engine engine(*s);
    const auto seconds = static_cast<int>(s->duration_s);
    for (int t = 0; t < seconds; ++t) {
      for (int k = 0; k < 10; ++k) engine.Step();
      Second sec;
      for (std::size_t n = 0; n < engine.node_count(); ++n) {
        const SimNode& node = engine.fleet().nodes()[n];
        std::vector<std::optional<dcgm::Readings>> gpus;
        for (std::size_t g = 0; g < node.gpus.size(); ++g) {
          if (engine.GpuReported(n, g)) {
            gpus.emplace_back(node.gpus[g].model.Read());
          } else {
            gpus.emplace_back(std::nullopt);
          }
        }
        sec.gpus.push_back(std::move(gpus));
        const Engine::NodeView v = engine.node_view(n);
        sec.vllm.push_back(v.server ? std::optional<VllmState>(v.server->state()) : std::nullopt);
      }
      seconds_.push_back(std::move(sec));
    }
    truth_ = engine.Truth();
  }

  // Mean of `field` over seconds [t0, t1) on GPUs `gpus` of node `node`
  // (index in file order); NaN when no GPU reported it.
  double Mean(dcgm::ExporterField field, std::size_t node, std::vector<int> gpus, int t0,
              int t1) const {
    double sum = 0;
    int n = 0;
    for (int t = t0; t < t1; ++t) {
      for (int g : gpus) {
        const auto& r =
            seconds_.at(static_cast<std::size_t>(t)).gpus.at(node).at(static_cast<std::size_t>(g));
        if (!r || !r->Get(field)) continue;
        sum += *r->Get(field);
        ++n;
      }
    }
    return n > 0 ? sum / n : std::nan("");
  }

  // Share of (second, GPU) samples in the window whose reasons have `bits`.
  double ReasonShare(std::uint64_t bits, std::size_t node, std::vector<int> gpus, int t0,
                     int t1) const {
    int hit = 0;
    int n = 0;
    for (int t = t0; t < t1; ++t) {
      for (int g : gpus) {
        const auto& r =
            seconds_.at(static_cast<std::size_t>(t)).gpus.at(node).at(static_cast<std::size_t>(g));
        if (!r) continue;
        const auto reasons =
            static_cast<std::uint64_t>(*r->Get(dcgm::ExporterField::kClockEventReasons));
        hit += (reasons & bits) == bits ? 1 : 0;
        ++n;
      }
    }
    return n > 0 ? static_cast<double>(hit) / n : 0;
  }

  // A field's value at second t on one GPU (a counter, say).
  std::optional<double> At(dcgm::ExporterField field, std::size_t node, int gpu, int t) const {
    const auto& r =
        seconds_.at(static_cast<std::size_t>(t)).gpus.at(node).at(static_cast<std::size_t>(gpu));
    return r ? r->Get(field) : std::nullopt;
  }

  // Generated tokens/s of a node's server over [t0, t1) (counter increase).
  double TokensPerSecond(std::size_t node, int t0, int t1) const {
    const auto& a = seconds_.at(static_cast<std::size_t>(t0)).vllm.at(node);
    const auto& b = seconds_.at(static_cast<std::size_t>(t1)).vllm.at(node);
    if (!a || !b) return std::nan("");
    return (b->generation_tokens_total - a->generation_tokens_total) / (t1 - t0);
  }

  // p99 e2e latency of a node's requests that finished in [t0, t1).
  double P99Latency(std::size_t node, int t0, int t1) const {
    const auto& a = seconds_.at(static_cast<std::size_t>(t0)).vllm.at(node);
    const auto& b = seconds_.at(static_cast<std::size_t>(t1)).vllm.at(node);
    if (!a || !b) return std::nan("");
    return HistogramQuantile(
        HistogramDelta(b->e2e_request_latency_seconds, a->e2e_request_latency_seconds), 0.99);
  }

  // Mean e2e latency (histogram sum / count) of requests finished in [t0, t1).
  double MeanLatency(std::size_t node, int t0, int t1) const {
    const auto& a = seconds_.at(static_cast<std::size_t>(t0)).vllm.at(node);
    const auto& b = seconds_.at(static_cast<std::size_t>(t1)).vllm.at(node);
    if (!a || !b) return std::nan("");
    const auto d = HistogramDelta(b->e2e_request_latency_seconds, a->e2e_request_latency_seconds);
    return d.count > 0 ? d.sum / static_cast<double>(d.count) : std::nan("");
  }

  bool ServerUp(std::size_t node, int t) const {
    return seconds_.at(static_cast<std::size_t>(t)).vllm.at(node).has_value();
  }

  // The fault truth records of `kind`.
  std::vector<TruthRecord> Faults(const std::string& kind) const {
    std::vector<TruthRecord> out;
    for (const TruthRecord& r : truth_) {
      if (r.type == TruthRecord::kFault && vocab::Name(r.kind) == kind) out.push_back(r);
    }
    return out;
  }

 private:
  struct Second {
    std::vector<std::vector<std::optional<dcgm::Readings>>> gpus;  // [node][gpu]
    std::vector<std::optional<VllmState>> vllm;                    // [node]
  };
  std::vector<Second> seconds_;
  std::vector<TruthRecord> truth_;
};

const std::vector<int> kAll = {0, 1, 2, 3, 4, 5, 6, 7};
constexpr std::size_t kNode2 = 1, kNode3 = 2, kNode4 = 3, kNode5 = 4, kNode6 = 5, kNode7 = 6,
                      kNode8 = 7, kNode1 = 0;

TEST(ScenarioSignatureTest, HealthyRolloutLeavesNoMarkOnTheCanary) {
  ScenarioRun run("healthy-rollout.yaml");
  for (dcgm::ExporterField f : {dcgm::ExporterField::kSmClock, dcgm::ExporterField::kPowerUsage,
                                dcgm::ExporterField::kDramActive}) {
    const double canary = run.Mean(f, kNode4, kAll, 150, 290);
    const double base = run.Mean(f, kNode1, kAll, 150, 290);
    EXPECT_NEAR(canary / base, 1.0, 0.08) << dcgm::DcgmFamily(f).name;
  }
  EXPECT_EQ(run.ReasonShare(0x80, kNode4, kAll, 60, 600), 0);
  EXPECT_NEAR(run.TokensPerSecond(kNode4, 150, 290) / run.TokensPerSecond(kNode1, 150, 290), 1.0,
              0.15);
  EXPECT_TRUE(run.Faults("power_brake").empty());
  // After the full rollout and the even split every node serves again.
  for (std::size_t n = 0; n < 8; ++n) EXPECT_TRUE(run.ServerUp(n, 599)) << n;
}

TEST(ScenarioSignatureTest, PowerBrakeReleaseHoldsTheCanaryAtTheBrakeFloor) {
  ScenarioRun run("power-brake.yaml");
  EXPECT_GT(run.ReasonShare(0x88, kNode4, kAll, 130, 600), 0.95);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode4, kAll, 130, 600), 1050, 40);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode1, kAll, 130, 600), 1980, 40);
  EXPECT_EQ(run.ReasonShare(0x80, kNode1, kAll, 0, 600), 0);
  EXPECT_EQ(run.ReasonShare(0x80, kNode4, kAll, 0, 60), 0);  // not before the release
  const std::vector<TruthRecord> truth = run.Faults("power_brake");
  ASSERT_EQ(truth.size(), 1U);
  EXPECT_EQ(truth[0].scope, vocab::Scope::kRelease);
  EXPECT_EQ(truth[0].release, "fp8-kernel");
  EXPECT_EQ(truth[0].node, "node-4");
}

TEST(ScenarioSignatureTest, BadNodePowerBrakeHitsOnlyThatNodesGpus) {
  ScenarioRun run("bad-node-power-brake.yaml");
  EXPECT_GT(run.ReasonShare(0x88, kNode6, {0, 1, 2, 3}, 100, 600), 0.95);
  EXPECT_EQ(run.ReasonShare(0x80, kNode6, {4, 5, 6, 7}, 0, 600), 0);
  EXPECT_EQ(run.ReasonShare(0x80, kNode4, kAll, 0, 600), 0);  // the canary is fine
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode6, {0, 1, 2, 3}, 100, 600), 1050, 40);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode4, kAll, 100, 600), 1980, 40);
  const std::vector<TruthRecord> truth = run.Faults("power_brake");
  ASSERT_EQ(truth.size(), 1U);
  EXPECT_EQ(truth[0].scope, vocab::Scope::kNode);
  EXPECT_EQ(truth[0].node, "node-6");
  EXPECT_EQ(truth[0].gpus, (std::vector<int>{0, 1, 2, 3}));
}

TEST(ScenarioSignatureTest, FailingFansThrottleOnlyTheHotNode) {
  ScenarioRun run("thermal.yaml");
  EXPECT_GT(run.Mean(dcgm::ExporterField::kGpuTemp, kNode2, kAll, 300, 600), 86);
  EXPECT_LT(run.Mean(dcgm::ExporterField::kGpuTemp, kNode1, kAll, 300, 600), 80);
  EXPECT_GT(run.ReasonShare(0x20, kNode2, kAll, 300, 600), 0.5);
  EXPECT_EQ(run.ReasonShare(0x20, kNode1, kAll, 0, 600), 0);
  EXPECT_LT(run.Mean(dcgm::ExporterField::kSmClock, kNode2, kAll, 300, 600),
            0.95 * run.Mean(dcgm::ExporterField::kSmClock, kNode1, kAll, 300, 600));
  ASSERT_EQ(run.Faults("thermal_throttle").size(), 1U);
}

TEST(ScenarioSignatureTest, PowerHungryReleaseRunsIntoThePowerCap) {
  ScenarioRun run("power-cap.yaml");
  EXPECT_GT(run.ReasonShare(0x4, kNode4, kAll, 120, 600), 0.8);
  EXPECT_LT(run.ReasonShare(0x4, kNode1, kAll, 120, 600), 0.05);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kPowerUsage, kNode4, kAll, 120, 600), 693, 10);
  EXPECT_LT(run.Mean(dcgm::ExporterField::kSmClock, kNode4, kAll, 120, 600), 1900);
  const std::vector<TruthRecord> truth = run.Faults("power_cap");
  ASSERT_EQ(truth.size(), 1U);
  EXPECT_EQ(truth[0].scope, vocab::Scope::kRelease);
}

TEST(ScenarioSignatureTest, HwSlowdownHalvesTheClockWithReason0x8Alone) {
  ScenarioRun run("hw-slowdown.yaml");
  EXPECT_GT(run.ReasonShare(0x8, kNode7, kAll, 100, 600), 0.95);
  EXPECT_EQ(run.ReasonShare(0x80, kNode7, kAll, 0, 600), 0);
  EXPECT_EQ(run.ReasonShare(0x40, kNode7, kAll, 0, 600), 0);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode7, kAll, 100, 600), 990, 30);
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode1, kAll, 100, 600), 1980, 30);
}

TEST(ScenarioSignatureTest, PcieDowntrainingHalvesLinkWidthAndBytes) {
  ScenarioRun run("pcie-downtrain.yaml");
  EXPECT_EQ(run.Mean(dcgm::ExporterField::kPcieLinkWidth, kNode3, {2}, 70, 600), 8);
  EXPECT_EQ(run.Mean(dcgm::ExporterField::kPcieLinkGen, kNode3, {2}, 70, 600), 4);
  EXPECT_EQ(run.Mean(dcgm::ExporterField::kPcieLinkWidth, kNode3, {2}, 0, 60), 16);
  EXPECT_EQ(run.Mean(dcgm::ExporterField::kPcieLinkWidth, kNode3, {1}, 0, 600), 16);
  EXPECT_EQ(run.Mean(dcgm::ExporterField::kPcieMaxLinkWidth, kNode3, {2}, 70, 600), 16);
  const double before = run.Mean(dcgm::ExporterField::kPcieRxBytes, kNode3, {2}, 10, 60);
  const double after = run.Mean(dcgm::ExporterField::kPcieRxBytes, kNode3, {2}, 70, 600);
  EXPECT_LT(after, 0.5 * before);
  EXPECT_GT(*run.At(dcgm::ExporterField::kPcieReplayCounter, kNode3, 2, 599),
            *run.At(dcgm::ExporterField::kPcieReplayCounter, kNode3, 2, 70));
  // A healthy neighbour keeps its replay count from before (a non-zero
  // history, as real links have) and adds nothing.
  EXPECT_EQ(*run.At(dcgm::ExporterField::kPcieReplayCounter, kNode3, 1, 599),
            *run.At(dcgm::ExporterField::kPcieReplayCounter, kNode3, 1, 0));
}

TEST(ScenarioSignatureTest, MemoryThrashSaturatesDramWhileTensorsStall) {
  ScenarioRun run("memory-thrash.yaml");
  const double dram_canary = run.Mean(dcgm::ExporterField::kDramActive, kNode4, kAll, 150, 600);
  const double dram_base = run.Mean(dcgm::ExporterField::kDramActive, kNode1, kAll, 150, 600);
  EXPECT_GT(dram_canary, 1.4 * dram_base);
  EXPECT_LT(run.Mean(dcgm::ExporterField::kTensorActive, kNode4, kAll, 150, 600),
            run.Mean(dcgm::ExporterField::kTensorActive, kNode1, kAll, 150, 600));
  // Useful work per unit of DRAM activity falls by far more than 15%.
  const double eff_canary = run.TokensPerSecond(kNode4, 150, 599) / dram_canary;
  const double eff_base = run.TokensPerSecond(kNode1, 150, 599) / dram_base;
  EXPECT_LT(eff_canary, 0.85 * eff_base);
  ASSERT_EQ(run.Faults("memory_thrash").size(), 1U);
}

TEST(ScenarioSignatureTest, LowOccupancyReleaseCollapsesOccupancy) {
  ScenarioRun run("low-occupancy.yaml");
  const double canary = run.Mean(dcgm::ExporterField::kSmOccupancy, kNode4, kAll, 150, 600);
  const double base = run.Mean(dcgm::ExporterField::kSmOccupancy, kNode1, kAll, 150, 600);
  EXPECT_LT(canary, 0.6 * base);
  EXPECT_EQ(run.Faults("low_occupancy").size(), 1U);
}

TEST(ScenarioSignatureTest, XidFloodAndAGpuFallingOffTheBus) {
  ScenarioRun run("xid-flood.yaml");
  EXPECT_EQ(run.At(dcgm::ExporterField::kXidErrors, kNode4, 0, 300).value_or(0), 31);
  EXPECT_FALSE(run.At(dcgm::ExporterField::kXidErrors, kNode1, 0, 300).has_value());
  EXPECT_FALSE(run.At(dcgm::ExporterField::kXidErrors, kNode4, 0, 50).has_value());
  // node-8 GPU 3: XID 79, then its series vanish and the server stops.
  EXPECT_TRUE(run.At(dcgm::ExporterField::kSmClock, kNode8, 3, 199).has_value());
  EXPECT_FALSE(run.At(dcgm::ExporterField::kSmClock, kNode8, 3, 210).has_value());
  EXPECT_TRUE(run.At(dcgm::ExporterField::kSmClock, kNode8, 2, 210).has_value());
  EXPECT_EQ(run.TokensPerSecond(kNode8, 220, 300), 0);
  const std::vector<TruthRecord> truth = run.Faults("xid_errors");
  ASSERT_EQ(truth.size(), 2U);
  EXPECT_EQ(truth[0].scope, vocab::Scope::kRelease);
  EXPECT_EQ(truth[1].scope, vocab::Scope::kNode);
}

TEST(ScenarioSignatureTest, EccErrorsClimbOnOneA100) {
  ScenarioRun run("ecc-errors.yaml");
  const double sbe = *run.At(dcgm::ExporterField::kEccSbeVolTotal, kNode5, 6, 599) -
                     *run.At(dcgm::ExporterField::kEccSbeVolTotal, kNode5, 6, 60);
  EXPECT_NEAR(sbe, 2 * 540, 20);
  EXPECT_GE(*run.At(dcgm::ExporterField::kEccDbeVolTotal, kNode5, 6, 599), 4);
  EXPECT_EQ(*run.At(dcgm::ExporterField::kEccSbeVolTotal, kNode5, 5, 599), 0);
  // Correctable errors cost no speed: the clock is the healthy A100s'.
  EXPECT_NEAR(run.Mean(dcgm::ExporterField::kSmClock, kNode5, {6}, 100, 600),
              run.Mean(dcgm::ExporterField::kSmClock, kNode1, {6}, 100, 600), 30);
}

TEST(ScenarioSignatureTest, SoftwareRegressionHasNoHardwareSignature) {
  ScenarioRun run("software-regression.yaml");
  for (dcgm::ExporterField f :
       {dcgm::ExporterField::kSmClock, dcgm::ExporterField::kClockEventReasons,
        dcgm::ExporterField::kPcieLinkWidth}) {
    EXPECT_NEAR(run.Mean(f, kNode4, kAll, 100, 600), run.Mean(f, kNode1, kAll, 100, 600),
                0.02 * std::abs(run.Mean(f, kNode1, kAll, 100, 600)) + 1e-9)
        << dcgm::DcgmFamily(f).name;
  }
  // Requests take ~1.4x as long. vLLM's default buckets jump from 5 s to
  // 10 s, so the p99 read from the histogram moves less than the mean does.
  EXPECT_GT(run.MeanLatency(kNode4, 100, 599), 1.3 * run.MeanLatency(kNode1, 100, 599));
  EXPECT_GT(run.P99Latency(kNode4, 100, 599), run.P99Latency(kNode1, 100, 599));
  const std::vector<TruthRecord> truth = run.Faults("software_regression");
  ASSERT_EQ(truth.size(), 1U);
  EXPECT_EQ(truth[0].release, "vllm-0-7-rc");
}

}  // namespace
}  // namespace gpucanary::sim
