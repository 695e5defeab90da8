// The scraper's cost (docs/scraping.md, "Cost"): a live simulated fleet of N
// nodes (each a dcgm-exporter and a vLLM endpoint, served in this process on
// loopback) scraped by a ScrapeManager at `--interval_ms` into a store that
// only counts, for `--seconds` of real time.
//
//   build/release/bench/scrape_bench [--nodes=64] [--seconds=10] [--interval_ms=1000]
//                                    [--ingest_threads=1]
//
// Prints scrapes, failures, skipped slots, samples, the most fetches and
// ingests in flight at once, and the scraper's own CPU (its io thread plus
// its ingest workers, measured with per-thread CPU clocks, so the
// simulator's serving in the same process is not counted): seconds, and
// seconds per million samples. Not a Google Benchmark: it measures a steady
// state in real time.

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "model/labels.h"
#include "net/gzip.h"
#include "net/http_client.h"
#include "scrape/ingester.h"
#include "scrape/scrape_manager.h"
#include "sim/live.h"
#include "sim/scenario.h"
#include "store/appender.h"

namespace {

using gpucanary::Result;
using gpucanary::Status;
namespace store = gpucanary::store;
namespace scrape = gpucanary::scrape;
namespace model = gpucanary::model;

// Counts what a store would take: one ref per distinct label set (hashed
// once, on the scraper's cache misses only), samples per commit.
class CountingAppendable final : public store::Appendable {
 public:
  std::unique_ptr<store::Appender> NewAppender() override {
    return std::make_unique<CountingAppender>(*this);
  }
  std::uint64_t samples() const { return samples_.load(); }
  std::uint64_t series() const {
    gpucanary::MutexLock lock(mu_);
    return refs_.size();
  }

 private:
  class CountingAppender final : public store::Appender {
   public:
    explicit CountingAppender(CountingAppendable& owner) : owner_(owner) {}
    Result<store::SeriesRef> Series(const model::Labels& labels) override {
      const std::uint64_t h = model::LabelsHash(labels);
      gpucanary::MutexLock lock(owner_.mu_);
      return owner_.refs_.emplace(h, owner_.refs_.size()).first->second;
    }
    Status Append(store::SeriesRef, std::int64_t, double) override {
      ++pending_;
      return Status::Ok();
    }
    Result<store::CommitResult> Commit() override {
      owner_.samples_.fetch_add(pending_);
      store::CommitResult r;
      r.appended = pending_;
      pending_ = 0;
      return r;
    }
    void Rollback() override { pending_ = 0; }

   private:
    CountingAppendable& owner_;
    std::size_t pending_ = 0;
  };

  mutable gpucanary::Mutex mu_;
  std::unordered_map<std::uint64_t, store::SeriesRef> refs_ GUARDED_BY(mu_);
  std::atomic<std::uint64_t> samples_{0};
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The parts of one scrape without the network: gzip decoding of a node's
// dcgm-exporter body and ingesting it (parse, cache lookups, appends,
// staleness bookkeeping, synthetic series, commit), each repeated on one
// thread; ns per sample of each.
void MeasureParts(gpucanary::sim::LiveSim& live, CountingAppendable& counting) {
  const auto& e = live.endpoints().front();
  gpucanary::net::FetchOptions fo;
  fo.accept_gzip = false;
  Result<gpucanary::net::HttpResponse> plain =
      gpucanary::net::Fetch("http://127.0.0.1:" + std::to_string(e.dcgm_port) + "/metrics", fo);
  if (!plain || plain->status != 200) return;
  Result<std::string> gz = gpucanary::net::GzipCompress(plain->body, 1);
  if (!gz) return;
  scrape::Ingester in(counting, {{"instance", "127.0.0.1:9400"}, {"job", "dcgm"}}, {});
  constexpr int kRounds = 2000;
  std::size_t samples = 0;
  double t0 = ThreadCpuSeconds();
  for (int i = 0; i < kRounds; ++i) {
    samples += in.Ingest(plain->body, gpucanary::expfmt::Format::kPrometheusText,
                         1'764'680'000'000 + i * 1000, 0.001)
                   .samples;
  }
  const double ingest_s = ThreadCpuSeconds() - t0;
  t0 = ThreadCpuSeconds();
  std::size_t bytes = 0;
  for (int i = 0; i < kRounds; ++i) bytes += gpucanary::net::GzipDecompress(*gz, 1 << 26)->size();
  const double gunzip_s = ThreadCpuSeconds() - t0;
  const double n = static_cast<double>(samples);
  std::printf(
      "parts: dcgm body %zu B (%zu B gzip), %zu samples; ingest %.0f ns/sample, "
      "gunzip %.0f ns/sample (%.0f MB/s)\n",
      plain->body.size(), gz->size(), samples / kRounds, ingest_s / n * 1e9, gunzip_s / n * 1e9,
      static_cast<double>(bytes) / gunzip_s / 1e6);
}

std::int64_t Arg(int argc, char** argv, const std::string& name, std::int64_t fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with(prefix)) return std::atoll(arg.c_str() + prefix.size());
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = static_cast<int>(std::max<std::int64_t>(1, Arg(argc, argv, "nodes", 64)));
  const int seconds = static_cast<int>(std::max<std::int64_t>(1, Arg(argc, argv, "seconds", 10)));
  const std::int64_t interval_ms =
      std::max<std::int64_t>(100, Arg(argc, argv, "interval_ms", 1000));
  const int ingest_threads = static_cast<int>(Arg(argc, argv, "ingest_threads", 1));

