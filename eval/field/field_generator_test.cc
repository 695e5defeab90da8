// The field generator writes what a recorder of a real fleet would: valid
// recordings (gpucanary check's reader), dcgm-exporter's names and label
// order, vLLM's names, physics that holds (power at or under the enforced
// limit while SW power cap is set), and fields the case leaves out really
// absent. The judge's accuracy on the suite is field_suite's job, not this.

#include "eval/field/field_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "analysis/replay/replay.h"
#include "eval/field/field_case.h"
#include "expfmt/reader.h"

namespace gpucanary::eval::field {
namespace {

class FieldGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("field_generator_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The first case of `cls` in the default suite, shortened to `duration` s
  // and to 4 GPUs a node (tensor parallelism at most 4) to keep the test quick.
  static FieldCase CaseOf(CaseClass cls, double duration = 150) {
    for (FieldCase& c : MakeSuite(1, 56)) {
      if (c.cls == cls) {
        c.duration_s = duration;
        c.gpus_per_node = 4;
        c.model.tp = std::min(c.model.tp, 4);
        if (c.pcie_gpu >= 4) c.pcie_gpu = 3;
        for (HwEpisode& h : c.hw) h.gpu = std::min(h.gpu, 3);
        return c;
      }
    }
    ADD_FAILURE() << "no case of class " << ClassName(cls);
    return {};
  }

  CaseFiles Generate(const FieldCase& c) {
    const std::string dir = (dir_ / c.name).string();
    std::filesystem::create_directories(dir);
    Result<CaseFiles> files = GenerateCase(c, dir);
    EXPECT_TRUE(files.has_value()) << (files ? "" : files.error().message());
    return files ? *files : CaseFiles{};
  }

  std::filesystem::path dir_;
};

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<std::string> label_order;
  double value = 0;
  std::int64_t ts_ms = 0;
};

// Every sample of a recording, through the reader `gpucanary check` uses; the
// file must be valid OpenMetrics with a timestamp on every sample.
std::vector<Sample> ReadAll(const std::string& path) {
  std::vector<Sample> out;
  expfmt::ReadOptions options;
  Result<expfmt::ReadReport> report = expfmt::ReadFile(
      path, options, [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
        Sample x;
        x.name = std::string(s.name);
        for (const auto& l : s.labels) {
          x.labels[std::string(l.name)] = std::string(l.value);
          x.label_order.emplace_back(l.name);
        }
        x.value = s.value;
        EXPECT_TRUE(s.has_timestamp()) << path << ": " << x.name;
        x.ts_ms = s.timestamp_ms;
        out.push_back(std::move(x));
      });
  EXPECT_TRUE(report.has_value());
  if (!report) return out;
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(report->format, expfmt::Format::kOpenMetrics) << path;
  EXPECT_GT(report->stats.samples, 0u);
  return out;
}

bool Has(const std::vector<Sample>& s, std::string_view prefix) {
  return std::any_of(s.begin(), s.end(),
                     [&](const Sample& x) { return x.name.rfind(prefix, 0) == 0; });
}

TEST_F(FieldGeneratorTest, SuiteIsDeterministicAndLabelled) {
  const std::vector<FieldCase> a = MakeSuite(7, 56);
  const std::vector<FieldCase> b = MakeSuite(7, 56);
  ASSERT_EQ(a.size(), 56u);
  std::set<CaseClass> classes;
  std::set<std::string> names;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].rps, b[i].rps);
    EXPECT_EQ(a[i].hosts, b[i].hosts);
    classes.insert(a[i].cls);
    EXPECT_TRUE(names.insert(a[i].name).second) << a[i].name;
    EXPECT_GE(a[i].nodes, 4);
    EXPECT_LE(a[i].nodes, 8);
    EXPECT_GE(a[i].nodes - static_cast<int>(a[i].canary.size()), 2);
    EXPECT_GE(a[i].duration_s, 360);
    if (a[i].expect == Expect::kFail) {
      EXPECT_EQ(a[i].scope, "release") << a[i].name;
      EXPECT_FALSE(a[i].kinds.empty()) << a[i].name;
    }
  }
  EXPECT_EQ(classes.size(), AllClasses().size());
  EXPECT_NE(MakeSuite(8, 56)[0].rps, a[0].rps);
}

