// HTTP serving cost for the fleet simulator (docs/performance.md, "HTTP
// serving"): one net::HttpServer with N listeners, each serving a
// dcgm-exporter scrape of one 8-GPU node (53 KiB, bench/dcgm_exposition.h),
// scraped by client threads over kept-alive connections (one per listener,
// as Prometheus holds one per target), with "Accept-Encoding: gzip" as
// Prometheus sends, or without.
//
//   build/release/bench/http_bench [--listeners=400] [--clients=2]
//       [--server_threads=1] [--gzip_level=1] [--gpus_per_node=8]
//       [--period_ms=1000]
//
// BM_ScrapeRound: one iteration scrapes every listener once, as fast as the
// clients go. BM_ScrapePaced: one iteration is one period (--period_ms,
// 1 s) in which every listener is scraped once, spread evenly, as
// Prometheus does. Counters:
// req_per_s; mean_us and p99_us, the latency of one scrape as the client
// sees it; server_cpu_ms_per_1k, the CPU time of the server's io threads per
// 1000 scrapes (the serving cost alone); process_cpu_ms_per_1k, the whole
// process (clients included) from getrusage; core_pct_at_1hz, the share of
// one core the server needs when every listener is scraped once a second
// (measured in BM_ScrapePaced, extrapolated from the cost per scrape in
// BM_ScrapeRound); wire_kib, the response body as sent. BM_Gzip: compressing
// one body at a zlib level.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dcgm_exposition.h"
#include "net/gzip.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace {

namespace net = gpucanary::net;

int g_listeners = 400;
int g_clients = 2;
int g_server_threads = 1;
int g_gzip_level = 1;
int g_gpus_per_node = 8;
int g_period_ms = 1000;  // BM_ScrapePaced: every listener once per period

const std::string& NodeBody() {
  static const std::string body = gpucanary::bench::MakeDcgmExposition(g_gpus_per_node);
  return body;
}

// The server and the clients' connections, made once for the whole run.
struct Fleet {
  std::unique_ptr<net::HttpServer> server;
  std::vector<std::vector<net::HttpConnection>> connections;  // [client][k]
};

