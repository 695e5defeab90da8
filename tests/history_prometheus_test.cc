// Integration: a live canary's history window read from a real Prometheus
// 2.42 when the store lacks it (canary.history_prometheus, docs/canaries.md
// "History from Prometheus").
//
// PrometheusHistorySourceTest: the same telemetry is remote-written into
// Prometheus and appended to stores holding all of it, part of it (each host
// from its own second) or none; the replay that reads the missing part from
// Prometheus gives tick for tick what the full store gives. Sparse (15 s)
// history leaves the seconds between samples without data; an unreachable or
// slow Prometheus never stops the replay.
//
// CanaryHistoryTest: the simulator's power-brake fleet; a CanaryManager whose
// store starts at the release (no history) but whose Prometheus has the
// window judges from started_at - history, with the verdict of a store that
// had it all; with Prometheus down it starts anyway and says so.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/live/prometheus_follow.h"
#include "analysis/live/prometheus_history.h"
#include "analysis/live/store_source.h"
#include "analysis/live/test_util.h"
#include "analysis/report/report_json.h"
#include "canary/manager.h"
#include "canary/test_util.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "expfmt/reader.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "prometheus_process.h"
#include "remote/write_request.h"
#include "store/appender.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary {
namespace {

namespace fs = std::filesystem;
using analysis::LiveTickSource;
using analysis::PrometheusHistory;
using analysis::Replay;
using analysis::Role;
using analysis::StoreInput;
using analysis::StoreTickSource;
using analysis::Tick;

struct Recorded {
  model::Labels labels;  // sorted, with __name__
  std::vector<store::Sample> samples;
};

fs::path TempDir(const std::string& what) {
  fs::path dir =
      fs::temp_directory_path() / ("gc_history_" + std::to_string(::getpid()) + "_" + what + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Appends the samples of `series` that `keep(labels, t_ms)` accepts.
template <typename Keep>
void AppendTo(store::Store& store, const std::vector<Recorded>& series, const Keep& keep) {
  auto app = store.NewAppender();
  std::size_t pending = 0;
  for (const Recorded& r : series) {
    auto ref = app->Series(r.labels);
    ASSERT_TRUE(ref.has_value()) << ref.error().ToString();
    for (const store::Sample& s : r.samples) {
      if (!keep(r.labels, s.t)) continue;
      ASSERT_TRUE(app->Append(*ref, s.t, s.v).ok());
      if (++pending == 4096) {
        ASSERT_TRUE(app->Commit().has_value());
        pending = 0;
      }
    }
  }
  ASSERT_TRUE(app->Commit().has_value());
}

// Writes every sample to Prometheus's remote_write receiver, in time windows
// so that each series goes forward from request to request.
void RemoteWrite(const std::string& url, const std::vector<Recorded>& series) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  for (const Recorded& r : series) {
    if (r.samples.empty()) continue;
    lo = std::min(lo, r.samples.front().t);
    hi = std::max(hi, r.samples.back().t);
  }
  constexpr std::int64_t kWindowMs = 10'000;
  for (std::int64_t from = lo; from <= hi; from += kWindowMs) {
    remote::WriteRequest request;
    for (const Recorded& r : series) {
      remote::TimeSeries ts{r.labels, {}, 0, 0};
      for (const store::Sample& s : r.samples) {
        if (s.t >= from && s.t < from + kWindowMs) ts.samples.push_back({s.t, s.v});
      }
      if (!ts.samples.empty()) request.timeseries.push_back(std::move(ts));
    }
    if (request.timeseries.empty()) continue;
    net::FetchOptions post;
    post.method = "POST";
    post.content_type = "application/x-protobuf";
    post.headers = {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
    post.body = remote::EncodeWriteRequest(request);
    const Result<net::HttpResponse> r = net::Fetch(url + "/api/v1/write", post);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ASSERT_EQ(r->status, 204) << r->body;
  }
}

using analysis::testing::Describe;
using analysis::testing::Num;

// Every tick of `replay` once its sources have everything through `last`.
std::vector<std::vector<std::string>> AllTicks(Replay& replay,
                                               const std::vector<LiveTickSource*>& sources,
                                               std::int64_t last) {
  for (LiveTickSource* s : sources) {
    s->SetReadyThrough(last);
    s->Close();
  }
  std::vector<std::vector<std::string>> ticks;
  Tick tick;
  // A history still being fetched makes Next return false before the end:
  // poll until every source has ended (the fetch is bounded by its timeout).
  const bool ended = test::WaitFor(60, [&] {
    for (;;) {
      Result<bool> more = replay.Next(tick);
      EXPECT_TRUE(more.has_value()) << more.error().ToString();
      if (!more || !*more) break;
      ticks.push_back(Describe(tick, replay));
    }
    return std::all_of(sources.begin(), sources.end(), [](LiveTickSource* s) { return s->eof(); });
  });
  EXPECT_TRUE(ended);
  return ticks;
}

// ---------------------------------------------------------------------------

constexpr int kSeconds = 90;
constexpr double kLe[] = {0.1, 0.5, 2.0, std::numeric_limits<double>::infinity()};
// What the judge would ask for; GPU temperature is asked by its legacy name
// and exported under its DCGM 4.6 name. DCGM_FI_DEV_FAN_SPEED is exported but
// not asked for.
const std::vector<std::string> kNames = {"DCGM_FI_DEV_SM_CLOCK",
                                         "DCGM_FI_DEV_GPU_TEMP",
                                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                         "vllm:generation_tokens_total",
                                         "vllm:e2e_request_latency_seconds_bucket",
                                         "vllm:e2e_request_latency_seconds_count",
                                         "vllm:e2e_request_latency_seconds_sum"};

// Three nodes of two GPUs (node-1 and node-2 canary, node-3 baseline) for
// kSeconds seconds: a gauge with a missing second, a NaN and DCGM's blank
// sentinel, a DCGM counter that resets, a node-level vLLM counter and
// histogram, jittered timestamps; and node-9, scraped every 15 s.
std::vector<Recorded> MakeTelemetry(std::int64_t t0) {
  std::map<model::Labels, std::size_t> index;
  std::vector<Recorded> out;
  const auto put = [&](const std::string& name,
                       std::vector<std::pair<std::string, std::string>> labels, double v,
                       std::int64_t ms) {
    model::Labels l = {{"__name__", name}};
    for (auto& [k, val] : labels) l.push_back({k, val});
    model::SortLabels(l);
    auto [it, inserted] = index.emplace(l, out.size());
    if (inserted) out.push_back({l, {}});
    out[it->second].samples.push_back({ms, v});
  };
  std::vector<double> energy(6, 1e9);
  std::vector<double> tokens(3, 0);
  std::vector<double> hist(3 * 4, 0);
  std::vector<double> hist_sum(3, 0);
  for (int i = 0; i < kSeconds; ++i) {
    for (int n = 0; n < 3; ++n) {
      const std::string host = "node-" + std::to_string(n + 1);
      const std::int64_t ms = (t0 + i) * 1000 + 100 + 37 * n + (i % 5) * 11;
      for (int g = 0; g < 2; ++g) {
        const auto k = static_cast<std::size_t>(n * 2 + g);
        const std::vector<std::pair<std::string, std::string>> gpu = {
            {"gpu", std::to_string(g)}, {"Hostname", host}, {"modelName", "NVIDIA H100"}};
        if (!(n == 1 && g == 1 && i == 40)) {  // a missing second
          double clock = 1980 - (n == 0 && i > 50 ? 900 : 0) - g;
          if (n == 2 && g == 0 && (i == 20 || i == 60)) clock = std::nan("");
          if (n == 2 && g == 1 && (i == 21 || i == 61)) clock = 140737488355328.0;  // blank
          put("DCGM_FI_DEV_SM_CLOCK", gpu, clock, ms);
        }
        put("DCGM_FI_DEV_GPU_TEMP_CELSIUS", gpu, 60 + (i + g) % 7, ms);
        put("DCGM_FI_DEV_FAN_SPEED", gpu, 40, ms);
        energy[k] = (n == 1 && i == 30) ? 5000 : energy[k] + 300000 + 17 * g;  // a reset
        put("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu, energy[k], ms);
      }
      const std::vector<std::pair<std::string, std::string>> node = {{"Hostname", host}};
      tokens[static_cast<std::size_t>(n)] += 1000 + 10 * n + i % 7;
      put("vllm:generation_tokens_total", node, tokens[static_cast<std::size_t>(n)], ms);
      double cumulative = 0;
      for (std::size_t b = 0; b < std::size(kLe); ++b) {
        hist[static_cast<std::size_t>(n) * 4 + b] +=
            static_cast<double>((static_cast<std::size_t>(i + n) + b) % 3);
        cumulative += hist[static_cast<std::size_t>(n) * 4 + b];
        char le[32];
        std::snprintf(le, sizeof le, "%g", kLe[b]);
        auto labels = node;
        labels.emplace_back("le", std::isinf(kLe[b]) ? "+Inf" : le);
        put("vllm:e2e_request_latency_seconds_bucket", labels, cumulative, ms);
      }
      hist_sum[static_cast<std::size_t>(n)] += 0.25 * i;
      put("vllm:e2e_request_latency_seconds_count", node, cumulative, ms);
      put("vllm:e2e_request_latency_seconds_sum", node, hist_sum[static_cast<std::size_t>(n)], ms);
    }
    if (i % 15 == 0) {  // node-9: a 15 s scrape interval
      const std::int64_t ms = (t0 + i) * 1000 + 420;
      put("DCGM_FI_DEV_SM_CLOCK", {{"gpu", "0"}, {"Hostname", "node-9"}}, 1500 + i, ms);
      put("vllm:generation_tokens_total", {{"Hostname", "node-9"}}, 100.0 * i, ms);
    }
  }
  return out;
}

std::vector<model::Matcher> Hosts(const char* regex) {
  return {*model::Matcher::Make(model::Matcher::Type::kRegex, "Hostname", regex)};
}

class PrometheusHistorySourceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    prometheus_ = test::PrometheusProcess::Start("global:\n  scrape_interval: 1m\n",
                                                 {"--web.enable-remote-write-receiver"}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
    t0_ = test::NowMs() / 1000 - 300;
    telemetry_ = new std::vector<Recorded>(MakeTelemetry(t0_));
    RemoteWrite(prometheus_->url(), *telemetry_);
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete telemetry_;
  }

  void SetUp() override { dir_ = TempDir("source"); }
  void TearDown() override {
    stores_.clear();
    fs::remove_all(dir_);
  }

  // A store holding each host's samples from second t0 + since[host] on
  // (hosts not named: none; FAN_SPEED is the store's only, as a daemon that
  // scrapes every series of a target would have it).
  store::Store& StoreFrom(const std::map<std::string, int>& since) {
    auto store = store::Store::Open(dir_ / ("data" + std::to_string(stores_.size())), {});
    EXPECT_TRUE(store.has_value()) << store.error().ToString();
    stores_.push_back(std::move(*store));
    AppendTo(*stores_.back(), *telemetry_, [&](const model::Labels& l, std::int64_t t) {
      const auto it = since.find(std::string(model::LabelValue(l, "Hostname")));
      return it != since.end() && t >= (t0_ + it->second) * 1000;
    });
    return *stores_.back();
  }

  std::shared_ptr<PrometheusHistory> History(const std::vector<std::string>& hosts,
                                             const std::string& url = "") {
    PrometheusHistory::Server server{url.empty() ? prometheus_->url() : url, {}};
    server.client.timeout_ms = 10000;
    return PrometheusHistory::Start(server, "Hostname", hosts, kNames, t0_, t0_ + kSeconds);
  }

  // The three nodes' ticks from `store`, with Prometheus histories if given.
  std::vector<std::vector<std::string>> Ticks(store::Store& store,
                                              std::shared_ptr<PrometheusHistory> canary,
                                              std::shared_ptr<PrometheusHistory> baseline) {
    std::vector<LiveTickSource*> sources;
    auto replay = analysis::OpenStoreReplay(
        store,
        {{"canary", Role::kCanary, Hosts("node-[12]"), std::move(canary)},
         {"baseline", Role::kBaseline, Hosts("node-3"), std::move(baseline)}},
        t0_, &sources);
    EXPECT_TRUE(replay.has_value()) << replay.error().ToString();
    if (!replay) return {};
    return AllTicks(**replay, sources, t0_ + kSeconds - 1);
  }

  // The canary arm (node-1, node-2) from `store`, the baseline arm (node-3)
  // followed in `engine` as a canary across shards reads it.
  Result<std::unique_ptr<Replay>> OpenWithRemoteBaseline(store::Store& store,
                                                         const PrometheusHistory::Server& engine,
                                                         std::vector<LiveTickSource*>* sources) {
    return analysis::OpenStoreReplay(store,
                                     {{"canary", Role::kCanary, Hosts("node-[12]")},
                                      {"baseline",
                                       Role::kBaseline,
                                       {},
                                       nullptr,
                                       engine,
                                       analysis::HistorySelector("Hostname", {"node-3"}, kNames)}},
                                     t0_, sources);
  }

  // Drops the lines of FAN_SPEED (in the stores, never asked of Prometheus).
  static std::vector<std::vector<std::string>> WithoutFan(
      std::vector<std::vector<std::string>> ticks) {
    for (auto& t : ticks) {
      t.erase(std::remove_if(t.begin(), t.end(),
                             [](const std::string& line) {
                               return line.find("DCGM_FI_DEV_FAN_SPEED") != std::string::npos;
                             }),
              t.end());
    }
    return ticks;
  }

  static test::PrometheusProcess* prometheus_;
  static std::int64_t t0_;
  static std::vector<Recorded>* telemetry_;
  fs::path dir_;
  std::vector<std::unique_ptr<store::Store>> stores_;
};

test::PrometheusProcess* PrometheusHistorySourceTest::prometheus_ = nullptr;
std::int64_t PrometheusHistorySourceTest::t0_ = 0;
std::vector<Recorded>* PrometheusHistorySourceTest::telemetry_ = nullptr;

TEST_F(PrometheusHistorySourceTest, TheSelectorQuotesHostsAndAsksForDcgm46NamesToo) {
  EXPECT_EQ(analysis::HistorySelector("Hostname", {"node-4", "gpu.host-1"},
                                      {"DCGM_FI_DEV_GPU_TEMP", "vllm:generation_tokens_total"}),
            "{Hostname=~\"gpu\\\\.host-1|node-4\",__name__=~\"DCGM_FI_DEV_GPU_TEMP|"
            "DCGM_FI_DEV_GPU_TEMP_CELSIUS|vllm:generation_tokens_total\"}");
  EXPECT_EQ(analysis::HistorySelector("hostname", {"n1"}, {}), "{hostname=~\"n1\"}");
  // What the default policy's judge reads: the rules' fields, histogram
  // series by suffix, sorted and unique.
  const std::vector<std::string> names = analysis::JudgeInputNames(analysis::DefaultPolicy());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const char* want :
       {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_XID_ERRORS",
        "vllm:generation_tokens_total", "vllm:time_per_output_token_seconds_sum",
        "vllm:time_per_output_token_seconds_count", "vllm:e2e_request_latency_seconds_bucket"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST_F(PrometheusHistorySourceTest, AnEmptyStorePlusPrometheusGivesTheTicksOfTheFullStore) {
  store::Store& full = StoreFrom({{"node-1", 0}, {"node-2", 0}, {"node-3", 0}});
  const auto expected = WithoutFan(Ticks(full, nullptr, nullptr));
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kSeconds));

  store::Store& empty = StoreFrom({});
  auto canary = History({"node-1", "node-2"});
  auto baseline = History({"node-3"});
  const auto got = Ticks(empty, canary, baseline);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "tick " << i;

  ASSERT_TRUE(canary->status().ok()) << canary->status().ToString();
  EXPECT_TRUE(canary->released());  // read through: the samples are freed
  // Only the series the judge reads were fetched: FAN_SPEED was not.
  EXPECT_EQ(canary->fetched_samples(),
            static_cast<std::size_t>(2 * 2 * kSeconds * 3 + 2 * kSeconds * (1 + 4 + 2) - 1));
  EXPECT_EQ(canary->host_counts()["node-1"].used + canary->host_counts()["node-2"].used,
            canary->fetched_samples());
  EXPECT_EQ(canary->host_counts()["node-1"].shadowed, 0U);
}

// A canary across shards (docs/scale-out.md §2): the baseline arm read from
// the engine second by second as its seconds become ready (the remote lag
// passed), the canary arm from the store, gives the ticks of one store that
// holds both arms.
TEST_F(PrometheusHistorySourceTest, ABaselineArmFollowedInTheEngineGivesTheTicksOfOneStore) {
  store::Store& full = StoreFrom({{"node-1", 0}, {"node-2", 0}, {"node-3", 0}});
  const auto expected = WithoutFan(Ticks(full, nullptr, nullptr));
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kSeconds));

  store::Store& canary_shard = StoreFrom({{"node-1", 0}, {"node-2", 0}});
  PrometheusHistory::Server engine{prometheus_->url(), {}};
  engine.client.timeout_ms = 10000;
  std::vector<LiveTickSource*> sources;
  auto replay = OpenWithRemoteBaseline(canary_shard, engine, &sources);
  ASSERT_TRUE(replay.has_value()) << replay.error().ToString();
  std::vector<std::vector<std::string>> got;
  Tick tick;
  auto drain = [&] {
    for (;;) {
      Result<bool> more = (*replay)->Next(tick);
      ASSERT_TRUE(more.has_value()) << more.error().ToString();
      if (!*more) break;
      got.push_back(Describe(tick, **replay));
    }
  };
  // Live: one more second ready at a time, as the canary loop marks them.
  for (std::int64_t t = t0_; t < t0_ + kSeconds; ++t) {
    for (LiveTickSource* s : sources) s->SetReadyThrough(t);
    drain();
  }
  for (LiveTickSource* s : sources) s->Close();
  drain();
  got = WithoutFan(std::move(got));
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "tick " << i;
  auto* remote = dynamic_cast<analysis::PrometheusTickSource*>(sources[1]);
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->failed_queries(), 0U);
  EXPECT_GE(remote->queries(), static_cast<std::uint64_t>(kSeconds));  // a second at a time
  EXPECT_GT(remote->fetched_samples(), 0U);
}

