// The embedded store's costs (docs/performance.md, "The store"):
//
//   BM_SyntheticMix   bytes per sample on the synthetic dcgm mix of
//                     ../shared/reference/prometheus-otel.md §7 (8 GPUs x 8
//                     fields x 7,200 s at 1 s, seed 42), per field kind;
//                     --write_om=FILE writes the same data as OpenMetrics for
//                     `promtool tsdb create-blocks-from openmetrics`
//                     (scripts/bench-store-size.sh runs both side by side).
//   BM_Ingest         CPU per sample appending --gpus GPUs x 30 fields at 1 s,
//                     one commit per node (8 GPUs) per second, as scrapes do.
//   BM_Select10Min    reading a 10-minute window of --gpus GPUs x 30 fields:
//                     Query, then every sample decoded and looked at;
//                     ...Parallel/2 decodes on two threads; ...QueryOnly is
//                     the Query call alone.
//
//   build/release/bench/store_bench                 # 1,000 GPUs
//   build/release/bench/store_bench --gpus=64

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace {

namespace fs = std::filesystem;
namespace st = gpucanary::store;

int g_gpus = 1000;
std::string g_write_om;
constexpr int kFields = 30;
constexpr std::int64_t kT0 = 1764680000000;

double Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return std::strtod(buf, nullptr);
}

// One field of the §7 mix: its name, kind and a value model.
struct Field {
  const char* name;
  const char* kind;
  double value;
  double Next(std::mt19937_64& rng, int model) {
    std::uniform_real_distribution<double> u(0, 1);
    switch (model) {
      case 0:  // slowly stepping integer gauge
        if (u(rng) < 0.03) value += u(rng) < 0.5 ? -1 : 1;
        return value;
      case 1:  // integer with +-2 noise
        return value + std::floor(u(rng) * 5) - 2;
      case 2:  // monotonically growing counter, ~300,000 per second
        value += 300000 + std::floor(u(rng) * 2001) - 1000;
        return value;
      case 3:  // power with three random decimals
        return Fixed(300 + u(rng) * 50, 3);
      default:  // a ratio with six random decimals
        return Fixed(u(rng), 6);
    }
  }
};

struct MixField {
  const char* name;
  const char* kind;
  int model;
  double start;
};
constexpr MixField kMix[] = {
    {"DCGM_FI_DEV_FB_USED", "stepping integer gauges", 0, 40000},
    {"DCGM_FI_DEV_GPU_TEMP", "stepping integer gauges", 0, 60},
    {"DCGM_FI_DEV_SM_CLOCK", "stepping integer gauges", 0, 1980},
    {"DCGM_FI_DEV_GPU_UTIL", "stepping integer gauges", 0, 90},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "integer with +-2 noise", 1, 40},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "growing counter", 2, 1e9},
    {"DCGM_FI_DEV_POWER_USAGE", "high-entropy floats", 3, 300},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "high-entropy floats", 4, 0.5},
};

fs::path TempDir(const char* what) {
  const fs::path dir =
      fs::temp_directory_path() / ("gc_store_bench_" + std::to_string(::getpid()) + "_" + what);
  fs::remove_all(dir);
  return dir;
}

st::StoreOptions BenchOptions() {
  st::StoreOptions o;
  o.sync_interval_ms = 0;
  return o;
}

