#include "scrape/prometheus_sd.h"

#include <gtest/gtest.h>

namespace gpucanary::scrape {
namespace {

// The shape of Prometheus 2.42's /api/v1/targets?state=active answer.
constexpr std::string_view kAnswer = R"({"status":"success","data":{"activeTargets":[
 {"discoveredLabels":{"__address__":"10.0.0.1:9400","__metrics_path__":"/metrics",
   "__scheme__":"http","job":"dcgm","__meta_kubernetes_pod_node_name":"gpu-node-1"},
  "labels":{"instance":"10.0.0.1:9400","job":"dcgm","node":"n1"},
  "scrapePool":"dcgm","scrapeUrl":"http://10.0.0.1:9400/metrics","globalUrl":"http://x:9400/metrics",
  "lastError":"","lastScrape":"2025-12-02T12:00:00Z","lastScrapeDuration":0.01,"health":"up",
  "scrapeInterval":"15s","scrapeTimeout":"10s"},
 {"labels":{"instance":"10.0.0.2:8000","job":"vllm"},"scrapeUrl":"http://10.0.0.2:8000/metrics"},
 {"labels":{"instance":"[::1]:9400","job":"dcgm"},"scrapeUrl":"http://[::1]:9400/m?x=1"},
 {"labels":{"instance":"s:9400","job":"dcgm"},"scrapeUrl":"https://s:9400/metrics"}
],"droppedTargets":[]}})";

TEST(PrometheusSdTest, KeepsTheJobsActiveTargetsWithTheirLabels) {
  std::vector<Status> skipped;
  Result<std::vector<TargetGroup>> g =
      ParsePrometheusTargets(kAnswer, "dcgm", "http://prom:9090", &skipped);
  ASSERT_TRUE(g.has_value()) << g.error().message();
  ASSERT_EQ(g->size(), 3U);
  EXPECT_EQ((*g)[0].targets, (std::vector<std::string>{"10.0.0.1:9400"}));
  EXPECT_EQ((*g)[0].labels, (LabelPairs{{"__metrics_path__", "/metrics"},
                                        {"instance", "10.0.0.1:9400"},
                                        {"node", "n1"},
                                        {"__meta_kubernetes_pod_node_name", "gpu-node-1"}}));
  EXPECT_EQ((*g)[1].targets, (std::vector<std::string>{"[::1]:9400"}));
  EXPECT_EQ((*g)[2].targets, (std::vector<std::string>{"s:9400"}));
  EXPECT_EQ((*g)[2].labels, (LabelPairs{{"__metrics_path__", "/metrics"},
                                        {"__scheme__", "https"},
                                        {"instance", "s:9400"}}));
  EXPECT_TRUE(skipped.empty());

  // Turned into targets, they are ours: our job name, their instance and labels.
  JobConfig job;
  job.job_name = "gpus";
  std::vector<Target> t = MakeTargets(job, *g, nullptr);
  ASSERT_EQ(t.size(), 3U);
  EXPECT_EQ(t[0].url, "http://10.0.0.1:9400/metrics");
  EXPECT_EQ(t[0].labels,
            (model::Labels{{"instance", "10.0.0.1:9400"}, {"job", "gpus"}, {"node", "n1"}}));
  EXPECT_EQ(t[1].url, "http://[::1]:9400/m?x=1");
  EXPECT_EQ(t[2].url, "https://s:9400/metrics");
  EXPECT_TRUE(t[2].https);

  Result<std::vector<TargetGroup>> all = ParsePrometheusTargets(kAnswer, "", "p", nullptr);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), 4U);
}

TEST(PrometheusSdTest, RejectsAnswersThatAreNotTargets) {
  for (const char* bad :
       {"not json", R"({"status":"error","error":"x"})", R"({"status":"success","data":{}})",
        R"({"status":{"activeTargets":[]}})", R"({"status":1})", R"([{"status":"success"}])",
        R"({"status":"success","data":{"activeTargets":[{"labels":{}}]}})"}) {
    Result<std::vector<TargetGroup>> g = ParsePrometheusTargets(bad, "", "http://p", nullptr);
    ASSERT_FALSE(g.has_value()) << bad;
    EXPECT_EQ(g.error().code(), StatusCode::kParseError);
    EXPECT_EQ(g.error().message().rfind("http://p/api/v1/targets: ", 0), 0U);
  }
}

}  // namespace
}  // namespace gpucanary::scrape
