#include "analysis/replay/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/replay/layout.h"
#include "analysis/replay/replay_sort.h"
#include "expfmt/reader.h"
#include "recording/recording_writer.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace gpucanary::analysis {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gpucanary-replay-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    if (name.ends_with(".gz")) {
      gzFile f = gzopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
                static_cast<int>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << text;
    }
    return path;
  }

  // Replays everything; returns the ticks, or the error message.
  static std::pair<std::vector<Tick>, std::string> ReplayAll(Replay& replay) {
    std::vector<Tick> ticks;
    for (;;) {
      Tick tick;
      Result<bool> more = replay.Next(tick);
      if (!more) return {std::move(ticks), more.error().message()};
      if (!*more) return {std::move(ticks), ""};
      ticks.push_back(std::move(tick));
    }
  }

  std::unique_ptr<Replay> MustOpen(std::vector<ReplayInput> inputs) {
    auto replay = Replay::Open(std::move(inputs));
    EXPECT_TRUE(replay.has_value()) << (replay ? "" : replay.error().message());
    return replay ? std::move(*replay) : nullptr;
  }

  // Every tick as text, by names (GPU, node and metric indices follow the
  // order series first appear, which differs between layouts).
  static std::string Dump(const Replay& replay, const Tick& tick) {
    std::vector<std::string> lines;
    auto number = [](std::ostringstream& o, double v, const std::optional<double>& inc) {
      o.precision(17);
      o << v << " " << (inc ? std::to_string(*inc) : std::string("-"));
    };
    for (const bool node : {false, true}) {
      for (const Point& p : node ? tick.node_points : tick.gpu_points) {
        const auto e = static_cast<std::size_t>(p.entity);
        std::ostringstream o;
        o << (node ? "node " + replay.nodes()[e].host : "gpu " + replay.gpus()[e].key) << " "
          << replay.metrics()[static_cast<std::size_t>(p.metric)].name << " ";
        number(o, p.value, p.increase);
        lines.push_back(o.str());
      }
    }
    for (const HistogramPoint& h : tick.histograms) {
      std::ostringstream o;
      o << "hist " << replay.nodes()[static_cast<std::size_t>(h.node)].host << " "
        << (h.gpu < 0 ? "-" : replay.gpus()[static_cast<std::size_t>(h.gpu)].key) << " "
        << replay.metrics()[static_cast<std::size_t>(h.metric)].name;
      for (const Bucket& b : tick.BucketsOf(h)) {
        o << " " << b.le << ":";
        number(o, b.value, b.increase);
      }
      lines.push_back(o.str());
    }
    std::sort(lines.begin(), lines.end());
    std::string out = "t=" + std::to_string(tick.time_s) + "\n";
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }

  // Replays `inputs` through ReplayRecordings; returns the dump of every tick
  // (or the error message) and how often consume ran.
  struct Dumped {
    std::string ticks;
    std::string error;
    int calls = 0;
    ReplayStats stats;
  };
  static Dumped DumpAll(std::vector<ReplayInput> inputs, const ReplayOptions& options = {}) {
    Dumped d;
    Status st = ReplayRecordings(inputs, options, [&d](Replay& replay) -> Status {
      d.ticks.clear();
      ++d.calls;
      Tick tick;
      for (;;) {
        Result<bool> more = replay.Next(tick);
        if (!more) return more.error();
        if (!*more) break;
        d.ticks += Dump(replay, tick);
      }
      d.stats = replay.stats();
      return Status::Ok();
    });
    if (!st.ok()) d.error = st.message();
    return d;
  }

  // Options whose sort runs hold `run_bytes` and spill into the test's folder.
  ReplayOptions Sorting(std::size_t run_bytes) const {
    ReplayOptions options;
    options.sort_run_bytes = run_bytes;
    options.sort_dir = dir_.string();
    return options;
  }

  // A recording of the simulator's power-brake scenario (64 GPUs, vLLM).
  std::string SimulatorRecording(int seconds) const {
    Result<sim::Scenario> scenario =
        sim::LoadScenario(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/power-brake.yaml");
    EXPECT_TRUE(scenario) << scenario.error().message();
    if (!scenario) return "";
    const std::string path = (dir_ / "sim.om").string();
    sim::Engine engine(*scenario);
    auto writer = recording::RecordingWriter::Open(path);
    EXPECT_TRUE(writer);
    if (!writer) return "";
    sim::OfflineOptions options;
    options.duration_s = seconds;
    EXPECT_TRUE(sim::WriteScenarioRecording(engine, options, **writer));
    EXPECT_TRUE((*writer)->Close().ok());
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path dir_;
};

// --- a real recording: the simulator's power-brake scenario ------------------

TEST_F(ReplayTest, SimulatorRecordingReplaysEveryValueAtItsSecond) {
  Result<sim::Scenario> scenario =
      sim::LoadScenario(std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/power-brake.yaml");
  ASSERT_TRUE(scenario) << scenario.error().message();
  const std::string path = (dir_ / "telemetry.om").string();
  sim::Engine engine(*scenario);
  {
    auto writer = recording::RecordingWriter::Open(path);
    ASSERT_TRUE(writer);
    sim::OfflineOptions options;
    options.duration_s = 120;
    ASSERT_TRUE(sim::WriteScenarioRecording(engine, options, **writer));
    ASSERT_TRUE((*writer)->Close().ok());
  }
  // What the file says, read independently: (GPU, second) -> SM clock, energy.
  std::map<std::pair<std::string, std::int64_t>, double> clock;
  std::map<std::pair<std::string, std::int64_t>, double> energy;
  auto report = expfmt::ReadFile(path, {}, [&](const expfmt::SampleView& s, auto, auto) {
    auto host = s.Label("Hostname");
    auto gpu = s.Label("gpu");
    if (!host || !gpu) return;
    const auto key =
        std::make_pair(std::string(*host) + "/" + std::string(*gpu), s.timestamp_ms / 1000);
    if (s.name == "DCGM_FI_DEV_SM_CLOCK") clock[key] = s.value;
    if (s.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") energy[key] = s.value;
  });
  ASSERT_TRUE(report && report->ok());

  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 120u);
  const int sm = replay->MetricId("DCGM_FI_DEV_SM_CLOCK");
  const int joules = replay->MetricId("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  ASSERT_GE(sm, 0);
  ASSERT_GE(joules, 0);
  EXPECT_EQ(replay->metrics()[static_cast<std::size_t>(sm)].kind, MetricKind::kGauge);
  EXPECT_EQ(replay->metrics()[static_cast<std::size_t>(joules)].kind, MetricKind::kCounter);
  EXPECT_EQ(replay->gpus().size(), 64u);
  EXPECT_EQ(replay->nodes().size(), 8u);

  std::size_t checked = 0;
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    const Tick& tick = ticks[i];
    EXPECT_EQ(tick.time_s, ticks[0].time_s + static_cast<std::int64_t>(i));
    EXPECT_EQ(tick.gpus.size(), 64u);
    for (std::int32_t g : tick.gpus) {
      const std::string& key = replay->gpus()[static_cast<std::size_t>(g)].key;
      const Point* p = tick.FindGpu(g, sm);
      ASSERT_NE(p, nullptr) << key << " at " << tick.time_s;
      EXPECT_EQ(p->value, clock.at({key, tick.time_s})) << key << " at " << tick.time_s;
      EXPECT_FALSE(p->increase.has_value());
      const Point* e = tick.FindGpu(g, joules);
      ASSERT_NE(e, nullptr);
      if (i == 0) {
        EXPECT_FALSE(e->increase.has_value());
      } else {
        ASSERT_TRUE(e->increase.has_value());
        EXPECT_DOUBLE_EQ(*e->increase,
                         energy.at({key, tick.time_s}) - energy.at({key, tick.time_s - 1}));
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 64u * 120u);

  // The brake, per the ground truth: node-4's GPUs at the ~1050 MHz floor.
  std::int64_t brake_ms = -1;
  for (const sim::TruthRecord& r : engine.Truth()) {
    if (r.type == sim::TruthRecord::kFault && r.kind == vocab::CauseKind::kPowerBrake &&
        r.node == "node-4") {
      brake_ms = r.since_ms;
    }
  }
  ASSERT_GE(brake_ms, 0);
  const std::int64_t at = brake_ms / 1000 + 5;
  ASSERT_LE(at, ticks.back().time_s);
  const Tick& braked = ticks[static_cast<std::size_t>(at - ticks[0].time_s)];
  const int n4 = replay->GpuId("node-4/0");
  const int n1 = replay->GpuId("node-1/0");
  ASSERT_GE(n4, 0);
  ASSERT_GE(n1, 0);
  ASSERT_NE(braked.FindGpu(n4, sm), nullptr);
  EXPECT_NEAR(braked.FindGpu(n4, sm)->value, 1050, 40);
  EXPECT_GT(braked.FindGpu(n1, sm)->value, 1900);
  const GpuInfo& info = replay->gpus()[static_cast<std::size_t>(n4)];
  EXPECT_EQ(info.host, "node-4");
  EXPECT_EQ(info.gpu, "0");
  EXPECT_EQ(info.model_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(info.driver, "580.105.08");
  EXPECT_THAT(info.uuid, StartsWith("GPU-"));
  EXPECT_FALSE(info.pci_bus_id.empty());
  EXPECT_EQ(replay->nodes()[static_cast<std::size_t>(info.node)].host, "node-4");
  EXPECT_EQ(replay->nodes()[static_cast<std::size_t>(info.node)].gpus.size(), 8u);

  // vLLM, node-level: the +Inf bucket's increase is the _count's increase.
  const int lat = replay->MetricId("vllm:e2e_request_latency_seconds");
  const int lat_count = replay->MetricId("vllm:e2e_request_latency_seconds_count");
  const int tokens = replay->MetricId("vllm:generation_tokens_total");
  ASSERT_GE(lat, 0);
  ASSERT_GE(lat_count, 0);
  ASSERT_GE(tokens, 0);
  EXPECT_EQ(replay->metrics()[static_cast<std::size_t>(lat)].kind, MetricKind::kHistogram);
  const int node1 = replay->NodeId("node-1");
  int compared = 0;
  double generated = 0;
  for (const Tick& tick : ticks) {
    const HistogramPoint* h = tick.FindHistogram(node1, lat);
    const Point* c = tick.FindNode(node1, lat_count);
    const Point* tok = tick.FindNode(node1, tokens);
    if (tok != nullptr && tok->increase) generated += *tok->increase;
    if (h == nullptr || c == nullptr || !c->increase) continue;
    const auto buckets = tick.BucketsOf(*h);
    ASSERT_GE(buckets.size(), 2u);
    EXPECT_TRUE(std::isinf(buckets.back().le));
    for (std::size_t b = 1; b < buckets.size(); ++b) EXPECT_LT(buckets[b - 1].le, buckets[b].le);
    ASSERT_TRUE(buckets.back().increase.has_value());
    EXPECT_EQ(*buckets.back().increase, *c->increase);
    ++compared;
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(generated, 0);
}

// --- hand-made recordings ------------------------------------------------------

TEST_F(ReplayTest, LastValueOfTheSecondAndMissingStaysMissing) {
  const std::string path = Write("a.om", R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1980 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1970 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1960 101.000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1000 102.200
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1050 102.700
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} NaN 102.900
# EOF
)");
  auto replay = MustOpen({{path, Role::kCanary, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 3u);
  const int sm = replay->MetricId("DCGM_FI_DEV_SM_CLOCK");
  const int g0 = replay->GpuId("node-1/0");
  const int g1 = replay->GpuId("node-1/1");
  EXPECT_EQ(ticks[0].time_s, 100);
  EXPECT_EQ(ticks[0].FindGpu(g0, sm)->value, 1980);
  EXPECT_EQ(ticks[1].time_s, 101);
  EXPECT_EQ(ticks[1].FindGpu(g0, sm), nullptr);  // no sample: no data, not 0, not 1980
  EXPECT_EQ(ticks[1].FindGpu(g1, sm)->value, 1960);
  EXPECT_EQ(ticks[1].gpus, std::vector<std::int32_t>{g1});
  EXPECT_EQ(ticks[2].FindGpu(g0, sm)->value, 1050);  // the last of the second
  EXPECT_EQ(ticks[2].FindGpu(g1, sm), nullptr);      // NaN is no data
  EXPECT_EQ(replay->stats().missing, 1u);
  EXPECT_EQ(replay->gpus()[static_cast<std::size_t>(g0)].role, Role::kCanary);
}

TEST_F(ReplayTest, SecondsWithoutDataAreEmptyTicks) {
  const std::string path = Write("gap.om", R"(# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n"} 40 100.000
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n"} 41 103.000
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(ticks[i].time_s, 100 + static_cast<int>(i));
  EXPECT_TRUE(ticks[1].gpu_points.empty());
  EXPECT_TRUE(ticks[2].gpus.empty());
  EXPECT_EQ(ticks[3].gpu_points.size(), 1u);
}

TEST_F(ReplayTest, CounterIncreasesFollowPrometheusResetRule) {
  const std::string path = Write("c.om", R"(# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 100 100.000
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1000 100.000
# TYPE my_errors_total unknown
my_errors_total{gpu="0",Hostname="node-1"} 5 100.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 150 101.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1500 101.000
my_errors_total{gpu="0",Hostname="node-1"} 5 101.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 30 102.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 2500 102.000
my_errors_total{gpu="0",Hostname="node-1"} 2 102.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 40 103.250
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 50 103.750
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 4u);
  const int tokens = replay->MetricId("vllm:generation_tokens_total");
  const int energy = replay->MetricId("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  const int errors = replay->MetricId("my_errors_total");
  const int node = replay->NodeId("node-1");
  const int gpu = replay->GpuId("node-1/0");
  for (int m : {tokens, energy, errors}) {
    EXPECT_EQ(replay->metrics()[static_cast<std::size_t>(m)].kind, MetricKind::kCounter);
  }
  // vLLM counter, node-level: 100, 150, 30 (restart), 40 and 50 in one second.
  EXPECT_FALSE(ticks[0].FindNode(node, tokens)->increase.has_value());
  EXPECT_EQ(ticks[1].FindNode(node, tokens)->increase, 50.0);
  EXPECT_EQ(ticks[2].FindNode(node, tokens)->increase, 30.0);
  EXPECT_EQ(ticks[2].FindNode(node, tokens)->value, 30.0);
  EXPECT_EQ(ticks[3].FindNode(node, tokens)->increase, 20.0);
  EXPECT_EQ(ticks[3].FindNode(node, tokens)->value, 50.0);
  EXPECT_EQ(ticks[3].nodes, std::vector<std::int32_t>{node});
  EXPECT_TRUE(ticks[3].gpus.empty());
  // DCGM catalog counter written as "unknown".
  EXPECT_FALSE(ticks[0].FindGpu(gpu, energy)->increase.has_value());
  EXPECT_EQ(ticks[1].FindGpu(gpu, energy)->increase, 500.0);
  EXPECT_EQ(ticks[2].FindGpu(gpu, energy)->increase, 1000.0);
  EXPECT_EQ(ticks[2].FindGpu(gpu, energy)->value, 2500.0);
  // A "_total" name of unknown type: 5, 5, 2 (reset: the increase is 2).
  EXPECT_EQ(ticks[1].FindGpu(gpu, errors)->increase, 0.0);
  EXPECT_EQ(ticks[2].FindGpu(gpu, errors)->increase, 2.0);
}

TEST_F(ReplayTest, SeriesOfOneNodeAndMetricAreSummed) {
  const std::string path = Write("s.om", R"(# TYPE vllm:request_success counter
vllm:request_success_total{Hostname="n",finished_reason="stop"} 10 100.000
vllm:request_success_total{Hostname="n",finished_reason="length"} 1 100.000
vllm:request_success_total{Hostname="n",finished_reason="stop"} 15 101.000
vllm:request_success_total{Hostname="n",finished_reason="length"} 3 101.000
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 2u);
  const int m = replay->MetricId("vllm:request_success_total");
  const Point* p = ticks[1].FindNode(replay->NodeId("n"), m);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value, 18.0);
  EXPECT_EQ(p->increase, 7.0);
  EXPECT_EQ(ticks[1].node_points.size(), 1u);
}

TEST_F(ReplayTest, HistogramBucketIncreases) {
  const std::string path = Write("h.om", R"(# TYPE lat histogram
lat_bucket{Hostname="node-1",le="0.1"} 1 100.000
lat_bucket{Hostname="node-1",le="1.0"} 3 100.000
lat_bucket{Hostname="node-1",le="+Inf"} 4 100.000
lat_count{Hostname="node-1"} 4 100.000
lat_sum{Hostname="node-1"} 2.5 100.000
lat_bucket{Hostname="node-1",le="0.1"} 2 101.000
lat_bucket{Hostname="node-1",le="1.0"} 6 101.000
lat_bucket{Hostname="node-1",le="+Inf"} 8 101.000
lat_count{Hostname="node-1"} 8 101.000
lat_sum{Hostname="node-1"} 5.5 101.000
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 2u);
  const int lat = replay->MetricId("lat");
  const int node = replay->NodeId("node-1");
  ASSERT_GE(lat, 0);
  EXPECT_EQ(replay->metrics()[static_cast<std::size_t>(lat)].kind, MetricKind::kHistogram);
  EXPECT_EQ(replay->MetricId("lat_bucket"), -1);  // buckets are never points
  const HistogramPoint* h0 = ticks[0].FindHistogram(node, lat);
  ASSERT_NE(h0, nullptr);
  for (const Bucket& b : ticks[0].BucketsOf(*h0)) EXPECT_FALSE(b.increase.has_value());
  const HistogramPoint* h1 = ticks[1].FindHistogram(node, lat);
  ASSERT_NE(h1, nullptr);
  const auto b = ticks[1].BucketsOf(*h1);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].le, 0.1);
  EXPECT_EQ(b[1].le, 1.0);
  EXPECT_TRUE(std::isinf(b[2].le));
  EXPECT_EQ(b[0].increase, 1.0);
  EXPECT_EQ(b[1].increase, 3.0);
  EXPECT_EQ(b[2].increase, 4.0);
  EXPECT_EQ(b[2].value, 8.0);
  EXPECT_EQ(ticks[1].FindNode(node, replay->MetricId("lat_count"))->increase, 4.0);
  EXPECT_EQ(ticks[1].FindNode(node, replay->MetricId("lat_sum"))->increase, 3.0);
  EXPECT_EQ(ticks[1].nodes, std::vector<std::int32_t>{node});
}

TEST_F(ReplayTest, MergesBaselineAndCanaryInTimeOrder) {
  const std::string base = Write("base.om", R"(# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0",Hostname="node-1"} 1 100.000
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0",Hostname="node-1"} 2 101.000
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0",Hostname="node-1"} 4 103.000
# EOF
)");
  // The canary gzip-compressed, with the DCGM 4.6 name of the same field.
  const std::string canary = Write("canary.om.gz", R"(# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",hostname="node-2"} 10 100.500
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",hostname="node-2"} 30 102.000
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",hostname="node-2"} 40 103.000
# EOF
)");
  auto replay =
      MustOpen({{base, Role::kBaseline, std::nullopt}, {canary, Role::kCanary, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ticks.size(), 4u);
  const int reasons = replay->MetricId("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
  EXPECT_EQ(reasons, replay->MetricId("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
  const int b = replay->GpuId("node-1/0");
  const int c = replay->GpuId("node-2/0");
  ASSERT_GE(b, 0);
  ASSERT_LT(b, c);  // the baseline file is read first
  EXPECT_EQ(replay->gpus()[static_cast<std::size_t>(b)].role, Role::kBaseline);
  EXPECT_EQ(replay->gpus()[static_cast<std::size_t>(c)].role, Role::kCanary);
  EXPECT_EQ(replay->gpus()[static_cast<std::size_t>(c)].input, 1);
  const std::vector<std::vector<std::int32_t>> want = {{b, c}, {b}, {c}, {b, c}};
  const std::vector<std::vector<double>> values = {{1, 10}, {2}, {30}, {4, 40}};
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_EQ(ticks[i].time_s, 100 + static_cast<std::int64_t>(i));
    EXPECT_EQ(ticks[i].gpus, want[i]) << "tick " << i;
    for (std::size_t k = 0; k < want[i].size(); ++k) {
      const Point* p = ticks[i].FindGpu(want[i][k], reasons);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(p->value, values[i][k]);
    }
  }
}

// --- layouts: series-grouped, mixed, through the sort ------------------------------

TEST_F(ReplayTest, SeriesGroupedRecordingReplaysLikeTheTimeBlockedOne) {
  const std::string text = SimulatorRecording(40);
  ASSERT_FALSE(text.empty());
  const std::string blocked = Write("blocked.om", text);
  const std::string grouped_text = SeriesGroupedText(text);
  ASSERT_EQ(grouped_text.size(), text.size());  // the same lines, reordered
  ASSERT_NE(grouped_text, text);
  const std::string grouped = Write("grouped.om", grouped_text);
  const std::string grouped_gz = Write("grouped.om.gz", grouped_text);

  // Streamed as it is, the grouped file is refused at its second series.
  auto strict = MustOpen({{grouped, Role::kBaseline, std::nullopt}});
  ASSERT_NE(strict, nullptr);
  EXPECT_THAT(ReplayAll(*strict).second, HasSubstr("a recording must be time-blocked"));
  EXPECT_EQ(strict->out_of_order_input(), 0);

  const Dumped want = DumpAll({{blocked, Role::kBaseline, std::nullopt}});
  ASSERT_EQ(want.error, "");
  EXPECT_EQ(want.calls, 1);  // time-blocked: streamed once
  // Small runs: the sort spills many runs and merges them.
  for (const std::string& path : {grouped, grouped_gz}) {
    const Dumped got = DumpAll({{path, Role::kBaseline, std::nullopt}}, Sorting(64u << 10));
    ASSERT_EQ(got.error, "") << path;
    EXPECT_EQ(got.calls, 2) << path;  // streamed until refused, then sorted
    EXPECT_EQ(got.ticks, want.ticks) << path;
    EXPECT_EQ(got.stats.samples, want.stats.samples);
    EXPECT_EQ(got.stats.series, want.stats.series);
  }
  // The temporary file is unlinked: nothing is left in the sort's folder.
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(StartsWith("gpucanary-replay")));
  }
}

TEST_F(ReplayTest, MixedLayoutIsNotAnError) {
  // The first 20 s time-blocked, the rest appended series by series (a
  // recording continued by another writer): families keep their first metadata.
  const std::string text = SimulatorRecording(40);
  ASSERT_FALSE(text.empty());
  std::size_t cut = std::string::npos;
  std::int64_t first = -1;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    const std::string_view line(text.data() + at, nl - at);
    if (!line.starts_with('#')) {
      const auto ts =
          static_cast<std::int64_t>(std::stod(std::string(line.substr(line.rfind(' ') + 1))));
      if (first < 0) first = ts;
      if (ts >= first + 20) {
        cut = at;
        break;
      }
    }
    at = nl + 1;
  }
  ASSERT_NE(cut, std::string::npos);
  std::string metadata;  // the families, so that each sample finds its own
  std::istringstream head(text.substr(0, cut));
  for (std::string line; std::getline(head, line);) {
    if (line.starts_with("# TYPE ")) metadata += line + "\n";
  }
  std::string tail;
  std::istringstream rest(SeriesGroupedText(metadata + text.substr(cut)));
  for (std::string line; std::getline(rest, line);) {
    if (!line.starts_with('#')) tail += line + "\n";
  }
  const std::string mixed = Write("mixed.om", text.substr(0, cut) + tail + "# EOF\n");
  const std::string blocked = Write("blocked.om", text);
  const Dumped want = DumpAll({{blocked, Role::kBaseline, std::nullopt}});
  const Dumped got = DumpAll({{mixed, Role::kBaseline, std::nullopt}});
  ASSERT_EQ(want.error, "");
  ASSERT_EQ(got.error, "");
  EXPECT_EQ(got.calls, 2);
  EXPECT_EQ(got.ticks, want.ticks);
}

TEST_F(ReplayTest, CountersAndDuplicateTimestampsAcrossTheSort) {
  // The counter case above with a duplicate timestamp (the later sample wins,
  // its increase counts), time-blocked and series-grouped; one-record runs put
  // every sample of a series in a different run.
  const std::string blocked = Write("c.om", R"(# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 100 100.000
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1000 100.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 150 101.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1500 101.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1700 101.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 30 102.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 2500 102.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 40 103.250
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 50 103.750
# EOF
)");
  const std::string grouped = Write("g.om", R"(# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 100 100.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 150 101.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 30 102.000
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 40 103.250
vllm:generation_tokens_total{model_name="m",Hostname="node-1"} 50 103.750
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1000 100.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1500 101.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 1700 101.000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 2500 102.000
# EOF
)");
  const Dumped want = DumpAll({{blocked, Role::kBaseline, std::nullopt}});
  ASSERT_EQ(want.error, "");
  EXPECT_EQ(want.ticks,
            "t=100\ngpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 1000 -\n"
            "node node-1 vllm:generation_tokens_total 100 -\n"
            "t=101\ngpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 1700 700.000000\n"
            "node node-1 vllm:generation_tokens_total 150 50.000000\n"
            "t=102\ngpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 2500 800.000000\n"
            "node node-1 vllm:generation_tokens_total 30 30.000000\n"
            "t=103\nnode node-1 vllm:generation_tokens_total 50 20.000000\n");
  for (std::size_t run_bytes : {std::size_t{1}, std::size_t{16} << 20}) {
    const Dumped got = DumpAll({{grouped, Role::kBaseline, std::nullopt}}, Sorting(run_bytes));
    ASSERT_EQ(got.error, "");
    EXPECT_EQ(got.ticks, want.ticks) << run_bytes;
  }
}

TEST_F(ReplayTest, SeriesGroupedTextFormatWithMillisecondsAndGzip) {
  // Prometheus text 0.0.4, timestamps in ms, as `promtool tsdb dump` and
  // federation write it: one series after the other.
  const std::string grouped_text = R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1980 100000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1975 101000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1000 102500
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1970 100000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1960 102000
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 5000 100000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 5600 101000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 6300 102999
)";
  const std::string blocked_text = R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1980 100000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1970 100000
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 5000 100000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1975 101000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 5600 101000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1960 102000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1000 102500
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="node-1"} 6300 102999
)";
  const Dumped want = DumpAll({{Write("b.prom", blocked_text), Role::kCanary, std::nullopt}});
  ASSERT_EQ(want.error, "");
  EXPECT_EQ(want.ticks,
            "t=100\ngpu node-1/0 DCGM_FI_DEV_SM_CLOCK 1980 -\n"
            "gpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 5000 -\n"
            "gpu node-1/1 DCGM_FI_DEV_SM_CLOCK 1970 -\n"
            "t=101\ngpu node-1/0 DCGM_FI_DEV_SM_CLOCK 1975 -\n"
            "gpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 5600 600.000000\n"
            "t=102\ngpu node-1/0 DCGM_FI_DEV_SM_CLOCK 1000 -\n"
            "gpu node-1/0 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 6300 700.000000\n"
            "gpu node-1/1 DCGM_FI_DEV_SM_CLOCK 1960 -\n");
  for (const char* name : {"g.prom", "g.prom.gz"}) {
    const Dumped got = DumpAll({{Write(name, grouped_text), Role::kCanary, std::nullopt}},
                               Sorting(std::size_t{16} << 20));
    ASSERT_EQ(got.error, "") << name;
    EXPECT_EQ(got.calls, 2) << name;
    EXPECT_EQ(got.ticks, want.ticks) << name;
  }
}

TEST_F(ReplayTest, BadLineInASortedRecordingIsReportedWithFileLineColumn) {
  const std::string path = Write("bad.om", R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 105.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1 104.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 2 103.000
# EOF
)");
  const Dumped got = DumpAll({{path, Role::kBaseline, std::nullopt}});
  EXPECT_EQ(got.calls, 2);
  // Sorted, line 4 is fine; line 6 still goes back in time within its series.
  EXPECT_THAT(got.error, StartsWith(path + ":6:"));
  EXPECT_EQ(got.ticks, "");
}

TEST_F(ReplayTest, OnlyTheInputThatIsNotTimeBlockedIsSorted) {
  const std::string base = Write("base.om", R"(# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="b"} 40 100.000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="b"} 41 100.000
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="b"} 42 101.000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="b"} 43 101.000
# EOF
)");
  const std::string canary = Write("canary.om", R"(# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="c"} 50 100.000
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="c"} 51 101.000
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="c"} 52 103.000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="c"} 53 100.000
DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="c"} 54 103.000
# EOF
)");
  std::vector<int> sorted;
  Status st = ReplayRecordings(
      {{base, Role::kBaseline, std::nullopt}, {canary, Role::kCanary, std::nullopt}}, {},
      [&](Replay& replay) -> Status {
        Tick tick;
        std::vector<std::int64_t> times;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) return more.error();
          if (!*more) break;
          times.push_back(tick.time_s);
        }
        EXPECT_EQ(times, (std::vector<std::int64_t>{100, 101, 102, 103}));
        EXPECT_EQ(replay.out_of_order_input(), -1);
        sorted.push_back(static_cast<int>(replay.gpus().size()));
        return Status::Ok();
      });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(sorted, std::vector<int>{4});
}

