#include "analysis/live/store_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "analysis/live/test_util.h"
#include "recording/recording_writer.h"
#include "store/appender.h"

namespace gpucanary::analysis {
namespace {

namespace fs = std::filesystem;
using model::MetricType;

constexpr std::int64_t kT0 = 1764680000;  // Unix seconds of the first tick
constexpr int kSeconds = 90;
constexpr double kLe[] = {0.1, 0.5, 2.0, std::numeric_limits<double>::infinity()};

// Writes the same telemetry to a recording per role and to a store: three
// nodes of two GPUs (node-1 and node-2 canary, node-3 baseline), with a gauge,
// a DCGM counter that resets, a node-level vLLM counter and histogram, a
// missing second, a NaN, DCGM's blank sentinel, and jittered timestamps.
class Fixture {
 public:
  explicit Fixture(const fs::path& dir) : dir_(dir) {
    fs::create_directories(dir_);
    store_ = std::move(*store::Store::Open(dir_ / "data", {}));
    for (const char* role : {"canary", "baseline"}) {
      auto w = recording::RecordingWriter::Open((dir_ / (std::string(role) + ".om")).string());
      EXPECT_TRUE(w.has_value());
      for (auto& [name, kind] : kFamilies) EXPECT_TRUE((*w)->DeclareFamily(name, kind, "").ok());
      writers_.push_back(std::move(*w));
    }
    Generate();
    for (auto& w : writers_) EXPECT_TRUE(w->Close().ok());
  }

  store::Store& store() { return *store_; }
  fs::path Recording(const char* role) const { return dir_ / (std::string(role) + ".om"); }

 private:
  static constexpr std::pair<const char*, MetricType> kFamilies[] = {
      {"DCGM_FI_DEV_SM_CLOCK", MetricType::kGauge},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", MetricType::kCounter},
      {"vllm:generation_tokens_total", MetricType::kCounter},
      {"vllm:e2e_request_latency_seconds", MetricType::kHistogram},
  };

  void Put(const std::string& host, const std::string& name,
           std::vector<std::pair<std::string, std::string>> labels, double v, std::int64_t ms) {
    recording::RecordingWriter& w = *writers_[host == "node-3" ? 1 : 0];
    std::vector<model::LabelView> rl;
    for (const auto& [k, val] : labels) rl.push_back({k, val});
    ASSERT_TRUE(w.Append(name, rl, v, ms).ok()) << name;
    model::Labels sl = {{"__name__", name}};
    for (const auto& [k, val] : labels) sl.push_back({k, val});
    model::SortLabels(sl);
    auto ref = app_->Series(sl);
    ASSERT_TRUE(ref.has_value()) << ref.error().ToString();
    ASSERT_TRUE(app_->Append(*ref, ms, v).ok());
  }

  void Generate() {
    app_ = store_->NewAppender();
    std::vector<double> energy(6, 1e9);
    std::vector<double> tokens(3, 0);
    std::vector<double> hist(3 * 4, 0);
    std::vector<double> hist_sum(3, 0);
    for (int i = 0; i < kSeconds; ++i) {
      const std::int64_t base_ms = (kT0 + i) * 1000;
      for (int n = 0; n < 3; ++n) {
        const std::string host = "node-" + std::to_string(n + 1);
        const std::int64_t ms = base_ms + 100 + 37 * n + (i % 5) * 11;  // each host its phase
        for (int g = 0; g < 2; ++g) {
          const std::size_t k = static_cast<std::size_t>(n * 2 + g);
          const std::vector<std::pair<std::string, std::string>> gpu = {
              {"gpu", std::to_string(g)}, {"Hostname", host}, {"modelName", "NVIDIA H100"}};
          if (!(n == 1 && g == 1 && i == 40)) {  // one missing second
            double clock = 1980 - (n == 0 && i > 50 ? 900 : 0) - g;
            if (n == 2 && g == 0 && i == 60) clock = std::nan("");
            if (n == 2 && g == 1 && i == 61) clock = 140737488355328.0;  // DCGM_FP64_BLANK
            Put(host, "DCGM_FI_DEV_SM_CLOCK", gpu, clock, ms);
          }
          energy[k] = (n == 1 && i == 30) ? 5000 : energy[k] + 300000 + 17 * g;  // a reset
          Put(host, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu, energy[k], ms);
        }
        const std::vector<std::pair<std::string, std::string>> node = {{"Hostname", host}};
        tokens[static_cast<std::size_t>(n)] += 1000 + 10 * n + i % 7;
        Put(host, "vllm:generation_tokens_total", node, tokens[static_cast<std::size_t>(n)], ms);
        double cumulative = 0;
        for (std::size_t b = 0; b < std::size(kLe); ++b) {
          hist[static_cast<std::size_t>(n) * 4 + b] +=
              static_cast<double>((static_cast<std::size_t>(i + n) + b) % 3);
          cumulative += hist[static_cast<std::size_t>(n) * 4 + b];
          char le[32];
          std::snprintf(le, sizeof le, "%g", kLe[b]);
          auto labels = node;
          labels.emplace_back("le", std::isinf(kLe[b]) ? "+Inf" : le);
          Put(host, "vllm:e2e_request_latency_seconds_bucket", labels, cumulative, ms);
        }
        hist_sum[static_cast<std::size_t>(n)] += 0.25 * i;
        Put(host, "vllm:e2e_request_latency_seconds_count", node, cumulative, ms);
        Put(host, "vllm:e2e_request_latency_seconds_sum", node,
            hist_sum[static_cast<std::size_t>(n)], ms);
      }
      ASSERT_TRUE(app_->Commit().has_value());
    }
  }