  const std::string yaml =
      "seed: 1\nduration: 1h\nfleet:\n  - {nodes: \"node-[1-" + std::to_string(nodes) +
      "]\", gpu: h100-sxm}\nreleases:\n  stable: {profile: baseline}\n"
      "traffic: {rps: " +
      std::to_string(50 * nodes) + "}\nevents:\n  - {at: 0s, deploy: stable, nodes: all}\n";
  Result<gpucanary::sim::Scenario> scenario = gpucanary::sim::ParseScenario(yaml, "bench.yaml");
  if (!scenario) {
    std::fprintf(stderr, "%s\n", scenario.error().message().c_str());
    return 1;
  }
  gpucanary::RealClock clock;
  gpucanary::sim::LiveOptions lo;
  lo.base_port = 0;
  lo.control_port = 0;
  lo.http_threads = 2;
  gpucanary::sim::LiveSim live(*scenario, gpucanary::sim::EngineOptions{}, lo, clock);
  if (Status s = live.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  scrape::ScrapeConfig config;
  for (const char* job : {"dcgm", "vllm"}) {
    scrape::JobConfig j;
    j.job_name = job;
    j.scrape_interval_ms = interval_ms;
    j.scrape_timeout_ms = interval_ms * 9 / 10;
    scrape::StaticConfig targets;
    for (const auto& e : live.endpoints()) {
      const int port = std::string(job) == "dcgm" ? e.dcgm_port : e.server_port;
      targets.targets.push_back("127.0.0.1:" + std::to_string(port));
    }
    j.static_configs.push_back(targets);
    config.jobs.push_back(j);
  }
  // The first step deploys the release; before it, vLLM endpoints answer 503.
  while (live.WithEngine([](gpucanary::sim::Engine& e) { return e.elapsed_s(); }) < 0.2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  CountingAppendable counting;
  MeasureParts(live, counting);
  scrape::ScrapeManager::Options o;
  o.ingest_threads = ingest_threads;
  scrape::ScrapeManager m(counting, clock, o);
  if (Status s = m.ApplyConfig(config); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  if (Status s = m.Start(); !s.ok()) return 1;
  // One interval to warm up (connections, caches), then measure.
  std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms + 200));
  const scrape::ScrapeManager::Stats a = m.stats();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const scrape::ScrapeManager::Stats b = m.stats();
  m.Stop();
  live.Stop();

  double worst_ms = 0;
  for (const scrape::TargetStatus& t : m.Targets()) {
    worst_ms = std::max(worst_ms, t.last_duration_s * 1000);
  }
  const double samples = static_cast<double>(b.samples - a.samples);
  const double cpu =
      (b.io_cpu_seconds - a.io_cpu_seconds) + (b.ingest_cpu_seconds - a.ingest_cpu_seconds);
  std::printf(
      "nodes=%d targets=%zu interval_ms=%lld ingest_threads=%d seconds=%d scrapes=%llu "
      "failures=%llu skipped=%llu samples=%.0f samples_per_s=%.0f series=%llu max_in_flight=%llu "
      "last_scrape_ms_max=%.1f cpu_s=%.3f (io %.3f, ingest %.3f) cpu_s_per_million_samples=%.3f "
      "ns_per_sample=%.0f cpu_share_of_one_core=%.1f%%\n",
      nodes, b.targets, static_cast<long long>(interval_ms),  // NOLINT(google-runtime-int)
      ingest_threads, seconds,
      static_cast<unsigned long long>(b.scrapes - a.scrapes),    // NOLINT(google-runtime-int)
      static_cast<unsigned long long>(b.failures - a.failures),  // NOLINT(google-runtime-int)
      static_cast<unsigned long long>(b.skipped_slots - a.skipped_slots),  // NOLINT
      samples, samples / seconds,
      static_cast<unsigned long long>(counting.series()),  // NOLINT(google-runtime-int)
      static_cast<unsigned long long>(b.max_in_flight),    // NOLINT(google-runtime-int)
      worst_ms, cpu, b.io_cpu_seconds - a.io_cpu_seconds,
      b.ingest_cpu_seconds - a.ingest_cpu_seconds, samples > 0 ? cpu / samples * 1e6 : 0.0,
      samples > 0 ? cpu / samples * 1e9 : 0.0, 100.0 * cpu / seconds);
  return b.failures == a.failures ? 0 : 1;
}