// The engine down: the arm has no data for those seconds, the replay goes on
// with the store's arm, and the failures are counted with the reason.
TEST_F(PrometheusHistorySourceTest, AnEngineThatIsDownLeavesItsArmWithoutDataAndSaysWhy) {
  store::Store& canary_shard = StoreFrom({{"node-1", 0}, {"node-2", 0}});
  PrometheusHistory::Server down{"http://127.0.0.1:" + std::to_string(test::FreePort()), {}};
  down.client.timeout_ms = 2000;
  std::vector<LiveTickSource*> sources;
  auto replay = OpenWithRemoteBaseline(canary_shard, down, &sources);
  ASSERT_TRUE(replay.has_value()) << replay.error().ToString();
  const auto ticks = AllTicks(**replay, sources, t0_ + kSeconds - 1);
  ASSERT_EQ(ticks.size(), static_cast<std::size_t>(kSeconds));
  for (const auto& t : ticks) {
    for (const std::string& line : t) EXPECT_EQ(line.find("node-3"), std::string::npos) << line;
  }
  auto* remote = dynamic_cast<analysis::PrometheusTickSource*>(sources[1]);
  ASSERT_NE(remote, nullptr);
  EXPECT_GT(remote->failed_queries(), 0U);
  EXPECT_EQ(remote->failed_queries(), remote->queries());
  EXPECT_NE(remote->last_error().message().find("Connection refused"), std::string::npos)
      << remote->last_error().ToString();
}