Fleet& GetFleet() {
  static Fleet fleet = [] {
    // Each listener and each connection (both ends) is a descriptor.
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      limit.rlim_cur = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    Fleet f;
    net::HttpServer::Options options;
    options.threads = g_server_threads;
    options.gzip_level = g_gzip_level;
    f.server = std::make_unique<net::HttpServer>(options);
    f.connections.resize(static_cast<std::size_t>(g_clients));
    for (int i = 0; i < g_listeners; ++i) {
      auto port =
          f.server->Listen("127.0.0.1", 0, [](const net::HttpRequest&, net::HttpResponse& res) {
            res.content_type = "text/plain; version=0.0.4; charset=utf-8";
            res.body = NodeBody();  // a copy, as a freshly rendered scrape would be
          });
      if (!port) {
        std::fprintf(stderr, "%s\n", port.error().ToString().c_str());
        std::exit(1);
      }
      f.connections[static_cast<std::size_t>(i % g_clients)].emplace_back("127.0.0.1", *port);
    }
    if (!f.server->Start().ok()) std::exit(1);
    // Connect every client now, so that no measured scrape pays for it.
    for (auto& per_client : f.connections) {
      for (net::HttpConnection& conn : per_client) {
        if (!conn.Request("/metrics")) std::exit(1);
      }
    }
    return f;
  }();
  return fleet;
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Latencies and failures of the scrapes of one benchmark run.
struct Tally {
  explicit Tally(std::size_t clients) : latency_us(clients) {}
  std::vector<std::vector<double>> latency_us;  // [client]
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> wire_bytes{0};
};

// Scrapes every listener once. With `paced`, the scrapes are spread evenly
// over g_period_ms, as Prometheus spreads its targets over the scrape
// interval; otherwise each client goes as fast as it can.
void ScrapeEveryListener(Fleet& fleet, const net::FetchOptions& options, bool paced, Tally& tally) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const std::chrono::milliseconds period(g_period_ms);
  const std::size_t clients = fleet.connections.size();
  std::vector<std::thread> threads;
  for (std::size_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (std::size_t k = 0; k < fleet.connections[c].size(); ++k) {
        if (paced) {
          std::this_thread::sleep_until(start + period * static_cast<double>(k * clients + c) /
                                                    g_listeners);
        }
        const Clock::time_point sent = Clock::now();
        auto r = fleet.connections[c][k].Request("/metrics", options);
        const std::chrono::duration<double, std::micro> took = Clock::now() - sent;
        tally.latency_us[c].push_back(took.count());
        if (!r || r->status != 200 || r->body.size() != NodeBody().size()) {
          tally.failed = true;
        } else {
          tally.wire_bytes = std::stoul(std::string(r->Header("content-length")));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (paced) std::this_thread::sleep_until(start + period);
}

void Scrape(benchmark::State& state, bool paced) {
  Fleet& fleet = GetFleet();
  net::FetchOptions options;
  options.accept_gzip = state.range(0) != 0;
  Tally tally(fleet.connections.size());
  const double server_cpu0 = fleet.server->stats().io_cpu_seconds;
  const double process_cpu0 = ProcessCpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  std::int64_t requests = 0;
  for (auto _ : state) {
    ScrapeEveryListener(fleet, options, paced, tally);
    requests += g_listeners;
  }
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall0;
  if (tally.failed) state.SkipWithError("a scrape failed");
  const double server_cpu = fleet.server->stats().io_cpu_seconds - server_cpu0;
  const double process_cpu = ProcessCpuSeconds() - process_cpu0;
  std::vector<double> all;
  for (const auto& v : tally.latency_us) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  double sum = 0;
  for (double v : all) sum += v;
  const double n = static_cast<double>(std::max<std::int64_t>(requests, 1));
  state.counters["req_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["mean_us"] = all.empty() ? 0 : sum / static_cast<double>(all.size());
  state.counters["p99_us"] = all.empty() ? 0 : all[all.size() * 99 / 100];
  state.counters["server_cpu_ms_per_1k"] = server_cpu * 1e3 * 1000.0 / n;
  state.counters["process_cpu_ms_per_1k"] = process_cpu * 1e3 * 1000.0 / n;
  // Paced: measured over the run, scaled to a 1 s period. Flat out: what the
  // measured cost per scrape comes to at one scrape per listener per second.
  state.counters["core_pct_at_1hz"] = paced
                                          ? server_cpu / wall.count() * 100.0 * g_period_ms / 1000.0
                                          : server_cpu / n * g_listeners * 100.0;
  state.counters["wire_kib"] = static_cast<double>(tally.wire_bytes.load()) / 1024.0;
  state.counters["listeners"] = g_listeners;
}

// As fast as the clients go: capacity, and CPU per scrape.
void BM_ScrapeRound(benchmark::State& state) { Scrape(state, false); }
BENCHMARK(BM_ScrapeRound)
    ->ArgName("gzip")
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// What the simulator will see: every listener scraped once a second.
void BM_ScrapePaced(benchmark::State& state) { Scrape(state, true); }
BENCHMARK(BM_ScrapePaced)
    ->ArgName("gzip")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(1)  // each iteration is one period; repeat with --benchmark_repetitions
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_Gzip(benchmark::State& state) {
  const std::string& body = NodeBody();
  std::size_t out = 0;
  for (auto _ : state) {
    auto gz = net::GzipCompress(body, static_cast<int>(state.range(0)));
    if (!gz) {
      state.SkipWithError("gzip failed");
      return;
    }
    out = gz->size();
    benchmark::DoNotOptimize(gz->data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
  state.counters["body_kib"] = static_cast<double>(body.size()) / 1024.0;
  state.counters["ratio"] = static_cast<double>(body.size()) / static_cast<double>(out);
}
BENCHMARK(BM_Gzip)->ArgName("level")->Arg(1)->Arg(6)->Arg(9)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--listeners=")) g_listeners = std::max(1, std::atoi(arg.c_str() + 12));
    if (arg.starts_with("--clients=")) g_clients = std::max(1, std::atoi(arg.c_str() + 10));
    if (arg.starts_with("--server_threads=")) g_server_threads = std::atoi(arg.c_str() + 17);
    if (arg.starts_with("--gzip_level=")) g_gzip_level = std::atoi(arg.c_str() + 13);
    if (arg.starts_with("--gpus_per_node=")) g_gpus_per_node = std::atoi(arg.c_str() + 16);
    if (arg.starts_with("--period_ms=")) g_period_ms = std::max(1, std::atoi(arg.c_str() + 12));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
