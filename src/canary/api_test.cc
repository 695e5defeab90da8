// The canary endpoints on a running canary without telemetry yet (the live
// verdicts themselves are manager_test's): listing, state, the Argo verdict
// body, Flagger's status codes, stop, and bad requests.

#include "canary/api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "canary/test_util.h"

namespace gpucanary::canary {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::int64_t kNow = 1764680100;

class CanaryApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_canary_api_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store_ = std::move(*store::Store::Open(dir_ / "data", {}));
    meta_ = std::move(*store::MetaDb::Open(dir_ / "data" / "meta.sqlite"));
    CanaryOptions options;
    options.policy = analysis::DefaultPolicy();
    manager_ = std::make_unique<CanaryManager>(*store_, *meta_, clock_, options, CanaryHooks{});
    api_ = std::make_unique<CanaryApi>(*manager_, *meta_);
    ASSERT_TRUE(manager_
                    ->Start({.release_id = "r2",
                             .started_at = static_cast<double>(kNow - 10),
                             .targets = {"node-4"},
                             .selector = {},
                             .previous = "r1"})
                    .has_value());
  }
  void TearDown() override {
    api_.reset();
    manager_.reset();
    meta_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  net::HttpResponse Call(const std::string& method, const std::string& path,
                         const std::string& body = "") {
    return testing::Call(*api_, method, path, body, &handled_);
  }
  static Json Body(const net::HttpResponse& r) { return Json::parse(r.body); }

  fs::path dir_;
  ManualClock clock_{kNow * 1000};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  std::unique_ptr<CanaryManager> manager_;
  std::unique_ptr<CanaryApi> api_;
  bool handled_ = false;
};

TEST_F(CanaryApiTest, ListsAndShowsARunningCanary) {
  net::HttpResponse r = Call("GET", "/api/v1/canaries");
  ASSERT_EQ(r.status, 200);
  Json list = Body(r)["data"];
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0]["id"], "r2");
  EXPECT_EQ(list[0]["state"], "running");
  EXPECT_EQ(list[0]["canary_hosts"], Json({"node-4"}));

  r = Call("GET", "/api/v1/canaries/r2");
  ASSERT_EQ(r.status, 200);
  Json c = Body(r)["data"];
  EXPECT_EQ(c["release"], "r2");
  EXPECT_EQ(c["report"]["verdict"], "inconclusive");
  EXPECT_TRUE(c["actions"].empty());
  EXPECT_EQ(c["reason"], "running: 0 s of the release judged");

  r = Call("GET", "/api/v1/canaries/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Body(r)["errorType"], "not_found");
  Call("GET", "/api/v1/targets");
  EXPECT_FALSE(handled_);
}

TEST_F(CanaryApiTest, TheVerdictEndpointIsAlways200ForArgo) {
  net::HttpResponse r = Call("GET", "/api/v1/canaries/r2/verdict");
  ASSERT_EQ(r.status, 200);
  Json v = Body(r);
  EXPECT_EQ(v["verdict"], "inconclusive");
  EXPECT_EQ(v["decided"], false);
  EXPECT_TRUE(v.contains("score"));
  EXPECT_TRUE(v.contains("reason"));
  r = Call("GET", "/api/v1/canaries/unknown/verdict");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["reason"], "no canary unknown");
}

TEST_F(CanaryApiTest, TheVerdictHistoryIsServedOldestFirst) {
  net::HttpResponse r = Call("GET", "/api/v1/canaries/r2/verdicts");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["data"], Json::array());
  store::VerdictRecord v;
  v.canary_id = "r2";
  v.at = kNow - 5;
  v.verdict = "inconclusive";
  v.score = 0;
  v.report = "{}";
  ASSERT_TRUE(meta_->AddVerdict(v).ok());
  v.at = kNow;
  v.verdict = "fail";
  v.score = 2.5;
  v.causes = {{"power_brake", "release", kNow - 3, "HW power brake held SM clock at 1050 MHz"}};
  ASSERT_TRUE(meta_->AddVerdict(v).ok());
  r = Call("GET", "/api/v1/canaries/r2/verdicts");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["data"], Json::parse(R"([
    {"at": 1764680095, "verdict": "inconclusive", "score": 0, "causes": []},
    {"at": 1764680100, "verdict": "fail", "score": 2.5,
     "causes": [{"kind": "power_brake", "scope": "release", "since": 1764680097,
                 "summary": "HW power brake held SM clock at 1050 MHz"}]}])"));
  EXPECT_EQ(Call("GET", "/api/v1/canaries/nope/verdicts").status, 404);
  EXPECT_EQ(Call("POST", "/api/v1/canaries/r2/verdicts").status, 405);
}

TEST_F(CanaryApiTest, FlaggerHooksFollowFlaggersStatusCodes) {
  const std::string hook = R"({"name":"chat-api","namespace":"prod","phase":"Progressing",
                               "metadata":{"canary":"r2"}})";
  // Running, not decided: gates hold, checks pass, no rollback.
  EXPECT_EQ(Call("POST", "/api/v1/flagger/confirm-promotion", hook).status, 403);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/rollback", hook).status, 409);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/pre-rollout", hook).status, 200);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/rollout", hook).status, 200);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/confirm-traffic-increase", hook).status, 200);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/confirm-rollout", hook).status, 200);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/event", hook).status, 200);
  net::HttpResponse r = Call("POST", "/api/v1/flagger/rollout", hook);
  EXPECT_EQ(Body(r)["release"], "r2");
  EXPECT_EQ(Body(r)["standing"], "running");
  EXPECT_EQ(Body(r)["go"], true);

  // No release matches (no metadata, no annotation for prod/x): never a
  // failed check or a rollback for lack of information; the gates wait.
  const std::string unknown = R"({"name":"x","namespace":"prod","checksum":"c1"})";
  EXPECT_EQ(Call("POST", "/api/v1/flagger/rollout", unknown).status, 200);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/rollback", unknown).status, 409);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/confirm-rollout", unknown).status, 403);
  r = Call("POST", "/api/v1/flagger/confirm-promotion", unknown);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Body(r)["reason"], "no release annotation matches prod/x");
  EXPECT_EQ(Call("POST", "/api/v1/flagger/rollback", R"({"metadata":{"canary":"zz"}})").status,
            409);

  r = Call("POST", "/api/v1/flagger/rollback", "not json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"], "the webhook body is not a JSON object");
  EXPECT_EQ(
      Call("POST", "/api/v1/flagger/rollback", R"({"metadata":{"on_inconclusive":"x"}})").status,
      400);
  EXPECT_EQ(Call("POST", "/api/v1/flagger/confirm", hook).status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/flagger/rollback").status, 405);
}

TEST_F(CanaryApiTest, StopEndsTheCanaryOnce) {
  EXPECT_EQ(Call("GET", "/api/v1/canaries/r2/stop").status, 405);
  net::HttpResponse r = Call("POST", "/api/v1/canaries/r2/stop");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["data"]["state"], "aborted");
  EXPECT_EQ((*meta_->GetCanary("r2"))->state, "aborted");
  r = Call("POST", "/api/v1/canaries/r2/stop");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Body(r)["error"], "canary r2 has ended (aborted)");
  // An ended canary that did not pass is decided, and still not promoted.
  Json v = Body(Call("GET", "/api/v1/canaries/r2/verdict"));
  EXPECT_EQ(v["decided"], true);
  EXPECT_EQ(
      Call("POST", "/api/v1/flagger/confirm-promotion", R"({"metadata":{"canary":"r2"}})").status,
      403);
}

}  // namespace
}  // namespace gpucanary::canary