TEST(SecondSorterTest, SpilledRunsMergeStablyAndFarSecondsSort) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpucanary-sorter-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    // Two records a run; seconds years apart take the comparison sort.
    SecondSorter sorter({.run_bytes = 32, .dir = dir.string()});
    const std::vector<std::pair<std::uint32_t, std::int64_t>> in = {
        {1, 100}, {2, 400'000'000}, {1, 101}, {3, 100}, {2, 100}, {1, 400'000'000}, {4, 99}};
    double value = 0;
    for (const auto& [series, tick] : in) ASSERT_TRUE(sorter.Add(series, tick, ++value).ok());
    ASSERT_TRUE(sorter.Finish().ok());
    EXPECT_EQ(sorter.runs_spilled(), 3u);
    EXPECT_TRUE(fs::is_empty(dir));  // unlinked
    std::vector<std::string> out;
    std::int64_t tick = 0;
    std::vector<SortRecord> records;
    for (;;) {
      Result<bool> more = sorter.Next(tick, records);
      ASSERT_TRUE(more);
      if (!*more) break;
      std::string s = std::to_string(tick) + ":";
      for (const SortRecord& r : records)
        s += " " + std::to_string(r.series) + "=" + std::to_string(static_cast<int>(r.value));
      out.push_back(s);
    }
    EXPECT_EQ(out, (std::vector<std::string>{"99: 4=7", "100: 1=1 3=4 2=5", "101: 1=3",
                                             "400000000: 2=2 1=6"}));
  }
  {
    SecondSorter sorter({.dir = dir.string()});
    ASSERT_TRUE(sorter.Add(1, 0, 1).ok());
    const Status far = sorter.Add(1, std::int64_t{1} << 32, 1);
    EXPECT_EQ(far.code(), StatusCode::kOutOfRange);
  }
  {
    SecondSorter sorter({.run_bytes = 16, .dir = (dir / "missing").string()});
    ASSERT_TRUE(sorter.Add(1, 0, 1).ok());
    const Status st = sorter.Add(1, 1, 1);
    EXPECT_EQ(st.code(), StatusCode::kIoError);
    EXPECT_THAT(st.message(), HasSubstr("missing"));
  }
  fs::remove_all(dir);
}

