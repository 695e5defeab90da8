#pragma once
// Test helpers for live canaries: a simulated fleet's telemetry as a
// recording, and a recording loaded into a store the way the scraper appends
// it. Header-only; for tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "expfmt/reader.h"
#include "net/http_message.h"
#include "recording/recording_writer.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"
#include "store/store.h"

namespace gpucanary::canary::testing {

inline constexpr std::int64_t kSimStart = 1764680000;  // the simulator's t = 0 (Unix s)

// node-4 gets a release at 20 s whose fp8 kernel trips the power brake.
inline constexpr std::string_view kPowerBrakeScenario = R"(seed: 7
duration: 140s
fleet:
  - {nodes: "node-[1-5]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 20s, deploy: fp8-kernel, nodes: [node-4]}
)";

// Simulates `scenario` (YAML) offline into one recording at `out`.
inline void Simulate(std::string_view scenario_yaml, const std::filesystem::path& out) {
  auto scenario = sim::ParseScenario(scenario_yaml, "test.yaml");
  ASSERT_TRUE(scenario.has_value()) << scenario.error().ToString();
  sim::Engine engine(*scenario);
  auto writer = recording::RecordingWriter::Open(out.string());
  ASSERT_TRUE(writer.has_value());
  std::vector<recording::RecordingWriter*> per_node(engine.node_count(), writer->get());
  sim::OfflineOptions options;
  options.duration_s = scenario->duration_s;
  ASSERT_TRUE(sim::WriteScenarioRecording(engine, options, per_node).has_value());
  ASSERT_TRUE((*writer)->Close().ok());
}

// Appends every sample of the recording at `path` to `store`, each series'
// labels passed through `relabel` when given (e.g. the target labels a
// scrape adds).
inline void LoadRecording(const std::filesystem::path& path, store::Store& store,
                          const std::function<void(model::Labels&)>& relabel = nullptr) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto app = store.NewAppender();
  std::size_t pending = 0;
  expfmt::ExpositionReader reader(
      expfmt::Format::kOpenMetrics, path.string(), expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
        model::Labels labels = {{"__name__", std::string(s.name)}};
        for (const auto& l : s.labels)
          labels.push_back({std::string(l.name), std::string(l.value)});
        if (relabel) relabel(labels);
        model::SortLabels(labels);
        auto ref = app->Series(labels);
        ASSERT_TRUE(ref.has_value()) << ref.error().ToString();
        ASSERT_TRUE(app->Append(*ref, s.timestamp_ms, s.value).ok());
        if (++pending == 4096) {
          ASSERT_TRUE(app->Commit().has_value());
          pending = 0;
        }
      });
  ASSERT_TRUE(reader.Feed(text.str(), true));
  ASSERT_TRUE(app->Commit().has_value());
}

// kPowerBrakeScenario simulated once per test binary (the first call), for
// every test to load; the file is removed when the binary exits.
inline const std::filesystem::path& PowerBrakeRecording() {
  struct Shared {
    std::filesystem::path path;
    ~Shared() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static Shared shared{std::filesystem::temp_directory_path() /
                       ("gc_power_brake_" + std::to_string(::getpid()) + ".om")};
  static const bool made = [] {
    Simulate(kPowerBrakeScenario, shared.path);
    return true;
  }();
  (void)made;
  return shared.path;
}

// One request through `handler.Handle(request, response)`; `handled` (may be
// null) gets its return value.
template <typename Handler>
net::HttpResponse Call(Handler& handler, const std::string& method, const std::string& path,
                       const std::string& body = "", bool* handled = nullptr) {
  net::HttpRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  net::HttpResponse response;
  const bool done = handler.Handle(request, response);
  if (handled != nullptr) *handled = done;
  return response;
}

}  // namespace gpucanary::canary::testing
