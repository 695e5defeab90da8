// End-to-end cost of `gpucanary check` on a large recorded telemetry file
// (see docs/performance.md): ReadFile streams the file in 1 MiB chunks through
// the parser and the validator.
//
//   build/release/bench/check_bench [--ticks=N]
//
// The recording is generated once into $TMPDIR: 64 GPUs x 28 dcgm-exporter
// fields at 1 s, time-blocked, as `gpucanary import` writes it. Counters:
// bytes_per_second, items_per_second (samples) and max_rss_mib, the process's
// peak resident memory, which must stay flat as the file grows.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "dcgm_exposition.h"
#include "expfmt/reader.h"

namespace {

namespace fs = std::filesystem;

// Rewrites a dcgm exposition (no timestamps) as one tick of a recording.
std::string Tick(const std::string& exposition, long long seconds, bool with_metadata) {
  std::string out;
  out.reserve(exposition.size() + exposition.size() / 8);
  std::size_t pos = 0;
  std::string ts(1, ' ');
  ts += std::to_string(seconds);
  ts += ".000";
  while (pos < exposition.size()) {
    std::size_t nl = exposition.find('\n', pos);
    if (nl == std::string::npos) nl = exposition.size();
    const std::string_view line(exposition.data() + pos, nl - pos);
    if (line.starts_with("#")) {
      if (with_metadata && line.starts_with("# TYPE")) {
        out.append(line);
        // OpenMetrics counters need _total; the recorder types these "unknown".
        if (line.ends_with(" counter")) out.replace(out.size() - 7, 7, "unknown");
        out += '\n';
      }
    } else {
      out.append(line);
      out += ts;
      out += '\n';
    }
    pos = nl + 1;
  }
  return out;
}

const fs::path& Recording(int ticks) {
  static fs::path path;
  if (!path.empty()) return path;
  path = fs::temp_directory_path() / ("gpucanary-check-bench-" + std::to_string(ticks) + ".om");
  if (fs::exists(path)) return path;
  const std::string exposition = gpucanary::bench::MakeDcgmExposition(64);
  std::ofstream out(path, std::ios::binary);
  for (int t = 0; t < ticks; ++t) out << Tick(exposition, 1764680000LL + t, t == 0);
  out << "# EOF\n";
  return path;
}

int g_ticks = 600;

void BM_CheckRecording(benchmark::State& state) {
  const fs::path& path = Recording(g_ticks);
  const auto bytes = static_cast<std::int64_t>(fs::file_size(path));
  std::int64_t samples = 0;
  for (auto _ : state) {
    auto r = gpucanary::expfmt::ReadFile(path.string(), gpucanary::expfmt::ReadOptions{});
    if (!r || !r->ok()) {
      state.SkipWithError(r ? r->messages[0].c_str() : r.error().message().c_str());
      return;
    }
    samples += static_cast<std::int64_t>(r->stats.samples);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["file_mib"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["max_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(samples);
}
BENCHMARK(BM_CheckRecording)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--ticks=")) g_ticks = std::atoi(arg.c_str() + 8);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::remove(Recording(g_ticks).c_str());
  return 0;
}
