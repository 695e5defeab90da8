#include "remote/receiver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "remote/test_util.h"
#include "store/store.h"

namespace gpucanary::remote {
namespace {

model::Labels Metric(const std::string& name, const std::string& gpu) {
  return {{"__name__", name}, {"gpu", gpu}, {"job", "dcgm"}};
}

net::HttpRequest Post(const WriteRequest& request) {
  net::HttpRequest r;
  r.method = "POST";
  r.target = r.path = "/api/v1/write";
  r.headers = {{"content-encoding", "snappy"},
               {"content-type", "application/x-protobuf"},
               {"x-prometheus-remote-write-version", "0.1.0"}};
  r.body = EncodeWriteRequest(request);
  return r;
}

class ReceiverTest : public ::testing::Test {
 protected:
  test::CaptureAppendable store_;
  Receiver receiver_{store_};
};

TEST_F(ReceiverTest, ValidRequestIs204WithEmptyBodyAndEverySampleStored) {
  WriteRequest r;
  r.timeseries.push_back({Metric("DCGM_FI_DEV_GPU_TEMP", "0"), {{1000, 41}, {2000, 42}}, 0, 0});
  r.timeseries.push_back(
      {Metric("DCGM_FI_DEV_GPU_TEMP", "1"), {{1000, 50}, {2000, store::StaleNaN()}}, 0, 0});
  const net::HttpResponse response = receiver_.Handle(Post(r));
  EXPECT_EQ(response.status, 204);
  EXPECT_TRUE(response.body.empty());
  EXPECT_EQ(store_.Samples(Metric("DCGM_FI_DEV_GPU_TEMP", "0")),
            (std::vector<Sample>{{1000, 41}, {2000, 42}}));
  const std::vector<Sample> gpu1 = store_.Samples(Metric("DCGM_FI_DEV_GPU_TEMP", "1"));
  ASSERT_EQ(gpu1.size(), 2U);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(gpu1[1].value), store::kStaleNaNBits);

  const ReceiverStats s = receiver_.stats();
  EXPECT_EQ(s.requests, 1U);
  EXPECT_EQ(s.requests_accepted, 1U);
  EXPECT_EQ(s.series_received, 2U);
  EXPECT_EQ(s.samples_received, 4U);
  EXPECT_EQ(s.samples_appended, 4U);
  EXPECT_EQ(s.samples_rejected, 0U);
}

TEST_F(ReceiverTest, EmptyRequestIs204) {
  EXPECT_EQ(receiver_.Handle(Post({})).status, 204);
  EXPECT_EQ(store_.commits(), 0U);
}

TEST_F(ReceiverTest, BadSeriesAre400ButTheValidOnesAreKept) {
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});
  r.timeseries.push_back({{{"__name__", "up"}, {"gpu", "0"}, {"gpu", "1"}}, {{1000, 1}}, 0, 0});
  r.timeseries.push_back({Metric("up", "2"), {{1000, 1}}, 0, 0});
  r.timeseries.push_back({{{"gpu", "3"}}, {{1000, 1}, {2000, 1}}, 0, 0});
  const net::HttpResponse response = receiver_.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[1].labels[2] 'gpu': duplicate name (2 problems; kept 2 of 4 series, 2 of 5 "
            "samples)\ntimeseries[3]: no __name__ label\n");
  EXPECT_EQ(store_.All().size(), 2U);
  const ReceiverStats s = receiver_.stats();
  EXPECT_EQ(s.error(WriteError::kInvalidLabels), 2U);
  EXPECT_EQ(s.samples_appended, 2U);
  EXPECT_EQ(s.samples_rejected, 3U);
  EXPECT_EQ(s.requests_accepted, 0U);
}

TEST_F(ReceiverTest, OutOfOrderSamplesWithinASeriesAreRefusedOneByOne) {
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"),
                          {{1000, 1}, {3000, 3}, {2000, 2}, {3000, 3}, {3000, 4}, {4000, 4}},
                          0,
                          0});
  const net::HttpResponse response = receiver_.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[0].samples[2]: out of order sample: timestamp 2000 is before 3000 "
            "(2 problems; kept 1 of 1 series, 3 of 6 samples)\n"
            "timeseries[0].samples[4]: duplicate sample for timestamp 3000\n");
  EXPECT_EQ(store_.Samples(Metric("up", "0")),
            (std::vector<Sample>{{1000, 1}, {3000, 3}, {4000, 4}}));
  EXPECT_EQ(receiver_.stats().error(WriteError::kOutOfOrderSample), 1U);
  EXPECT_EQ(receiver_.stats().error(WriteError::kDuplicateSample), 1U);
}

