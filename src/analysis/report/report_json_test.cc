#include "analysis/report/report_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpucanary::analysis {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

// The example of docs/contracts.md §6, plus the extras.
Report PowerBrakeReport() {
  Report r;
  r.verdict = Verdict::kFail;
  r.decided_at = 1764680034.0;
  r.score = 12.5;
  Cause c;
  c.kind = vocab::CauseKind::kPowerBrake;
  c.scope = vocab::Scope::kRelease;
  c.gpus = {"node-4/0", "node-4/1"};
  c.nodes = {"node-4"};
  c.since = 1764680030.0;
  c.decided_at = 1764680034.0;
  c.failing = true;
  c.summary = "HW power brake held SM clock at 1050 MHz (baseline 1980) for 14 s";
  c.evidence = {{"DCGM_FI_DEV_SM_CLOCK", 1980, 1050, "MHz"}};
  c.origin = "rule:throttle";
  r.causes.push_back(c);
  MetricResult m;
  m.name = "DCGM_FI_DEV_SM_CLOCK";
  m.kind = "gauge";
  m.better = "higher";
  m.margin = 0.05;
  m.baseline = 1980.0;
  m.canary = 1052.0;
  m.change = -0.469;
  m.interval_lo = -0.48;
  m.interval_hi = -0.45;
  m.result = "low";
  m.detectable_effect = 0.015;
  m.blocks = 12;
  m.decided_at = 1764680180.0;
  r.metrics.push_back(m);
  r.release_start = 1764680030.0;
  r.first_tick = 1764680000.0;
  r.last_tick = 1764680599.0;
  r.canary_gpus = 8;
  r.baseline_gpus = 56;
  r.notes = {"a note"};
  return r;
}

TEST(ReportJsonTest, ContractFieldsComeFirstInDesignOrder) {
  const Json j = Json::parse(ReportToJson(PowerBrakeReport()));
  EXPECT_THAT(Keys(j), ElementsAre("verdict", "decided_at", "score", "causes", "metrics",
                                   "release_start", "first_tick", "last_tick", "canary_gpus",
                                   "baseline_gpus", "service_metrics_seen", "notes"));
  ASSERT_EQ(j["causes"].size(), 1u);
  EXPECT_THAT(Keys(j["causes"][0]),
              ElementsAre("kind", "scope", "gpus", "since", "summary", "evidence", "nodes",
                          "decided_at", "failing", "origin"));
  EXPECT_THAT(Keys(j["causes"][0]["evidence"][0]),
              ElementsAre("metric", "baseline", "canary", "unit"));
  ASSERT_EQ(j["metrics"].size(), 1u);
  EXPECT_THAT(Keys(j["metrics"][0]), ElementsAre("name", "baseline", "canary", "change", "interval",
                                                 "result", "kind", "better", "margin", "critical",
                                                 "detectable_effect", "blocks", "decided_at"));
}

