#include "scrape/ingester.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "scrape/relabel_config.h"
#include "scrape/test_appendable.h"
#include "store/store.h"

namespace gpucanary::scrape {
namespace {

using test::CapturingAppendable;
using test::Sample;

constexpr std::int64_t kT0 = 1'764'680'000'250;
constexpr std::string_view kTarget = R"({instance="h:9400",job="dcgm"})";

std::string Series(std::string_view name, std::string_view labels = kTarget) {
  return std::string(name) + std::string(labels);
}

class IngesterTest : public ::testing::Test {
 protected:
  Ingester Make(IngestOptions options = {}) {
    return Ingester(store_, {{"instance", "h:9400"}, {"job", "dcgm"}}, options);
  }
  std::vector<Sample> Samples(const std::string& s) { return store_.Samples(s); }

  CapturingAppendable store_;
};

TEST_F(IngesterTest, AppendsEverySampleAtTheScheduledTimeWithTargetLabels) {
  Ingester in = Make();
  const ScrapeOutcome o =
      in.Ingest("# HELP m help\n# TYPE m gauge\nm{gpu=\"0\"} 1\nm{gpu=\"1\"} 2.5\nother 7\n",
                expfmt::Format::kPrometheusText, kT0, 0.012);
  EXPECT_TRUE(o.up);
  EXPECT_EQ(o.samples, 3U);
  EXPECT_EQ(o.series_added, 3U);
  EXPECT_EQ(o.rejected, 0U);
  const auto m0 = Samples(R"(m{gpu="0",instance="h:9400",job="dcgm"})");
  ASSERT_EQ(m0.size(), 1U);
  EXPECT_EQ(m0[0].t_ms, kT0);
  EXPECT_EQ(m0[0].value, 1);
  EXPECT_EQ(Samples(Series("other"))[0].value, 7);
  EXPECT_EQ(Samples(Series("up"))[0].value, 1);
  EXPECT_EQ(Samples(Series("up"))[0].t_ms, kT0);
  EXPECT_DOUBLE_EQ(Samples(Series("scrape_duration_seconds"))[0].value, 0.012);
  EXPECT_EQ(Samples(Series("scrape_samples_scraped"))[0].value, 3);
  EXPECT_EQ(Samples(Series("scrape_series_added"))[0].value, 3);
  EXPECT_EQ(store_.commits(), 1U);  // one Commit per scrape
}

// The real dcgm-exporter capture of an L4 node (kops, default counters):
// each of its 23 families with the TYPE and HELP the exporter wrote.
TEST_F(IngesterTest, KeepsTheMetadataOfTheFamiliesTheLastScrapeDescribed) {
  std::ifstream file(std::string(GPUCANARY_SHARED_DIR) +
                     "/data/dcgm-samples/l4-default-counters-kops.txt");
  ASSERT_TRUE(file.good());
  const std::string body((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Ingester in = Make();
  EXPECT_EQ(in.metadata(), nullptr);
  ASSERT_TRUE(in.Ingest(body, expfmt::Format::kPrometheusText, kT0, 0).up);
  auto first = in.metadata();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->size(), 23U);
  auto sm = std::find_if(first->begin(), first->end(), [](const MetricMetadata& m) {
    return m.family == "DCGM_FI_DEV_SM_CLOCK";
  });
  ASSERT_NE(sm, first->end());
  EXPECT_EQ(sm->type, model::MetricType::kGauge);
  EXPECT_EQ(sm->help, "SM clock frequency (in MHz).");
  EXPECT_TRUE(std::is_sorted(
      first->begin(), first->end(),
      [](const MetricMetadata& a, const MetricMetadata& b) { return a.family < b.family; }));
  // Unchanged a minute later: the same snapshot, nothing rebuilt.
  ASSERT_TRUE(in.Ingest(body, expfmt::Format::kPrometheusText, kT0 + 60'000, 0).up);
  EXPECT_EQ(in.metadata(), first);
  // Within the minute nothing is read: one scrape a minute is.
  const std::string changed = "# HELP m new help\n# TYPE m counter\nm_total 1\n";
  ASSERT_TRUE(in.Ingest(changed, expfmt::Format::kPrometheusText, kT0 + 61'000, 0).up);
  EXPECT_EQ(in.metadata(), first);
  // A minute on, a family no longer described goes; a changed HELP is seen.
  ASSERT_TRUE(in.Ingest(changed, expfmt::Format::kPrometheusText, kT0 + 120'000, 0).up);
  auto now = in.metadata();
  ASSERT_EQ(now->size(), 1U);
  EXPECT_EQ((*now)[0], (MetricMetadata{"m", model::MetricType::kCounter, "new help", ""}));
  // A failed scrape changes nothing.
  EXPECT_FALSE(in.Ingest("m{ 1\n", expfmt::Format::kPrometheusText, kT0 + 180'000, 0).up);
  EXPECT_EQ(in.metadata(), now);
}

TEST_F(IngesterTest, SteadyStateHitsTheCache) {
  Ingester in = Make();
  const std::string body = "m{gpu=\"0\"} 1\nm{gpu=\"1\"} 2\n";
  ASSERT_EQ(in.Ingest(body, expfmt::Format::kPrometheusText, kT0, 0).series_added, 2U);
  const ScrapeOutcome o = in.Ingest(body, expfmt::Format::kPrometheusText, kT0 + 1000, 0);
  EXPECT_EQ(o.series_added, 0U);
  EXPECT_EQ(in.cached_series(), 2U);
  EXPECT_EQ(Samples(R"(m{gpu="1",instance="h:9400",job="dcgm"})").size(), 2U);
  EXPECT_EQ(Samples(Series("scrape_series_added"))[1].value, 0);
}

// metric_relabel_configs: applied to each new series with the target labels
// attached; drops are cached; a series left without a name fails the scrape.
TEST_F(IngesterTest, MetricRelabelingRewritesAndDropsSeries) {
  Result<std::vector<model::RelabelRule>> rules = ParseRelabelConfigs(R"(
- source_labels: [__name__]
  regex: 'vllm:.*_bucket'
  action: drop
- source_labels: [instance]
  regex: '([^:]+):.*'
  target_label: host
- regex: engine
  action: labeldrop
)",
                                                                      "m.yaml");
  ASSERT_TRUE(rules.has_value()) << rules.error().message();
  Ingester in = Make({.metric_relabel = *rules});
  const std::string body =
      "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\"} 3\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n";
  for (int i = 0; i < 2; ++i) {
    const ScrapeOutcome o = in.Ingest(body, expfmt::Format::kPrometheusText, kT0 + i * 1000, 0);
    EXPECT_TRUE(o.up);
    EXPECT_EQ(o.samples, 2U);
    EXPECT_EQ(o.relabel_dropped, 1U);
    EXPECT_EQ(o.post_relabel, 1U);
    EXPECT_EQ(o.series_added, i == 0 ? 1U : 0U);
  }
  // Prometheus's report: 2 scraped, 1 left after metric relabeling.
  EXPECT_EQ(Samples(Series("scrape_samples_scraped")).back().value, 2);
  EXPECT_EQ(Samples(Series("scrape_samples_post_metric_relabeling")).back().value, 1);
  EXPECT_EQ(Samples(R"(vllm:num_requests_running{host="h",instance="h:9400",job="dcgm",)"
                    R"(model_name="m"})")
                .size(),
            2U);
  EXPECT_EQ(in.cached_series(), 2U);  // the dropped one is remembered

  Result<std::vector<model::RelabelRule>> unname =
      ParseRelabelConfigs("[{regex: __name__, action: labeldrop}]", "m.yaml");
  ASSERT_TRUE(unname.has_value());
  CapturingAppendable other;
  Ingester bad(other, {{"job", "j"}}, {.metric_relabel = *unname});
  const ScrapeOutcome o = bad.Ingest("m 1\n", expfmt::Format::kPrometheusText, kT0, 0);
  EXPECT_FALSE(o.up);
  EXPECT_NE(o.error.message().find("invalid metric name or label names after "
                                   "metric_relabel_configs"),
            std::string::npos)
      << o.error.message();
}

TEST_F(IngesterTest, ClashingLabelsBecomeExportedUnlessHonored) {
  const std::string body = "m{job=\"inner\",instance=\"x\",exported_job=\"e\",a=\"\"} 1\n";
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest(body, expfmt::Format::kPrometheusText, kT0, 0).up);
  EXPECT_EQ(Samples(R"(m{exported_exported_job="inner",exported_instance="x",exported_job="e",)"
                    R"(instance="h:9400",job="dcgm"})")
                .size(),
            1U);
  CapturingAppendable other;
  Ingester honored(other, {{"instance", "h:9400"}, {"job", "dcgm"}}, {.honor_labels = true});
  ASSERT_TRUE(honored.Ingest(body, expfmt::Format::kPrometheusText, kT0, 0).up);
  EXPECT_EQ(other.Samples(R"(m{exported_job="e",instance="x",job="inner"})").size(), 1U);
}

TEST_F(IngesterTest, ASeriesThatDisappearsGetsAStaleMarker) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a 1\nb 2\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  const ScrapeOutcome o = in.Ingest("a 1\n", expfmt::Format::kPrometheusText, kT0 + 1000, 0);
  EXPECT_EQ(o.stale_markers, 1U);
  const auto b = Samples(Series("b"));
  ASSERT_EQ(b.size(), 2U);
  EXPECT_EQ(b[1].t_ms, kT0 + 1000);
  EXPECT_TRUE(store::IsStaleNaN(b[1].value));
  // Gone stays gone: no second marker, and no value that could read as zero.
  ASSERT_EQ(in.Ingest("a 1\n", expfmt::Format::kPrometheusText, kT0 + 2000, 0).stale_markers, 0U);
  EXPECT_EQ(Samples(Series("b")).size(), 2U);
  // It may come back.
  ASSERT_TRUE(in.Ingest("a 1\nb 3\n", expfmt::Format::kPrometheusText, kT0 + 3000, 0).up);
  EXPECT_EQ(Samples(Series("b")).back().value, 3);
}

TEST_F(IngesterTest, AMalformedScrapeIsAFailedScrapeWithLineAndColumn) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a 1\nb 2\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  const ScrapeOutcome o =
      in.Ingest("a 1\nb{x=1} 2\n", expfmt::Format::kPrometheusText, kT0 + 1000, 0.5);
  EXPECT_FALSE(o.up);
  EXPECT_TRUE(o.exposition_error);
  EXPECT_EQ(o.error.message(), "parse error at 2:5: expected '\"' to open the value of label 'x'");
  // Nothing of the bad body is kept; everything from before is marked stale.
  ASSERT_EQ(Samples(Series("a")).size(), 2U);
  EXPECT_TRUE(store::IsStaleNaN(Samples(Series("a"))[1].value));
  EXPECT_TRUE(store::IsStaleNaN(Samples(Series("b"))[1].value));
  EXPECT_EQ(Samples(Series("up"))[1].value, 0);
  EXPECT_EQ(Samples(Series("scrape_samples_scraped"))[1].value, 0);
}

TEST_F(IngesterTest, AFailedFetchMarksEverySeriesStale) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a 1\nb 2\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  const ScrapeOutcome o =
      in.Fail(Status(StatusCode::kUnavailable, "connection refused"), kT0 + 1000, 0.001);
  EXPECT_FALSE(o.up);
  EXPECT_FALSE(o.exposition_error);
  EXPECT_EQ(o.stale_markers, 2U);
  EXPECT_EQ(Samples(Series("up")).back().value, 0);
  // A second failure has nothing left to mark.
  EXPECT_EQ(in.Fail(Status(StatusCode::kUnavailable, "x"), kT0 + 2000, 0).stale_markers, 0U);
  EXPECT_EQ(Samples(Series("up")).size(), 3U);
}

TEST_F(IngesterTest, EndOfRunMarksEverythingStaleSyntheticSeriesToo) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a 1\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  in.EndOfRun(kT0 + 10);
  for (const char* name : {"a", "up", "scrape_duration_seconds", "scrape_samples_scraped",
                           "scrape_samples_post_metric_relabeling", "scrape_series_added"}) {
    const auto s = Samples(Series(name));
    ASSERT_EQ(s.size(), 2U) << name;
    EXPECT_EQ(s[1].t_ms, kT0 + 10) << name;
    EXPECT_TRUE(store::IsStaleNaN(s[1].value)) << name;
  }
}

TEST_F(IngesterTest, ExplicitTimestampsAreHonouredByDefault) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a 1 1764679000000\nb 2\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  EXPECT_EQ(Samples(Series("a"))[0].t_ms, 1764679000000);
  EXPECT_EQ(Samples(Series("b"))[0].t_ms, kT0);
  // Not tracked for staleness (as in Prometheus): no marker when it goes.
  EXPECT_EQ(in.Ingest("b 2\n", expfmt::Format::kPrometheusText, kT0 + 1000, 0).stale_markers, 0U);

  CapturingAppendable other;
  Ingester ignoring(other, {{"job", "j"}}, {.honor_timestamps = false});
  ASSERT_TRUE(ignoring.Ingest("a 1 1764679000000\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  EXPECT_EQ(other.Samples(R"(a{job="j"})")[0].t_ms, kT0);
}

TEST_F(IngesterTest, ADuplicateSeriesKeepsTheFirstValue) {
  Ingester in = Make();
  const ScrapeOutcome o = in.Ingest("a 1\na 2\n", expfmt::Format::kPrometheusText, kT0, 0);
  EXPECT_TRUE(o.up);
  EXPECT_EQ(o.samples, 2U);
  EXPECT_EQ(o.duplicates, 1U);
  EXPECT_EQ(Samples(Series("a")).size(), 1U);
  EXPECT_EQ(Samples(Series("a"))[0].value, 1);
}

// Prometheus's sample_limit: more samples than the limit after metric
// relabeling fail the whole scrape (nothing of it kept, the previous
// series marked stale, up 0).
TEST_F(IngesterTest, MoreSamplesThanTheSampleLimitFailTheScrape) {
  Result<std::vector<model::RelabelRule>> drop_b =
      ParseRelabelConfigs("[{source_labels: [__name__], regex: b, action: drop}]", "m.yaml");
  ASSERT_TRUE(drop_b.has_value());
  IngestOptions options{.metric_relabel = *drop_b};
  options.limits.sample_limit = 3;
  Ingester in = Make(options);
  // 4 samples scraped, 3 after relabeling: within the limit.
  const ScrapeOutcome ok =
      in.Ingest("a 1\nb 2\nc 3\nd 4\n", expfmt::Format::kPrometheusText, kT0, 0);
  ASSERT_TRUE(ok.up) << ok.error.message();
  EXPECT_EQ(ok.exceeded, LimitExceeded::kNone);

  const ScrapeOutcome o =
      in.Ingest("a 1\nb 2\nc 3\nd 4\ne 5\n", expfmt::Format::kPrometheusText, kT0 + 1000, 0);
  EXPECT_FALSE(o.up);
  EXPECT_EQ(o.exceeded, LimitExceeded::kSampleLimit);
  EXPECT_FALSE(o.exposition_error);
  EXPECT_EQ(o.error.message(),
            "sample limit exceeded: more than 3 samples after metric relabeling (sample_limit)");
  EXPECT_EQ(Samples(Series("e")).size(), 0U);
  ASSERT_EQ(Samples(Series("a")).size(), 2U);
  EXPECT_TRUE(store::IsStaleNaN(Samples(Series("a"))[1].value));
  EXPECT_EQ(Samples(Series("up")).back().value, 0);
  EXPECT_EQ(LimitExceededName(LimitExceeded::kSampleLimit), "sample_limit");
}

// label_limit, label_name_length_limit, label_value_length_limit: checked on
// each new series after relabeling, target labels and __name__ included; one
// over a limit fails the scrape, with Prometheus's message.
TEST_F(IngesterTest, ASeriesOverALabelLimitFailsTheScrape) {
  struct Case {
    ScrapeLimits limits;
    std::string body;
    std::string error;
  };
  const Case cases[] = {
      {{.label_limit = 4},
       "m{a=\"1\"} 1\nm{a=\"1\",b=\"2\"} 1\n",
       "label_limit exceeded (metric: m, number of labels: 5, limit: 4)"},
      {{.label_name_length_limit = 8},
       "m{gpu=\"1\"} 1\nm{long_name=\"1\"} 1\n",
       "label_name_length_limit exceeded (metric: m, label name: long_name, length: 9, "
       "limit: 8)"},
      {{.label_value_length_limit = 10},
       "m{gpu=\"0123456789\"} 1\nm{gpu=\"0123456789x\"} 1\n",
       "label_value_length_limit exceeded (metric: m, label name: gpu, value: \"0123456789x\", "
       "length: 11, limit: 10)"},
  };
  for (const Case& c : cases) {
    CapturingAppendable store;
    IngestOptions options;
    options.limits = c.limits;
    Ingester in(store, {{"instance", "h:9400"}, {"job", "dcgm"}}, options);
    const ScrapeOutcome o = in.Ingest(c.body, expfmt::Format::kPrometheusText, kT0, 0);
    EXPECT_FALSE(o.up) << c.error;
    EXPECT_EQ(o.exceeded, LimitExceeded::kLabelLimits) << c.error;
    EXPECT_EQ(o.error.message(), c.error);
    EXPECT_EQ(store.Samples(R"(up{instance="h:9400",job="dcgm"})").back().value, 0);
    std::size_t with_samples = 0;
    for (const auto& [series, samples] : store.All()) with_samples += samples.empty() ? 0U : 1U;
    EXPECT_EQ(with_samples, 5U) << c.error;  // only the synthetic series
  }
}

// Prometheus drops an honoured timestamp more than 10 minutes ahead of the
// scrape (storage.ErrOutOfBounds) and counts it; the rest of the scrape stays.
TEST_F(IngesterTest, AnHonouredTimestampFarInTheFutureIsOutOfBounds) {
  Ingester in = Make();
  const std::int64_t ahead = kT0 + 10 * 60 * 1000;
  const ScrapeOutcome o =
      in.Ingest("a 1 " + std::to_string(ahead) + "\nb 2 " + std::to_string(ahead + 1) + "\nc 3\n",
                expfmt::Format::kPrometheusText, kT0, 0);
  EXPECT_TRUE(o.up);
  EXPECT_EQ(o.out_of_bounds, 1U);
  EXPECT_EQ(o.post_relabel, 2U);
  EXPECT_EQ(Samples(Series("a")).size(), 1U);
  EXPECT_TRUE(Samples(Series("b")).empty());
  EXPECT_EQ(Samples(Series("c")).size(), 1U);
}

// The store's series limit: new series beyond it are refused and counted,
// the scrape goes on with the others.
TEST(IngesterStoreTest, SeriesBeyondTheStoresLimitAreCountedAndTheScrapeGoesOn) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gc_ingester_series_limit_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  store::StoreOptions options;
  options.max_series = 7;  // 5 synthetic series and 2 scraped ones
  options.sync_interval_ms = 0;
  {
    auto store = store::Store::Open(dir, options);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    Ingester in(**store, {{"job", "j"}}, {});
    ASSERT_TRUE(in.Ingest("a 1\n", expfmt::Format::kPrometheusText, kT0, 0).up);
    const ScrapeOutcome o =
        in.Ingest("a 1\nb 2\nc 3\nd 4\n", expfmt::Format::kPrometheusText, kT0 + 1000, 0);
    EXPECT_TRUE(o.up);
    EXPECT_EQ(o.rejected, 2U);
    EXPECT_EQ(o.post_relabel, 2U);
    EXPECT_EQ(o.store_error.message(), "series limit reached (7)");
    EXPECT_EQ((*store)->stats().head_series, 7U);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(IngesterTest, OpenMetricsNeedsEof) {
  Ingester in = Make();
  const ScrapeOutcome bad = in.Ingest("a 1\n", expfmt::Format::kOpenMetrics, kT0, 0);
  EXPECT_FALSE(bad.up);
  EXPECT_EQ(bad.error.message(), "data does not end with # EOF");
  EXPECT_TRUE(in.Ingest("a 1\n# EOF\n", expfmt::Format::kOpenMetrics, kT0 + 1000, 0).up);
}

TEST(FormatForContentTypeTest, PicksTheParserAsPrometheusDoes) {
  EXPECT_EQ(FormatForContentType("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            expfmt::Format::kOpenMetrics);
  EXPECT_EQ(FormatForContentType("Application/OpenMetrics-Text"), expfmt::Format::kOpenMetrics);
  EXPECT_EQ(FormatForContentType("text/plain; version=0.0.4"), expfmt::Format::kPrometheusText);
  EXPECT_EQ(FormatForContentType("text/plain; charset=utf-8"), expfmt::Format::kPrometheusText);
  EXPECT_EQ(FormatForContentType(""), expfmt::Format::kPrometheusText);
}

TEST_F(IngesterTest, NaNValuesAreNotStaleMarkers) {
  Ingester in = Make();
  ASSERT_TRUE(in.Ingest("a NaN\n", expfmt::Format::kPrometheusText, kT0, 0).up);
  const double v = Samples(Series("a"))[0].value;
  EXPECT_TRUE(std::isnan(v));
  EXPECT_FALSE(store::IsStaleNaN(v));
}

TEST_F(IngesterTest, ChurningSeriesDoNotGrowTheCacheForever) {
  Ingester in = Make();
  for (int scrape = 0; scrape < 12; ++scrape) {
    std::string body;
    for (int i = 0; i < 500; ++i) {
      body += "m{pod=\"p" + std::to_string(scrape) + "-" + std::to_string(i) + "\"} 1\n";
    }
    ASSERT_TRUE(in.Ingest(body, expfmt::Format::kPrometheusText, kT0 + scrape * 1000, 0).up);
    EXPECT_LE(in.cached_series(), 3000U);
  }
  // Staleness still works after compaction.
  const ScrapeOutcome o = in.Ingest("x 1\n", expfmt::Format::kPrometheusText, kT0 + 20'000, 0);
  EXPECT_EQ(o.stale_markers, 500U);
}

}  // namespace
}  // namespace gpucanary::scrape
