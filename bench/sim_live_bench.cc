// Live serving cost of the simulator (docs/simulator.md, "Live mode"): a
// fleet of N nodes served on loopback in real time while scrapers fetch every
// dcgm-exporter and vLLM endpoint once a second over kept-alive connections
// with "Accept-Encoding: gzip", as a Prometheus at 1 s would.
//
//   build/release/bench/sim_live_bench [--nodes=256] [--seconds=10] [--scrapers=4]
//
// Prints scrapes done and failed, scrape latency (p50, p99, max), the
// engine's lag behind the clock, and the process's CPU use over the run
// (user + system, all threads: the stepping thread, the io thread and the
// scraper threads themselves, so an upper bound on the simulator's share).
// Not a Google Benchmark: it measures a steady state in real time.

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "net/http_client.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Target {
  std::uint16_t port;
  bool dcgm;
};

}  // namespace

int main(int argc, char** argv) {
  int nodes = 256;
  int seconds = 10;
  int scrapers = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--nodes=")) nodes = std::max(1, std::atoi(arg.c_str() + 8));
    if (arg.starts_with("--seconds=")) seconds = std::max(1, std::atoi(arg.c_str() + 10));
    if (arg.starts_with("--scrapers=")) scrapers = std::max(1, std::atoi(arg.c_str() + 11));
    if (arg.starts_with("--benchmark_")) continue;  // CTest's smoke flags
  }
  const std::string yaml =
      "seed: 1\nduration: 1h\nfleet:\n  - {nodes: \"node-[1-" + std::to_string(nodes) +
      "]\", gpu: h100-sxm}\nreleases:\n  stable: {profile: baseline}\n"
      "traffic: {rps: " +
      std::to_string(50 * nodes) + "}\nevents:\n  - {at: 0s, deploy: stable, nodes: all}\n";
  gpucanary::Result<gpucanary::sim::Scenario> scenario =
      gpucanary::sim::ParseScenario(yaml, "bench.yaml");
  if (!scenario) {
    std::fprintf(stderr, "%s\n", scenario.error().message().c_str());
    return 1;
  }
  gpucanary::RealClock clock;
  gpucanary::sim::LiveOptions options;
  options.base_port = 0;
  options.control_port = 0;
  gpucanary::sim::LiveSim live(*scenario, gpucanary::sim::EngineOptions{}, options, clock);
  if (gpucanary::Status s = live.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::vector<Target> targets;
  for (const auto& e : live.endpoints()) {
    targets.push_back({e.dcgm_port, true});
    targets.push_back({e.server_port, false});
  }

  // The first step deploys the release; before it, vLLM endpoints answer 503.
  while (live.WithEngine([](gpucanary::sim::Engine& e) { return e.elapsed_s(); }) < 0.2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> bytes{0};
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(scrapers));
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < scrapers; ++t) {
    threads.emplace_back([&, t] {
      std::vector<gpucanary::net::HttpConnection> conns;
      std::vector<Target> mine;
      for (std::size_t i = static_cast<std::size_t>(t); i < targets.size();
           i += static_cast<std::size_t>(scrapers)) {
        mine.push_back(targets[i]);
        conns.emplace_back("127.0.0.1", targets[i].port);
      }
      for (int round = 0; round < seconds; ++round) {
        // Spread each scraper's targets over the second, as Prometheus
        // spreads targets by their hash.
        const auto round_start = start + std::chrono::seconds(round);
        for (std::size_t i = 0; i < conns.size(); ++i) {
          std::this_thread::sleep_until(round_start +
                                        std::chrono::microseconds(1000000 * i / conns.size()));
          const auto t0 = Clock::now();
          auto r = conns[i].Request("/metrics");
          const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
          if (!r || r->status != 200) {
            if (failures++ < 5) {
              std::fprintf(stderr, "scrape failed: %s\n",
                           r ? ("status " + std::to_string(r->status)).c_str()
                             : r.error().message().c_str());
            }
          } else {
            bytes += r->body.size();
            latencies[static_cast<std::size_t>(t)].push_back(ms);
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  const std::int64_t lag_ms =
      clock.NowMs() - live.WithEngine([](gpucanary::sim::Engine& e) { return e.now_ms(); });
  live.Stop();

  std::vector<double> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double q) {
    return all.empty() ? 0.0
                       : all[static_cast<std::size_t>(q * static_cast<double>(all.size() - 1))];
  };
  std::printf(
      "nodes=%d gpus=%d endpoints=%zu seconds=%d scrapes=%zu failed=%llu "
      "body_mib_per_s=%.1f latency_ms p50=%.2f p99=%.2f max=%.2f engine_lag_ms=%lld "
      "cpu_s=%.2f cpu_share_of_one_core=%.1f%%\n",
      nodes, nodes * 8, targets.size(), seconds, all.size(),
      static_cast<unsigned long long>(failures.load()),  // NOLINT(google-runtime-int)
      static_cast<double>(bytes.load()) / wall / (1 << 20), pct(0.5), pct(0.99),
      all.empty() ? 0.0 : all.back(),
      static_cast<long long>(lag_ms),  // NOLINT(google-runtime-int)
      cpu, 100.0 * cpu / wall);
  return failures.load() == 0 ? 0 : 1;
}
