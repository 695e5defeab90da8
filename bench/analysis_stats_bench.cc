// Cost of the judge's statistical core per observation (docs/analysis-method.md):
// the confidence sequence's Add (+ Interval, as the judge asks after every
// block) and the count test's AddEvents (+ Rejects) per tick.
//
//   build/release/bench/analysis_stats_bench

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "analysis/stats/confidence_sequence.h"
#include "analysis/stats/count_test.h"

namespace {

namespace stats = gpucanary::analysis::stats;

std::vector<double> Normals(std::size_t n) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 0.02);
  std::vector<double> x(n);
  for (double& v : x) v = normal(rng);
  return x;
}

void BM_CsAdd(benchmark::State& state) {
  const std::vector<double> x = Normals(4096);
  stats::ConfidenceSequence cs(stats::RhoForTarget(30.0, 0.01, 0.02));
  std::size_t i = 0;
  for (auto _ : state) {
    cs.Add(x[i++ & 4095U]);
    benchmark::DoNotOptimize(cs.mean());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CsAdd);

void BM_CsAddAndInterval(benchmark::State& state) {
  const std::vector<double> x = Normals(4096);
  stats::ConfidenceSequence cs(stats::RhoForTarget(30.0, 0.01, 0.02));
  std::size_t i = 0;
  for (auto _ : state) {
    cs.Add(x[i++ & 4095U]);
    benchmark::DoNotOptimize(cs.Interval(0.01));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CsAddAndInterval);

void BM_CountTestTick(benchmark::State& state) {
  std::mt19937_64 rng(2);
  std::poisson_distribution<std::int64_t> poisson(3.0);
  std::vector<std::int64_t> counts(4096);
  for (auto& c : counts) c = poisson(rng);
  stats::CountTest test;
  std::size_t i = 0;
  for (auto _ : state) {
    test.AddEvents(counts[i & 4095U], counts[(i + 7) & 4095U], 0.3);
    ++i;
    benchmark::DoNotOptimize(test.Rejects(0.01));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CountTestTick);

}  // namespace

BENCHMARK_MAIN();
