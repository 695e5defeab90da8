// Cost of the judge engine (docs/analysis-method.md, "Speed"): judging a
// canary of --canary_gpus GPUs (8 per node) against as many baseline GPUs,
// every field a dcgm-exporter profile exposes plus vLLM's per-node series,
// over windows of 150 to 1200 one-second ticks. The ticks are built in memory
// (the replay's parsing is measured by replay_bench), so this is the
// engine's own cost. "per_tick" should not grow with the window.
//
//   build/release/bench/judge_bench                      # 1,000 canary GPUs
//   build/release/bench/judge_bench --canary_gpus=64

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "analysis/judge/internal.h"
#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"

namespace {

namespace an = gpucanary::analysis;

int g_canary_gpus = 1000;
constexpr int kGpusPerNode = 8;
constexpr int kDistinctTicks = 20;
constexpr std::int64_t kT0 = 1764680000;

struct Fleet {
  std::vector<an::GpuInfo> gpus;
  std::vector<an::NodeInfo> nodes;
  std::vector<an::MetricInfo> metrics;
  std::vector<an::Tick> ticks;  // kDistinctTicks, time_s set when fed
};

const std::vector<double> kLatencyBuckets = {0.3, 0.5, 0.8, 1,  1.5, 2,  2.5, 5,
                                             10,  15,  20,  30, 40,  50, 60};

Fleet MakeFleet(int canary_gpus) {
  Fleet f;
  const int nodes_per_arm = (canary_gpus + kGpusPerNode - 1) / kGpusPerNode;
  for (std::string_view name : an::judge_internal::kGpuSlotNames) {
    f.metrics.push_back({std::string(name), an::MetricKind::kGauge});
  }
  const int gpu_metrics = static_cast<int>(f.metrics.size());
  const int tokens = static_cast<int>(f.metrics.size());
  f.metrics.push_back({"vllm:generation_tokens_total", an::MetricKind::kCounter});
  const int tpot_sum = static_cast<int>(f.metrics.size());
  f.metrics.push_back({"vllm:time_per_output_token_seconds_sum", an::MetricKind::kCounter});
  f.metrics.push_back({"vllm:time_per_output_token_seconds_count", an::MetricKind::kCounter});
  const int e2e = static_cast<int>(f.metrics.size());
  f.metrics.push_back({"vllm:e2e_request_latency_seconds", an::MetricKind::kHistogram});
  for (int arm = 0; arm < 2; ++arm) {
    for (int n = 0; n < nodes_per_arm; ++n) {
      an::NodeInfo node;
      node.host = std::string(arm == 0 ? "base-" : "canary-") + std::to_string(n);
      node.role = arm == 0 ? an::Role::kBaseline : an::Role::kCanary;
      node.input = arm;
      for (int g = 0; g < kGpusPerNode; ++g) {
        an::GpuInfo gpu;
        gpu.host = node.host;
        gpu.gpu = std::to_string(g);
        gpu.key = gpu.host + "/" + gpu.gpu;
        gpu.role = node.role;
        gpu.input = arm;
        gpu.node = static_cast<int>(f.nodes.size());
        gpu.model_name = "NVIDIA H100 80GB HBM3";
        node.gpus.push_back(static_cast<int>(f.gpus.size()));
        f.gpus.push_back(gpu);
      }
      f.nodes.push_back(node);
    }
  }
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  // A healthy busy H100 per fixed slot: the bench must cover every slot the
  // judge reads, so the table is keyed by slot, not by position.
  std::array<double, an::judge_internal::kFixedGpuSlots> base{};
  {
    namespace ji = an::judge_internal;
    base[ji::kClock] = 1980;
    base[ji::kSmActive] = 0.8;
    base[ji::kOccupancy] = 0.25;
    base[ji::kTensor] = 0.3;
    base[ji::kDram] = 0.4;
    base[ji::kPower] = 550;
    base[ji::kPowerLimit] = 700;
    base[ji::kTemp] = 60;
    base[ji::kWidth] = 16;
    base[ji::kMaxWidth] = 16;
    base[ji::kGen] = 5;
    base[ji::kMaxGen] = 5;
    base[ji::kPcieRx] = 2e10;
    base[ji::kUtil] = 95;
  }
  auto noisy = [](int m) {
    namespace ji = an::judge_internal;
    return m <= ji::kTemp || m == ji::kPcieRx || m == ji::kUtil;
  };
  auto counter = [](int m) {
    namespace ji = an::judge_internal;
    return m == ji::kDbe || m == ji::kSbe || m == ji::kReplay;
  };
  for (int k = 0; k < kDistinctTicks; ++k) {
    an::Tick t;
    for (std::size_t g = 0; g < f.gpus.size(); ++g) {
      for (int m = 0; m < gpu_metrics; ++m) {
        double v = base[static_cast<std::size_t>(m)];
        if (noisy(m)) v *= 1 + 0.02 * noise(rng);
        an::Point p;
        p.entity = static_cast<std::int32_t>(g);
        p.metric = m;
        p.value = v;
        if (counter(m)) p.increase = 0.0;
        t.gpu_points.push_back(p);
      }
      t.gpus.push_back(static_cast<std::int32_t>(g));
    }
    for (std::size_t n = 0; n < f.nodes.size(); ++n) {
      const double tok = 1000 * (1 + 0.05 * noise(rng));
      t.node_points.push_back({static_cast<std::int32_t>(n), tokens, 1e6, tok});
      t.node_points.push_back({static_cast<std::int32_t>(n), tpot_sum, 1e3, tok * 0.016});
      t.node_points.push_back({static_cast<std::int32_t>(n), tpot_sum + 1, 1e6, tok});
      an::HistogramPoint h;
      h.node = static_cast<std::int32_t>(n);
      h.metric = e2e;
      h.first = static_cast<std::uint32_t>(t.buckets.size());
      double cumulative = 0;
      for (double le : kLatencyBuckets) {
        cumulative += le < 10 ? 5 : 0.05;
        t.buckets.push_back({le, cumulative * 100, cumulative});
      }
      t.buckets.push_back({std::numeric_limits<double>::infinity(), cumulative * 100, cumulative});
      h.count = static_cast<std::uint32_t>(kLatencyBuckets.size() + 1);
      t.histograms.push_back(h);
      t.nodes.push_back(static_cast<std::int32_t>(n));
    }
    f.ticks.push_back(std::move(t));
  }
  return f;
}

void BM_JudgeWindow(benchmark::State& state) {
  static Fleet fleet = MakeFleet(g_canary_gpus);
  const an::Catalog catalog{&fleet.gpus, &fleet.nodes, &fleet.metrics};
  const auto seconds = static_cast<std::int64_t>(state.range(0));
  for (auto _ : state) {
    an::Judge judge({.policy = an::DefaultPolicy(), .release_start_s = kT0 + 60});
    for (std::int64_t s = 0; s < seconds; ++s) {
      an::Tick& tick = fleet.ticks[static_cast<std::size_t>(s % kDistinctTicks)];
      tick.time_s = kT0 + s;
      judge.Add(tick, catalog);
    }
    an::Report report = judge.Finish();
    benchmark::DoNotOptimize(report);
  }
  state.counters["canary_gpus"] = static_cast<double>(g_canary_gpus);
  state.counters["per_tick"] =
      benchmark::Counter(static_cast<double>(seconds) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_JudgeWindow)->Arg(150)->Arg(300)->Arg(600)->Arg(1200)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--canary_gpus=", 14) == 0) {
      g_canary_gpus = std::atoi(argv[i] + 14);
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      --i;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