TEST_F(ReceiverTest, StoreRejectionsAre400AndTheRestOfTheBatchIsKept) {
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}, {2000, 2}}, 0, 0});
  ASSERT_EQ(receiver_.Handle(Post(r)).status, 204);
  // Only the last sample again: an exact repeat, dropped silently.
  WriteRequest repeat;
  repeat.timeseries.push_back({Metric("up", "0"), {{2000, 2}}, 0, 0});
  EXPECT_EQ(receiver_.Handle(Post(repeat)).status, 204);

  WriteRequest older;
  older.timeseries.push_back({Metric("up", "0"), {{500, 1}, {2000, 9}, {3000, 3}}, 0, 0});
  const net::HttpResponse response = receiver_.Handle(Post(older));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "store refused 2 samples (1 out of order, 1 duplicate), the first: out of order "
            "sample (1 problem; kept 1 of 1 series, 1 of 3 samples)\n");
  EXPECT_EQ(store_.Samples(Metric("up", "0")),
            (std::vector<Sample>{{1000, 1}, {2000, 2}, {3000, 3}}));
  EXPECT_EQ(receiver_.stats().error(WriteError::kOutOfOrderSample), 1U);
  EXPECT_EQ(receiver_.stats().error(WriteError::kDuplicateSample), 1U);

  // The whole first batch again (a sender retrying after a timeout) is out
  // of order, as in Prometheus 2.42's receiver.
  EXPECT_EQ(receiver_.Handle(Post(r)).status, 400);
}

TEST_F(ReceiverTest, SeriesLimitIs400) {
  store_.SetMaxSeries(1);
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});
  r.timeseries.push_back({Metric("up", "1"), {{1000, 1}}, 0, 0});
  const net::HttpResponse response = receiver_.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body.rfind("timeseries[1]: series limit of 1 reached", 0), 0U)
      << response.body;
  EXPECT_EQ(receiver_.stats().error(WriteError::kSeriesLimit), 1U);
}

TEST_F(ReceiverTest, StoreIoErrorIs503AndNothingIsKept) {
  store_.FailCommits(1, Status(StatusCode::kIoError, "wal: write: No space left on device"));
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});
  net::HttpResponse response = receiver_.Handle(Post(r));
  EXPECT_EQ(response.status, 503);
  EXPECT_NE(response.body.find("No space left on device"), std::string::npos);
  EXPECT_TRUE(store_.All().empty());
  EXPECT_EQ(receiver_.stats().error(WriteError::kStoreUnavailable), 1U);
  // The sender retries: it now goes through.
  EXPECT_EQ(receiver_.Handle(Post(r)).status, 204);
  EXPECT_EQ(store_.Samples(Metric("up", "0")).size(), 1U);
}

TEST_F(ReceiverTest, UnknownStoreFailureIs500) {
  store_.FailCommits(1, Status(StatusCode::kInternal, "head: broken"));
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});
  EXPECT_EQ(receiver_.Handle(Post(r)).status, 500);
  EXPECT_EQ(receiver_.stats().error(WriteError::kInternal), 1U);
}

TEST_F(ReceiverTest, TransportErrorsMapToTheirStatusCodes) {
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});

  net::HttpRequest v2 = Post(r);
  v2.headers[1].second = "application/x-protobuf;proto=io.prometheus.write.v2.Request";
  EXPECT_EQ(receiver_.Handle(v2).status, 415);

  net::HttpRequest gzip = Post(r);
  gzip.headers[0].second = "gzip";
  EXPECT_EQ(receiver_.Handle(gzip).status, 415);

  net::HttpRequest corrupt = Post(r);
  corrupt.body = "not snappy at all";
  const net::HttpResponse bad = receiver_.Handle(corrupt);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "snappy: corrupt input\n");

  ReceiverOptions small;
  small.limits.max_compressed_bytes = 8;
  Receiver strict(store_, small);
  EXPECT_EQ(strict.Handle(Post(r)).status, 413);

  net::HttpRequest get = Post(r);
  get.method = "GET";
  const net::HttpResponse not_post = receiver_.Handle(get);
  EXPECT_EQ(not_post.status, 405);
  EXPECT_EQ(not_post.Header("allow"), "POST");

  const ReceiverStats s = receiver_.stats();
  EXPECT_EQ(s.error(WriteError::kUnsupportedMediaType), 2U);
  EXPECT_EQ(s.error(WriteError::kBadSnappy), 1U);
  EXPECT_EQ(strict.stats().error(WriteError::kBodyTooLarge), 1U);
  EXPECT_TRUE(store_.All().empty());
}