TEST_F(FieldGeneratorTest, RecordingsAreValidDcgmExporterAndVllm) {
  FieldCase c = CaseOf(CaseClass::kAa);
  c.expo = Exposition{};  // every optional field, Hostname, pods
  const CaseFiles files = Generate(c);
  const std::vector<Sample> base = ReadAll(files.baseline);
  const std::vector<Sample> canary = ReadAll(files.canary);
  const std::regex bus("^00000000:[0-9A-F]{2}:00\\.0$");
  const std::regex uuid("^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$");
  std::set<std::string> canary_hosts, base_hosts, families;
  for (const auto* samples : {&base, &canary}) {
    for (const Sample& s : *samples) {
      if (s.name.rfind("DCGM_", 0) == 0) {
        families.insert(s.name);
        // dcgm-exporter's fixed label prefix, in its order (reference §1.3).
        ASSERT_GE(s.label_order.size(), 7u) << s.name;
        EXPECT_EQ(s.label_order[0], "gpu");
        EXPECT_EQ(s.label_order[1], "UUID");
        EXPECT_EQ(s.label_order[2], "pci_bus_id");
        EXPECT_EQ(s.label_order[3], "device");
        EXPECT_EQ(s.label_order[4], "modelName");
        EXPECT_EQ(s.label_order[5], "Hostname");
        EXPECT_EQ(s.label_order[6], "DCGM_FI_DRIVER_VERSION");
        EXPECT_EQ(s.labels.at("device"), "nvidia" + s.labels.at("gpu"));
        EXPECT_TRUE(std::regex_match(s.labels.at("pci_bus_id"), bus)) << s.labels.at("pci_bus_id");
        EXPECT_TRUE(std::regex_match(s.labels.at("UUID"), uuid)) << s.labels.at("UUID");
        EXPECT_EQ(s.labels.at("modelName"), c.sku->model_name);
        (samples == &canary ? canary_hosts : base_hosts).insert(s.labels.at("Hostname"));
        // Values are never DCGM blank sentinels or negative.
        EXPECT_GE(s.value, 0) << s.name;
        EXPECT_LT(s.value, 1e15) << s.name;
        if (s.name.rfind("DCGM_FI_PROF_", 0) == 0 && s.name.find("BYTES") == std::string::npos) {
          EXPECT_LE(s.value, 1.0) << s.name;
        }
      } else {
        ASSERT_EQ(s.name.rfind("vllm:", 0), 0u) << s.name;
        EXPECT_TRUE(s.labels.count("model_name")) << s.name;
        EXPECT_EQ(s.labels.at("job"), "vllm");
        EXPECT_TRUE(s.labels.count("instance"));
        EXPECT_TRUE(s.labels.count("engine"));
      }
    }
  }
  EXPECT_EQ(canary_hosts.size(), c.canary.size());
  EXPECT_EQ(base_hosts.size(), static_cast<std::size_t>(c.nodes) - c.canary.size());
  for (const int n : c.canary)
    EXPECT_TRUE(canary_hosts.count(c.hosts[static_cast<std::size_t>(n)]));
  for (const char* f : {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
                        "DCGM_FI_DEV_PCIE_LINK_WIDTH", "DCGM_FI_PROF_DRAM_ACTIVE",
                        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY"}) {
    EXPECT_TRUE(families.count(f)) << f;
  }
  // No Xid happened: field 230 is blank, so absent (exporter 4.5.3+).
  EXPECT_FALSE(families.count("DCGM_FI_DEV_XID_ERRORS"));
  for (const char* v :
       {"vllm:generation_tokens_total", "vllm:inter_token_latency_seconds_bucket",
        "vllm:e2e_request_latency_seconds_count", "vllm:time_to_first_token_seconds_sum",
        "vllm:num_requests_running", "vllm:kv_cache_usage_perc"}) {
    EXPECT_TRUE(Has(base, v)) << v;
    EXPECT_TRUE(Has(canary, v)) << v;
  }
  // The replay the judge uses reads them: every GPU, in its arm.
  Result<std::unique_ptr<analysis::Replay>> replay =
      analysis::Replay::Open({{files.baseline, analysis::Role::kBaseline, std::nullopt},
                              {files.canary, analysis::Role::kCanary, std::nullopt}});
  ASSERT_TRUE(replay.has_value());
  analysis::Tick tick;
  int ticks = 0;
  for (;;) {
    Result<bool> more = (*replay)->Next(tick);
    ASSERT_TRUE(more.has_value()) << more.error().message();
    if (!*more) break;
    ++ticks;
  }
  EXPECT_NEAR(ticks, c.duration_s, 2);
  EXPECT_EQ(static_cast<int>((*replay)->gpus().size()), c.nodes * c.gpus_per_node);
  int canary_gpus = 0;
  for (const analysis::GpuInfo& g : (*replay)->gpus()) {
    canary_gpus += g.role == analysis::Role::kCanary ? 1 : 0;
  }
  EXPECT_EQ(canary_gpus, static_cast<int>(c.canary.size()) * c.gpus_per_node);
  EXPECT_EQ(files.release_unix_s - files.start_unix_s, static_cast<std::int64_t>(c.release_s));
}

TEST_F(FieldGeneratorTest, PowerStaysUnderTheLimitWhileCapped) {
  FieldCase c = CaseOf(CaseClass::kFacilityPowerCap, 300);
  c.expo = Exposition{};
  c.cap_start_s = 20;
  const CaseFiles files = Generate(c);
  for (const std::string& path : {files.baseline, files.canary}) {
    std::map<std::pair<std::string, std::int64_t>, double> power, limit, reasons;
    for (const Sample& s : ReadAll(path)) {
      if (s.name.rfind("DCGM_", 0) != 0) continue;
      const auto key =
          std::make_pair(s.labels.at("Hostname") + "/" + s.labels.at("gpu"), s.ts_ms / 1000);
      if (s.name == "DCGM_FI_DEV_POWER_USAGE") power[key] = s.value;
      if (s.name == "DCGM_FI_DEV_ENFORCED_POWER_LIMIT") limit[key] = s.value;
      if (s.name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") reasons[key] = s.value;
    }
    int capped = 0;
    double over_sum = 0;
    for (const auto& [key, r] : reasons) {
      if ((static_cast<std::int64_t>(r) & 0x4) == 0) continue;
      ASSERT_TRUE(power.count(key) && limit.count(key));
      ++capped;
      // A 1 s average regulated to the limit: within the sensor's noise.
      EXPECT_LE(power[key], limit[key] * 1.02) << key.first << " at " << key.second;
      over_sum += power[key] - limit[key];
    }
    EXPECT_GT(capped, 100) << path;
    EXPECT_LE(over_sum / std::max(capped, 1), 0.0) << "mean power above the limit";
    // The facility limit is the one enforced after the cap starts.
    const double after = limit.rbegin()->second;
    EXPECT_DOUBLE_EQ(after, c.cap_limit_w);
  }
}

TEST_F(FieldGeneratorTest, MissingFieldsAreAbsentNotZero) {
  FieldCase c = CaseOf(CaseClass::kMissingFields);
  c.expo = Exposition{};
  c.expo.throttle_field = false;
  c.expo.max_link_fields = false;
  c.expo.prof_fields = false;
  c.expo.power_limit_fields = false;
  c.expo.model_name_label = false;
  c.expo.host_label = 1;
  c.expo.exporter_gaps.push_back({c.canary[0], 80, 20});
  const CaseFiles files = Generate(c);
  for (const std::string& path : {files.baseline, files.canary}) {
    const std::vector<Sample> s = ReadAll(path);
    EXPECT_FALSE(Has(s, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
    EXPECT_FALSE(Has(s, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
    EXPECT_FALSE(Has(s, "DCGM_FI_DEV_PCIE_MAX_LINK"));
    EXPECT_FALSE(Has(s, "DCGM_FI_PROF_"));
    EXPECT_FALSE(Has(s, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"));
    EXPECT_TRUE(Has(s, "DCGM_FI_DEV_PCIE_LINK_WIDTH"));
    for (const Sample& x : s) {
      if (x.name.rfind("DCGM_", 0) != 0) continue;
      EXPECT_FALSE(x.labels.count("modelName"));
      EXPECT_FALSE(x.labels.count("Hostname"));
      ASSERT_TRUE(x.labels.count("hostname"));
    }
  }
  // The exporter restart on the canary node: no DCGM sample at all in the gap.
  const std::string host = c.hosts[static_cast<std::size_t>(c.canary[0])];
  int in_gap = 0, around = 0;
  for (const Sample& x : ReadAll(files.canary)) {
    if (x.name.rfind("DCGM_", 0) != 0 || x.labels.at("hostname") != host) continue;
    const double t = static_cast<double>(x.ts_ms / 1000 - files.start_unix_s);
    in_gap += t >= 80 && t < 100 ? 1 : 0;
    around += (t >= 60 && t < 80) || (t >= 100 && t < 120) ? 1 : 0;
  }
  EXPECT_EQ(in_gap, 0);
  EXPECT_GT(around, 0);
}

TEST_F(FieldGeneratorTest, LabelAndNameVariants) {
  FieldCase c = CaseOf(CaseClass::kMissingFields);
  c.expo = Exposition{};
  c.expo.dcgm46_names = 2;  // canary nodes only
  c.expo.host_label = 2;    // canary hostname, baseline Hostname
  c.expo.vllm_legacy = true;
  const CaseFiles files = Generate(c);
  const std::vector<Sample> base = ReadAll(files.baseline);
  const std::vector<Sample> canary = ReadAll(files.canary);
  EXPECT_TRUE(Has(canary, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
  EXPECT_TRUE(Has(canary, "DCGM_FI_DEV_GPU_TEMP_CELSIUS"));
  EXPECT_TRUE(Has(canary, "DCGM_FI_PROF_DRAM_UTIL_RATIO"));
  EXPECT_FALSE(Has(canary, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
  EXPECT_TRUE(Has(base, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
  EXPECT_FALSE(Has(base, "DCGM_FI_DEV_GPU_TEMP_CELSIUS"));
  for (const Sample& x : canary) {
    if (x.name.rfind("DCGM_", 0) == 0) {
      EXPECT_TRUE(x.labels.count("hostname"));
    }
  }
  for (const Sample& x : base) {
    if (x.name.rfind("DCGM_", 0) == 0) {
      EXPECT_TRUE(x.labels.count("Hostname"));
    }
  }
  // vLLM 0.10: per-token latency under its old name, no engine label.
  EXPECT_TRUE(Has(base, "vllm:time_per_output_token_seconds_bucket"));
  EXPECT_FALSE(Has(base, "vllm:inter_token_latency_seconds"));
  EXPECT_TRUE(Has(base, "vllm:gpu_cache_usage_perc"));
}

TEST_F(FieldGeneratorTest, CanaryThatNeverComesUpHasNoServerSeriesAndIdleGpus) {
  FieldCase c = CaseOf(CaseClass::kCanaryIdle, 200);
  c.expo = Exposition{};
  c.idle_mode = 2;
  const CaseFiles files = Generate(c);
  int vllm_after = 0, vllm_before = 0, busy_after = 0, idle_after = 0;
  for (const Sample& x : ReadAll(files.canary)) {
    const auto t = static_cast<double>(x.ts_ms / 1000 - files.start_unix_s);
    if (x.name.rfind("vllm:", 0) == 0) {
      (t >= c.release_s ? vllm_after : vllm_before) += 1;
    }
    if (x.name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" && t > c.release_s + 30) {
      (static_cast<std::int64_t>(x.value) & 0x1 ? idle_after : busy_after) += 1;
    }
  }
  EXPECT_GT(vllm_before, 0);
  EXPECT_EQ(vllm_after, 0);
  EXPECT_EQ(busy_after, 0);
  EXPECT_GT(idle_after, 0);
}

TEST_F(FieldGeneratorTest, PcieDowntrainShowsOnOneCanaryGpuOnly) {
  FieldCase c = CaseOf(CaseClass::kPcieDowntrain);
  const CaseFiles files = Generate(c);
  const std::string host = c.hosts[static_cast<std::size_t>(c.canary[0])];
  std::set<std::string> narrow;
  for (const std::string& path : {files.baseline, files.canary}) {
    const std::vector<Sample> s = ReadAll(path);
    EXPECT_FALSE(Has(s, "DCGM_FI_DEV_PCIE_MAX_LINK"));
    for (const Sample& x : s) {
      if (x.name != "DCGM_FI_DEV_PCIE_LINK_WIDTH" || x.value >= 16) continue;
      const std::string h =
          x.labels.count("Hostname") ? x.labels.at("Hostname") : x.labels.at("hostname");
      narrow.insert(h + "/" + x.labels.at("gpu"));
      EXPECT_GE(x.ts_ms / 1000 - files.start_unix_s, static_cast<std::int64_t>(c.release_s));
      EXPECT_EQ(x.value, c.pcie_width);
    }
  }
  EXPECT_EQ(narrow, std::set<std::string>{host + "/" + std::to_string(c.pcie_gpu)});
}

}  // namespace
}  // namespace gpucanary::eval::field