// --- errors ----------------------------------------------------------------------

TEST_F(ReplayTest, GpuInBothRolesIsAnErrorNamingIt) {
  const std::string text = R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="3",Hostname="node-7"} 1 100.000
# EOF
)";
  const std::string base = Write("base.om", text);
  const std::string canary = Write("canary.om", text);
  auto replay =
      MustOpen({{base, Role::kBaseline, std::nullopt}, {canary, Role::kCanary, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  Tick tick;
  Result<bool> r = replay->Next(tick);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), StartsWith(canary + ":2:1: GPU node-7/3 is in both baseline (" +
                                              base + ") and canary (" + canary + ")"));
  // The error sticks.
  EXPECT_FALSE(replay->Next(tick));
}

TEST_F(ReplayTest, BadLineIsReportedWithFileLineColumn) {
  const std::string path = Write("bad.om", R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1" 2 101.000
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  EXPECT_TRUE(ticks.empty());  // the file is read ahead of the tick: tick 100 is not complete
  EXPECT_THAT(error, ::testing::MatchesRegex(".*bad\\.om:3:[0-9]+: .*"));
}

TEST_F(ReplayTest, SeriesGoingBackInTimeIsAnError) {
  const std::string path = Write("back.om", R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 101.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1 101.000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 2 100.500
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  EXPECT_THAT(error, StartsWith(path + ":4:"));
}

TEST_F(ReplayTest, SampleOlderThanTheReorderWindowIsAnError) {
  const std::string path = Write("blocks.om", R"(# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 100.000
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="node-1"} 1 105.000
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="node-1"} 1 104.000
DCGM_FI_DEV_SM_CLOCK{gpu="2",Hostname="node-1"} 1 101.000
# EOF
)");
  auto replay = MustOpen({{path, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  auto [ticks, error] = ReplayAll(*replay);
  // Line 4 (one second back) is within the window; line 5 is not.
  EXPECT_THAT(error, StartsWith(path + ":5:1: sample of second 101 comes after one of second 105"));
}

TEST_F(ReplayTest, EmptyMissingAndUntimestampedInputsAreErrors) {
  const std::string empty = Write("empty.om", "");
  auto replay = MustOpen({{empty, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(ReplayAll(*replay).second, empty + ": empty file: no samples to replay");

  const std::string no_samples = Write("meta.om", "# TYPE x gauge\n# EOF\n");
  replay = MustOpen({{no_samples, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(ReplayAll(*replay).second, no_samples + ": no samples to replay");

  auto missing = Replay::Open({{(dir_ / "nope.om").string(), Role::kBaseline, std::nullopt}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("nope.om"));

  EXPECT_FALSE(Replay::Open({}));

  const std::string scrape = Write("scrape.prom", "x{gpu=\"0\",Hostname=\"h\"} 1\n");
  replay = MustOpen({{scrape, Role::kBaseline, std::nullopt}});
  ASSERT_NE(replay, nullptr);
  EXPECT_THAT(ReplayAll(*replay).second, StartsWith(scrape + ":1:1: sample without a timestamp"));
}

}  // namespace
}  // namespace gpucanary::analysis