  fs::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::Appender> app_;
  std::vector<std::unique_ptr<recording::RecordingWriter>> writers_;
};

using testing::Describe;
using testing::Num;

std::vector<model::Matcher> Hosts(const char* regex) {
  return {*model::Matcher::Make(model::Matcher::Type::kRegex, "Hostname", regex)};
}

class StoreSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_live_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fixture_ = std::make_unique<Fixture>(dir_);
  }
  void TearDown() override {
    fixture_.reset();
    fs::remove_all(dir_);
  }
  Result<std::unique_ptr<Replay>> OpenFromStore(std::vector<LiveTickSource*>* sources) {
    return OpenStoreReplay(fixture_->store(),
                           {{"canary", Role::kCanary, Hosts("node-[12]")},
                            {"baseline", Role::kBaseline, Hosts("node-3")}},
                           kT0, sources);
  }

  fs::path dir_;
  std::unique_ptr<Fixture> fixture_;
};

TEST_F(StoreSourceTest, TheStoreGivesTheTicksOfTheRecording) {
  auto files = Replay::Open({{fixture_->Recording("canary").string(), Role::kCanary, {}},
                             {fixture_->Recording("baseline").string(), Role::kBaseline, {}}});
  ASSERT_TRUE(files.has_value()) << files.error().ToString();
  std::vector<std::vector<std::string>> expected;
  Tick tick;
  for (;;) {
    Result<bool> more = (*files)->Next(tick);
    ASSERT_TRUE(more.has_value()) << more.error().ToString();
    if (!*more) break;
    expected.push_back(Describe(tick, **files));
  }
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kSeconds));

  std::vector<LiveTickSource*> sources;
  auto live = OpenFromStore(&sources);
  ASSERT_TRUE(live.has_value()) << live.error().ToString();
  ASSERT_EQ(sources.size(), 2U);
  for (LiveTickSource* s : sources) {
    s->SetReadyThrough(kT0 + kSeconds - 1);
    s->Close();
  }
  std::vector<std::vector<std::string>> got;
  for (;;) {
    Result<bool> more = (*live)->Next(tick);
    ASSERT_TRUE(more.has_value()) << more.error().ToString();
    if (!*more) break;
    got.push_back(Describe(tick, **live));
  }
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "tick " << i;
  // Roles and GPU identity come through too.
  const int canary_gpu = (*live)->GpuId("node-2/1");
  ASSERT_GE(canary_gpu, 0);
  EXPECT_EQ((*live)->gpus()[static_cast<std::size_t>(canary_gpu)].role, Role::kCanary);
  EXPECT_EQ((*live)->gpus()[static_cast<std::size_t>(canary_gpu)].model_name, "NVIDIA H100");
  EXPECT_EQ((*live)->stats().missing, (*files)->stats().missing);
  EXPECT_EQ((*live)->stats().missing, 2U);  // the NaN and the blank sentinel
}

TEST_F(StoreSourceTest, ALiveReplayWaitsForReadySecondsAndResumes) {
  std::vector<LiveTickSource*> sources;
  auto live = OpenFromStore(&sources);
  ASSERT_TRUE(live.has_value()) << live.error().ToString();
  Tick tick;
  // Nothing ready yet: not an end, just nothing to emit.
  Result<bool> more = (*live)->Next(tick);
  ASSERT_TRUE(more.has_value());
  EXPECT_FALSE(*more);

  for (LiveTickSource* s : sources) s->SetReadyThrough(kT0 + 9);
  std::vector<std::int64_t> times;
  while (*(*live)->Next(tick)) times.push_back(tick.time_s);
  ASSERT_EQ(times.size(), 10U);
  EXPECT_EQ(times.front(), kT0);
  EXPECT_EQ(times.back(), kT0 + 9);

  // Later seconds become ready: the replay goes on where it stopped, and the
  // counter increases across the pause are still known.
  for (LiveTickSource* s : sources) s->SetReadyThrough(kT0 + 40);
  times.clear();
  std::optional<double> increase;
  while (*(*live)->Next(tick)) {
    times.push_back(tick.time_s);
    if (tick.time_s == kT0 + 10) {
      const Point* p = tick.FindNode((*live)->NodeId("node-3"),
                                     (*live)->MetricId("vllm:generation_tokens_total"));
      ASSERT_NE(p, nullptr);
      increase = p->increase;
    }
  }
  ASSERT_EQ(times.size(), 31U);
  EXPECT_EQ(times.front(), kT0 + 10);
  ASSERT_TRUE(increase.has_value());
  EXPECT_EQ(*increase, 1000 + 20 + 10 % 7);
}

TEST_F(StoreSourceTest, AHostInBothInputsIsAClearError) {
  std::vector<LiveTickSource*> sources;
  auto live =
      OpenStoreReplay(fixture_->store(),
                      {{"canary {Hostname=~\"node-[12]\"}", Role::kCanary, Hosts("node-[12]")},
                       {"baseline {Hostname=~\"node-[23]\"}", Role::kBaseline, Hosts("node-[23]")}},
                      kT0, &sources);
  ASSERT_TRUE(live.has_value());
  for (LiveTickSource* s : sources) s->SetReadyThrough(kT0 + 5);
  Tick tick;
  Result<bool> more = true;
  while (more && *more) more = (*live)->Next(tick);
  ASSERT_FALSE(more.has_value());
  EXPECT_NE(more.error().message().find("node-2"), std::string::npos) << more.error().message();
  EXPECT_NE(more.error().message().find("canary {Hostname=~\"node-[12]\"}"), std::string::npos)
      << more.error().message();
}

}  // namespace
}  // namespace gpucanary::analysis