TEST_F(ReceiverTest, ExemplarsHistogramsAndMetadataAreCountedAndDropped) {
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 2, 0});
  r.timeseries.push_back({Metric("latency", "0"), {}, 0, 3});
  r.metadata = 5;
  EXPECT_EQ(receiver_.Handle(Post(r)).status, 204);
  const ReceiverStats s = receiver_.stats();
  EXPECT_EQ(s.exemplars_dropped, 2U);
  EXPECT_EQ(s.histograms_dropped, 3U);
  EXPECT_EQ(s.metadata_dropped, 5U);
  EXPECT_EQ(store_.All().size(), 1U);
}

TEST_F(ReceiverTest, ListsAtMostTheConfiguredNumberOfProblems) {
  ReceiverOptions options;
  options.max_listed_errors = 2;
  Receiver receiver(store_, options);
  WriteRequest r;
  for (int i = 0; i < 6; ++i) r.timeseries.push_back({{{"gpu", "0"}}, {{1000, 1}}, 0, 0});
  const net::HttpResponse response = receiver.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[0]: no __name__ label (6 problems; kept 0 of 6 series, 0 of 6 samples)\n"
            "timeseries[1]: no __name__ label\ntimeseries[2]: no __name__ label\n"
            "... and 3 more\n");
}

constexpr std::int64_t kNow = 1'764'680'000'000;  // 2025-12-02T12:53:20Z
constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kYear = 365 * 24 * 60 * kMinute;

// The accepted window: at most creation_grace_period ahead of the clock and
// past_grace_period behind it; the rest of the batch is kept.
TEST_F(ReceiverTest, SamplesOutsideTheTimeWindowAre400AndCountedPerReason) {
  ManualClock clock(kNow);
  ReceiverOptions options;
  options.creation_grace_period_ms = 10 * kMinute;
  options.past_grace_period_ms = 60 * kMinute;
  Receiver receiver(store_, clock, options);
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"),
                          {{kNow - 61 * kMinute, 1},
                           {kNow - 59 * kMinute, 2},
                           {kNow + 10 * kMinute, 3},
                           {kNow + 10 * kMinute + 1, 4},
                           {kNow + kYear, 5}},
                          0,
                          0});
  const net::HttpResponse response = receiver.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[0].samples[0]: sample too far in the past: timestamp 1764676340000 is "
            "3660000 ms before now (1764680000000), past_grace_period 3600000 ms (3 problems; kept "
            "1 of 1 series, 2 of 5 samples)\n"
            "timeseries[0].samples[3]: sample too far in the future: timestamp 1764680600001 is "
            "600001 ms after now (1764680000000), creation_grace_period 600000 ms\n"
            "timeseries[0].samples[4]: sample too far in the future: timestamp 1796216000000 is "
            "31536000000 ms after now (1764680000000), creation_grace_period 600000 ms\n");
  EXPECT_EQ(store_.Samples(Metric("up", "0")),
            (std::vector<Sample>{{kNow - 59 * kMinute, 2}, {kNow + 10 * kMinute, 3}}));
  const ReceiverStats s = receiver.stats();
  EXPECT_EQ(s.error(WriteError::kSampleTooFarInPast), 1U);
  EXPECT_EQ(s.error(WriteError::kSampleTooFarInFuture), 2U);
  EXPECT_EQ(s.samples_rejected, 3U);
  EXPECT_EQ(WriteErrorName(WriteError::kSampleTooFarInFuture), "sample_too_far_in_future");
  EXPECT_EQ(WriteErrorName(WriteError::kSampleTooFarInPast), "sample_too_far_in_past");
}