TEST_F(PrometheusHistorySourceTest, EachHostSwitchesToTheStoreAtItsOwnFirstSecond) {
  store::Store& full = StoreFrom({{"node-1", 0}, {"node-2", 0}, {"node-3", 0}});
  const auto expected = Ticks(full, nullptr, nullptr);

  // node-1 is in the store from 35 s, node-2 from 70 s, node-3 from 50 s:
  // the NaN and the blank sentinel of node-3 at 20-21 s come from Prometheus,
  // those at 60-61 s from the store; node-1's and node-2's counters run on
  // across the switch (same labels: the same series).
  store::Store& partial = StoreFrom({{"node-1", 35}, {"node-2", 70}, {"node-3", 50}});
  auto canary = History({"node-1", "node-2"});
  auto baseline = History({"node-3"});
  std::vector<LiveTickSource*> sources;
  auto replay =
      analysis::OpenStoreReplay(partial,
                                {{"canary", Role::kCanary, Hosts("node-[12]"), canary},
                                 {"baseline", Role::kBaseline, Hosts("node-3"), baseline}},
                                t0_, &sources);
  ASSERT_TRUE(replay.has_value()) << replay.error().ToString();
  const auto got = AllTicks(**replay, sources, t0_ + kSeconds - 1);
  // FAN_SPEED comes from the store only, so it appears from each host's switch.
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int host_since[] = {35, 70, 50};
    std::vector<std::string> want = expected[i];
    want.erase(std::remove_if(want.begin(), want.end(),
                              [&](const std::string& line) {
                                if (line.find("DCGM_FI_DEV_FAN_SPEED") == std::string::npos)
                                  return false;
                                const int n = line[5] - '1';  // "node-N/g ..."
                                return static_cast<int>(i) < host_since[n];
                              }),
               want.end());
    EXPECT_EQ(got[i], want) << "tick " << i;
  }
  EXPECT_EQ((*replay)->stats().missing, 4U);  // 2 NaN, 2 blank: no data either way
  // What each side served: a host's samples from its switch on are the store's.
  EXPECT_GT(canary->host_counts()["node-1"].used, 0U);
  EXPECT_GT(canary->host_counts()["node-1"].shadowed, 0U);
  EXPECT_GT(baseline->host_counts()["node-3"].used, 0U);
}