void BM_SyntheticMix(benchmark::State& state) {
  constexpr int kGpus = 8;
  constexpr int kSeconds = 7200;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_kind;  // bytes, samples
  std::uint64_t total_bytes = 0;
  std::uint64_t total_samples = 0;
  for (auto _ : state) {
    const fs::path dir = TempDir("mix");
    auto store = st::Store::Open(dir, BenchOptions());
    if (!store) {
      state.SkipWithError(store.error().message().c_str());
      return;
    }
    std::ofstream om;
    if (!g_write_om.empty()) om.open(g_write_om);
    std::mt19937_64 rng(42);
    auto app = (*store)->NewAppender();
    std::vector<st::SeriesRef> refs;
    std::vector<Field> fields;
    for (const MixField& f : kMix) {
      for (int g = 0; g < kGpus; ++g) {
        gpucanary::model::Labels l = {
            {"__name__", f.name}, {"gpu", std::to_string(g)}, {"Hostname", "h1"}};
        gpucanary::model::SortLabels(l);
        refs.push_back(*app->Series(l));
        fields.push_back({f.name, f.kind, f.start});
      }
    }
    // OpenMetrics wants each family's samples together: collect per series.
    std::vector<std::string> om_lines(refs.size());
    for (int s = 0; s < kSeconds; ++s) {
      for (std::size_t i = 0; i < refs.size(); ++i) {
        const double v = fields[i].Next(rng, kMix[i / kGpus].model);
        (void)app->Append(refs[i], kT0 + s * 1000LL, v);
        if (om.is_open()) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s{Hostname=\"h1\",gpu=\"%zu\"} %.17g %lld.000\n",
                        fields[i].name, i % kGpus, v, (kT0 + s * 1000LL) / 1000);
          om_lines[i] += buf;
        }
      }
      (void)app->Commit();
    }
    if (om.is_open()) {
      std::size_t i = 0;
      for (const MixField& f : kMix) {
        om << "# TYPE " << f.name << " gauge\n";
        for (int g = 0; g < kGpus; ++g) om << om_lines[i++];
      }
      om << "# EOF\n";
    }
    (void)(*store)->ApplyRetention(kT0 + (kSeconds + 7200) * 1000LL);  // seal idle chunks
    store->reset();
    // Per kind: re-read the sealed chunks' sizes from the segment index.
    auto reopened = st::Store::Open(dir, BenchOptions());
    total_bytes = 0;
    total_samples = 0;
    by_kind.clear();
    for (const MixField& f : kMix) {
      auto got =
          (*reopened)->Select({*gpucanary::model::Matcher::Make(
                                  gpucanary::model::Matcher::Type::kEqual, "__name__", f.name)},
                              0, INT64_MAX);
      std::uint64_t samples = 0;
      std::uint64_t bytes = 0;
      for (const st::SeriesSamples& s : *got) {
        samples += s.samples.size();
        std::string enc;
        for (std::size_t k = 0; k < s.samples.size(); k += 240) {
          const std::size_t n = std::min<std::size_t>(240, s.samples.size() - k);
          st::EncodeChunk({s.samples.data() + k, n}, enc);
        }
        bytes += enc.size();
      }
      by_kind[f.kind].first += bytes;
      by_kind[f.kind].second += samples;
    }
    const st::StoreStats stats = (*reopened)->stats();
    total_bytes = stats.segment_bytes;
    total_samples = static_cast<std::uint64_t>(kGpus) * std::size(kMix) * kSeconds;
    reopened->reset();
    fs::remove_all(dir);
  }
  state.counters["segment_bytes_per_sample"] =
      static_cast<double>(total_bytes) / static_cast<double>(total_samples);
  for (const auto& [kind, v] : by_kind) {
    state.counters["chunk_B_per_sample " + kind] =
        static_cast<double>(v.first) / static_cast<double>(v.second);
  }
}
BENCHMARK(BM_SyntheticMix)->Unit(benchmark::kMillisecond)->Iterations(1);

// --gpus GPUs x 30 fields, values like dcgm-exporter's: 8 GPUs per node.
struct Fleet {
  std::vector<st::SeriesRef> refs;
  std::vector<Field> fields;
  std::vector<int> models;
};

Fleet MakeFleet(st::Appender& app, int gpus) {
  Fleet f;
  for (int g = 0; g < gpus; ++g) {
    for (int k = 0; k < kFields; ++k) {
      const MixField& m = kMix[static_cast<std::size_t>(k) % std::size(kMix)];
      std::string name = m.name;
      if (k >= 8) name.append("_").append(std::to_string(k));
      gpucanary::model::Labels l = {{"__name__", name},
                                    {"gpu", std::to_string(g % 8)},
                                    {"Hostname", "node-" + std::to_string(g / 8)},
                                    {"UUID", "GPU-" + std::to_string(1000000 + g)},
                                    {"modelName", "NVIDIA H100 80GB HBM3"}};
      gpucanary::model::SortLabels(l);
      f.refs.push_back(*app.Series(l));
      f.fields.push_back({m.name, m.kind, m.start});
      f.models.push_back(m.model);
    }
  }
  return f;
}

void Ingest(st::Store& store, Fleet& f, std::mt19937_64& rng, int from_s, int seconds) {
  const std::size_t per_node = 8 * kFields;
  std::vector<std::unique_ptr<st::Appender>> apps;
  for (std::size_t i = 0; i < f.refs.size(); i += per_node) apps.push_back(store.NewAppender());
  for (int s = from_s; s < from_s + seconds; ++s) {
    for (std::size_t i = 0; i < f.refs.size(); ++i) {
      (void)apps[i / per_node]->Append(f.refs[i], kT0 + s * 1000LL,
                                       f.fields[i].Next(rng, f.models[i]));
    }
    for (auto& app : apps) (void)app->Commit();
  }
}