// The earliest int64 timestamp is never a "duplicate": with no lower bound
// configured it is still refused, as too far in the past.
TEST_F(ReceiverTest, TheMinimumTimestampIsTooFarInThePastNotADuplicate) {
  ManualClock clock(kNow);
  ReceiverOptions options;
  options.past_grace_period_ms = 0;  // no bound
  Receiver receiver(store_, clock, options);
  WriteRequest r;
  r.timeseries.push_back(
      {Metric("up", "0"), {{std::numeric_limits<std::int64_t>::min(), 1}, {1000, 2}}, 0, 0});
  const net::HttpResponse response = receiver.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body.find("duplicate"), std::string::npos) << response.body;
  EXPECT_EQ(response.body.rfind("timeseries[0].samples[0]: sample too far in the past", 0), 0U)
      << response.body;
  EXPECT_EQ(store_.Samples(Metric("up", "0")), (std::vector<Sample>{{1000, 2}}));
  EXPECT_EQ(receiver.stats().error(WriteError::kSampleTooFarInPast), 1U);
  EXPECT_EQ(receiver.stats().error(WriteError::kDuplicateSample), 0U);
}

// Prometheus's scrape label limits, on remote_write series: a series over
// one is refused whole, naming it and the limit.
TEST_F(ReceiverTest, SeriesOverTheLabelLimitsAre400NamingTheLimit) {
  ReceiverOptions options;
  options.label_limits = {
      .label_limit = 4, .label_name_length_limit = 8, .label_value_length_limit = 10};
  Receiver receiver(store_, options);
  WriteRequest r;
  r.timeseries.push_back({Metric("up", "0"), {{1000, 1}}, 0, 0});
  r.timeseries.push_back(
      {{{"__name__", "up"}, {"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}, {{1000, 1}}, 0, 0});
  r.timeseries.push_back({{{"__name__", "up"}, {"long_name", "1"}}, {{1000, 1}, {2000, 2}}, 0, 0});
  r.timeseries.push_back({{{"__name__", "up"}, {"gpu", "0123456789x"}}, {{1000, 1}}, 0, 0});
  const net::HttpResponse response = receiver.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[1]: label_limit exceeded (metric: up, number of labels: 5, limit: 4) "
            "(3 problems; kept 1 of 4 series, 1 of 5 samples)\n"
            "timeseries[2]: label_name_length_limit exceeded (metric: up, label name: long_name, "
            "length: 9, limit: 8)\n"
            "timeseries[3]: label_value_length_limit exceeded (metric: up, label name: gpu, "
            "value: \"0123456789x\", length: 11, limit: 10)\n");
  const ReceiverStats s = receiver.stats();
  EXPECT_EQ(s.error(WriteError::kLabelLimit), 1U);
  EXPECT_EQ(s.error(WriteError::kLabelNameLengthLimit), 1U);
  EXPECT_EQ(s.error(WriteError::kLabelValueLengthLimit), 1U);
  EXPECT_EQ(s.samples_rejected, 4U);
  EXPECT_EQ(store_.All().size(), 1U);
}

// The receiver in front of the real store.
class ReceiverStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gc_receiver_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open(store::StoreOptions options = {}) {
    options.sync_interval_ms = 0;
    auto s = store::Store::Open(dir_, options);
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    store_ = std::move(*s);
  }
  // What a scrape does: one sample of `labels` at `t`, committed.
  store::CommitResult Scrape(const model::Labels& labels, std::int64_t t, double v) {
    auto app = store_->NewAppender();
    const Result<store::SeriesRef> ref = app->Series(labels);
    EXPECT_TRUE(ref.has_value());
    EXPECT_TRUE(app->Append(ref.value_or(0), t, v).ok());
    const Result<store::CommitResult> r = app->Commit();
    EXPECT_TRUE(r.has_value());
    return r.value_or(store::CommitResult{});
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
};

// Issue 22: one remote_write sample a year ahead on a scraped series' labels
// made every later scrape of it out of order. It is refused, and the scrapes
// go on.
TEST_F(ReceiverStoreTest, ASampleAYearAheadCannotFreezeAScrapedSeries) {
  Open();
  ManualClock clock(kNow);
  Receiver receiver(*store_, clock);
  const model::Labels gpu = {{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}, {"job", "dcgm"}};
  ASSERT_EQ(Scrape(gpu, kNow, 41).appended, 1U);

  WriteRequest attack;
  attack.timeseries.push_back({gpu, {{kNow + kYear, 0}}, 0, 0});
  const net::HttpResponse response = receiver.Handle(Post(attack));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body.rfind("timeseries[0].samples[0]: sample too far in the future", 0), 0U)
      << response.body;
  EXPECT_EQ(receiver.stats().error(WriteError::kSampleTooFarInFuture), 1U);

  for (int i = 1; i <= 3; ++i) {
    clock.Advance(15'000);
    const store::CommitResult r = Scrape(gpu, clock.NowMs(), 41 + i);
    EXPECT_EQ(r.appended, 1U) << i;
    EXPECT_TRUE(r.first_error.ok()) << r.first_error.message();
  }
  // remote_write within the window goes on too.
  WriteRequest fine;
  fine.timeseries.push_back({gpu, {{clock.NowMs() + 1000, 50}}, 0, 0});
  EXPECT_EQ(receiver.Handle(Post(fine)).status, 204);
  auto got = store_->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "0")}, 0,
                            std::numeric_limits<std::int64_t>::max());
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 1U);
  ASSERT_EQ((*got)[0].samples.size(), 5U);
  EXPECT_EQ((*got)[0].samples.back().t, kNow + 45'000 + 1000);
}

