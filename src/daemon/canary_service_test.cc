// Live canaries wired as the daemon wires them: a stored release starts its
// canary, the power brake fails it, the circuit breaker's actions run once
// (a webhook to a real HTTP server, a diagnostic bundle whose recording the
// judge reads back), their outcomes are committed, Flagger's rollback hook
// says roll back, and a restarted service neither loses the canary nor acts
// twice.

#include "daemon/canary_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "actions/test_util.h"
#include "analysis/replay/replay.h"
#include "canary/test_util.h"
#include "store/file_size_limit.h"

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using canary::testing::kSimStart;

class CanaryServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_canary_service_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = std::move(*store::Store::Open(dir_ / "data", {}));
    meta_ = std::move(*store::MetaDb::Open(dir_ / "data" / "meta.sqlite"));
    canary::testing::LoadRecording(canary::testing::PowerBrakeRecording(), *store_);
  }
  void TearDown() override {
    service_.reset();
    meta_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // `with_bundle` false: the webhook only (as if a process died after it).
  void NewService(bool with_bundle = true) {
    CanaryServiceOptions options;
    options.canary.policy = analysis::DefaultPolicy();
    options.canary.history_s = 15;
    options.canary.duration_s = 100;
    options.canary.baseline_nodes = 3;
    std::string yaml =
        "actions:\n  - {name: page, kind: webhook, url: '" + receiver_.Url("/hook") + "'}\n";
    if (with_bundle) {
      yaml += "  - {name: evidence, kind: diagnostic_bundle, dir: '" + (dir_ / "bundles").string() +
              "'}\n";
    }
    auto actions = actions::ParseActions(YAML::Load(yaml)["actions"], "serve.yaml");
    ASSERT_TRUE(actions.has_value()) << actions.error().ToString();
    options.actions = std::move(*actions);
    options.log = [this](std::string_view line) { log_.emplace_back(line); };
    service_ = std::make_unique<CanaryService>(*store_, *meta_, clock_, nullptr, options);
  }

  // Stores the release as the release API does, and tells the service.
  Result<std::optional<std::string>> Announce(const std::string& json) {
    auto release = releases::ParseRelease(json);
    EXPECT_TRUE(release.has_value()) << release.error().ToString();
    EXPECT_TRUE(meta_->PutRelease({release->id, release->service, release->started_at, json}).ok());
    return service_->OnRelease(*release);
  }

  void FailWithTheWebhookOnly();

  // The `instance` values of everything stored so far (the fleet's own
  // targets, before anything is injected).
  std::vector<std::string> StoredInstances() {
    auto series =
        store_->SeriesIn({*model::Matcher::Make(model::Matcher::Type::kRegex, "instance", ".+")}, 0,
                         (kSimStart + 1000) * 1000);
    std::set<std::string> out;
    if (series) {
      for (const model::Labels& l : *series) out.emplace(model::LabelValue(l, "instance"));
    }
    return {out.begin(), out.end()};
  }

  // What issue 22's attacker pushed by remote_write: a host named like a
  // command-line option, and a fake GPU on healthy node-2 whose clock sits at
  // the power brake's floor with HW slowdown and power brake reported.
  void InjectFakeGpus() {
    auto app = store_->NewAppender();
    auto put = [&](const std::string& name, const std::string& host, const std::string& gpu,
                   std::int64_t t_s, double v) {
      model::Labels labels = {{"__name__", name},
                              {"Hostname", host},
                              {"UUID", "GPU-fake-" + gpu},
                              {"gpu", gpu},
                              {"instance", "evil:9400"},
                              {"job", "dcgm"},
                              {"modelName", "NVIDIA H100 80GB HBM3"}};
      model::SortLabels(labels);
      auto ref = app->Series(labels);
      ASSERT_TRUE(ref.has_value()) << ref.error().ToString();
      ASSERT_TRUE(app->Append(*ref, t_s * 1000 + 500, v).ok());
    };
    for (std::int64_t t = kSimStart; t <= kSimStart + 140; ++t) {
      const bool braking = t >= kSimStart + 21;
      put("DCGM_FI_DEV_SM_CLOCK", "--kubeconfig=evil.yaml", "0", t, 1980);
      put("DCGM_FI_DEV_SM_CLOCK", "node-2", "7", t, braking ? 1050 : 1980);
      put("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "node-2", "7", t, braking ? 0x88 : 0);
      put("DCGM_FI_DEV_POWER_USAGE", "node-2", "7", t, braking ? 180 : 650);
    }
    ASSERT_TRUE(app->Commit().has_value());
  }

  // A harmless release on node-1 judged with the injected GPUs present;
  // returns the canary as the API shows it.
  // `judge` false: the hosts are chosen, nothing is judged (the control).
  Json JudgeHarmlessReleaseAmongFakes(bool trusted_only, bool judge = true) {
    // The fleet as the daemon's scrape stores it: each series with its
    // target's instance and job.
    store_.reset();
    store_ = std::move(*store::Store::Open(dir_ / "scraped", {}));
    canary::testing::LoadRecording(canary::testing::PowerBrakeRecording(), *store_,
                                   [](model::Labels& labels) {
                                     if (!model::LabelValue(labels, "instance").empty()) return;
                                     const std::string host(model::LabelValue(labels, "Hostname"));
                                     labels.push_back({"instance", host + ":9400"});
                                     labels.push_back({"job", "dcgm"});
                                   });
    const std::vector<std::string> instances = StoredInstances();
    EXPECT_FALSE(instances.empty());
    InjectFakeGpus();
    NewService();
    if (trusted_only) {
      // As the daemon wires it: its own targets' instances.
      CanaryServiceOptions options;
      options.canary.policy = analysis::DefaultPolicy();
      options.canary.history_s = 15;
      options.canary.duration_s = 100;
      options.canary.baseline_nodes = 3;
      options.log = [this](std::string_view line) { log_.emplace_back(line); };
      options.trusted_instances = [instances] { return instances; };
      service_ = std::make_unique<CanaryService>(*store_, *meta_, clock_, nullptr, options);
    }
    EXPECT_TRUE(service_->Start().ok());
    service_->manager().StopThread();
    auto id = Announce(
        R"({"id": "harmless", "service": "chat-api", "started_at": 1764680020, "targets": ["node-1"]})");
    EXPECT_TRUE(id.has_value() && id->has_value()) << (id ? "" : id.error().ToString());
    if (judge) RunUntil(kSimStart + 45);
    service_->Stop();
    return Json::parse(Call("GET", "/api/v1/canaries/harmless").body).at("data");
  }

  void RunUntil(std::int64_t until_s) {
    while (clock_.NowMs() < until_s * 1000) {
      clock_.Advance(1000);
      service_->manager().Poll();
    }
  }

  net::HttpResponse Call(const std::string& method, const std::string& path,
                         const std::string& body = "") {
    bool handled = false;
    net::HttpResponse response = canary::testing::Call(*service_, method, path, body, &handled);
    EXPECT_TRUE(handled) << path;
    return response;
  }

  fs::path dir_;
  ManualClock clock_{(kSimStart + 22) * 1000};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  actions::test::Receiver receiver_;
  std::unique_ptr<CanaryService> service_;
  std::vector<std::string> log_;
};

constexpr char kRelease[] =
    R"({"id": "fp8-kernel", "service": "chat-api", "started_at": 1764680020,
        "quantization": "fp8", "targets": ["node-4"], "previous": "stable"})";

