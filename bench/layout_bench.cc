// Judging a recording time-blocked against the same recording series-grouped
// (docs/performance.md, "Recording layouts"; docs/recorded-telemetry.md,
// "Layouts"): writes dcgm-exporter-style telemetry of `gpus` GPUs (8 a node,
// 16 fields each, 1 s scrapes for `seconds`) in both layouts, baseline nodes in
// one file and canary nodes in another, then judges each pair as `gpucanary
// judge` does (analysis::ReplayRecordings feeding analysis::Judge with the
// default policy) in a child process, and prints the wall time and the child's
// peak RSS. With --store, also the alternative the issue proposed: the
// series-grouped files backfilled into the embedded store (as `gpucanary
// backfill` does) and judged from it through the live canary's store replay.
//
//   build/release/bench/layout_bench --gpus=128 --seconds=4400 [--dir=/tmp] [--store] [--keep]
//
// The files are written under --dir (default $TMPDIR or /tmp) and removed at the
// end unless --keep. Not a Google Benchmark: every measurement runs in its own
// process so that its peak RSS is its own.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/live/store_source.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "expfmt/reader.h"
#include "model/labels.h"
#include "model/matcher.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using namespace gpucanary;  // NOLINT(google-build-using-namespace)

constexpr std::int64_t kStart = 1764680000;

struct Field {
  const char* name;
  const char* type;
  double base;
  bool counter;
};
constexpr Field kFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", 1980, false},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", 2619, false},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", 0, false},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", 45, false},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", 61, false},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", 612.25, false},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "unknown", 2.3e11, true},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", 100, false},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", 63, false},
    {"DCGM_FI_DEV_FB_FREE", "gauge", 4012, false},
    {"DCGM_FI_DEV_FB_USED", "gauge", 77219, false},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", 0.93, false},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", 0.88, false},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", 0.41, false},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", 0.57, false},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "unknown", 0, true},
};

struct Args {
  int gpus = 128;
  int seconds = 4400;
  std::string dir;
  bool store = false;
  bool keep = false;
};

// One sample line, dcgm-exporter's labels in its order.
int Line(char* buf, std::size_t size, const Field& f, int gpu, std::int64_t t) {
  const int node = gpu / 8 + 1;
  const int local = gpu % 8;
  // A deterministic wobble; the counter grows ~600 J a second.
  const double wobble = static_cast<double>((gpu * 7919 + t * 104729) % 17) / 100.0;
  const double value = f.counter ? f.base + 600000.0 * static_cast<double>(t - kStart) + wobble
                                 : f.base * (1.0 + wobble / 50.0);
  return std::snprintf(buf, size,
                       "%s{gpu=\"%d\",UUID=\"GPU-5fd4f087-86f3-7a43-b711-4771313a%04d\","
                       "pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\","
                       "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-%d\","
                       "DCGM_FI_DRIVER_VERSION=\"580.105.08\"} %.17g %" PRId64 ".000\n",
                       f.name, local, gpu, 0x18 + local * 0x10, local, node, value, t);
}

// GPUs [first, last) in one file, time-blocked or series-grouped.
bool WriteRecording(const std::string& path, int first, int last, int seconds, bool grouped) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return false;
  std::vector<char> buf(1 << 20);
  std::setvbuf(out, buf.data(), _IOFBF, buf.size());
  char line[512];
  auto meta = [&](const Field& f) { std::fprintf(out, "# TYPE %s %s\n", f.name, f.type); };
  if (grouped) {
    for (const Field& f : kFields) {
      meta(f);
      for (int g = first; g < last; ++g) {
        for (std::int64_t t = kStart; t < kStart + seconds; ++t) {
          std::fwrite(line, 1, static_cast<std::size_t>(Line(line, sizeof line, f, g, t)), out);
        }
      }
    }
  } else {
    for (std::int64_t t = kStart; t < kStart + seconds; ++t) {
      for (const Field& f : kFields) {
        if (t == kStart) meta(f);
        for (int g = first; g < last; ++g) {
          std::fwrite(line, 1, static_cast<std::size_t>(Line(line, sizeof line, f, g, t)), out);
        }
      }
    }
  }
  std::fputs("# EOF\n", out);
  return std::fclose(out) == 0;
}

