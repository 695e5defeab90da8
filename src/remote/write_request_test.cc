#include "remote/write_request.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "store/appender.h"

namespace gpucanary::remote {
namespace {

model::Labels GpuLabels(const std::string& gpu) {
  return {{"Hostname", "node-1"},
          {"UUID", "GPU-" + gpu},
          {"__name__", "DCGM_FI_DEV_GPU_TEMP"},
          {"gpu", gpu},
          {"job", "dcgm"}};
}

WriteRequest TwoSeries() {
  WriteRequest r;
  r.timeseries.push_back({GpuLabels("0"), {{1000, 41.5}, {2000, 42}}, 0, 0});
  r.timeseries.push_back({GpuLabels("1"), {{1000, -0.0}, {2000, 1e20}}, 0, 0});
  return r;
}

TEST(WriteRequestTest, RoundTripsSeriesLabelsAndSamples) {
  const WriteRequest sent = TwoSeries();
  const Result<WriteRequest> got =
      DecodeWriteRequest(EncodeWriteRequest(sent), "snappy", "application/x-protobuf");
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ASSERT_EQ(got->timeseries.size(), 2U);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got->timeseries[i].labels, sent.timeseries[i].labels);
    EXPECT_EQ(got->timeseries[i].samples, sent.timeseries[i].samples);
  }
  EXPECT_TRUE(std::signbit(got->timeseries[1].samples[0].value));
}

TEST(WriteRequestTest, KeepsValuesBitExactIncludingStaleMarkers) {
  const double values[] = {store::StaleNaN(),
                           std::bit_cast<double>(0x7ff8000000000001ULL),  // Prometheus NormalNaN
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::denorm_min(),
                           0.30000000000000004};
  WriteRequest sent;
  sent.timeseries.push_back({GpuLabels("0"), {}, 0, 0});
  std::int64_t t = 1;
  for (double v : values) sent.timeseries[0].samples.push_back({t++, v});
  const Result<WriteRequest> got = DecodeWriteRequest(EncodeWriteRequest(sent), "", "");
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ASSERT_EQ(got->timeseries[0].samples.size(), std::size(values));
  for (std::size_t i = 0; i < std::size(values); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got->timeseries[0].samples[i].value),
              std::bit_cast<std::uint64_t>(values[i]))
        << i;
  }
  EXPECT_TRUE(store::IsStaleNaN(got->timeseries[0].samples[0].value));
}

TEST(WriteRequestTest, CountsExemplarsHistogramsAndMetadata) {
  WriteRequest sent = TwoSeries();
  sent.timeseries[0].exemplars = 2;
  sent.timeseries[1].histograms = 3;
  sent.metadata = 4;
  const Result<WriteRequest> got = DecodeWriteRequest(EncodeWriteRequest(sent), "snappy", "");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->timeseries[0].exemplars, 2U);
  EXPECT_EQ(got->timeseries[1].histograms, 3U);
  EXPECT_EQ(got->metadata, 4U);
}

TEST(WriteRequestTest, EmptyRequestDecodesToNoSeries) {
  const Result<WriteRequest> got = DecodeWriteRequest(EncodeWriteRequest({}), "snappy", "");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->timeseries.empty());
}

TEST(WriteRequestTest, AcceptsOnlyRemoteWrite10ContentHeaders) {
  for (const char* type : {"", "application/x-protobuf", "Application/X-Protobuf",
                           "application/x-protobuf; proto=prometheus.WriteRequest",
                           "application/x-protobuf;proto=\"prometheus.WriteRequest\""}) {
    EXPECT_TRUE(CheckContentHeaders("snappy", type).ok()) << type;
  }
  EXPECT_TRUE(CheckContentHeaders("", "application/x-protobuf").ok());
  EXPECT_TRUE(CheckContentHeaders("SNAPPY", "application/x-protobuf").ok());

  const Status v2 =
      CheckContentHeaders("snappy", "application/x-protobuf;proto=io.prometheus.write.v2.Request");
  EXPECT_EQ(v2.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v2.message().find("io.prometheus.write.v2.Request"), std::string::npos) << v2.message();
  EXPECT_EQ(CheckContentHeaders("snappy", "application/json").code(), StatusCode::kInvalidArgument);
  const Status gzip = CheckContentHeaders("gzip", "application/x-protobuf");
  EXPECT_EQ(gzip.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gzip.message().find("'gzip'"), std::string::npos) << gzip.message();
}

TEST(WriteRequestTest, UnsupportedMediaTypeIsReported) {
  WriteError reason = WriteError::kInternal;
  const Result<WriteRequest> got = DecodeWriteRequest(
      EncodeWriteRequest(TwoSeries()), "snappy",
      "application/x-protobuf;proto=io.prometheus.write.v2.Request", {}, &reason);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reason, WriteError::kUnsupportedMediaType);
}