TEST_F(PrometheusHistorySourceTest, SparseHistoryLeavesTheSecondsBetweenScrapesWithoutData) {
  store::Store& empty = StoreFrom({});
  PrometheusHistory::Server server{prometheus_->url(), {}};
  auto history =
      PrometheusHistory::Start(server, "Hostname", {"node-9"}, kNames, t0_, t0_ + kSeconds);
  std::vector<LiveTickSource*> sources;
  auto replay = analysis::OpenStoreReplay(
      empty, {{"canary", Role::kCanary, Hosts("node-9"), history}}, t0_, &sources);
  ASSERT_TRUE(replay.has_value());
  for (LiveTickSource* s : sources) {
    s->SetReadyThrough(t0_ + kSeconds - 1);
    s->Close();
  }
  std::vector<std::int64_t> times;
  std::vector<std::int64_t> with_clock;
  std::vector<std::optional<double>> token_increase;
  Tick tick;
  ASSERT_TRUE(test::WaitFor(60, [&] {
    for (;;) {
      Result<bool> more = (*replay)->Next(tick);
      EXPECT_TRUE(more.has_value());
      if (!more || !*more) break;
      times.push_back(tick.time_s);
      const Replay& r = **replay;
      if (const auto* p = tick.FindGpu(r.GpuId("node-9/0"), r.MetricId("DCGM_FI_DEV_SM_CLOCK"))) {
        with_clock.push_back(tick.time_s);
        EXPECT_EQ(p->value, 1500 + static_cast<double>(tick.time_s - t0_));
      }
      if (const auto* p =
              tick.FindNode(r.NodeId("node-9"), r.MetricId("vllm:generation_tokens_total"))) {
        token_increase.push_back(p->increase);
      }
    }
    return sources.front()->eof();
  }));
  // Every second from the first sample to the last is a tick (time passes);
  // only the six scraped seconds have points, the others none (never zero,
  // never carried forward).
  ASSERT_EQ(times.size(), 76U);
  EXPECT_EQ(times.front(), t0_);
  EXPECT_EQ(times.back(), t0_ + 75);
  EXPECT_EQ(with_clock,
            (std::vector<std::int64_t>{t0_, t0_ + 15, t0_ + 30, t0_ + 45, t0_ + 60, t0_ + 75}));
  // A counter's increase is the Replay's rule: since the previous sample (15
  // s of it here), unknown for the first.
  ASSERT_EQ(token_increase.size(), 6U);
  EXPECT_FALSE(token_increase[0].has_value());
  for (std::size_t i = 1; i < token_increase.size(); ++i) {
    ASSERT_TRUE(token_increase[i].has_value());
    EXPECT_EQ(*token_increase[i], 1500.0);
  }
}

