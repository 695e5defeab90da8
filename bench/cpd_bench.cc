// Cost of change point detection (docs/analysis-method.md, "Change points"):
// the online detector per sample after histories of 1e3 .. 1e6 samples (it
// must not depend on the history), the offline PELT segmentation and the
// Otava port per series.
//
//   build/release/bench/cpd_bench

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "analysis/cpd/cpd.h"
#include "analysis/cpd/otava.h"

namespace {

namespace cpd = gpucanary::analysis::cpd;

// N(0, 1) noise with a level step of +-3 every `n / 5` samples.
std::vector<double> NoiseWithSteps(std::size_t n) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(n);
  const std::size_t every = n / 5 == 0 ? n : n / 5;
  for (std::size_t i = 0; i < n; ++i) x[i] = normal(rng) + ((i / every) % 2 == 1 ? 3.0 : 0.0);
  return x;
}

void BM_OnlineAdd(benchmark::State& state) {
  const auto history = static_cast<std::size_t>(state.range(0));
  const std::vector<double> noise = NoiseWithSteps(1 << 16);
  cpd::OnlineDetector detector;
  std::size_t i = 0;
  for (; i < history; ++i) benchmark::DoNotOptimize(detector.Add(noise[i & 0xffffU]));
  for (auto _ : state) benchmark::DoNotOptimize(detector.Add(noise[i++ & 0xffffU]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OnlineAdd)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Arg(1'000'000);

void BM_Segment(benchmark::State& state) {
  const std::vector<double> x = NoiseWithSteps(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(cpd::Segment(x));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Segment)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

void BM_Otava(benchmark::State& state) {
  const std::vector<double> x = NoiseWithSteps(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(cpd::OtavaChangePoints(x));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Otava)->Arg(365)->Arg(1'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
