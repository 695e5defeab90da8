// Offline generation speed of the simulator (docs/simulator.md): a fleet of
// GPUs at 1 s for a simulated duration, written as a recorded telemetry file.
//
//   build/release/bench/sim_bench [--gpus=64] [--seconds=3600]
//
// BM_OfflineRecording: the GPU model alone (a fixed load per GPU).
// BM_ScenarioRecording: the whole engine (traffic, vLLM serving per node,
// a canary release, dcgm + vLLM series), as `gpucanary sim --offline` runs it.
// Counters: items_per_second (samples written per second of CPU), sim_seconds
// (simulated time) and file_mib. The goal: 64 GPUs x 1 h in well under a minute.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "recording/recording_writer.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace {

int g_gpus = 64;
int g_seconds = 3600;

void BM_OfflineRecording(benchmark::State& state) {
  namespace fs = std::filesystem;
  using namespace gpucanary::sim;  // NOLINT(google-build-using-namespace)
  const fs::path path = fs::temp_directory_path() / "gpucanary-sim-bench.om";
  std::uint64_t samples = 0;
  for (auto _ : state) {
    Fleet fleet(1);
    for (int n = 0; n < (g_gpus + 7) / 8; ++n) {
      fleet.AddNode("node-" + std::to_string(n), *FindGpuProfile("h100-sxm"),
                    std::min(8, g_gpus - 8 * n), "580.105.08");
    }
    auto writer = gpucanary::recording::RecordingWriter::Open(path.string());
    OfflineOptions options;
    options.duration_s = g_seconds;
    auto stats = WriteRecording(
        fleet,
        [](const SimNode&, int gpu, std::int64_t, Workload& w, Faults&) {
          w.load = 0.5 + 0.05 * (gpu % 4);
        },
        options, **writer);
    if (!stats || !(*writer)->Close().ok()) {
      state.SkipWithError("recording failed");
      return;
    }
    samples += stats->samples;
  }
  state.counters["sim_seconds"] = g_seconds;
  state.counters["gpus"] = g_gpus;
  state.counters["file_mib"] =
      static_cast<double>(fs::file_size(path)) / static_cast<double>(1 << 20);
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  fs::remove(path);
}
BENCHMARK(BM_OfflineRecording)->Unit(benchmark::kSecond)->Iterations(1);

void BM_ScenarioRecording(benchmark::State& state) {
  namespace fs = std::filesystem;
  using namespace gpucanary::sim;  // NOLINT(google-build-using-namespace)
  const fs::path path = fs::temp_directory_path() / "gpucanary-sim-scenario-bench.om";
  const int nodes = std::max(1, g_gpus / 8);
  const std::string yaml = "seed: 1\nduration: " + std::to_string(g_seconds) +
                           "s\nfleet:\n  - {nodes: \"node-[1-" + std::to_string(nodes) +
                           "]\", gpu: h100-sxm}\nreleases:\n  stable: {profile: baseline}\n"
                           "  next: {profile: baseline, power_spikiness: 2.5}\n"
                           "traffic: {rps: " +
                           std::to_string(50 * nodes) +
                           ", diurnal: {amplitude: 0.2, period: 1h}, bursts: {rate: 1/5m}}\n"
                           "events:\n  - {at: 0s, deploy: stable, nodes: all}\n"
                           "  - {at: 1s, deploy: next, nodes: [node-1]}\n";
  gpucanary::Result<Scenario> scenario = ParseScenario(yaml, "bench.yaml");
  if (!scenario) {
    state.SkipWithError(scenario.error().message().c_str());
    return;
  }
  std::uint64_t samples = 0;
  for (auto _ : state) {
    Engine engine(*scenario);
    auto writer = gpucanary::recording::RecordingWriter::Open(path.string());
    OfflineOptions options;
    options.duration_s = g_seconds;
    auto stats = WriteScenarioRecording(engine, options, **writer);
    if (!stats || !(*writer)->Close().ok()) {
      state.SkipWithError("recording failed");
      return;
    }
    samples += stats->samples;
  }
  state.counters["sim_seconds"] = g_seconds;
  state.counters["gpus"] = nodes * 8;
  state.counters["file_mib"] =
      static_cast<double>(fs::file_size(path)) / static_cast<double>(1 << 20);
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  fs::remove(path);
}
BENCHMARK(BM_ScenarioRecording)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--gpus=")) g_gpus = std::atoi(arg.c_str() + 7);
    if (arg.starts_with("--seconds=")) g_seconds = std::atoi(arg.c_str() + 10);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
