// How long the judge's scenario suite takes to simulate (scenarios/suite/
// README.md): every case run offline, in process, into its canary and
// baseline recordings (eval::suite::GenerateCase), one benchmark per case
// and one for the whole suite.
//
//   build/release/bench/suite_bench [--labels=scenarios/suite/labels.yaml] [--gzip]
//                                   [--benchmark_filter=BM_WholeSuite]
//
// Counters: sim_seconds (simulated time), gpus, samples (written).

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/suite/suite.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::eval::suite::GenerateCase;
using gpucanary::eval::suite::SuiteCase;

bool g_gzip = false;

fs::path OutDir() { return fs::temp_directory_path() / "gpucanary-suite-bench"; }

bool Generate(benchmark::State& state, const SuiteCase& c, std::uint64_t* samples) {
  auto files = GenerateCase(c, (OutDir() / c.name).string(), g_gzip);
  if (!files) {
    state.SkipWithError(files.error().message().c_str());
    return false;
  }
  *samples += files->stats.samples;
  return true;
}

int GpuCount(const SuiteCase& c) {
  int gpus = 0;
  for (const auto& g : c.scenario.fleet) {
    gpus += g.gpus_per_node * static_cast<int>(g.hostnames.size());
  }
  return gpus;
}

void BM_GenerateCase(benchmark::State& state, const SuiteCase& c) {
  std::uint64_t samples = 0;
  for (auto _ : state) {
    if (!Generate(state, c, &samples)) return;
  }
  state.counters["sim_seconds"] = c.scenario.duration_s;
  state.counters["gpus"] = GpuCount(c);
  state.counters["samples"] =
      static_cast<double>(samples) / static_cast<double>(state.iterations());
}

void BM_WholeSuite(benchmark::State& state, const std::vector<SuiteCase>& cases) {
  std::uint64_t samples = 0;
  for (auto _ : state) {
    for (const SuiteCase& c : cases) {
      if (!Generate(state, c, &samples)) return;
    }
  }
  state.counters["cases"] = static_cast<double>(cases.size());
  state.counters["samples"] =
      static_cast<double>(samples) / static_cast<double>(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  std::string labels = std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/suite/labels.yaml";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--labels=", 9) == 0) {
      labels = argv[i] + 9;
    } else if (std::strcmp(argv[i], "--gzip") == 0) {
      g_gzip = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  auto cases = gpucanary::eval::suite::LoadSuite(labels);
  if (!cases) {
    std::fprintf(stderr, "suite_bench: %s\n", cases.error().message().c_str());
    return 3;
  }
  static const std::vector<SuiteCase> kCases = std::move(*cases);
  for (const SuiteCase& c : kCases) {
    benchmark::RegisterBenchmark(("BM_GenerateCase/" + c.name).c_str(), BM_GenerateCase, c)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  benchmark::RegisterBenchmark("BM_WholeSuite", BM_WholeSuite, kCases)
      ->Unit(benchmark::kSecond)
      ->Iterations(1);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(OutDir());
  return 0;
}
