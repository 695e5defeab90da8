#include "daemon/vocabulary_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "vocab/service_measures.h"
#include "vocab/vocab.h"

namespace gpucanary::daemon {
namespace {

using Json = nlohmann::json;

net::HttpResponse Ask(const VocabularyApi& api, std::string method, std::string path) {
  net::HttpRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.target = request.path;
  net::HttpResponse response;
  EXPECT_TRUE(api.Handle(request, response)) << request.path;
  return response;
}

// Every value of E exactly once, in enum order, with its name and description.
template <typename E>
void ExpectList(const Json& list) {
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), vocab::Words<E>().size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto value = static_cast<E>(i);
    EXPECT_EQ(list[i].size(), 2u) << list[i];
    EXPECT_EQ(list[i]["name"], std::string(vocab::Name(value)));
    EXPECT_EQ(list[i]["description"], std::string(vocab::Description(value)));
    int seen = 0;
    for (const Json& w : list) seen += w["name"] == std::string(vocab::Name(value)) ? 1 : 0;
    EXPECT_EQ(seen, 1) << vocab::Name(value);
  }
}

TEST(VocabularyApiTest, ServesEveryWordOnceWithItsDescription) {
  const VocabularyApi api;
  const net::HttpResponse response = Ask(api, "GET", "/api/v1/vocabulary");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  const Json body = Json::parse(response.body);
  EXPECT_EQ(body["status"], "success");
  const Json& data = body["data"];
  EXPECT_EQ(data.size(), 7u);
  ExpectList<vocab::CauseKind>(data["cause_kinds"]);
  ExpectList<vocab::Scope>(data["scopes"]);
  ExpectList<vocab::Verdict>(data["verdicts"]);
  ExpectList<vocab::CanaryState>(data["canary_states"]);
  ExpectList<vocab::ServiceMeasure>(data["service_measures"]);
  ExpectList<vocab::GpuMeasure>(data["gpu_measures"]);
}

// Every row of the measure table, as the dashboard charts a measure by.
TEST(VocabularyApiTest, ServesHowEachServerExposesEachMeasure) {
  const Json rows = Json::parse(VocabularyJson())["service_metrics"];
  ASSERT_EQ(rows.size(), vocab::ServiceMetrics().size());
  bool current = false;
  bool triton_selector = false;
  for (const Json& r : rows) {
    if (r["server"] == "vllm" && r["measure"] == "per_token_latency") {
      current = true;
      EXPECT_EQ(r["metric"], "vllm:inter_token_latency_seconds");
      EXPECT_EQ(r["type"], "histogram");
      EXPECT_EQ(r["scale"], 1);
      EXPECT_TRUE(r["selector"].is_null());
    }
    if (r["server"] == "triton_trtllm" && !r["selector"].is_null()) {
      triton_selector = true;
      EXPECT_EQ(r["selector"].size(), 1u) << r.dump();
    }
  }
  EXPECT_TRUE(current);
  EXPECT_TRUE(triton_selector);
}

TEST(VocabularyApiTest, TheDashboardsScopeWordsAreServed) {
  const Json data = Json::parse(VocabularyJson());
  EXPECT_EQ(data["scopes"][0],
            Json::parse(R"({"name":"release","description":"a release explains this"})"));
  EXPECT_EQ(data["cause_kinds"][1]["name"], "power_brake");
  EXPECT_EQ(data["verdicts"][2]["name"], "inconclusive");
  EXPECT_EQ(data["canary_states"][4]["name"], "aborted");
}

TEST(VocabularyApiTest, HeadAnswersOtherMethodsAre405OtherPathsUnhandled) {
  const VocabularyApi api;
  EXPECT_EQ(Ask(api, "HEAD", "/api/v1/vocabulary").status, 200);
  const net::HttpResponse post = Ask(api, "POST", "/api/v1/vocabulary");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.Header("allow"), "GET, HEAD");
  net::HttpRequest other;
  other.method = "GET";
  other.path = "/api/v1/vocabulary/scopes";
  net::HttpResponse response;
  EXPECT_FALSE(api.Handle(other, response));
}

}  // namespace
}  // namespace gpucanary::daemon