TEST_F(CanaryServiceTest, AFailingCanaryPullsTheBrakeOnceAndKeepsTheEvidence) {
  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->manager().StopThread();  // the test drives the clock
  auto id = Announce(kRelease);
  ASSERT_TRUE(id.has_value()) << id.error().ToString();
  ASSERT_TRUE(id->has_value());
  EXPECT_EQ(**id, "fp8-kernel");
  RunUntil(kSimStart + 60);
  service_->Stop();  // waits for the actions

  Json v = Json::parse(Call("GET", "/api/v1/canaries/fp8-kernel/verdict").body);
  EXPECT_EQ(v["verdict"], "fail");
  EXPECT_EQ(v["decided"], true);
  EXPECT_NE(v["reason"].get<std::string>().find("power brake"), std::string::npos) << v.dump();

  // The webhook got the incident once.
  const auto requests = receiver_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].path, "/hook");
  Json incident = Json::parse(requests[0].body);
  EXPECT_EQ(incident["canary"], "fp8-kernel");
  EXPECT_EQ(incident["release"]["service"], "chat-api");
  EXPECT_EQ(incident["causes"][0]["kind"], "power_brake");

  // Both outcomes are committed and served.
  auto recorded = meta_->Actions("fp8-kernel");
  ASSERT_TRUE(recorded.has_value());
  ASSERT_EQ(recorded->size(), 2U);
  EXPECT_TRUE((*recorded)[0].ok) << (*recorded)[0].detail;
  EXPECT_TRUE((*recorded)[1].ok) << (*recorded)[1].detail;
  Json state = Json::parse(Call("GET", "/api/v1/canaries/fp8-kernel").body)["data"];
  EXPECT_EQ(state["state"], "failed");
  EXPECT_EQ(state["actions"].size(), 2U);

  // The bundle's recording replays: the canary's GPUs and the brake are in it.
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(dir_ / "bundles")) bundle = e.path();
  ASSERT_FALSE(bundle.empty());
  ASSERT_TRUE(fs::exists(bundle / "incident.json"));
  auto replay = analysis::Replay::Open(
      {{(bundle / "telemetry.om").string(), analysis::Role::kCanary, std::nullopt}});
  ASSERT_TRUE(replay.has_value()) << replay.error().ToString();
  analysis::Tick tick;
  double min_clock = 1e9;
  for (;;) {
    Result<bool> more = (*replay)->Next(tick);
    ASSERT_TRUE(more.has_value()) << more.error().ToString();
    if (!*more) break;
    const int gpu = (*replay)->GpuId("node-4/0");
    const int metric = (*replay)->MetricId("DCGM_FI_DEV_SM_CLOCK");
    if (gpu < 0 || metric < 0) continue;
    if (const analysis::Point* p = tick.FindGpu(gpu, metric))
      min_clock = std::min(min_clock, p->value);
  }
  EXPECT_LT(min_clock, 1200);  // the ~1050 MHz brake floor
  // vLLM's latency histograms are histograms again (their p99 replays).
  std::ifstream om(bundle / "telemetry.om");
  const std::string text((std::istreambuf_iterator<char>(om)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("# TYPE vllm:e2e_request_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_SM_CLOCK unknown"), std::string::npos);

  // Prometheus sees the verdict and the cause on /metrics.
  std::string metrics;
  service_->AppendMetrics(metrics, 7LL * 24 * 3600 * 1000);
  for (const char* line :
       {"gpucanary_canary_state{canary=\"fp8-kernel\",release=\"fp8-kernel\",state=\"failed\"} 1\n",
        "gpucanary_canary_state{canary=\"fp8-kernel\",release=\"fp8-kernel\",state=\"running\"} "
        "0\n",
        "gpucanary_canary_verdict{canary=\"fp8-kernel\",release=\"fp8-kernel\",verdict=\"fail\"} "
        "1\n",
        "gpucanary_canary_cause{canary=\"fp8-kernel\",release=\"fp8-kernel\",kind=\"power_brake\","
        "scope=\"release\",node=\"node-4\"} 1\n",
        "gpucanary_canary_actions{canary=\"fp8-kernel\",release=\"fp8-kernel\",kind=\"webhook\","
        "outcome=\"ok\"} 1\n",
        "# TYPE gpucanary_canary_decided_timestamp_seconds gauge\n"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << " not in\n" << metrics;
  }
  std::string none;
  service_->AppendMetrics(none, 1000);  // started long before the window
  EXPECT_EQ(none.find("fp8-kernel"), std::string::npos) << none;

  // Flagger's rollback hook now says roll back.
  EXPECT_EQ(
      Call("POST", "/api/v1/flagger/rollback", R"({"metadata":{"canary":"fp8-kernel"}})").status,
      200);
}

TEST_F(CanaryServiceTest, ARestartKeepsTheCanaryAndDoesNotActTwice) {
  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->manager().StopThread();
  ASSERT_TRUE(Announce(kRelease).has_value());
  RunUntil(kSimStart + 60);
  service_.reset();  // the daemon stops (or dies after committing)

  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->manager().StopThread();
  EXPECT_EQ((*meta_->GetCanary("fp8-kernel"))->state, "failed");
  // It is still served as it ended (Flagger still hears "roll back"), but
  // not judged again, and its actions are not run again.
  Json state = Json::parse(Call("GET", "/api/v1/canaries/fp8-kernel").body)["data"];
  EXPECT_EQ(state["state"], "failed");
  EXPECT_EQ(state["verdict"], "fail");
  EXPECT_EQ(state["actions"].size(), 2U);
  EXPECT_EQ(
      Call("POST", "/api/v1/flagger/rollback", R"({"metadata":{"canary":"fp8-kernel"}})").status,
      200);
  service_->Stop();
  EXPECT_EQ(receiver_.requests().size(), 1U);
  EXPECT_EQ(meta_->Actions("fp8-kernel")->size(), 2U);
}

// The canary fails under a configuration with the webhook only: the state
// a process leaves when it dies after the webhook and before the bundle.
void CanaryServiceTest::FailWithTheWebhookOnly() {
  NewService(/*with_bundle=*/false);
  ASSERT_TRUE(service_->Start().ok());
  service_->manager().StopThread();
  ASSERT_TRUE(Announce(kRelease).has_value());
  RunUntil(kSimStart + 60);
  service_.reset();
}

// The process died after the webhook's outcome was committed and before the
// bundle's: the restart runs the bundle, not the webhook again. An hour
// later nothing is run for it any more.
TEST_F(CanaryServiceTest, ActionsCutShortByADeathAreFinishedOnRestart) {
  FailWithTheWebhookOnly();
  ASSERT_EQ(meta_->Actions("fp8-kernel")->size(), 1U);
  ASSERT_FALSE(fs::exists(dir_ / "bundles"));

  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->Stop();  // waits for the actions
  auto recorded = meta_->Actions("fp8-kernel");
  ASSERT_EQ(recorded->size(), 2U);
  EXPECT_EQ((*recorded)[1].name, "evidence");
  EXPECT_TRUE((*recorded)[1].ok) << (*recorded)[1].detail;
  EXPECT_EQ(receiver_.requests().size(), 1U);  // the webhook is not sent twice
  ASSERT_TRUE(fs::exists(dir_ / "bundles"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "bundles"), fs::directory_iterator()), 1);
}