// Judges the pair as `gpucanary judge` does; the verdict and tick count.
Status Judge(const std::string& base, const std::string& canary, std::int64_t release,
             std::string& result) {
  return analysis::ReplayRecordings(
      {{base, analysis::Role::kBaseline, std::nullopt},
       {canary, analysis::Role::kCanary, std::nullopt}},
      {}, [&](analysis::Replay& replay) -> Status {
        analysis::Judge judge({.policy = analysis::DefaultPolicy(), .release_start_s = release});
        analysis::Tick tick;
        std::uint64_t ticks = 0;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) return more.error();
          if (!*more) break;
          judge.Add(tick, analysis::Catalog::Of(replay));
          ++ticks;
        }
        const analysis::Report report = judge.Finish();
        result = std::string(analysis::VerdictName(report.verdict)) + ", " + std::to_string(ticks) +
                 " ticks, " + std::to_string(replay.stats().samples) + " samples";
        return Status::Ok();
      });
}

store::StoreOptions BackfillOptions() {
  store::StoreOptions o;
  o.retention_ms = 0;
  o.retention_bytes = 0;
  o.sync_interval_ms = 0;
  return o;
}

// The alternative: backfill both files into a store, judge from it.
Status JudgeThroughStore(const std::string& base, const std::string& canary, const fs::path& data,
                         std::int64_t release, int nodes, std::string& result) {
  auto opened = store::Store::Open(data, BackfillOptions());
  if (!opened) return opened.error();
  store::Store& st = **opened;
  for (const std::string& file : {base, canary}) {
    auto appender = st.NewAppender();
    std::unordered_map<std::string, store::SeriesRef> refs;
    std::size_t pending = 0;
    Status failed;
    auto read = expfmt::ReadFile(file, {}, [&](const expfmt::SampleView& s, auto, auto) {
      std::string key = std::string(s.name) + std::string(s.label_text);
      auto it = refs.find(key);
      if (it == refs.end()) {
        model::Labels labels{{std::string(model::kMetricNameLabel), std::string(s.name)}};
        for (const model::LabelView& l : s.labels) {
          labels.push_back({std::string(l.name), std::string(l.value)});
        }
        model::SortLabels(labels);
        auto ref = appender->Series(labels);
        if (!ref) {
          failed = ref.error();
          return;
        }
        it = refs.emplace(std::move(key), *ref).first;
      }
      if (Status a = appender->Append(it->second, s.timestamp_ms, s.value); !a.ok()) failed = a;
      if (++pending >= 4096) {
        pending = 0;
        if (auto c = appender->Commit(); !c) failed = c.error();
      }
    });
    if (!read) return read.error();
    if (auto c = appender->Commit(); !c) return c.error();
    if (!failed.ok()) return failed;
  }
  // Baseline: the first half of the nodes; canary: the rest.
  auto hosts = [](int from, int to) {
    std::string re;
    for (int n = from; n <= to; ++n) re += (re.empty() ? "" : "|") + ("node-" + std::to_string(n));
    return re;
  };
  auto base_m = model::Matcher::Make(model::Matcher::Type::kRegex, "Hostname", hosts(1, nodes / 2));
  auto canary_m =
      model::Matcher::Make(model::Matcher::Type::kRegex, "Hostname", hosts(nodes / 2 + 1, nodes));
  if (!base_m || !canary_m) return Status(StatusCode::kInternal, "matcher");
  std::vector<analysis::LiveTickSource*> sources;
  auto replay = analysis::OpenStoreReplay(st,
                                          {{"baseline", analysis::Role::kBaseline, {*base_m}},
                                           {"canary", analysis::Role::kCanary, {*canary_m}}},
                                          kStart, &sources);
  if (!replay) return replay.error();
  for (analysis::LiveTickSource* s : sources) {
    s->SetReadyThrough(kStart + 1'000'000);
    s->Close();
  }
  analysis::Judge judge({.policy = analysis::DefaultPolicy(), .release_start_s = release});
  analysis::Tick tick;
  std::uint64_t ticks = 0;
  for (;;) {
    Result<bool> more = (*replay)->Next(tick);
    if (!more) return more.error();
    if (!*more) break;
    judge.Add(tick, analysis::Catalog::Of(**replay));
    ++ticks;
  }
  result = std::string(analysis::VerdictName(judge.Finish().verdict)) + ", " +
           std::to_string(ticks) + " ticks, " + std::to_string((*replay)->stats().samples) +
           " samples";
  return Status::Ok();
}

