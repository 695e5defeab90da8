// Replay speed (docs/analysis-method.md, "Replay: implementation notes"): a
// simulator recording (the whole engine, as `gpucanary sim --offline` writes
// it) replayed into 1 s ticks, against the reader alone on the same file.
//
//   build/release/bench/replay_bench [--gpus=64] [--seconds=600]
//
// BM_ReadOnly: expfmt::ReadFile with an empty callback (the floor).
// BM_Replay: analysis::Replay, every tick pulled. Counters: bytes_per_second
// (uncompressed text), ns_per_sample, samples, ticks, file_mib.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "analysis/replay/replay.h"
#include "expfmt/reader.h"
#include "recording/recording_writer.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace {

namespace fs = std::filesystem;

int g_gpus = 64;
int g_seconds = 600;

// Writes the recording once per process; returns its path ("" on failure).
const std::string& Recording() {
  static const std::string path = [] {
    using namespace gpucanary::sim;  // NOLINT(google-build-using-namespace)
    const std::string out = (fs::temp_directory_path() / "gpucanary-replay-bench.om").string();
    const int nodes = std::max(1, g_gpus / 8);
    const std::string yaml =
        "seed: 1\nduration: " + std::to_string(g_seconds) + "s\nfleet:\n  - {nodes: \"node-[1-" +
        std::to_string(nodes) + "]\", gpu: h100-sxm}\nreleases:\n  stable: {profile: baseline}\n" +
        "  next: {profile: baseline, power_spikiness: 2.5}\ntraffic: {rps: " +
        std::to_string(40 * nodes) + "}\nevents:\n  - {at: 0s, deploy: stable, nodes: all}\n" +
        "  - {at: 1s, deploy: next, nodes: [node-1]}\n";
    auto scenario = ParseScenario(yaml, "bench.yaml");
    if (!scenario) return std::string();
    Engine engine(*scenario);
    auto writer = gpucanary::recording::RecordingWriter::Open(out);
    if (!writer) return std::string();
    OfflineOptions options;
    options.duration_s = g_seconds;
    if (!WriteScenarioRecording(engine, options, **writer) || !(*writer)->Close().ok()) {
      return std::string();
    }
    return out;
  }();
  return path;
}

// Wall time since `start` per sample, in ns (a plain number: Google Benchmark
// prints inverted rates with an "s" suffix).
double NsPerSample(std::chrono::steady_clock::time_point start, std::uint64_t samples) {
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return samples == 0 ? 0 : elapsed.count() / static_cast<double>(samples);
}

void BM_ReadOnly(benchmark::State& state) {
  const std::string& path = Recording();
  if (path.empty()) {
    state.SkipWithError("recording failed");
    return;
  }
  std::uint64_t bytes = 0;
  std::uint64_t samples = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto report = gpucanary::expfmt::ReadFile(path, {});
    if (!report || !report->ok()) {
      state.SkipWithError("read failed");
      return;
    }
    bytes += report->bytes;
    samples += report->stats.samples;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["ns_per_sample"] = NsPerSample(start, samples);
  state.counters["file_mib"] = static_cast<double>(fs::file_size(path)) / (1 << 20);
}
BENCHMARK(BM_ReadOnly)->Unit(benchmark::kMillisecond);

void BM_Replay(benchmark::State& state) {
  using gpucanary::analysis::Replay;
  using gpucanary::analysis::Role;
  using gpucanary::analysis::Tick;
  const std::string& path = Recording();
  if (path.empty()) {
    state.SkipWithError("recording failed");
    return;
  }
  std::uint64_t bytes = 0;
  std::uint64_t samples = 0;
  std::uint64_t ticks = 0;
  std::uint64_t points = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto replay = Replay::Open({{path, Role::kBaseline, std::nullopt}});
    if (!replay) {
      state.SkipWithError(replay.error().message().c_str());
      return;
    }
    Tick tick;
    for (;;) {
      auto more = (*replay)->Next(tick);
      if (!more) {
        state.SkipWithError(more.error().message().c_str());
        return;
      }
      if (!*more) break;
      points += tick.gpu_points.size() + tick.node_points.size() + tick.buckets.size();
      ++ticks;
    }
    bytes += (*replay)->stats().bytes;
    samples += (*replay)->stats().samples;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["ns_per_sample"] = NsPerSample(start, samples);
  state.counters["samples"] =
      static_cast<double>(samples) / static_cast<double>(state.iterations());
  state.counters["ticks"] = static_cast<double>(ticks) / static_cast<double>(state.iterations());
  state.counters["points"] = static_cast<double>(points) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Replay)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--gpus=")) g_gpus = std::atoi(arg.c_str() + 7);
    if (arg.starts_with("--seconds=")) g_seconds = std::atoi(arg.c_str() + 10);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  if (!Recording().empty()) fs::remove(Recording());
  return 0;
}
