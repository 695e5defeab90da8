#include "vocab/service_measures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "expfmt/reader.h"

namespace gpucanary::vocab {
namespace {

// What one committed exposition holds: each family's type, and each sample
// name with the label sets it was seen with.
struct Exposition {
  std::map<std::string, model::MetricType> families;
  std::map<std::string, std::vector<std::map<std::string, std::string>>> samples;
};

Exposition Read(const std::string& file) {
  Exposition out;
  const std::string path = std::string(GPUCANARY_SOURCE_DIR) + "/src/vocab/testdata/" + file;
  Result<expfmt::ReadReport> report = expfmt::ReadFile(
      path, {}, [&](const expfmt::SampleView& s, std::string_view family, model::MetricType type) {
        out.families[std::string(family)] = type;
        std::map<std::string, std::string> labels;
        for (const model::LabelView& l : s.labels) {
          labels[std::string(l.name)] = std::string(l.value);
        }
        out.samples[std::string(s.name)].push_back(std::move(labels));
      });
  EXPECT_TRUE(report.has_value()) << path;
  if (report.has_value()) {
    EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages.front());
  }
  return out;
}

const std::map<Server, std::string>& Fixtures() {
  static const std::map<Server, std::string> files = {
      {Server::kVllm, "vllm.prom"},
      {Server::kVllmLegacy, "vllm_legacy.prom"},
      {Server::kSglang, "sglang.prom"},
      {Server::kTgi, "tgi.prom"},
      {Server::kTritonTrtllm, "triton_trtllm.prom"},
  };
  return files;
}

bool HasSample(const Exposition& e, const std::string& name, const LabelSelector& sel) {
  auto it = e.samples.find(name);
  if (it == e.samples.end()) return false;
  if (sel.empty()) return true;
  for (const auto& labels : it->second) {
    auto l = labels.find(std::string(sel.name));
    if (l != labels.end() && l->second == sel.value) return true;
  }
  return false;
}

// Every row of every server names samples its server's real exposition has,
// of the type the row says, carrying the row's label selector.
TEST(ServiceMeasuresTest, EveryRowResolvesInItsServersExposition) {
  for (const auto& [server, file] : Fixtures()) {
    SCOPED_TRACE(file);
    const Exposition e = Read(file);
    int rows = 0;
    for (const ServiceMetric& row : ServiceMetrics()) {
      if (row.server != server) continue;
      ++rows;
      SCOPED_TRACE(std::string(row.metric));
      for (const std::string& name : SampleNames(row)) {
        EXPECT_TRUE(HasSample(e, name, row.selector)) << name;
      }
      const std::string metric(row.metric);
      switch (row.type) {
        case SourceType::kHistogram:
          EXPECT_EQ(e.families.at(metric), model::MetricType::kHistogram);
          break;
        case SourceType::kGauge:
          EXPECT_EQ(e.families.at(metric), model::MetricType::kGauge);
          break;
        case SourceType::kCounter:
        case SourceType::kCounterRatio:
          // A counter, or the _sum of a histogram (cumulative as well).
          if (e.families.contains(metric)) {
            EXPECT_EQ(e.families.at(metric), model::MetricType::kCounter);
          } else {
            ASSERT_TRUE(metric.ends_with("_sum"));
            EXPECT_EQ(e.families.at(metric.substr(0, metric.size() - 4)),
                      model::MetricType::kHistogram);
          }
          break;
      }
      EXPECT_GT(row.scale, 0);
    }
    EXPECT_GE(rows, 4);
  }
}

TEST(ServiceMeasuresTest, DetectsEachServerFromItsExposition) {
  for (const auto& [server, file] : Fixtures()) {
    const Exposition e = Read(file);
    std::vector<std::string> names;
    for (const auto& [family, type] : e.families) names.push_back(family);
    EXPECT_EQ(DetectServer(names), server) << file;
  }
  EXPECT_EQ(DetectServer(std::vector<std::string>{"DCGM_FI_DEV_SM_CLOCK"}), std::nullopt);
  // vLLM 0.11 serves the deprecated name beside the new one: current.
  EXPECT_EQ(DetectServer(std::vector<std::string>{"vllm:time_per_output_token_seconds",
                                                  "vllm:inter_token_latency_seconds"}),
            Server::kVllm);
}

// One row per (server, measure) at most; the per-token latency, the tokens
// and the end-to-end latency every server has.
TEST(ServiceMeasuresTest, TableShape) {
  std::set<std::pair<Server, ServiceMeasure>> seen;
  for (const ServiceMetric& row : ServiceMetrics()) {
    EXPECT_TRUE(seen.insert({row.server, row.measure}).second) << row.metric;
    EXPECT_EQ(row.type == SourceType::kCounterRatio, !row.denominator.empty()) << row.metric;
  }
  for (const Word<Server>& s : Words<Server>()) {
    for (ServiceMeasure m : {ServiceMeasure::kPerTokenLatency, ServiceMeasure::kGeneratedTokens,
                             ServiceMeasure::kE2eLatency, ServiceMeasure::kQueueDepth}) {
      EXPECT_NE(FindServiceMetric(s.value, m), nullptr) << s.name << " " << Name(m);
    }
  }
  EXPECT_EQ(FindServiceMetric(Server::kTgi, ServiceMeasure::kTimeToFirstToken), nullptr);
  // The running batch: every server but TGI, whose batch size gauge is not
  // in its published exposition.
  for (Server s : {Server::kVllm, Server::kVllmLegacy, Server::kSglang, Server::kTritonTrtllm}) {
    EXPECT_NE(FindServiceMetric(s, ServiceMeasure::kRunningRequests), nullptr) << s;
  }
  EXPECT_EQ(FindServiceMetric(Server::kTgi, ServiceMeasure::kRunningRequests), nullptr);
  EXPECT_EQ(MeasureUnit(ServiceMeasure::kRunningRequests), "requests");
  EXPECT_EQ(Parse<ServiceMeasure>("per_token_latency"), ServiceMeasure::kPerTokenLatency);
  EXPECT_EQ(Parse<Server>("triton_trtllm"), Server::kTritonTrtllm);
  EXPECT_EQ(MeasureUnit(ServiceMeasure::kKvCacheUsage), "fraction");
}

// Counters without "_total" (TGI, Triton) that an OpenMetrics recording
// writes as `unknown`: the readers take them as counters.
TEST(ServiceMeasuresTest, CountersWithoutTotalAreKnown) {
  EXPECT_TRUE(IsServiceCounter("nv_inference_request_duration_us"));
  EXPECT_TRUE(IsServiceCounter("nv_inference_request_success"));
  EXPECT_TRUE(IsServiceCounter("nv_llm_output_token_len_sum"));
  EXPECT_TRUE(IsServiceCounter("vllm:generation_tokens_total"));
  EXPECT_TRUE(IsServiceCounter("tgi_request_generated_tokens_sum"));
  EXPECT_FALSE(IsServiceCounter("tgi_queue_size"));                    // a gauge
  EXPECT_FALSE(IsServiceCounter("vllm:inter_token_latency_seconds"));  // a histogram family
  EXPECT_FALSE(IsServiceCounter("DCGM_FI_DEV_SM_CLOCK"));
}

}  // namespace
}  // namespace gpucanary::vocab