TEST(ReportJsonTest, ValuesReadBack) {
  const Json j = Json::parse(ReportToJson(PowerBrakeReport()));
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["decided_at"].get<double>(), 1764680034.0);
  EXPECT_EQ(j["score"].get<double>(), 12.5);
  const Json& c = j["causes"][0];
  EXPECT_EQ(c["kind"], "power_brake");
  EXPECT_EQ(c["scope"], "release");
  EXPECT_EQ(c["gpus"], Json::array({"node-4/0", "node-4/1"}));
  EXPECT_EQ(c["since"].get<double>(), 1764680030.0);
  EXPECT_THAT(c["summary"].get<std::string>(), HasSubstr("1050 MHz"));
  EXPECT_EQ(c["evidence"][0]["metric"], "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(c["evidence"][0]["baseline"].get<double>(), 1980.0);
  EXPECT_EQ(c["evidence"][0]["canary"].get<double>(), 1050.0);
  EXPECT_EQ(c["evidence"][0]["unit"], "MHz");
  EXPECT_EQ(c["nodes"], Json::array({"node-4"}));
  EXPECT_EQ(c["failing"], true);
  EXPECT_EQ(c["origin"], "rule:throttle");
  const Json& m = j["metrics"][0];
  EXPECT_EQ(m["name"], "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(m["change"].get<double>(), -0.469);
  EXPECT_EQ(m["interval"], Json::array({-0.48, -0.45}));
  EXPECT_EQ(m["result"], "low");
  EXPECT_EQ(m["kind"], "gauge");
  EXPECT_EQ(m["better"], "higher");
  EXPECT_EQ(m["margin"].get<double>(), 0.05);
  EXPECT_EQ(m["critical"], false);
  EXPECT_EQ(m["blocks"], 12);
  EXPECT_EQ(m["decided_at"].get<double>(), 1764680180.0);
  EXPECT_EQ(j["canary_gpus"], 8);
  EXPECT_EQ(j["baseline_gpus"], 56);
  EXPECT_EQ(j["notes"], Json::array({"a note"}));
}

TEST(ReportJsonTest, NonFiniteNumbersAndUnsetTimesAreNull) {
  Report r = PowerBrakeReport();
  r.verdict = Verdict::kInconclusive;
  r.decided_at.reset();
  r.score = kNaN;
  r.release_start.reset();
  r.causes[0].evidence[0].baseline = kNaN;
  r.causes[0].since = kInf;
  MetricResult& m = r.metrics[0];
  m.baseline = kNaN;
  m.change = kNaN;
  m.interval_lo = -kInf;
  m.interval_hi = kInf;
  m.detectable_effect = kNaN;
  m.decided_at.reset();
  const std::string text = ReportToJson(r);
  EXPECT_EQ(text.find("NaN"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  const Json j = Json::parse(text);
  EXPECT_EQ(j["verdict"], "inconclusive");
  EXPECT_TRUE(j["decided_at"].is_null());
  EXPECT_TRUE(j["score"].is_null());
  EXPECT_TRUE(j["release_start"].is_null());
  EXPECT_TRUE(j["causes"][0]["since"].is_null());
  EXPECT_TRUE(j["causes"][0]["evidence"][0]["baseline"].is_null());
  EXPECT_EQ(j["causes"][0]["evidence"][0]["canary"].get<double>(), 1050.0);
  const Json& mj = j["metrics"][0];
  EXPECT_TRUE(mj["baseline"].is_null());
  EXPECT_EQ(mj["canary"].get<double>(), 1052.0);
  EXPECT_TRUE(mj["change"].is_null());
  ASSERT_TRUE(mj["interval"].is_array());
  ASSERT_EQ(mj["interval"].size(), 2u);
  EXPECT_TRUE(mj["interval"][0].is_null());
  EXPECT_TRUE(mj["interval"][1].is_null());
  EXPECT_TRUE(mj["detectable_effect"].is_null());
  EXPECT_TRUE(mj["decided_at"].is_null());
}

TEST(ReportJsonTest, EmptyReportHasEveryKey) {
  const Json j = Json::parse(ReportToJson(Report{}));
  EXPECT_EQ(j["verdict"], "inconclusive");
  EXPECT_TRUE(j["decided_at"].is_null());
  EXPECT_EQ(j["score"].get<double>(), 0.0);
  EXPECT_EQ(j["causes"], Json::array());
  EXPECT_EQ(j["metrics"], Json::array());
  EXPECT_EQ(j["notes"], Json::array());
  EXPECT_TRUE(j["first_tick"].is_null());
  EXPECT_EQ(j["canary_gpus"], 0);
}

TEST(ReportJsonTest, VerdictNames) {
  Report r;
  r.verdict = Verdict::kPass;
  EXPECT_EQ(Json::parse(ReportToJson(r))["verdict"], "pass");
  r.verdict = Verdict::kFail;
  EXPECT_EQ(Json::parse(ReportToJson(r))["verdict"], "fail");
}

TEST(ReportJsonTest, FullPrecisionNoRounding) {
  Report r;
  r.score = 0.1 + 0.2;  // 0.30000000000000004
  r.decided_at = 1764680034.0;
  r.first_tick = 1764680000.123456;
  const std::string text = ReportToJson(r);
  EXPECT_THAT(text, HasSubstr("\"score\":0.30000000000000004"));
  EXPECT_THAT(text, HasSubstr("\"decided_at\":1764680034.0"));
  const Json j = Json::parse(text);
  EXPECT_EQ(j["score"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(j["first_tick"].get<double>(), 1764680000.123456);
}

TEST(ReportJsonTest, OneLineByDefaultIndentedOnRequest) {
  const Report r = PowerBrakeReport();
  const std::string line = ReportToJson(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("{\"verdict\":\"fail\",\"decided_at\":1764680034.0,\"score\":12.5,", 0), 0u)
      << line;
  const std::string pretty = ReportToJson(r, 2);
  EXPECT_THAT(pretty, HasSubstr("\n  \"verdict\": \"fail\",\n"));
  EXPECT_NE(pretty.back(), '\n');
  EXPECT_EQ(Json::parse(pretty), Json::parse(line));
}

TEST(ReportJsonTest, InvalidUtf8IsReplacedNotThrown) {
  Report r;
  Cause c;
  c.gpus = {std::string("node-\xff/0")};
  c.summary = "ok \xc3";
  r.causes.push_back(c);
  std::string text;
  ASSERT_NO_THROW(text = ReportToJson(r));
  const Json j = Json::parse(text);
  EXPECT_EQ(j["causes"][0]["gpus"][0], "node-\xef\xbf\xbd/0");
}

TEST(ReportJsonTest, ReadsBackWhatItWrote) {
  Report r = PowerBrakeReport();
  MetricResult open = r.metrics[0];
  open.name = "vllm:generation_tokens_total";
  open.interval_lo = -kInf;
  open.interval_hi = kInf;
  open.change = kNaN;
  open.decided_at.reset();
  r.metrics.push_back(open);
  const std::string text = ReportToJson(r);
  Result<Report> back = ReportFromJson(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(ReportToJson(*back), text);
  EXPECT_EQ(back->verdict, Verdict::kFail);
  EXPECT_EQ(back->decided_at, 1764680034.0);
  ASSERT_EQ(back->causes.size(), 1u);
  EXPECT_TRUE(back->causes[0].failing);
  EXPECT_EQ(back->causes[0].nodes, std::vector<std::string>{"node-4"});
  EXPECT_EQ(back->causes[0].evidence[0].canary, 1050.0);
  ASSERT_EQ(back->metrics.size(), 2u);
  EXPECT_EQ(back->metrics[0].blocks, 12);
  EXPECT_TRUE(std::isnan(back->metrics[1].interval_lo));  // -inf was written as null
  EXPECT_FALSE(back->metrics[1].decided_at.has_value());
  EXPECT_EQ(back->last_tick, 1764680599.0);
  EXPECT_EQ(back->baseline_gpus, 56);
  EXPECT_TRUE(back->service_metrics_seen);
  r.service_metrics_seen = false;  // a DCGM-only canary
  back = ReportFromJson(ReportToJson(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->service_metrics_seen);

  // An empty report, and one written before a key existed.
  back = ReportFromJson(ReportToJson(Report{}));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(ReportToJson(*back), ReportToJson(Report{}));
  back = ReportFromJson(R"({"verdict":"pass","score":3})");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->verdict, Verdict::kPass);
  EXPECT_EQ(back->score, 3.0);
  EXPECT_TRUE(back->service_metrics_seen);  // stored before the key existed: judged with them
}

TEST(ReportJsonTest, ReadingSaysWhichKeyIsWrong) {
  const auto error = [](std::string_view json) {
    Result<Report> r = ReportFromJson(json);
    return r.has_value() ? std::string("(read)") : r.error().message();
  };
  EXPECT_EQ(error("[]"), "a report is a JSON object");
  EXPECT_EQ(error("{"), "a report is a JSON object");
  EXPECT_EQ(error(R"({"verdict":"maybe"})"), "verdict: expected pass, fail or inconclusive");
  EXPECT_EQ(error(R"({"score":"high"})"), "score: expected a number or null");
  EXPECT_EQ(error(R"({"causes":[{"kind":"x"},{"since":"x"}]})"),
            "causes[1].since: expected a number or null");
  EXPECT_EQ(error(R"({"causes":[3]})"), "causes[0]: expected an object");
  EXPECT_EQ(error(R"({"causes":[{"gpus":["a",1]}]})"),
            "causes[0].gpus: expected an array of strings");
  EXPECT_EQ(error(R"({"metrics":[{"interval":[0,"x"]}]})"),
            "metrics[0].interval[1]: expected a number or null");
  EXPECT_EQ(error(R"({"metrics":[{"blocks":1.5}]})"), "metrics[0].blocks: expected an integer");
  EXPECT_EQ(error(R"({"notes":"x"})"), "notes: expected an array");
  EXPECT_EQ(error(R"({"service_metrics_seen":1})"), "service_metrics_seen: expected true or false");
  EXPECT_EQ(ReportFromJson(R"({"notes":"x"})").error().code(), StatusCode::kParseError);
}

}  // namespace
}  // namespace gpucanary::analysis