TEST(WriteRequestTest, CorruptSnappyIsAParseError) {
  WriteError reason = WriteError::kInternal;
  const std::string body = EncodeWriteRequest(TwoSeries());
  for (const std::string& bad :
       {std::string(), std::string("\xff\xff\xff\xff\xff\xff", 6), body.substr(0, body.size() - 3),
        // the snappy framing format, which remote_write forbids
        std::string("\xff\x06\x00\x00sNaPpY", 10)}) {
    const Result<WriteRequest> got = DecodeWriteRequest(bad, "snappy", "", {}, &reason);
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error().code(), StatusCode::kParseError);
    EXPECT_EQ(got.error().message(), "snappy: corrupt input");
    EXPECT_EQ(reason, WriteError::kBadSnappy);
  }
}

TEST(WriteRequestTest, SnappyOfSomethingElseIsBadProtobuf) {
  std::string body;
  const std::string garbage = "\x0a\xff\xff\xff\xff\x0f not a protobuf";
  snappy::Compress(garbage.data(), garbage.size(), &body);
  WriteError reason = WriteError::kInternal;
  const Result<WriteRequest> got = DecodeWriteRequest(body, "snappy", "", {}, &reason);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kParseError);
  EXPECT_NE(got.error().message().find("not a prometheus.WriteRequest"), std::string::npos);
  EXPECT_EQ(reason, WriteError::kBadProtobuf);
}

TEST(WriteRequestTest, SizeLimitsAreCheckedBeforeDecompressing) {
  WriteRequest big;
  big.timeseries.push_back({GpuLabels("0"), {}, 0, 0});
  for (int i = 0; i < 10000; ++i) big.timeseries[0].samples.push_back({i, 1.0});
  const std::string body = EncodeWriteRequest(big);
  std::size_t raw = 0;
  ASSERT_TRUE(snappy::GetUncompressedLength(body.data(), body.size(), &raw));

  WriteError reason = WriteError::kInternal;
  DecodeLimits limits;
  limits.max_compressed_bytes = body.size() - 1;
  Result<WriteRequest> got = DecodeWriteRequest(body, "snappy", "", limits, &reason);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(reason, WriteError::kBodyTooLarge);

  limits.max_compressed_bytes = body.size();
  limits.max_decompressed_bytes = raw - 1;
  got = DecodeWriteRequest(body, "snappy", "", limits, &reason);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code(), StatusCode::kOutOfRange);
  EXPECT_NE(got.error().message().find(std::to_string(raw)), std::string::npos);

  limits.max_decompressed_bytes = raw;
  EXPECT_TRUE(DecodeWriteRequest(body, "snappy", "", limits).has_value());
}

TEST(WriteRequestTest, ALengthHeaderNoSnappyBodyCanReachIsCorrupt) {
  // A 5-byte varint claiming 4 GiB, then 3 bytes: no allocation, just refused.
  const std::string bomb("\x80\x80\x80\x80\x10\x00\x00\x00", 8);
  DecodeLimits limits;
  limits.max_decompressed_bytes = std::numeric_limits<std::size_t>::max();
  const Result<WriteRequest> got = DecodeWriteRequest(bomb, "snappy", "", limits);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().message(), "snappy: corrupt input");
}

TEST(CheckSeriesLabelsTest, AcceptsSortedValidLabels) {
  EXPECT_TRUE(CheckSeriesLabels(GpuLabels("0"), 0).ok());
  EXPECT_TRUE(CheckSeriesLabels({{"__name__", "up"}}, 0).ok());
  EXPECT_TRUE(CheckSeriesLabels({{"__name__", "vllm:e2e"}, {"a", "ünïcode ✓"}}, 0).ok());
}

TEST(CheckSeriesLabelsTest, NamesTheSeriesAndLabelOfTheFirstProblem) {
  struct Case {
    model::Labels labels;
    const char* message;
  } cases[] = {
      {{{"__name__", "up"}, {"gpu", "0"}, {"gpu", "1"}},
       "timeseries[3].labels[2] 'gpu': duplicate name"},
      {{{"__name__", "up"}, {"job", "x"}, {"gpu", "0"}},
       "timeseries[3].labels[2] 'gpu': not sorted (after 'job')"},
      {{{"__name__", "up"}, {"gpu", ""}}, "timeseries[3].labels[1] 'gpu': empty value"},
      {{{"", "x"}, {"__name__", "up"}}, "timeseries[3].labels[0] '': empty name"},
      {{{"__name__", "up"}, {"g-pu", "0"}}, "timeseries[3].labels[1] 'g-pu': invalid name"},
      {{{"__name__", "up"}, {"gpu", "\xff"}}, "timeseries[3].labels[1] 'gpu': value is not UTF-8"},
      {{{"__name__", "1up"}}, "timeseries[3].labels[0] '__name__': invalid metric name '1up'"},
      {{{"gpu", "0"}}, "timeseries[3]: no __name__ label"},
      {{}, "timeseries[3]: no __name__ label"},
  };
  for (const Case& c : cases) {
    const Status st = CheckSeriesLabels(c.labels, 3);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), c.message);
  }
}

TEST(WriteErrorTest, EveryReasonHasAName) {
  for (std::size_t i = 0; i < kWriteErrorCount; ++i) {
    EXPECT_FALSE(WriteErrorName(static_cast<WriteError>(i)).empty());
  }
  EXPECT_EQ(WriteErrorName(WriteError::kBadSnappy), "bad_snappy");
}

}  // namespace
}  // namespace gpucanary::remote
