// Cost of remote_write out (docs/remote-write-out.md): a real store holds
// SECONDS commits of SERIES dcgm-exporter series (10 labels each, as a
// Kubernetes dcgm-exporter writes them), committed before the sender starts
// at the WAL's beginning; the sender (4 shards, 2,000 samples a request)
// reads them back from the WAL and posts them to a local HTTP server that
// answers 204 without decoding. Measured: the wall time until every sample
// is acknowledged, and the process's CPU time over it (the sender's threads
// plus the tiny server's, so an upper bound for the sender).
//
//   cmake --build build/release --target remote_write_out_bench
//   build/release/bench/remote_write_out_bench
//
// Counters: items_per_second is samples/s (wall); cpu_ns_per_sample the
// process CPU per sample; bytes_per_sample the compressed request bytes.

#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/labels.h"
#include "net/http_server.h"
#include "remote/sender.h"
#include "store/store.h"

namespace gpucanary::remote {
namespace {

namespace fs = std::filesystem;

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

model::Labels Series(int k) {
  const int gpu = k % 8;
  const int field = k / 8 % 40;
  const std::string node = "gpu-node-" + std::to_string(k / 320);
  model::Labels l = {{"DCGM_FI_DRIVER_VERSION", "580.105.08"},
                     {"Hostname", node},
                     {"UUID", "GPU-c4529c8d-69c4-b61d-e0bc-" + std::to_string(100000 + k / 40)},
                     {"__name__", "DCGM_FI_FIELD_" + std::to_string(field)},
                     {"device", "nvidia" + std::to_string(gpu)},
                     {"gpu", std::to_string(gpu)},
                     {"instance", node + ":9400"},
                     {"job", "dcgm"},
                     {"modelName", "NVIDIA H100 80GB HBM3"},
                     {"pci_bus_id", "00000000:53:00.0"}};
  model::SortLabels(l);
  return l;
}

void BM_SendFromTheWal(benchmark::State& state) {
  const int series = static_cast<int>(state.range(0));
  const int seconds = static_cast<int>(state.range(1));
  const fs::path dir = fs::temp_directory_path() / ("gc_rwout_bench_" + std::to_string(getpid()));
  std::atomic<std::uint64_t> body_bytes{0};
  net::HttpServer::Options options;
  options.threads = 2;
  options.max_body_bytes = 64 << 20;
  net::HttpServer server(options);
  auto port =
      server.Listen("127.0.0.1", 0, [&](const net::HttpRequest& req, net::HttpResponse& resp) {
        body_bytes += req.body.size();
        resp.status = 204;
      });
  if (!port || !server.Start().ok()) {
    state.SkipWithError("no server");
    return;
  }
  const std::uint64_t total =
      static_cast<std::uint64_t>(series) * static_cast<std::uint64_t>(seconds);
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(dir);
    {
      store::StoreOptions so;
      so.sync_interval_ms = 0;
      auto st = store::Store::Open(dir, so);
      auto app = (*st)->NewAppender();
      std::vector<store::SeriesRef> refs;
      for (int k = 0; k < series; ++k) refs.push_back(*app->Series(Series(k)));
      const std::int64_t t0 = 1'764'680'000'000;
      for (int i = 0; i < seconds; ++i) {
        for (int k = 0; k < series; ++k) {
          (void)app->Append(refs[static_cast<std::size_t>(k)], t0 + i * 1000LL,
                            1000.0 + (k * 7 + i * 13) % 700);
        }
        (void)app->Commit();
      }
    }
    // A position file at the WAL's first segment: send everything there is.
    fs::create_directories(dir / "remote_write" / "bench");
    SenderConfig c;
    c.name = "bench";
    c.url = "http://127.0.0.1:" + std::to_string(*port) + "/api/v1/write";
    c.queue.batch_send_deadline_ms = 100;
    c.metadata.send = false;
    {
      std::string pos = "gpucanary remote_write position 1\nurl " + c.url + "\nshards 4\n";
      for (int i = 0; i < 4; ++i) pos += std::to_string(i) + " 0 0 0 0 0 0\n";
      FILE* f = std::fopen((dir / "remote_write" / "bench" / "position").c_str(), "w");
      std::fputs(pos.c_str(), f);
      std::fclose(f);
    }
    body_bytes = 0;
    auto sender = Sender::Create(c, dir / "wal", dir / "remote_write" / "bench", {});
    state.ResumeTiming();
    const double cpu0 = ProcessCpuSeconds();
    const auto wall0 = std::chrono::steady_clock::now();
    (void)(*sender)->Start();
    while ((*sender)->stats().samples_sent < total) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu = ProcessCpuSeconds() - cpu0;
    state.PauseTiming();
    (*sender)->Stop();
    state.counters["cpu_ns_per_sample"] = cpu * 1e9 / static_cast<double>(total);
    state.counters["bytes_per_sample"] =
        static_cast<double>(body_bytes.load()) / static_cast<double>(total);
    state.counters["wall_s"] = wall;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(total * state.iterations()));
  server.Stop();
  fs::remove_all(dir);
}
// 400 series (10 GPUs x 40 fields) x 30 s; 10,000 series (250 GPUs) x 60 s.
BENCHMARK(BM_SendFromTheWal)
    ->Args({400, 30})
    ->Args({10000, 60})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace gpucanary::remote

BENCHMARK_MAIN();