void BM_Ingest(benchmark::State& state) {
  const int seconds = static_cast<int>(state.range(0));
  std::uint64_t samples = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const fs::path dir = TempDir("ingest");
    auto store = st::Store::Open(dir, BenchOptions());
    auto app = (*store)->NewAppender();
    Fleet f = MakeFleet(*app, g_gpus);
    std::mt19937_64 rng(1);
    state.ResumeTiming();
    Ingest(**store, f, rng, 0, seconds);
    state.PauseTiming();
    samples += f.refs.size() * static_cast<std::uint64_t>(seconds);
    state.counters["open_chunk_bytes_per_series"] =
        static_cast<double>((*store)->stats().open_chunk_bytes) /
        static_cast<double>(f.refs.size());
    store->reset();
    fs::remove_all(dir);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
}
BENCHMARK(BM_Ingest)->Arg(60)->Unit(benchmark::kMillisecond)->UseRealTime();

// Built once per process: Google Benchmark calls the function several times.
st::Store& SelectFixture() {
  static std::unique_ptr<st::Store> store = [] {
    const fs::path dir = TempDir("select");
    auto opened = st::Store::Open(dir, BenchOptions());
    auto app = (*opened)->NewAppender();
    Fleet f = MakeFleet(*app, g_gpus);
    std::mt19937_64 rng(2);
    Ingest(**opened, f, rng, 0, 900);
    return std::move(*opened);
  }();
  return *store;
}

void BM_Select10Min(benchmark::State& state) {
  st::Store& store = SelectFixture();
  const auto matcher = *gpucanary::model::Matcher::Make(gpucanary::model::Matcher::Type::kRegex,
                                                        "__name__", "DCGM_.*");
  std::uint64_t samples = 0;
  double sum = 0;
  for (auto _ : state) {
    auto got = store.Query({matcher}, kT0 + 300 * 1000LL, kT0 + 899 * 1000LL);
    if (!got) {
      state.SkipWithError(got.error().message().c_str());
      break;
    }
    // Reading means looking at every sample: sum them, as a consumer would.
    for (const st::SeriesData& s : got->series) {
      (void)got->ForEach(s, [&](std::span<const st::Sample> run) {
        samples += run.size();
        for (const st::Sample& x : run) sum += x.v;
      });
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.counters["series"] = g_gpus * kFields;
}
BENCHMARK(BM_Select10Min)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same read with the decoding spread over --threads threads (the query
// itself is one call): QueryResult is read-only, so consumers such as the
// judge and the HTTP API can split its series among cores.
void BM_Select10MinParallel(benchmark::State& state) {
  st::Store& store = SelectFixture();
  const auto matcher = *gpucanary::model::Matcher::Make(gpucanary::model::Matcher::Type::kRegex,
                                                        "__name__", "DCGM_.*");
  const auto threads = static_cast<std::size_t>(state.range(0));
  std::uint64_t samples = 0;
  std::vector<double> sums(threads);
  for (auto _ : state) {
    auto got = store.Query({matcher}, kT0 + 300 * 1000LL, kT0 + 899 * 1000LL);
    if (!got) {
      state.SkipWithError(got.error().message().c_str());
      break;
    }
    std::vector<std::uint64_t> counts(threads);
    std::vector<std::thread> pool;
    for (std::size_t k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        for (std::size_t i = k; i < got->series.size(); i += threads) {
          (void)got->ForEach(got->series[i], [&](std::span<const st::Sample> run) {
            counts[k] += run.size();
            for (const st::Sample& x : run) sums[k] += x.v;
          });
        }
      });
    }
    for (std::thread& t : pool) t.join();
    for (std::uint64_t c : counts) samples += c;
  }
  benchmark::DoNotOptimize(sums);
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
}
BENCHMARK(BM_Select10MinParallel)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Query alone: matching, merging and sorting the series, no decoding.
void BM_Select10MinQueryOnly(benchmark::State& state) {
  st::Store& store = SelectFixture();
  const auto matcher = *gpucanary::model::Matcher::Make(gpucanary::model::Matcher::Type::kRegex,
                                                        "__name__", "DCGM_.*");
  for (auto _ : state) {
    auto got = store.Query({matcher}, kT0 + 300 * 1000LL, kT0 + 899 * 1000LL);
    benchmark::DoNotOptimize(got);
  }
}
BENCHMARK(BM_Select10MinQueryOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--gpus=", 7) == 0) {
      g_gpus = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--write_om=", 11) == 0) {
      g_write_om = argv[i] + 11;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
