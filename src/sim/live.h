#pragma once
// The live simulator (docs/simulator.md, "Live mode"): an Engine stepped on a
// Clock, every node served over HTTP as a real node would be, and a control
// API to steer it.
//
//   node i:   dcgm-exporter /metrics on base_port + 2i, its model server's
//             /metrics (vLLM, SGLang, TGI or Triton, as its `server:` says) on
//             base_port + 2i + 1, nothing there for a `none` node (base_port 0:
//             every port chosen by the OS);
//   control:  JSON API on control_port (docs/simulator.md, "Control API").
//
// One HttpServer (one io_context) holds every listener, so hundreds of nodes
// cost a few threads, not hundreds. The engine steps on its own thread, one
// 100 ms step per 100 ms of the clock, catching up when it falls behind. A
// mutex serialises steps, control calls and renders.
//
// Thread-safe: every public member may be called from any thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "net/http_server.h"
#include "sim/engine.h"
#include "sim/server_kind.h"

namespace gpucanary::sim {

struct LiveOptions {
  std::string host = "127.0.0.1";
  std::uint16_t base_port = 9400;     // 0: every node port is ephemeral
  std::uint16_t control_port = 9399;  // 0: ephemeral
  int http_threads = 1;
};

class LiveSim {
 public:
  struct Endpoint {
    std::string hostname;
    std::uint16_t dcgm_port = 0;
    std::uint16_t server_port = 0;  // the model server's /metrics; 0 for a `none` node
    ServerKind server;              // its `server:`
  };

  // The engine's simulated t = 0 is the clock's time now, rounded down to
  // the step. `clock` must outlive this object.
  LiveSim(const Scenario& scenario, const EngineOptions& engine_options, LiveOptions options,
          Clock& clock);
  ~LiveSim();  // Stop()

  // Binds every port and starts serving and stepping. Errors: kIoError
  // naming the port that could not be bound (nothing is left running).
  // (No lock analysis: it reads engine_'s fleet without mu_, before the stepping thread that
  // writes engine_ exists; the handlers only read it, under mu_.)
  Status Start() NO_THREAD_SAFETY_ANALYSIS;
  // Stops stepping and serving; idempotent.
  void Stop();

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  std::uint16_t control_port() const { return control_port_; }
  std::string host() const { return options_.host; }

  // Prometheus file_sd JSON: one target group per node and exporter ("dcgm",
  // and the server's job: "vllm", "sglang", "tgi", "triton_trtllm"; none for a
  // `none` node), labelled node=<hostname>.
  std::string TargetsJson() const;

  // Runs `fn` on the engine under the lock (tests, the CLI's summary).
  template <typename Fn>
  auto WithEngine(Fn&& fn) {
    MutexLock lock(mu_);
    return fn(engine_);
  }

 private:
  void StepLoop();
  void HandleControl(const net::HttpRequest& request, net::HttpResponse& response);
  void HandleDcgm(std::size_t node, const net::HttpRequest& request, net::HttpResponse& response);
  void HandleServer(std::size_t node, const net::HttpRequest& request, net::HttpResponse& response);

  LiveOptions options_;
  Clock& clock_;
  Mutex mu_;
  Engine engine_ GUARDED_BY(mu_);
  net::HttpServer server_;
  std::vector<Endpoint> endpoints_;
  std::uint16_t control_port_ = 0;
  Mutex stop_mu_;
  CondVar stop_cv_;
  std::atomic<bool> stop_{false};
  std::thread stepper_;
  bool started_ = false;
};

}  // namespace gpucanary::sim