TEST_F(CanaryServiceTest, AnOldFailIsNotActedOnWhenTheConfigurationGainsAnAction) {
  FailWithTheWebhookOnly();
  clock_.Advance(2 * 3600 * 1000);
  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->Stop();
  EXPECT_EQ(meta_->Actions("fp8-kernel")->size(), 1U);
  EXPECT_FALSE(fs::exists(dir_ / "bundles"));
}

TEST_F(CanaryServiceTest, ReleasesWithoutHostsStartNoCanary) {
  NewService();
  auto none = Announce(R"({"id": "r9", "started_at": 1764680020})");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  auto nobody =
      Announce(R"({"id": "r10", "started_at": 1764680020, "selector": "{Hostname=\"node-99\"}"})");
  ASSERT_FALSE(nobody.has_value());
  EXPECT_NE(nobody.error().message().find("matches no host"), std::string::npos);
}

// Issue 22: remote_write telemetry chose a canary's hosts and fed its judge.
// Without the daemon's own-target filter (the control), the attacker's host
// named like an option is a baseline host; with it, neither fake shows.
TEST_F(CanaryServiceTest, WithoutTheOwnTargetFilterFakeHostsAreChosen) {
  const Json canary = JudgeHarmlessReleaseAmongFakes(/*trusted_only=*/false, /*judge=*/false);
  const auto baseline = canary["baseline_hosts"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(baseline.begin(), baseline.end(), "--kubeconfig=evil.yaml"), baseline.end())
      << canary.dump();
}

