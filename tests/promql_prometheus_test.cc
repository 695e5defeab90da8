// Integration: the promql client against a real Prometheus 2.42, filled with
// known samples through its remote_write receiver (our encoder), so that
// every answer can be checked exactly: QueryRaw returns the samples written
// (timestamps and values bit-exact, split windows joined seamlessly),
// QueryRange the grid and the lookback fill, split at the 11,000-point limit,
// and errors map to the right codes.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "prometheus_process.h"
#include "promql/client.h"
#include "remote/write_request.h"
#include "store/appender.h"

namespace gpucanary {
namespace {

using promql::ClientOptions;
using promql::QueryResult;

constexpr std::int64_t kMinute = 60 * 1000;

// Values as Prometheus prints them, and parses back bit-exact.
const char* const kDecimals[] = {
    "300.709", "0.1",   "-0", "100000000000000000000", "0.00000000015", "0.30000000000000004",
    "41",      "-17.25"};

double Value(std::size_t i) {
  if (i % 97 == 13) return std::numeric_limits<double>::infinity();
  if (i % 97 == 14) return -std::numeric_limits<double>::infinity();
  if (i % 97 == 15) return std::numeric_limits<double>::quiet_NaN();
  if (i % 5 == 0) return std::strtod(kDecimals[(i / 5) % std::size(kDecimals)], nullptr);
  return 250 + static_cast<double>(i % 1000) / 1000;  // 250.001 ... as written
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

class PromqlPrometheusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    prometheus_ = test::PrometheusProcess::Start("global:\n  scrape_interval: 1m\n",
                                                 {"--web.enable-remote-write-receiver"}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
    url_ = new std::string(prometheus_->url());
    // 20 minutes of data ending a minute ago: series a at irregular times
    // about 1 s apart, series b every 2 s and ended by a stale marker.
    base_ = (test::NowMs() - 21 * kMinute) / 1000 * 1000;
    remote::TimeSeries a{{{"__name__", "gc_test_power"}, {"gpu", "0"}, {"job", "t"}}, {}, 0, 0};
    remote::TimeSeries b{{{"__name__", "gc_test_power"}, {"gpu", "1"}, {"job", "t"}}, {}, 0, 0};
    for (std::size_t i = 0; i < 1200; ++i) {
      const auto n = static_cast<std::int64_t>(i);
      a.samples.push_back({base_ + n * 1000 + (n * 137) % 400, Value(i)});
      if (i % 2 == 0) b.samples.push_back({base_ + n * 1000, static_cast<double>(i)});
    }
    b.samples.push_back({base_ + 1200 * 1000, store::StaleNaN()});
    written_a_ = new std::vector<remote::Sample>(a.samples);
    written_b_ = new std::vector<remote::Sample>(b.samples);
    // Prometheus's receiver, 300 samples per request as a sender batches.
    for (std::size_t from = 0; from < a.samples.size(); from += 300) {
      remote::WriteRequest request;
      request.timeseries.push_back({a.labels, {}, 0, 0});
      request.timeseries.push_back({b.labels, {}, 0, 0});
      for (const remote::Sample& s : a.samples) {
        if (s.timestamp_ms >= base_ + static_cast<std::int64_t>(from) * 1000 &&
            s.timestamp_ms < base_ + static_cast<std::int64_t>(from + 300) * 1000) {
          request.timeseries[0].samples.push_back(s);
        }
      }
      for (const remote::Sample& s : b.samples) {
        if (s.timestamp_ms >= base_ + static_cast<std::int64_t>(from) * 1000 &&
            (from + 300 >= a.samples.size() ||
             s.timestamp_ms < base_ + static_cast<std::int64_t>(from + 300) * 1000)) {
          request.timeseries[1].samples.push_back(s);
        }
      }
      net::FetchOptions post;
      post.method = "POST";
      post.content_type = "application/x-protobuf";
      post.headers = {{"Content-Encoding", "snappy"},
                      {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
      post.body = remote::EncodeWriteRequest(request);
      const Result<net::HttpResponse> r = net::Fetch(*url_ + "/api/v1/write", post);
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      ASSERT_EQ(r->status, 204) << r->body;
    }
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete url_;
    delete written_a_;
    delete written_b_;
  }

  static test::PrometheusProcess* prometheus_;
  static std::string* url_;
  static std::int64_t base_;
  static std::vector<remote::Sample>* written_a_;
  static std::vector<remote::Sample>* written_b_;
};

test::PrometheusProcess* PromqlPrometheusTest::prometheus_ = nullptr;
std::string* PromqlPrometheusTest::url_ = nullptr;
std::int64_t PromqlPrometheusTest::base_ = 0;
std::vector<remote::Sample>* PromqlPrometheusTest::written_a_ = nullptr;
std::vector<remote::Sample>* PromqlPrometheusTest::written_b_ = nullptr;

void ExpectSamples(const std::vector<promql::Sample>& got,
                   const std::vector<remote::Sample>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].t_ms, want[i].timestamp_ms) << i;
    EXPECT_TRUE(SameValue(got[i].value, want[i].value))
        << i << ": " << got[i].value << " != " << want[i].value;
  }
}

TEST_F(PromqlPrometheusTest, QueryRawReturnsExactlyTheSamplesWritten) {
  ClientOptions options;
  options.max_raw_window_ms = 7 * kMinute;  // 3 requests, joined
  const Result<QueryResult> r =
      promql::QueryRaw(*url_, "gc_test_power", base_, base_ + 21 * kMinute, options);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 2U);
  EXPECT_EQ(r->series[0].labels,
            (model::Labels{{"__name__", "gc_test_power"}, {"gpu", "0"}, {"job", "t"}}));
  ExpectSamples(r->series[0].samples, *written_a_);
  // The stale marker that ended b is not a sample the API returns.
  std::vector<remote::Sample> b = *written_b_;
  b.pop_back();
  ExpectSamples(r->series[1].samples, b);
  EXPECT_TRUE(r->warnings.empty());
}