// Runs `work` in a child; prints its time and peak RSS. False on failure.
bool Measure(const char* what, const std::function<Status(std::string&)>& work) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return false;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string result;
    Status st = work(result);
    const std::string msg = st.ok() ? result : "error: " + st.message();
    (void)!::write(pipe_fds[1], msg.data(), msg.size());
    ::_exit(st.ok() ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;)
    msg.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-34s %8.2f s  peak RSS %7.1f MB  (%s)\n", what, s,
              static_cast<double>(usage.ru_maxrss) / 1024.0, msg.c_str());
  std::fflush(stdout);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view flag) -> const char* {
      return a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '='
                 ? argv[i] + flag.size() + 1
                 : nullptr;
    };
    if (const char* v = value("--gpus")) {
      args.gpus = std::atoi(v);
    } else if (const char* v2 = value("--seconds")) {
      args.seconds = std::atoi(v2);
    } else if (const char* v3 = value("--dir")) {
      args.dir = v3;
    } else if (a == "--store") {
      args.store = true;
    } else if (a == "--keep") {
      args.keep = true;
    } else {
      std::fprintf(stderr,
                   "usage: layout_bench [--gpus=N] [--seconds=S] [--dir=D] [--store] [--keep]\n");
      return false;
    }
  }
  return args.gpus >= 16 && args.gpus % 16 == 0 && args.seconds >= 4;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) {
    std::fprintf(stderr,
                 "--gpus: a multiple of 16 (two halves of whole 8-GPU nodes); --seconds >= 4\n");
    return 2;
  }
  if (args.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    args.dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  const fs::path dir =
      fs::path(args.dir) / ("gpucanary-layout-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int half = args.gpus / 2;
  const std::int64_t release = kStart + args.seconds / 2;
  struct Pair {
    const char* layout;
    std::string base, canary;
  };
  const Pair pairs[] = {
      {"time-blocked", (dir / "tb-base.om").string(), (dir / "tb-canary.om").string()},
      {"series-grouped", (dir / "sg-base.om").string(), (dir / "sg-canary.om").string()}};
  bool ok = true;
  for (const Pair& p : pairs) {
    const bool grouped = std::strcmp(p.layout, "series-grouped") == 0;
    ok = ok && WriteRecording(p.base, 0, half, args.seconds, grouped) &&
         WriteRecording(p.canary, half, args.gpus, args.seconds, grouped);
  }
  if (!ok) {
    std::fprintf(stderr, "cannot write the recordings under %s\n", dir.c_str());
    return 1;
  }
  const std::uintmax_t bytes = fs::file_size(pairs[0].base) + fs::file_size(pairs[0].canary);
  std::printf("%d GPUs x %d s x %zu fields = %.1f M samples, %.0f MB a layout (two files)\n",
              args.gpus, args.seconds, std::size(kFields),
              static_cast<double>(args.gpus) * args.seconds * std::size(kFields) / 1e6,
              static_cast<double>(bytes) / 1e6);
  for (const Pair& p : pairs) {
    const std::string what = std::string("judge, ") + p.layout;
    ok = Measure(what.c_str(),
                 [&](std::string& r) { return Judge(p.base, p.canary, release, r); }) &&
         ok;
  }
  if (args.store) {
    ok = Measure("judge, series-grouped via store",
                 [&](std::string& r) {
                   return JudgeThroughStore(pairs[1].base, pairs[1].canary, dir / "store", release,
                                            args.gpus / 8, r);
                 }) &&
         ok;
  }
  if (!args.keep) fs::remove_all(dir);
  return ok ? 0 : 1;
}