TEST_F(CanaryServiceTest, RemoteWriteTelemetryNeitherChoosesNorFeedsACanary) {
  const Json canary = JudgeHarmlessReleaseAmongFakes(/*trusted_only=*/true);
  const auto baseline = canary["baseline_hosts"].get<std::vector<std::string>>();
  EXPECT_EQ(std::find(baseline.begin(), baseline.end(), "--kubeconfig=evil.yaml"), baseline.end())
      << canary.dump();
  EXPECT_FALSE(baseline.empty()) << canary.dump();
  const std::string text = canary.dump();
  EXPECT_EQ(text.find("GPU-fake"), std::string::npos) << text;
  EXPECT_EQ(text.find("evil"), std::string::npos) << text;
  EXPECT_NE(canary["verdict"], "fail") << text;
  // Every baseline GPU judged is a real one (8 per node): node-2's fake
  // ninth is not among them.
  EXPECT_EQ(canary["report"]["baseline_gpus"], 8 * baseline.size()) << text;
  // A release naming a host no target of the daemon has is refused.
  auto refused = Announce(
      R"({"id": "named-evil", "service": "chat-api", "started_at": 1764680090, "targets": ["--kubeconfig=evil.yaml"]})");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("no host of a target this daemon scrapes"),
            std::string::npos)
      << refused.error().message();
}

// Issue 22: telemetry the store could not keep (a full disk) is said in the
// notes of the canaries running meanwhile, not judged as if it were there.
TEST_F(CanaryServiceTest, ACanaryRunningWhileTheStoreCannotWriteSaysSo) {
  NewService();
  ASSERT_TRUE(service_->Start().ok());
  service_->manager().StopThread();
  ASSERT_TRUE(Announce(kRelease).has_value());
  RunUntil(kSimStart + 25);
  // One write that fails for real (EFBIG, store/file_size_limit.h).
  bool kept = true;
  {
    const store::FileSizeLimit limit(1);
    ASSERT_TRUE(limit.ok());
    auto app = store_->NewAppender();
    auto ref = app->Series({{"__name__", "lost"}, {"job", "x"}});
    kept = ref.has_value() && app->Append(*ref, (kSimStart + 25) * 1000, 1).ok() &&
           app->Commit().has_value();
  }
  ASSERT_FALSE(kept);
  RunUntil(kSimStart + 30);
  const Json canary = Json::parse(Call("GET", "/api/v1/canaries/fp8-kernel").body).at("data");
  bool said = false;
  for (const Json& note : canary["report"]["notes"]) {
    said = said || note.get<std::string>().starts_with(
                       "the store could not write 1 batch(es) of telemetry while this canary ran");
  }
  EXPECT_TRUE(said) << canary["report"]["notes"].dump();
  service_->Stop();
}

}  // namespace
}  // namespace gpucanary::daemon