TEST_F(PromqlPrometheusTest, QueryRawBoundsAreInclusiveAtBothEnds) {
  const std::vector<remote::Sample>& a = *written_a_;
  const Result<QueryResult> r =
      promql::QueryRaw(*url_, "gc_test_power{gpu=\"0\"}", a[100].timestamp_ms, a[200].timestamp_ms);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1U);
  ExpectSamples(r->series[0].samples,
                std::vector<remote::Sample>(a.begin() + 100, a.begin() + 201));
}

// The sample a range query shows at `t`: the newest at or before t within
// the default 5 m lookback.
const remote::Sample* At(const std::vector<remote::Sample>& samples, std::int64_t t) {
  const remote::Sample* found = nullptr;
  for (const remote::Sample& s : samples) {
    if (s.timestamp_ms <= t && s.timestamp_ms > t - 5 * kMinute) found = &s;
  }
  return found;
}

TEST_F(PromqlPrometheusTest, QueryRangeEvaluatesOnTheGridWithLookback) {
  const std::int64_t start = base_ + 10 * 1000 + 333;
  const std::int64_t step = 15 * 1000 + 500;
  const std::int64_t end = start + 10 * kMinute;
  const Result<QueryResult> whole =
      promql::QueryRange(*url_, "gc_test_power{gpu=\"0\"}", start, end, step);
  ASSERT_TRUE(whole.has_value()) << whole.error().ToString();
  ASSERT_EQ(whole->series.size(), 1U);
  const std::vector<promql::Sample>& points = whole->series[0].samples;
  ASSERT_EQ(points.size(), static_cast<std::size_t>((end - start) / step + 1));
  for (std::size_t k = 0; k < points.size(); ++k) {
    const std::int64_t t = start + static_cast<std::int64_t>(k) * step;
    EXPECT_EQ(points[k].t_ms, t);
    const remote::Sample* s = At(*written_a_, t);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(SameValue(points[k].value, s->value)) << k;
  }
  ClientOptions split;
  split.max_points = 7;
  const Result<QueryResult> pieces =
      promql::QueryRange(*url_, "gc_test_power{gpu=\"0\"}", start, end, step, split);
  ASSERT_TRUE(pieces.has_value()) << pieces.error().ToString();
  ASSERT_EQ(pieces->series.size(), 1U);
  ASSERT_EQ(pieces->series[0].samples.size(), points.size());
  for (std::size_t k = 0; k < points.size(); ++k) {
    EXPECT_EQ(pieces->series[0].samples[k].t_ms, points[k].t_ms);
    EXPECT_TRUE(SameValue(pieces->series[0].samples[k].value, points[k].value));
  }
}