// storage.max_series: new series beyond it are 400, the known ones go on.
TEST_F(ReceiverStoreTest, NewSeriesBeyondTheStoresLimitAre400) {
  store::StoreOptions options;
  options.max_series = 2;
  Open(options);
  ManualClock clock(kNow);
  Receiver receiver(*store_, clock);
  WriteRequest r;
  for (int i = 0; i < 3; ++i) {
    r.timeseries.push_back({Metric("up", std::to_string(i)), {{kNow, 1}}, 0, 0});
  }
  const net::HttpResponse response = receiver.Handle(Post(r));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body,
            "timeseries[2]: series limit reached (2) (1 problem; kept 2 of 3 series, 2 of 3 "
            "samples)\n");
  EXPECT_EQ(receiver.stats().error(WriteError::kSeriesLimit), 1U);
  WriteRequest known;
  known.timeseries.push_back({Metric("up", "0"), {{kNow + 1000, 1}}, 0, 0});
  EXPECT_EQ(receiver.Handle(Post(known)).status, 204);
}

// Through a real HttpServer and client, from several threads at once.
TEST_F(ReceiverTest, ServesConcurrentWritersOverHttp) {
  net::HttpServer::Options options;
  options.threads = 4;
  net::HttpServer server(options);
  const Result<std::uint16_t> port = server.Listen("127.0.0.1", 0, receiver_.HttpHandler());
  ASSERT_TRUE(port.has_value());
  ASSERT_TRUE(server.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(*port) + "/api/v1/write";

  constexpr int kWriters = 4;
  constexpr int kRequests = 25;
  std::vector<std::thread> writers;
  std::vector<int> failures(kWriters, 0);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kRequests; ++i) {
        WriteRequest r;
        r.timeseries.push_back(
            {Metric("up", std::to_string(w)), {{1000 * (i + 1), 1.0 * i}}, 0, 0});
        net::FetchOptions fetch;
        fetch.method = "POST";
        fetch.content_type = "application/x-protobuf";
        fetch.headers = {{"Content-Encoding", "snappy"}};
        fetch.body = EncodeWriteRequest(r);
        const Result<net::HttpResponse> response = net::Fetch(url, fetch);
        if (!response || response->status != 204) ++failures[static_cast<std::size_t>(w)];
      }
    });
  }
  for (std::thread& t : writers) t.join();
  server.Stop();
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_EQ(failures[static_cast<std::size_t>(w)], 0);
    EXPECT_EQ(store_.Samples(Metric("up", std::to_string(w))).size(),
              static_cast<std::size_t>(kRequests));
  }
  EXPECT_EQ(receiver_.stats().requests_accepted, static_cast<std::uint64_t>(kWriters * kRequests));
}

}  // namespace
}  // namespace gpucanary::remote
