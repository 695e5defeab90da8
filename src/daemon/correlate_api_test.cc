// GET /api/v1/correlate over a real store and MetaDb holding a simulated
// fleet's telemetry and its release log.

#include "daemon/correlate_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "canary/test_util.h"
#include "core/clock.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;
using canary::testing::kSimStart;
using ::testing::HasSubstr;

// Two releases overlap: fp8-kernel's power brake on node-2 and node-3,
// tokenizer-fix harmless on node-3 and node-5.
constexpr std::string_view kScenario = R"(seed: 5
duration: 700s
fleet:
  - {nodes: "node-[1-6]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
  tokenizer-fix: {profile: baseline}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 300s, deploy: fp8-kernel, nodes: [node-2, node-3]}
  - {at: 360s, deploy: tokenizer-fix, nodes: [node-5]}
)";

class CorrelateApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_dir = new fs::path(fs::path(::testing::TempDir()) /
                            ("gpucanary-correlate-api-" + std::to_string(::getpid())));
    fs::remove_all(*work_dir);
    fs::create_directories(*work_dir);
    canary::testing::Simulate(kScenario, *work_dir / "fleet.om");
    auto store = store::Store::Open((*work_dir / "data").string());
    ASSERT_TRUE(store.has_value()) << store.error().message();
    fleet_store = store->release();
    canary::testing::LoadRecording(*work_dir / "fleet.om", *fleet_store);
    auto meta = store::MetaDb::Open(*work_dir / "meta.sqlite");
    ASSERT_TRUE(meta.has_value()) << meta.error().message();
    release_db = meta->release();
    for (const auto& [id, at, targets] :
         {std::tuple{"stable", 0,
                     "\"node-1\",\"node-2\",\"node-3\",\"node-4\",\"node-5\",\"node-6\""},
          std::tuple{"fp8-kernel", 300, "\"node-2\",\"node-3\""},
          std::tuple{"tokenizer-fix", 360, "\"node-5\""}}) {
      const double started = static_cast<double>(kSimStart + at);
      const std::string annotation = std::string(R"({"id":")") + id + R"(","started_at":)" +
                                     std::to_string(kSimStart + at) + R"(,"targets":[)" + targets +
                                     "]}";
      ASSERT_TRUE(release_db->PutRelease({id, "", started, annotation}).ok());
    }
  }
  static void TearDownTestSuite() {
    delete release_db;
    delete fleet_store;
    fs::remove_all(*work_dir);
    delete work_dir;
  }

  net::HttpResponse Get(const std::string& query, const std::string& method = "GET") {
    ManualClock clock((kSimStart + 700) * 1000);
    CorrelateApi api(*fleet_store, *release_db, clock);
    net::HttpRequest request;
    request.method = method;
    request.path = "/api/v1/correlate";
    request.query = query;
    net::HttpResponse response;
    EXPECT_TRUE(api.Handle(request, response));
    return response;
  }

  static fs::path* work_dir;
  static store::Store* fleet_store;
  static store::MetaDb* release_db;
};
fs::path* CorrelateApiTest::work_dir = nullptr;
store::Store* CorrelateApiTest::fleet_store = nullptr;
store::MetaDb* CorrelateApiTest::release_db = nullptr;

TEST_F(CorrelateApiTest, NamesTheReleaseFromTheStoreAndTheReleaseLog) {
  const net::HttpResponse r =
      Get("from=" + std::to_string(kSimStart) + "&to=" + std::to_string(kSimStart + 700));
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["status"], "success");
  const nlohmann::json& data = j["data"];
  EXPECT_EQ(data["gpus"], 12);
  EXPECT_EQ(data["releases"].size(), 3u);
  bool found = false;
  for (const nlohmann::json& reg : data["regressions"]) {
    for (const nlohmann::json& s : reg["suspects"]) {
      EXPECT_EQ(s["release"], "fp8-kernel") << reg.dump();
    }
    if (reg["causes"][0]["kind"] != "power_brake" || reg["suspects"].empty()) continue;
    found = true;
    EXPECT_EQ(reg["nodes"], nlohmann::json::array({"node-2", "node-3"}));
    EXPECT_EQ(reg["causes"][0]["scope"], "release");
  }
  EXPECT_TRUE(found) << data.dump();
}

TEST_F(CorrelateApiTest, DefaultsToTheLastHourAndReadsOnlyTheRange) {
  // Before the release: nothing to blame.
  const net::HttpResponse r = Get("to=" + std::to_string(kSimStart + 290));
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json data = nlohmann::json::parse(r.body)["data"];
  for (const nlohmann::json& reg : data["regressions"]) EXPECT_TRUE(reg["suspects"].empty());
  EXPECT_LE(data["to"].get<double>(), static_cast<double>(kSimStart + 290));
}

TEST_F(CorrelateApiTest, BadParametersAre400WithTheReason) {
  const std::string from = "from=" + std::to_string(kSimStart);
  struct Case {
    std::string query;
    std::string message;
  };
  for (const Case& c : {Case{"from=yesterday", "invalid parameter \"from\": cannot parse"},
                        Case{from + "&to=" + std::to_string(kSimStart - 10), "not after \"from\""},
                        Case{"from=0&to=" + std::to_string(kSimStart), "range too long"},
                        Case{from + "&resolution=0", "invalid parameter \"resolution\""},
                        Case{from + "&min_score=2", "invalid parameter \"min_score\""},
                        Case{"from=%zz", "bad query string"},
                        Case{from + "&source=thanos", "invalid parameter \"source\""},
                        Case{from + "&source=prometheus", "no Prometheus configured"}}) {
    const net::HttpResponse r = Get(c.query);
    EXPECT_EQ(r.status, 400) << c.query;
    const nlohmann::json j = nlohmann::json::parse(r.body);
    EXPECT_EQ(j["status"], "error") << c.query;
    EXPECT_EQ(j["errorType"], "bad_data") << c.query;
    EXPECT_THAT(j["error"].get<std::string>(), HasSubstr(c.message)) << c.query;
  }
  EXPECT_EQ(Get("", "POST").status, 405);
}

TEST_F(CorrelateApiTest, OtherPathsAreNotItsOwn) {
  ManualClock clock(0);
  CorrelateApi api(*fleet_store, *release_db, clock);
  net::HttpRequest request;
  request.method = "GET";
  request.path = "/api/v1/correlates";
  net::HttpResponse response;
  EXPECT_FALSE(api.Handle(request, response));
}

}  // namespace
}  // namespace gpucanary::daemon