TEST_F(PromqlPrometheusTest, QueryRangeSplitsAtPrometheusPointLimit) {
  // Almost 20 minutes at 100 ms: 11,991 points, over Prometheus's 11,000.
  // (At base + 20 min, b's stale marker would end the series.)
  const std::int64_t start = base_;
  const std::int64_t end = base_ + 20 * kMinute - 1000;
  ClientOptions unsplit;
  unsplit.max_points = 20000;
  const Result<QueryResult> refused =
      promql::QueryRange(*url_, "gc_test_power{gpu=\"1\"}", start, end, 100, unsplit);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("11,000 points"), std::string::npos)
      << refused.error().message();

  const Result<QueryResult> r =
      promql::QueryRange(*url_, "gc_test_power{gpu=\"1\"}", start, end, 100);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1U);
  ASSERT_EQ(r->series[0].samples.size(), 11991U);
  EXPECT_EQ(r->series[0].samples.front(), (promql::Sample{start, 0}));
  EXPECT_EQ(r->series[0].samples[11000], (promql::Sample{start + 1100 * 1000, 1100}));
  EXPECT_EQ(r->series[0].samples.back(), (promql::Sample{end, 1198}));  // b's last, 1 s earlier
}

TEST_F(PromqlPrometheusTest, QueryInstantVectorAndScalar) {
  const std::int64_t t = (*written_a_)[500].timestamp_ms;
  Result<QueryResult> r = promql::QueryInstant(*url_, "gc_test_power", t);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->type, promql::ResultType::kVector);
  EXPECT_EQ(r->series.size(), 2U);
  r = promql::QueryInstant(*url_, "scalar(count(gc_test_power))", t);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->type, promql::ResultType::kScalar);
  ASSERT_EQ(r->series.size(), 1U);
  EXPECT_EQ(r->series[0].samples[0], (promql::Sample{t, 2}));
}

TEST_F(PromqlPrometheusTest, ErrorsMapToCodesWithPrometheusText) {
  const std::int64_t t = (*written_a_)[500].timestamp_ms;
  Result<QueryResult> r = promql::QueryInstant(*url_, "sum(gc_test_power", t);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("HTTP 400 bad_data"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("parse error"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find(*url_ + "/api/v1/query"), std::string::npos);

  // Many-to-many matching fails in execution: 422.
  r = promql::QueryInstant(*url_, "gc_test_power + on() gc_test_power", t);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("HTTP 422 execution"), std::string::npos)
      << r.error().message();

  // A query given a microsecond times out: 503, worth a retry.
  ClientOptions hurry;
  hurry.query_timeout_s = 0.000001;
  r = promql::QueryRange(*url_, "gc_test_power", base_, base_ + 20 * kMinute, 1000, hurry);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable) << r.error().message();
  EXPECT_NE(r.error().message().find("HTTP 503"), std::string::npos) << r.error().message();

  // Long queries go as a form POST; Prometheus answers them the same.
  ClientOptions post;
  post.max_get_bytes = 16;
  r = promql::QueryInstant(*url_, "gc_test_power{job=~\"t|u\", gpu!=\"2 & 3\"}", t, post);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->series.size(), 2U);
}

}  // namespace
}  // namespace gpucanary
