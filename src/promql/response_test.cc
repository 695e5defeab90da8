#include "promql/response.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>

namespace gpucanary::promql {
namespace {

constexpr std::string_view kWhat = "GET http://127.0.0.1:9090/api/v1/query";

TEST(ParseSampleValueTest, ReadsWhatGoFormatFloatWrites) {
  EXPECT_EQ(*ParseSampleValue("300.709"), 300.709);
  EXPECT_EQ(*ParseSampleValue("0.30000000000000004"), 0.30000000000000004);
  EXPECT_EQ(*ParseSampleValue("100000000000000000000"), 1e20);
  EXPECT_EQ(*ParseSampleValue("0.00000000015"), 1.5e-10);
  EXPECT_EQ(*ParseSampleValue("9223372036854776000"), 9223372036854775807.0);
  EXPECT_EQ(*ParseSampleValue("1e20"), 1e20);  // not Prometheus's, accepted
  const double minus_zero = *ParseSampleValue("-0");
  EXPECT_EQ(minus_zero, 0.0);
  EXPECT_TRUE(std::signbit(minus_zero));
  EXPECT_TRUE(std::isnan(*ParseSampleValue("NaN")));
  EXPECT_EQ(*ParseSampleValue("+Inf"), INFINITY);
  EXPECT_EQ(*ParseSampleValue("-Inf"), -INFINITY);
  for (const char* bad : {"", "abc", "1.5x", " 1", "+", "0x10"}) {
    const Result<double> v = ParseSampleValue(bad);
    ASSERT_FALSE(v.has_value()) << bad;
    EXPECT_EQ(v.error().code(), StatusCode::kParseError);
  }
}

TEST(ParseQueryResponseTest, Matrix) {
  const Result<QueryResult> r = ParseQueryResponse(200, R"({"status":"success","data":{
    "resultType":"matrix","result":[
    {"metric":{"gpu":"0","__name__":"DCGM_FI_DEV_POWER_USAGE","Hostname":"h1"},
     "values":[[1796214070,"300.709"],[1796214071.500,"-0"],[1796214072.445,"NaN"]]}]}})",
                                                   kWhat);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->type, ResultType::kMatrix);
  ASSERT_EQ(r->series.size(), 1U);
  EXPECT_EQ(
      r->series[0].labels,
      (model::Labels{{"Hostname", "h1"}, {"__name__", "DCGM_FI_DEV_POWER_USAGE"}, {"gpu", "0"}}));
  const std::vector<Sample>& s = r->series[0].samples;
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[0], (Sample{1796214070000, 300.709}));
  EXPECT_EQ(s[1].t_ms, 1796214071500);
  EXPECT_TRUE(std::signbit(s[1].value));
  EXPECT_EQ(s[2].t_ms, 1796214072445);
  EXPECT_TRUE(std::isnan(s[2].value));
  EXPECT_TRUE(r->warnings.empty());
}

TEST(ParseQueryResponseTest, VectorScalarStringAndWarnings) {
  Result<QueryResult> r = ParseQueryResponse(200, R"({"status":"success","data":{
    "resultType":"vector","result":[{"metric":{"__name__":"up","job":"dcgm"},
    "value":[1796214033,"0"]},{"metric":{},"value":[1796214033,"+Inf"]}]},
    "warnings":["partial response: store 3 unavailable"]})",
                                             kWhat);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->type, ResultType::kVector);
  ASSERT_EQ(r->series.size(), 2U);
  EXPECT_EQ(r->series[0].samples, (std::vector<Sample>{{1796214033000, 0}}));
  EXPECT_TRUE(r->series[1].labels.empty());
  EXPECT_EQ(r->warnings, (std::vector<std::string>{"partial response: store 3 unavailable"}));

  r = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"scalar","result":[1796214033.1,"2"]}})",
      kWhat);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, ResultType::kScalar);
  ASSERT_EQ(r->series.size(), 1U);
  EXPECT_EQ(r->series[0].samples, (std::vector<Sample>{{1796214033100, 2}}));

  r = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"string","result":[1796214033,"abc"]}})",
      kWhat);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, ResultType::kString);
  EXPECT_EQ(r->string_value, "abc");
}

TEST(ParseQueryResponseTest, ErrorsCarryTheServersTextAndARetryableCode) {
  struct Case {
    int status;
    const char* body;
    StatusCode code;
    const char* message;
  } cases[] = {
      {400,
       R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:6: parse error: unclosed left parenthesis"})",
       StatusCode::kInvalidArgument,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 400 bad_data: invalid parameter \"query\": "
       "1:6: parse error: unclosed left parenthesis"},
      {422, R"({"status":"error","errorType":"execution","error":"many-to-many matching"})",
       StatusCode::kInvalidArgument,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 422 execution: many-to-many matching"},
      {503,
       R"({"status":"error","errorType":"timeout","error":"query timed out in query execution"})",
       StatusCode::kUnavailable,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 503 timeout: query timed out in query "
       "execution"},
      {503, R"({"status":"error","errorType":"canceled","error":"query was canceled"})",
       StatusCode::kUnavailable,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 503 canceled: query was canceled"},
      {500, R"({"status":"error","errorType":"internal","error":"boom"})", StatusCode::kUnavailable,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 500 internal: boom"},
      {404, "404 page not found\n", StatusCode::kNotFound,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 404: 404 page not found "},
      {502, "<html>Bad Gateway</html>", StatusCode::kUnavailable,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 502: <html>Bad Gateway</html>"},
      {401, "Unauthorized", StatusCode::kInvalidArgument,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 401: Unauthorized"},
      {429, "slow down", StatusCode::kUnavailable,
       "GET http://127.0.0.1:9090/api/v1/query: HTTP 429: slow down"},
  };
  for (const Case& c : cases) {
    const Result<QueryResult> r = ParseQueryResponse(c.status, c.body, kWhat);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().code(), c.code) << c.body;
    EXPECT_EQ(r.error().message(), c.message);
  }
}

TEST(ParseQueryResponseTest, MalformedAnswersAreParseErrors) {
  for (
      const char* body : {
          "",
          "not json",
          R"({"status":"success"})",
          R"({"status":"success","data":{"resultType":"matrix","result":{}}})",
          R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,2]]}]}})",
          R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1}}]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"value":["x","1"]}]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1e300,"1"]}]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"one"]}]}})",
          R"({"status":"success","data":{"resultType":"histogram","result":[]}})",
          R"({"status":"success","data":{"resultType":"scalar","result":"x"}})",
          R"({"status":"success","data":[]})",
          R"({"status":"error","errorType":1})",
      }) {
    const Result<QueryResult> r = ParseQueryResponse(200, body, kWhat);
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.error().code(), StatusCode::kParseError) << body << ": " << r.error().ToString();
    EXPECT_EQ(r.error().message().rfind(std::string(kWhat), 0), 0U) << r.error().message();
  }
}

TEST(ParseQueryResponseTest, NativeHistogramsAreSkippedWithAWarning) {
  const Result<QueryResult> r = ParseQueryResponse(200, R"({"status":"success","data":{
    "resultType":"matrix","result":[{"metric":{"__name__":"h"},
    "histograms":[[1,{"count":"1","sum":"1","buckets":[]}]]}]}})",
                                                   kWhat);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1U);
  EXPECT_TRUE(r->series[0].samples.empty());
  EXPECT_EQ(r->warnings.size(), 1U);
}

}  // namespace
}  // namespace gpucanary::promql
