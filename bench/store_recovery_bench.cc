// Reopening a store (docs/performance.md, "Reopening the store
// (recovery)"): how long Store::Open takes to recover N series from a sealed
// chunk segment, the active chunk segment, a checkpoint and the WAL after it.
//
//   BM_Recover/N   N series (30 dcgm fields per GPU), laid out so that series
//                  reach the head out of ref order, as after a real restart:
//                    - refs 1..N/2 ("A") have chunks in a sealed segment and
//                      their open chunks in the checkpoint that sealing wrote;
//                    - refs N/2+1..N ("B") were created after it, so their
//                      series records and samples are only in the WAL;
//                    - the top tenth of B ("hot") had a chunk sealed into the
//                      active segment, whose seg_series records recovery reads
//                      first: every A and cold B series then arrives with a
//                      ref below one already in the head.
//                  Only Open is timed (the store is built once per N and
//                  reopened each iteration); `index_builds` is how many times
//                  recovery built the head's postings from scratch.
//
//   build/release/bench/store_recovery_bench                                # every N
//   build/release/bench/store_recovery_bench --benchmark_filter=BM_Recover/1000000/

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/matcher.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
namespace st = gpucanary::store;

constexpr int kFields = 30;
constexpr std::int64_t kT0 = 1764680000000;

// Four samples a chunk and 10 s a segment: a handful of commits seal chunks
// and a segment, whatever N is.
st::StoreOptions RecoveryOptions() {
  st::StoreOptions o;
  o.sync_interval_ms = 0;
  o.max_chunk_samples = 4;
  o.segment_span_ms = 10'000;
  return o;
}

gpucanary::model::Labels SeriesLabels(int i) {
  const int gpu = i / kFields;
  std::string name = "DCGM_FI_FIELD_" + std::to_string(i % kFields);
  gpucanary::model::Labels l = {{"__name__", std::move(name)},
                                {"gpu", std::to_string(gpu % 8)},
                                {"Hostname", "node-" + std::to_string(gpu / 8)},
                                {"UUID", "GPU-" + std::to_string(1000000 + gpu)}};
  gpucanary::model::SortLabels(l);
  return l;
}

// One commit holding one sample at second `s` for each of refs[from, to).
bool CommitSecond(st::Appender& app, const std::vector<st::SeriesRef>& refs, std::size_t from,
                  std::size_t to, int s) {
  for (std::size_t i = from; i < to; ++i) {
    if (!app.Append(refs[i], kT0 + s * 1000LL, static_cast<double>(i % 97) + s).ok()) return false;
  }
  auto r = app.Commit();
  return r.has_value() && r->first_error.ok();
}

// Builds the layout described at the top in `dir`. Returns "" or what failed.
std::string BuildStore(const fs::path& dir, int n) {
  auto opened = st::Store::Open(dir, RecoveryOptions());
  if (!opened) return opened.error().message();
  st::Store& store = **opened;
  auto app = store.NewAppender();
  std::vector<st::SeriesRef> refs;
  refs.reserve(static_cast<std::size_t>(n));
  const auto half = static_cast<std::size_t>(n / 2);
  const auto all = static_cast<std::size_t>(n);
  const std::size_t hot = all - (all - half) / 10;
  for (std::size_t i = 0; i < half; ++i) {
    refs.push_back(*app->Series(SeriesLabels(static_cast<int>(i))));
  }
  // A: chunks [0, 3] and [4, 15] sealed; the second seal spans 15 s, so the
  // segment is sealed and a checkpoint written. Their open chunks hold 16.
  for (int s : {0, 1, 2, 3, 4, 5, 6, 15, 16}) {
    if (!CommitSecond(*app, refs, 0, half, s)) return "committing A";
  }
  // B: created after the checkpoint, one sample each (WAL only).
  for (std::size_t i = half; i < all; ++i) {
    refs.push_back(*app->Series(SeriesLabels(static_cast<int>(i))));
  }
  if (!CommitSecond(*app, refs, half, all, 20)) return "committing B";
  // Hot B: a chunk [20, 23] sealed into the active segment.
  for (int s : {21, 22, 23, 24}) {
    if (!CommitSecond(*app, refs, hot, all, s)) return "committing hot B";
  }
  if (store.stats().segments < 2) return "no sealed segment";
  return "";
}

void BM_Recover(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const fs::path dir =
      fs::temp_directory_path() /
      ("gc_store_recovery_bench_" + std::to_string(::getpid()) + "_" + std::to_string(n));
  fs::remove_all(dir);
  if (std::string err = BuildStore(dir, n); !err.empty()) {
    state.SkipWithError(err.c_str());
    fs::remove_all(dir);
    return;
  }
  st::StoreStats stats;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto store = st::Store::Open(dir, RecoveryOptions());
    const auto end = std::chrono::steady_clock::now();
    if (!store) {
      state.SkipWithError(store.error().message().c_str());
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    stats = (*store)->stats();
    // Not timed: every series is in the head and found by its labels.
    const auto all = *gpucanary::model::Matcher::Make(gpucanary::model::Matcher::Type::kRegex,
                                                      "__name__", "DCGM_.*");
    auto got = (*store)->Query({all}, kT0, kT0 + 3600 * 1000LL);
    if (!got || got->series.size() != static_cast<std::size_t>(n)) {
      state.SkipWithError("the reopened store does not hold every series");
      break;
    }
  }
  state.counters["series"] = static_cast<double>(stats.head_series);
  state.counters["index_builds"] = static_cast<double>(stats.head_index_builds);
  state.counters["segments"] = static_cast<double>(stats.segments);
  fs::remove_all(dir);
}
BENCHMARK(BM_Recover)
    ->Arg(2'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
