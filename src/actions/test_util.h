#pragma once
// Test helpers for the actions tests: a real HTTP server that records every
// request it gets and answers with scripted statuses, and sample incidents.
// Test code only.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actions/incident.h"
#include "core/mutex.h"
#include "net/http_server.h"

namespace gpucanary::actions::test {

// A started net::HttpServer on 127.0.0.1:0 (two io threads) that keeps
// every request and answers the n-th one with statuses[n] (200 once they
// run out), after delay_ms.
class Receiver {
 public:
  explicit Receiver(std::vector<int> statuses = {}, int delay_ms = 0)
      : server_(Options()), statuses_(std::move(statuses)), delay_ms_(delay_ms) {
    auto p = server_.Listen(
        "127.0.0.1", 0,
        [this](const net::HttpRequest& req, net::HttpResponse& res) { Handle(req, res); });
    EXPECT_TRUE(p) << p.error().ToString();
    port_ = p.value_or(0);
    EXPECT_TRUE(server_.Start().ok());
  }

  // Stops the server first: its handler threads use the members below.
  ~Receiver() { server_.Stop(); }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  std::string Url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<net::HttpRequest> requests() const {
    MutexLock lock(mu_);
    return requests_;
  }
  void Stop() { server_.Stop(); }

 private:
  static net::HttpServer::Options Options() {
    net::HttpServer::Options o;
    o.threads = 2;
    return o;
  }
  void Handle(const net::HttpRequest& req, net::HttpResponse& res) {
    std::size_t n = 0;
    {
      MutexLock lock(mu_);
      n = requests_.size();
      requests_.push_back(req);
    }
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    res.status = n < statuses_.size() ? statuses_[n] : 200;
    res.content_type = "application/json";
    res.body = R"({"answer":)" + std::to_string(n) + "}";
  }

  net::HttpServer server_;
  std::uint16_t port_ = 0;
  const std::vector<int> statuses_;
  const int delay_ms_;
  mutable Mutex mu_;
  std::vector<net::HttpRequest> requests_ GUARDED_BY(mu_);
};

// A release-scoped power brake on node-4 plus a node-scoped XID fault on
// node-6 and a PCIe fault on node-7.
inline Incident SampleIncident() {
  Incident i;
  i.release = {"llama3-70b-2026-12-02.1", "chat-api",
               R"({"id": "llama3-70b-2026-12-02.1", "service": "chat-api", )"
               R"("started_at": 1764680000.0, "previous": "llama3-70b-2026-11-28.2"})"};
  i.canary_id = "canary-7";
  i.verdict = vocab::Verdict::kFail;
  i.decided_at = 1764680034.0;
  i.causes = {
      {vocab::CauseKind::kPowerBrake,
       vocab::Scope::kRelease,
       "node-4",
       {"node-4/0", "node-4/1"},
       "HW power brake held SM clock at 1050 MHz (baseline 1980) for 14 s"},
      {vocab::CauseKind::kXidErrors,
       vocab::Scope::kNode,
       "node-6",
       {"node-6/3"},
       "XID 79 on node-6/3: fell off the bus"},
      {vocab::CauseKind::kPcieDowntrain,
       vocab::Scope::kNode,
       "node-7",
       {"node-7/0"},
       "PCIe link of node-7/0 at x8"},
  };
  i.canary_nodes = {"node-4", "node-6", "node-7"};
  i.baseline_nodes = {"node-1", "node-2"};
  return i;
}

// Only release-scoped causes.
inline Incident ReleaseOnlyIncident() {
  Incident i = SampleIncident();
  i.causes.resize(1);
  return i;
}

// A fresh empty folder under the test temp dir.
inline std::filesystem::path TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      ("gpucanary-actions-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

inline void WriteAll(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace gpucanary::actions::test