TEST_F(PrometheusHistorySourceTest, PrometheusDownLeavesTheStoresOwnTicks) {
  store::Store& partial = StoreFrom({{"node-1", 35}, {"node-2", 70}, {"node-3", 50}});
  const auto store_only = Ticks(partial, nullptr, nullptr);
  const std::string down = "http://127.0.0.1:" + std::to_string(test::FreePort());
  auto canary = History({"node-1", "node-2"}, down);
  auto baseline = History({"node-3"}, down);
  const auto got = Ticks(partial, canary, baseline);
  EXPECT_EQ(got, store_only);
  ASSERT_TRUE(canary->Done());
  EXPECT_FALSE(canary->status().ok());
  EXPECT_NE(canary->status().message().find("127.0.0.1"), std::string::npos)
      << canary->status().message();
}

TEST_F(PrometheusHistorySourceTest, TheReplayWaitsForAFetchInFlight) {
  // A Prometheus that answers only when the test lets it.
  Mutex mu;
  CondVar cv;
  bool open = false;
  const std::string answer =
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":)"
      R"({"__name__":"DCGM_FI_DEV_SM_CLOCK","Hostname":"node-7","gpu":"0"},"values":[[)" +
      std::to_string(t0_ + 3) + R"(.5,"1410"]]}]}})";
  net::HttpServer server{net::HttpServer::Options{}};
  auto port = server.Listen("127.0.0.1", 0, [&](const net::HttpRequest&, net::HttpResponse& r) {
    MutexLock lock(mu);
    cv.Wait(mu, [&]() REQUIRES(mu) { return open; });
    r.status = 200;
    r.content_type = "application/json";
    r.body = answer;
  });
  ASSERT_TRUE(port.has_value());
  ASSERT_TRUE(server.Start().ok());

  const auto open_gate = [&] {
    {
      MutexLock lock(mu);
      open = true;
    }
    cv.NotifyAll();
  };

  store::Store& empty = StoreFrom({});
  PrometheusHistory::Server slow{"http://127.0.0.1:" + std::to_string(*port), {}};
  slow.client.timeout_ms = 20000;
  auto history = PrometheusHistory::Start(slow, "Hostname", {"node-7"}, {}, t0_, t0_ + 10);
  // Whatever happens below, the server answers before the fetch is joined.
  struct Gate {
    std::function<void()> open;
    ~Gate() { open(); }
  } gate{open_gate};
  std::vector<LiveTickSource*> sources;
  auto replay = analysis::OpenStoreReplay(
      empty, {{"canary", Role::kCanary, Hosts("node-7"), history}}, t0_, &sources);
  ASSERT_TRUE(replay.has_value());
  sources.front()->SetReadyThrough(t0_ + 9);
  Tick tick;
  Result<bool> more = (*replay)->Next(tick);
  ASSERT_TRUE(more.has_value());
  EXPECT_FALSE(*more);  // not an end: the history is not here yet
  EXPECT_FALSE(sources.front()->eof());
  EXPECT_FALSE(history->Done());
  open_gate();
  std::vector<std::int64_t> times;
  ASSERT_TRUE(test::WaitFor(30, [&] {
    while (true) {
      Result<bool> m = (*replay)->Next(tick);
      if (!m || !*m) break;
      times.push_back(tick.time_s);
      EXPECT_NE(
          tick.FindGpu((*replay)->GpuId("node-7/0"), (*replay)->MetricId("DCGM_FI_DEV_SM_CLOCK")),
          nullptr);
    }
    return !times.empty();
  }));
  EXPECT_EQ(times, std::vector<std::int64_t>{t0_ + 3});
  server.Stop();
}

