// Parse throughput of the exposition parser (see docs/performance.md).
//
//   cmake --preset release && cmake --build build/release --target parser_bench
//   build/release/bench/parser_bench
//
// Inputs: Prometheus's own parser benchmark files (shared/data/
// prometheus-textparse-testdata) and a 1,000-GPU dcgm-exporter exposition.
// Counters: bytes_per_second (MB/s) and items_per_second (samples/s; ns per
// sample = 1e9 / items_per_second). BM_MemchrLines is the floor: the cost of
// only finding the line breaks of the same bytes.

#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "dcgm_exposition.h"
#include "expfmt/parser.h"
#include "expfmt/reader.h"

namespace gpucanary::expfmt {
namespace {

std::string Slurp(const std::string& name) {
  std::ifstream in(
      std::string(GPUCANARY_SHARED_DIR) + "/data/prometheus-textparse-testdata/" + name,
      std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string& Input(int which) {
  static const std::string kInputs[] = {
      Slurp("alltypes.237mfs.prom.txt"),
      Slurp("alltypes.237mfs.nometa.prom.txt"),
      bench::MakeDcgmExposition(1000),
  };
  return kInputs[which];
}

const char* InputName(int which) {
  static const char* kNames[] = {"alltypes.237mfs", "alltypes.237mfs.nometa", "dcgm_1000gpu"};
  return kNames[which];
}

void BM_Parse(benchmark::State& state) {
  const std::string& text = Input(static_cast<int>(state.range(0)));
  state.SetLabel(InputName(static_cast<int>(state.range(0))));
  std::int64_t samples = 0;
  Parser parser(text, Format::kPrometheusText);
  for (auto _ : state) {
    parser.Reset(text, 1);
    double sum = 0;
    std::int64_t n = 0;
    for (Entry e; (e = parser.Next()) != Entry::kEnd;) {
      if (e == Entry::kSample) {
        sum += parser.sample().value;
        ++n;
      } else if (e == Entry::kError) {
        state.SkipWithError(parser.error().message.c_str());
        return;
      }
    }
    benchmark::DoNotOptimize(sum);
    samples += n;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
  state.SetItemsProcessed(samples);
}
BENCHMARK(BM_Parse)->DenseRange(0, 2);

// Parser + validator (series table, per-series time order): what `gpucanary
// check` does per byte.
void BM_ParseAndValidate(benchmark::State& state) {
  const std::string& text = Input(static_cast<int>(state.range(0)));
  state.SetLabel(InputName(static_cast<int>(state.range(0))));
  ReadOptions options;
  options.format = Format::kPrometheusText;
  std::int64_t samples = 0;
  for (auto _ : state) {
    ReadReport r = ReadBuffer(text, Format::kPrometheusText, "bench", options);
    if (!r.ok()) {
      state.SkipWithError(r.messages[0].c_str());
      return;
    }
    samples += static_cast<std::int64_t>(r.stats.samples);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
  state.SetItemsProcessed(samples);
}
BENCHMARK(BM_ParseAndValidate)->DenseRange(0, 2);

void BM_MemchrLines(benchmark::State& state) {
  const std::string& text = Input(static_cast<int>(state.range(0)));
  state.SetLabel(InputName(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    std::int64_t lines = 0;
    const char* p = text.data();
    const char* e = p + text.size();
    while (const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(e - p))) {
      p = static_cast<const char*>(nl) + 1;
      ++lines;
    }
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_MemchrLines)->DenseRange(0, 2);

}  // namespace
}  // namespace gpucanary::expfmt

BENCHMARK_MAIN();
