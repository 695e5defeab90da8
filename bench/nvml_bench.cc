// Cost of reading the GPUs through NVML (docs/nvml.md, "Overhead"): one
// Collector::Sample of 8 GPUs (every field, GPM, through the real dlopen'ed
// entry points), and the same plus the dcgm-exporter text. The library is
// the fake libnvidia-ml.so.1 (tests/fake_nvml), whose calls cost about a
// map lookup: the figures are gpucanary's own work per sample, not the
// driver's (on a real GPU, gpucanary_nvml_sample_duration_seconds shows the
// whole cost). Counter "nvml_calls" is NVML calls per sample.
//
//   build/release/bench/nvml_bench

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "nvml/collector.h"
#include "nvml/library.h"
#include "nvml/sampler.h"

namespace {

namespace nvml = gpucanary::nvml;

const std::string kFake = std::string(GPUCANARY_FAKE_NVML_DIR) + "/modern/libnvidia-ml.so.1";

// Writes an 8-GPU H200 script and points the fake at it.
void WriteScript(int gpus) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gpucanary-nvml-bench-" + std::to_string(getpid()) + ".json"))
                               .string();
  std::ofstream out(path);
  out << "{\"driver_version\": \"550.90.12\", \"devices\": [";
  for (int i = 0; i < gpus; ++i) {
    out << (i == 0 ? "" : ",") << "{\"name\": \"NVIDIA H200\", \"gpm\": true, \"values\": {"
        << "\"sm_clock\": 1980, \"mem_clock\": 3201, \"clocks_event_reasons\": 0,"
        << "\"power_mw\": 650000, \"energy_mj\": 1, \"power_limit_mw\": 700000,"
        << "\"enforced_power_limit_mw\": 700000, \"gpu_temp\": 60, \"memory_temp\": 55,"
        << "\"pcie_gen\": 5, \"pcie_width\": 16, \"pcie_max_gen\": 5, \"pcie_max_width\": 16,"
        << "\"pcie_replay\": 0, \"pcie_tx_kbps\": 1, \"pcie_rx_kbps\": 1, \"util_gpu\": 100,"
        << "\"util_memory\": 60, \"mem_total_bytes\": 150754820096,"
        << "\"mem_reserved_bytes\": 734003200, \"mem_used_bytes\": 100000000000,"
        << "\"ecc_sbe_volatile\": 0, \"ecc_dbe_volatile\": 0, \"remapped_correctable\": 0,"
        << "\"remapped_uncorrectable\": 0, \"remap_pending\": 0, \"remap_failure\": 0,"
        << "\"gpm_graphics_util\": 90, \"gpm_sm_util\": 80, \"gpm_sm_occupancy\": 30,"
        << "\"gpm_any_tensor_util\": 40, \"gpm_dram_bw_util\": 60, \"gpm_pcie_tx_mibps\": 1,"
        << "\"gpm_pcie_rx_mibps\": 1}}";
  }
  out << "]}";
  setenv("GPUCANARY_FAKE_NVML_SCRIPT", path.c_str(), 1);
}

void Run(benchmark::State& state, bool render) {
  const int gpus = static_cast<int>(state.range(0));
  WriteScript(gpus);
  auto library = nvml::Library::Open(kFake);
  if (!library) {
    state.SkipWithError(library.error().message().c_str());
    return;
  }
  void* self = dlopen(kFake.c_str(), RTLD_LAZY | RTLD_LOCAL);
  auto* set_time = reinterpret_cast<void (*)(double)>(dlsym(self, "fake_nvml_set_time"));
  auto* calls = reinterpret_cast<unsigned long long (*)()>(  // NOLINT(google-runtime-int)
      dlsym(self, "fake_nvml_calls"));
  nvml::CollectorOptions options;
  options.hostname = "bench";
  options.xid_events = false;
  auto collector = nvml::Collector::Start(**library, options);
  if (!collector) {
    state.SkipWithError(collector.error().message().c_str());
    return;
  }
  nvml::Snapshot snapshot;
  std::string text;
  std::int64_t t_ms = 1'000'000;
  const auto calls_before = calls();
  for (auto _ : state) {
    t_ms += 1000;  // one sample a second: a new GPM window every time
    set_time(static_cast<double>(t_ms) / 1000.0);
    (*collector)->Sample(t_ms, snapshot);
    if (render) {
      text.clear();
      nvml::RenderSnapshot(snapshot, {}, 0.0, text);
      benchmark::DoNotOptimize(text.data());
    }
    benchmark::ClobberMemory();
  }
  state.counters["nvml_calls"] = benchmark::Counter(static_cast<double>(calls() - calls_before) /
                                                    static_cast<double>(state.iterations()));
  state.counters["bytes"] = static_cast<double>(text.size());
  state.SetItemsProcessed(state.iterations() * gpus);  // GPU readings
  collector->reset();
  dlclose(self);
}

void BM_Sample(benchmark::State& state) { Run(state, false); }
void BM_SampleAndRender(benchmark::State& state) { Run(state, true); }
BENCHMARK(BM_Sample)->Arg(1)->Arg(8);
BENCHMARK(BM_SampleAndRender)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