TEST_F(PrometheusHistorySourceTest, AnErrorAnswerIsNotedWithTheServersReason) {
  net::HttpServer server{net::HttpServer::Options{}};
  auto port = server.Listen("127.0.0.1", 0, [](const net::HttpRequest&, net::HttpResponse& r) {
    r.status = 503;
    r.content_type = "application/json";
    r.body = R"({"status":"error","errorType":"timeout","error":"query timed out"})";
  });
  ASSERT_TRUE(port.has_value());
  ASSERT_TRUE(server.Start().ok());
  store::Store& partial = StoreFrom({{"node-1", 35}, {"node-2", 70}, {"node-3", 50}});
  const auto store_only = Ticks(partial, nullptr, nullptr);

  canary::HistoryPrometheusOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(*port);
  std::vector<StoreInput> inputs = {{"canary", Role::kCanary, Hosts("node-[12]")},
                                    {"baseline", Role::kBaseline, Hosts("node-3")}};
  std::vector<std::string> log;
  auto history = canary::CanaryHistory::Attach(
      partial, options, analysis::DefaultPolicy(), {"node-1", "node-2"}, {"node-3"}, t0_,
      t0_ + kSeconds, (t0_ + kSeconds + 5) * 1000, inputs,
      [&](std::string_view line) { log.emplace_back(line); });
  ASSERT_NE(history, nullptr);
  ASSERT_EQ(log.size(), 1U);
  EXPECT_EQ(log[0], "history [" + std::to_string(t0_) + ", " + std::to_string(t0_ + kSeconds) +
                        ") of node-1, node-2, node-3 is not in the store: reading it from "
                        "Prometheus " +
                        options.url);
  std::vector<LiveTickSource*> sources;
  auto replay = analysis::OpenStoreReplay(partial, std::move(inputs), t0_, &sources);
  ASSERT_TRUE(replay.has_value());
  EXPECT_EQ(AllTicks(**replay, sources, t0_ + kSeconds - 1), store_only);
  analysis::Report report;
  history->Annotate(report);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_EQ(report.notes[0], "history [" + std::to_string(t0_) + ", " +
                                 std::to_string(t0_ + kSeconds) + "): Prometheus " + options.url +
                                 " unavailable (HTTP 503 timeout: query timed out): judged on the "
                                 "store's own history only");
  ASSERT_EQ(log.size(), 2U);
  EXPECT_EQ(log[1], report.notes[0]);
  history->Annotate(report);
  EXPECT_EQ(log.size(), 2U);  // logged once
  server.Stop();
}

TEST_F(PrometheusHistorySourceTest, HostsTheStoreHasFromTheStartAreNotAskedFor) {
  store::Store& store = StoreFrom({{"node-1", 0}, {"node-2", 0}, {"node-3", 40}});
  canary::HistoryPrometheusOptions options;
  options.url = prometheus_->url();
  std::vector<StoreInput> inputs = {{"canary", Role::kCanary, Hosts("node-[12]")},
                                    {"baseline", Role::kBaseline, Hosts("node-3")}};
  auto history = canary::CanaryHistory::Attach(store, options, analysis::DefaultPolicy(),
                                               {"node-1", "node-2"}, {"node-3"}, t0_,
                                               t0_ + kSeconds, test::NowMs(), inputs, nullptr);
  ASSERT_NE(history, nullptr);
  EXPECT_EQ(inputs[0].history, nullptr);  // node-1 and node-2 are in the store from t0
  ASSERT_NE(inputs[1].history, nullptr);
  EXPECT_EQ(inputs[1].history->hosts(), std::vector<std::string>{"node-3"});
  // All covered: nothing is asked, and there is nothing to note.
  store::Store& full = StoreFrom({{"node-1", 0}, {"node-2", 0}, {"node-3", 0}});
  std::vector<StoreInput> again = {{"canary", Role::kCanary, Hosts("node-[12]")},
                                   {"baseline", Role::kBaseline, Hosts("node-3")}};
  EXPECT_EQ(
      canary::CanaryHistory::Attach(full, options, analysis::DefaultPolicy(), {"node-1", "node-2"},
                                    {"node-3"}, t0_, t0_ + kSeconds, test::NowMs(), again, nullptr),
      nullptr);
  // Off without a URL.
  options.url.clear();
  EXPECT_EQ(
      canary::CanaryHistory::Attach(store, options, analysis::DefaultPolicy(), {"node-1", "node-2"},
                                    {"node-3"}, t0_, t0_ + kSeconds, test::NowMs(), again, nullptr),
      nullptr);
}

// ---------------------------------------------------------------------------

using canary::CanaryManager;
using canary::CanaryOptions;
using canary::CanaryView;

// The power-brake recording (canary/test_util.h), moved to end a minute ago.
std::vector<Recorded> SimTelemetry(std::int64_t shift_ms) {
  std::map<model::Labels, std::size_t> index;
  std::vector<Recorded> out;
  const fs::path& path = canary::testing::PowerBrakeRecording();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  expfmt::ExpositionReader reader(
      expfmt::Format::kOpenMetrics, path.string(), expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
        model::Labels labels = {{"__name__", std::string(s.name)}};
        for (const auto& l : s.labels)
          labels.push_back({std::string(l.name), std::string(l.value)});
        model::SortLabels(labels);
        auto [it, inserted] = index.emplace(labels, out.size());
        if (inserted) out.push_back({labels, {}});
        out[it->second].samples.push_back({s.timestamp_ms + shift_ms, s.value});
      });
  EXPECT_TRUE(reader.Feed(text.str(), true));
  return out;
}

class CanaryHistoryTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kHistoryS = 20;
  static constexpr std::int64_t kReleaseS = 20;  // sim seconds

  static void SetUpTestSuite() {
    std::string error;
    prometheus_ = test::PrometheusProcess::Start("global:\n  scrape_interval: 1m\n",
                                                 {"--web.enable-remote-write-receiver"}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
    start_ = test::NowMs() / 1000 - 200;
    telemetry_ =
        new std::vector<Recorded>(SimTelemetry((start_ - canary::testing::kSimStart) * 1000));
    RemoteWrite(prometheus_->url(), *telemetry_);
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete telemetry_;
  }

  void SetUp() override { dir_ = TempDir("canary"); }
  void TearDown() override {
    manager_.reset();
    meta_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // A daemon's store holding the fleet's telemetry from sim second `from_s`.
  void OpenStore(std::int64_t from_s) {
    auto store = store::Store::Open(dir_ / "data", {});
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
    auto meta = store::MetaDb::Open(dir_ / "data" / "meta.sqlite");
    ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
    meta_ = std::move(*meta);
    AppendTo(*store_, *telemetry_,
             [&](const model::Labels&, std::int64_t t) { return t >= (start_ + from_s) * 1000; });
  }

  // Runs the power-brake release on node-4 to the end; `url` configures
  // canary.history_prometheus ("" : off).
  CanaryView Run(const std::string& url) {
    CanaryOptions options;
    options.policy = analysis::DefaultPolicy();
    options.history_s = kHistoryS;
    options.duration_s = 100;
    options.baseline_nodes = 3;
    options.history_prometheus.url = url;
    canary::CanaryHooks hooks;
    hooks.log = [this](std::string_view line) { log_.emplace_back(line); };
    ManualClock clock((start_ + kReleaseS + 2) * 1000);
    manager_ = std::make_unique<CanaryManager>(*store_, *meta_, clock, options, hooks);
    auto id = manager_->Start({.release_id = "fp8-kernel",
                               .started_at = static_cast<double>(start_ + kReleaseS),
                               .targets = {"node-4"},
                               .selector = {},
                               .previous = "stable"});
    EXPECT_TRUE(id.has_value()) << id.error().ToString();
    // Poll until the canary ends; the history fetch runs on its own thread,
    // so the clock stands still while the canary waits for it.
    EXPECT_TRUE(test::WaitFor(120, [&] {
      if (clock.NowMs() < (start_ + 140) * 1000) clock.Advance(1000);
      manager_->Poll();
      return manager_->Get("fp8-kernel")->state != vocab::CanaryState::kRunning;
    }));
    CanaryView view = *manager_->Get("fp8-kernel");
    manager_.reset();
    return view;
  }

  // The first second with a sample of the canary or baseline hosts from sim
  // second `from_s` on: where a judge fed from there starts.
  static double FirstTick(std::int64_t from_s) {
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (const Recorded& r : *telemetry_) {
      if (model::LabelValue(r.labels, "Hostname") == "node-5") continue;
      for (const store::Sample& s : r.samples) {
        if (s.t >= (start_ + from_s) * 1000) first = std::min(first, s.t / 1000);
      }
    }
    return static_cast<double>(first);
  }

  static std::string NotesOf(const CanaryView& v) {
    std::string all;
    for (const std::string& n : v.report.notes) all += n + "\n";
    return all;
  }

  static test::PrometheusProcess* prometheus_;
  static std::int64_t start_;  // Unix second of the simulation's t = 0
  static std::vector<Recorded>* telemetry_;
  fs::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  std::unique_ptr<CanaryManager> manager_;
  std::vector<std::string> log_;
};

test::PrometheusProcess* CanaryHistoryTest::prometheus_ = nullptr;
std::int64_t CanaryHistoryTest::start_ = 0;
std::vector<Recorded>* CanaryHistoryTest::telemetry_ = nullptr;

TEST_F(CanaryHistoryTest, AStoreWithoutHistoryJudgesFromPrometheusLikeAStoreWithIt) {
  OpenStore(0);  // the whole window in the store: Prometheus is not asked
  const CanaryView full = Run(prometheus_->url());
  EXPECT_EQ(NotesOf(full).find("Prometheus"), std::string::npos) << NotesOf(full);
  ASSERT_TRUE(full.report.first_tick.has_value());
  EXPECT_EQ(*full.report.first_tick, FirstTick(kReleaseS - kHistoryS));
  EXPECT_LT(*full.report.first_tick, static_cast<double>(start_ + kReleaseS));
  TearDown();
  SetUp();

  OpenStore(kReleaseS);  // the daemon started scraping at the release
  log_.clear();
  const CanaryView fetched = Run(prometheus_->url());
  // The judge starts `history` before the release, as with the full store,
  // and reaches the same verdict, causes and decision time.
  ASSERT_TRUE(fetched.report.first_tick.has_value());
  EXPECT_EQ(*fetched.report.first_tick, *full.report.first_tick);
  EXPECT_EQ(fetched.state, vocab::CanaryState::kFailed);
  EXPECT_EQ(fetched.state, full.state);
  EXPECT_EQ(fetched.report.verdict, full.report.verdict);
  EXPECT_EQ(fetched.report.decided_at, full.report.decided_at);
  ASSERT_EQ(fetched.report.causes.size(), full.report.causes.size());
  for (std::size_t i = 0; i < full.report.causes.size(); ++i) {
    EXPECT_EQ(fetched.report.causes[i].kind, full.report.causes[i].kind);
    EXPECT_EQ(fetched.report.causes[i].scope, full.report.causes[i].scope);
    EXPECT_EQ(fetched.report.causes[i].gpus, full.report.causes[i].gpus);
    EXPECT_EQ(fetched.report.causes[i].since, full.report.causes[i].since);
  }
  ASSERT_EQ(fetched.report.metrics.size(), full.report.metrics.size());
  for (std::size_t i = 0; i < full.report.metrics.size(); ++i) {
    EXPECT_EQ(fetched.report.metrics[i].blocks, full.report.metrics[i].blocks)
        << full.report.metrics[i].name;
    EXPECT_EQ(fetched.report.metrics[i].result, full.report.metrics[i].result)
        << full.report.metrics[i].name;
  }
  const std::string notes = NotesOf(fetched);
  EXPECT_NE(notes.find("from Prometheus " + prometheus_->url()), std::string::npos) << notes;
  EXPECT_NE(notes.find("node-4 ("), std::string::npos) << notes;
  EXPECT_EQ(notes.find("unavailable"), std::string::npos) << notes;
  bool logged = false;
  for (const std::string& line : log_) {
    logged = logged || line.find("from Prometheus " + prometheus_->url()) != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

TEST_F(CanaryHistoryTest, WithPrometheusDownTheCanaryStartsAnywayAndSaysSo) {
  OpenStore(kReleaseS);
  const std::string down = "http://127.0.0.1:" + std::to_string(test::FreePort());
  const CanaryView view = Run(down);
  // Judged on what the store has (from the release on); the release's power
  // brake is still found.
  EXPECT_EQ(view.state, vocab::CanaryState::kFailed);
  ASSERT_TRUE(view.report.first_tick.has_value());
  EXPECT_EQ(*view.report.first_tick, FirstTick(kReleaseS));
  const std::string notes = NotesOf(view);
  EXPECT_NE(notes.find("Prometheus " + down + " unavailable"), std::string::npos) << notes;
  EXPECT_NE(notes.find("unavailable (connect: Connection refused): judged on the store's own "
                       "history only"),
            std::string::npos)
      << notes;
  bool logged = false;
  for (const std::string& line : log_) {
    logged = logged || line.find("unavailable") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

#ifdef GPUCANARY_BIN
// The same through `gpucanary serve` configured with
// canary.history_prometheus: a daemon with an empty store judges a release
// from the history Prometheus has; one whose Prometheus is down starts the
// canary anyway, on what its store has, and its report says why.
class ServeHistoryTest : public CanaryHistoryTest {
 protected:
  using Json = nlohmann::json;

  void TearDown() override {
    serve_.reset();  // stopped before its folder goes
    CanaryHistoryTest::TearDown();
  }

  std::string StartServe(const std::string& prometheus_url) {
    std::ofstream(dir_ / "serve.yaml")
        << "listen: 127.0.0.1:0\nstorage: {path: data}\n"
        << "canary:\n  history: " << kHistoryS << "s\n"
        << "  history_prometheus: {url: \"" << prometheus_url << "\", timeout: 5s}\n";
    return test::StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml", "serve.log", serve_);
  }

  // Announces the power-brake release on node-4 and returns its canary's
  // report once `ready` holds for it ({} after 30 s).
  template <typename Ready>
  Json ReportWhen(const std::string& url, const Ready& ready) {
    net::FetchOptions post;
    post.method = "POST";
    post.content_type = "application/json";
    post.body = R"({"id":"fp8-kernel","started_at":)" + std::to_string(start_ + kReleaseS) +
                R"(,"targets":["node-4"],"previous":"stable"})";
    auto posted = net::Fetch(url + "/api/v1/releases", post);
    EXPECT_TRUE(posted.has_value() && posted->status == 201)
        << (posted ? posted->body : posted.error().ToString());
    Json report;
    test::WaitFor(30, [&] {
      auto r = net::Fetch(url + "/api/v1/canaries/fp8-kernel");
      if (!r || r->status != 200) return false;
      const Json j = Json::parse(r->body, nullptr, false);
      if (j.is_discarded() || !j["data"].contains("report")) return false;
      report = j["data"]["report"];
      return ready(report);
    });
    return report;
  }

  static std::string Notes(const Json& report) {
    std::string all;
    if (report.contains("notes")) {
      for (const Json& n : report["notes"]) all += n.get<std::string>() + "\n";
    }
    return all;
  }

  std::unique_ptr<test::ChildProcess> serve_;
};

TEST_F(ServeHistoryTest, ADaemonWithAnEmptyStoreJudgesTheHistoryPrometheusHas) {
  const std::string url = StartServe(prometheus_->url());
  ASSERT_FALSE(url.empty()) << test::ReadTextFile(dir_ / "serve.log");
  const Json report = ReportWhen(url, [](const Json& r) { return r["first_tick"].is_number(); });
  ASSERT_TRUE(report["first_tick"].is_number()) << report.dump();
  EXPECT_EQ(report["first_tick"].get<double>(), FirstTick(kReleaseS - kHistoryS));
  const std::string notes = Notes(report);
  EXPECT_NE(notes.find("from Prometheus " + prometheus_->url()), std::string::npos) << notes;
  EXPECT_NE(notes.find("node-4 ("), std::string::npos) << notes;
  serve_->Stop();
  EXPECT_NE(test::ReadTextFile(dir_ / "serve.log").find("is not in the store: reading it from"),
            std::string::npos)
      << test::ReadTextFile(dir_ / "serve.log");
}

TEST_F(ServeHistoryTest, ADaemonWhosePrometheusIsDownStartsTheCanaryAnyway) {
  const std::string down = "http://127.0.0.1:" + std::to_string(test::FreePort());
  const std::string url = StartServe(down);
  ASSERT_FALSE(url.empty()) << test::ReadTextFile(dir_ / "serve.log");
  // The daemon has node-4 from the release on (remote-written to it).
  std::vector<Recorded> node4;
  for (const Recorded& r : *telemetry_) {
    if (model::LabelValue(r.labels, "Hostname") != "node-4") continue;
    Recorded part{r.labels, {}};
    for (const store::Sample& s : r.samples) {
      if (s.t >= (start_ + kReleaseS) * 1000 && s.t < (start_ + kReleaseS + 20) * 1000) {
        part.samples.push_back(s);
      }
    }
    node4.push_back(std::move(part));
  }
  RemoteWrite(url, node4);
  const Json report = ReportWhen(
      url, [](const Json& r) { return Notes(r).find("unavailable") != std::string::npos; });
  const std::string notes = Notes(report);
  EXPECT_NE(notes.find("Prometheus " + down +
                       " unavailable (connect: Connection refused): judged on the store's own "
                       "history only"),
            std::string::npos)
      << report.dump();
  ASSERT_TRUE(report["first_tick"].is_number()) << report.dump();
  EXPECT_EQ(report["first_tick"].get<double>(), FirstTick(kReleaseS));
}
#endif

}  // namespace
}  // namespace gpucanary
