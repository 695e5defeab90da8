#include "remote/receiver.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/http_server.h"
#include "remote/test_util.h"

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
