#include "importers/dcgm_csv_importer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "importers/csv_importer.h"
#include "importers/import_test_util.h"
#include "recording/openmetrics_text.h"

namespace gpucanary::importers {
namespace {

using testing::ForEachLine;
using testing::ReadAll;
using testing::ReadLines;
using testing::TempPath;
using testing::WriteTempFile;

const std::string kTraceDir = std::string(GPUCANARY_SHARED_DIR) +
                              "/data/gpu-traces/atharvanihalani-gpu-telemetry-exploration/";

using testing::HelpLine;

Result<ImportReport> Import(const std::string& input, const std::filesystem::path& output,
                            const ImportOptions& options) {
  return testing::ImportInto(ImportDcgmCsv, input, output, options);
}

// ---- The atharvanihalani/gpu-telemetry-exploration traces (8x H100 SXM5, 10 Hz).
// Counts were computed independently from the CSVs with Python's csv module and
// agree with the README (ticks x 8 GPUs, empty cells, throttle_reasons counts).

struct TraceCase {
  const char* file;
  const char* output;  // .om or .om.gz
  std::uint64_t rows;
  std::uint64_t empty_cells;
  std::map<std::string, std::uint64_t> throttle_counts;  // value text -> samples
  std::vector<PhaseTransition> phases;
  std::int64_t first_ms;
  std::int64_t last_ms;
};

class DcgmCsvTraceTest : public ::testing::TestWithParam<TraceCase> {};

TEST_P(DcgmCsvTraceTest, ImportsEveryRowAndCell) {
  const TraceCase& trace = GetParam();
  const auto output = TempPath(trace.output);
  ImportOptions options;
  options.hostname = "h100-node";
  auto report = Import(kTraceDir + trace.file, output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();

  constexpr std::uint64_t kValueColumns = 16;
  EXPECT_EQ(report->rows_read, trace.rows);
  EXPECT_EQ(report->rows_imported, trace.rows);
  EXPECT_EQ(report->rows_skipped, 0u);
  EXPECT_EQ(report->missing_cells, trace.empty_cells);
  EXPECT_EQ(report->samples_written, trace.rows * kValueColumns - trace.empty_cells);
  EXPECT_EQ(report->imported_columns.size(), kValueColumns);
  EXPECT_TRUE(report->unknown_columns.empty());
  EXPECT_EQ(report->gpus.size(), 8u);
  EXPECT_EQ(report->gpus.front(), "h100-node/0");
  EXPECT_EQ(report->gpus.back(), "h100-node/7");
  EXPECT_EQ(report->first_timestamp_ms, trace.first_ms);
  EXPECT_EQ(report->last_timestamp_ms, trace.last_ms);
  ASSERT_EQ(report->phase_transitions.size(), trace.phases.size());
  EXPECT_EQ(report->phase_transitions_total, trace.phases.size());
  for (size_t i = 0; i < trace.phases.size(); ++i) {
    EXPECT_EQ(report->phase_transitions[i].phase, trace.phases[i].phase);
    EXPECT_EQ(report->phase_transitions[i].timestamp_ms, trace.phases[i].timestamp_ms);
  }

  // Read the recording back: every sample, the bitmask values, no phase metric.
  std::uint64_t samples = 0;
  std::map<std::string, std::uint64_t> throttle_counts;
  std::string last_line;
  bool phase_metric = false;
  ForEachLine(output, [&](std::string_view line) {
    last_line = line;
    if (line.starts_with("#")) return;
    ++samples;
    if (line.find("phase") != std::string_view::npos) phase_metric = true;
    if (line.starts_with("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{")) {
      const size_t value_end = line.rfind(' ');
      const size_t value_begin = line.rfind(' ', value_end - 1) + 1;
      ++throttle_counts[std::string(line.substr(value_begin, value_end - value_begin))];
    }
  });
  EXPECT_EQ(samples, report->samples_written);
  EXPECT_EQ(throttle_counts, trace.throttle_counts);
  EXPECT_FALSE(phase_metric);
  EXPECT_EQ(last_line, "# EOF");
}

INSTANTIATE_TEST_SUITE_P(Atharvanihalani, DcgmCsvTraceTest,
                         ::testing::Values(TraceCase{"b1_telemetry.csv",
                                                     "b1.om",
                                                     26272,
                                                     7,
                                                     {{"0", 26266}, {"1", 6}},
                                                     {{1775016266006, "init"},
                                                      {1775016270862, "loading"},
                                                      {1775016322653, "warmup"},
                                                      {1775016352678, "steady"}},
                                                     1775016266006,
                                                     1775016599984},
                                           TraceCase{"i4_telemetry.csv",
                                                     "i4.om.gz",
                                                     25632,
                                                     130,
                                                     {{"0", 24948}, {"1", 684}},
                                                     {{1775179875516, "init"},
                                                      {1775179875616, "loading"},
                                                      {1775179893350, "warmup"},
                                                      {1775179923299, "steady"},
                                                      {1775180197324, "cooldown"}},
                                                     1775179875516,
                                                     1775180202232},
                                           TraceCase{"e2_telemetry.csv",
                                                     "e2.om",
                                                     24216,
                                                     15,
                                                     {{"0", 12678}, {"1", 844}, {"4", 10694}},
                                                     {{1775088787826, "init"},
                                                      {1775088787927, "loading"},
                                                      {1775088797854, "warmup"},
                                                      {1775088827870, "steady"},
                                                      {1775089090103, "cooldown"}},
                                                     1775088787826,
                                                     1775089095011},
                                           TraceCase{"t3_telemetry.csv",
                                                     "t3.om",
                                                     26792,
                                                     4,
                                                     {{"0", 2499}, {"1", 289}, {"4", 24004}},
                                                     {{1775008423209, "init"},
                                                      {1775008423309, "warmup"},
                                                      {1775008490401, "steady"},
                                                      {1775008755975, "cooldown"}},
                                                     1775008423209,
                                                     1775008760822},
                                           TraceCase{"t6_telemetry.csv",
                                                     "t6.om",
                                                     27024,
                                                     8,
                                                     {{"0", 22223}, {"1", 215}, {"4", 4586}},
                                                     {{1775008997162, "init"},
                                                      {1775008997263, "warmup"},
                                                      {1775009063952, "steady"},
                                                      {1775009334094, "cooldown"}},
                                                     1775008997162,
                                                     1775009339039}));

TEST(DcgmCsvImporterTest, FirstRowOfB1Exactly) {
  const auto output = TempPath("b1_head.om");
  auto report = Import(kTraceDir + "b1_telemetry.csv", output, {});
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->gpus.front(), "b1_telemetry/0");  // default Hostname: the file's stem
  std::vector<std::string> head;
  ForEachLine(output, [&](std::string_view line) {
    if (head.size() < 48) head.emplace_back(line);
  });
  ASSERT_EQ(head.size(), 48u);
  // Row 1: 1775016266.006,init,0,NVIDIA H100 80GB HBM3,71.4,34,3,81559,0,0,0.0,0.0,5e-06,
  //        0.0,2016073,1902516,0,0,1,238749445947
  const std::string labels =
      R"({gpu="0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="b1_telemetry"})";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"DCGM_FI_DEV_POWER_USAGE", "71.4"},
      {"DCGM_FI_DEV_GPU_TEMP", "34"},
      {"DCGM_FI_DEV_FB_USED", "3"},
      {"DCGM_FI_DEV_FB_TOTAL", "81559"},
      {"DCGM_FI_DEV_GPU_UTIL", "0"},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "0"},
      {"DCGM_FI_PROF_SM_ACTIVE", "0"},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "0"},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "5e-06"},
      {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "0"},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "2016073"},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "1902516"},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", "0"},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES", "0"},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "1"},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "238749445947"},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [metric, value] = expected[i];
    EXPECT_EQ(head[3 * i], HelpLine(metric));
    const std::string type = metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" ? "unknown" : "gauge";
    EXPECT_EQ(head[3 * i + 1], "# TYPE " + metric + " " + type);
    EXPECT_EQ(head[3 * i + 2], metric + labels + " " + value + " 1775016266.006");
  }
}

// ---- Synthetic input: DCGM-name columns, an unknown column, every kind of bad row.

constexpr std::string_view kBadTrace =
    "timestamp,phase,gpu,gpu_model,power_w,DCGM_FI_DEV_SM_CLOCK,throttle_reasons,energy_mj,"
    "node_power_w\n"
    "1700000000.000,init,0,NVIDIA H100 80GB HBM3,70.5,345,1,1000,2000\n"        // 2
    "1700000000.000,init,1,NVIDIA H100 80GB HBM3,71,345,1,1100,2000\n"          // 3
    "1700000000.100,steady,0,NVIDIA H100 80GB HBM3,,1980,0,1070,2100\n"         // 4: empty power
    "1700000000.100,steady,1,NVIDIA H100 80GB HBM3,690.2,1755,4.5,1170,2100\n"  // 5: bitmask 4.5
    "1700000000.050,steady,0,NVIDIA H100 80GB HBM3,700,1755,4,1200,2100\n"     // 6: GPU 0 goes back
    "1700000000.200,steady,1,NVIDIA H100 80GB HBM3,695,1755,4,1240\n"          // 7: 8 of 9 cells
    "17000000x0.300,steady,1,NVIDIA H100 80GB HBM3,695,1755,4,1240,2100\n"     // 8: bad timestamp
    "1700000000.300,cooldown,1,NVIDIA H100 80GB HBM3,120,1980,1,1300,1000\n";  // 9

TEST(DcgmCsvImporterTest, StopsAtTheFirstBadRow) {
  const auto input = WriteTempFile("dcgm_bad.csv", kBadTrace);
  auto report = Import(input.string(), TempPath("dcgm_bad.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kParseError);
  EXPECT_EQ(report.error().message(),
            input.string() + ":5:58: field 'throttle_reasons': cannot parse \"4.5\" as a bitmask");
}

TEST(DcgmCsvImporterTest, SkipBadLinesCountsAndReportsThem) {
  const auto input = WriteTempFile("dcgm_bad.csv", kBadTrace);
  const auto output = TempPath("dcgm_skip.om");
  ImportOptions options;
  options.skip_bad_lines = true;
  options.hostname = "node-1";
  options.utc_offset_minutes = 600;  // must not matter: epoch timestamps are UTC
  auto report = Import(input.string(), output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->rows_read, 8u);
  EXPECT_EQ(report->rows_imported, 4u);
  EXPECT_EQ(report->rows_skipped, 4u);
  EXPECT_EQ(report->samples_written, 15u);
  EXPECT_EQ(report->missing_cells, 1u);
  EXPECT_EQ(report->unknown_columns, std::vector<std::string>{"node_power_w"});
  const std::string file = input.string();
  EXPECT_EQ(report->skipped_messages,
            (std::vector<std::string>{
                file + ":5:58: field 'throttle_reasons': cannot parse \"4.5\" as a bitmask",
                file + ":6:1: field 'timestamp': timestamp 2023-11-14T22:13:20.050Z goes back "
                       "before 2023-11-14T22:13:20.100Z, the previous row of GPU node-1/0",
                file + ":7:62: field 'node_power_w': missing: row has 8 cells, header has 9",
                file + ":8:1: field 'timestamp': cannot parse timestamp \"17000000x0.300\" as "
                       "Unix epoch seconds",
            }));
  ASSERT_EQ(report->phase_transitions.size(), 3u);
  EXPECT_EQ(report->phase_transitions[0].phase, "init");
  EXPECT_EQ(report->phase_transitions[0].timestamp_ms, 1700000000000);
  EXPECT_EQ(report->phase_transitions[1].phase, "steady");
  EXPECT_EQ(report->phase_transitions[1].timestamp_ms, 1700000000100);
  EXPECT_EQ(report->phase_transitions[2].phase, "cooldown");
  EXPECT_EQ(report->phase_transitions[2].timestamp_ms, 1700000000300);

  const std::string g0 =
      R"({gpu="0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"})";
  const std::string g1 =
      R"({gpu="1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"})";
  const std::vector<std::string> expected = {
      HelpLine("DCGM_FI_DEV_POWER_USAGE"),
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
      "DCGM_FI_DEV_POWER_USAGE" + g0 + " 70.5 1700000000.000",
      HelpLine("DCGM_FI_DEV_SM_CLOCK"),
      "# TYPE DCGM_FI_DEV_SM_CLOCK gauge",
      "DCGM_FI_DEV_SM_CLOCK" + g0 + " 345 1700000000.000",
      HelpLine("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
      "# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + g0 + " 1 1700000000.000",
      HelpLine("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown",
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + g0 + " 1000 1700000000.000",
      "DCGM_FI_DEV_POWER_USAGE" + g1 + " 71 1700000000.000",
      "DCGM_FI_DEV_SM_CLOCK" + g1 + " 345 1700000000.000",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + g1 + " 1 1700000000.000",
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + g1 + " 1100 1700000000.000",
      "DCGM_FI_DEV_SM_CLOCK" + g0 + " 1980 1700000000.100",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + g0 + " 0 1700000000.100",
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + g0 + " 1070 1700000000.100",
      "DCGM_FI_DEV_POWER_USAGE" + g1 + " 120 1700000000.300",
      "DCGM_FI_DEV_SM_CLOCK" + g1 + " 1980 1700000000.300",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + g1 + " 1 1700000000.300",
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + g1 + " 1300 1700000000.300",
      "# EOF",
  };
  EXPECT_EQ(ReadLines(output), expected);
}

// --gpus and --start-at: half of a node's GPUs, moved in time as one block.
TEST(DcgmCsvImporterTest, SelectedGpusMovedToAStartTime) {
  const auto input = WriteTempFile("dcgm_split.csv",
                                   "timestamp,gpu,power_w\n"
                                   "1700000000.250,0,100\n"
                                   "1700000000.250,1,101\n"
                                   "1700000000.250,2,102\n"
                                   "1700000001.250,2,112\n"
                                   "1700000001.250,0,110\n"
                                   "1700000001.750,1,111\n");
  const auto output = TempPath("dcgm_split.om");
  ImportOptions options;
  options.hostname = "arm-b";
  options.gpus = {"1", "2"};
  options.start_at_ms = 1800000000000;
  auto report = Import(input.string(), output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->rows_read, 6u);
  EXPECT_EQ(report->rows_imported, 4u);
  EXPECT_EQ(report->rows_other_gpus, 2u);
  EXPECT_EQ(report->rows_skipped, 0u);
  EXPECT_EQ(report->gpus, (std::vector<std::string>{"arm-b/1", "arm-b/2"}));
  EXPECT_EQ(report->shift_ms, 1800000000000 - 1700000000250);
  EXPECT_EQ(report->first_timestamp_ms, 1800000000000);
  EXPECT_EQ(report->last_timestamp_ms, 1800000001500);
  std::vector<std::string> samples;
  ForEachLine(output, [&](std::string_view line) {
    if (!line.starts_with("#")) samples.emplace_back(line);
  });
  const std::string name = "DCGM_FI_DEV_POWER_USAGE";
  EXPECT_EQ(samples, (std::vector<std::string>{
                         name + R"({gpu="1",device="nvidia1",Hostname="arm-b"} 101 1800000000.000)",
                         name + R"({gpu="2",device="nvidia2",Hostname="arm-b"} 102 1800000000.000)",
                         name + R"({gpu="2",device="nvidia2",Hostname="arm-b"} 112 1800000001.000)",
                         name + R"({gpu="1",device="nvidia1",Hostname="arm-b"} 111 1800000001.500)",
                     }));
  const std::string summary = FormatImportSummary(*report);
  EXPECT_NE(summary.find("2 of other GPUs left out"), std::string::npos) << summary;
  EXPECT_NE(summary.find("moved by +99999999.750 s"), std::string::npos) << summary;
}

TEST(DcgmCsvImporterTest, DcgmFieldNameHeaderWithFullIdentity) {
  const auto input = WriteTempFile(
      "dcgm_names.csv",
      "timestamp,Hostname,gpu,UUID,pci_bus_id,modelName,DCGM_FI_DEV_SM_CLOCK,"
      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS,DCGM_FI_PROF_DRAM_ACTIVE,DCGM_FI_DEV_BOGUS\n"
      "1700000000.5,node-9,2,GPU-cccc,00000000:86:00.0,NVIDIA H200,1980,4,0.812345,1\n"
      "1700000001.5,,2,GPU-cccc,00000000:86:00.0,NVIDIA H200,1965,0,0.8,1\n");
  const auto output = TempPath("dcgm_names.om");
  ImportOptions options;
  options.hostname = "fallback";
  auto report = Import(input.string(), output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->unknown_columns, std::vector<std::string>{"DCGM_FI_DEV_BOGUS"});
  EXPECT_EQ(report->gpus, (std::vector<std::string>{"node-9/2", "fallback/2"}));
  EXPECT_TRUE(report->phase_transitions.empty());
  const std::string labels9 =
      R"({gpu="2",UUID="GPU-cccc",pci_bus_id="00000000:86:00.0",device="nvidia2",)"
      R"(modelName="NVIDIA H200",Hostname="node-9"})";
  const std::string text = ReadAll(output);
  EXPECT_NE(text.find("DCGM_FI_DEV_SM_CLOCK" + labels9 + " 1980 1700000000.500\n"),
            std::string::npos)
      << text;
  // The DCGM 4.6 name is recorded under its legacy name.
  EXPECT_NE(text.find("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + labels9 + " 4 1700000000.500\n"),
            std::string::npos);
  EXPECT_EQ(report->imported_columns[1].column, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS");
  EXPECT_EQ(report->imported_columns[1].metric, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
  EXPECT_NE(text.find("DCGM_FI_PROF_DRAM_ACTIVE" + labels9 + " 0.812345 1700000000.500\n"),
            std::string::npos);
  EXPECT_NE(text.find(R"(Hostname="fallback"} 1965 1700000001.500)"), std::string::npos);
}

TEST(DcgmCsvImporterTest, EpochSeconds) {
  EXPECT_EQ(*ParseEpochSeconds("1775016266.006"), 1775016266006);
  EXPECT_EQ(*ParseEpochSeconds("1775016266"), 1775016266000);
  EXPECT_EQ(*ParseEpochSeconds("1775016266.5"), 1775016266500);
  EXPECT_EQ(*ParseEpochSeconds("1775016266.0064999"), 1775016266006);
  EXPECT_EQ(*ParseEpochSeconds("1775016266.0065"), 1775016266007);
  EXPECT_EQ(*ParseEpochSeconds("1775016266.9996"), 1775016267000);
  EXPECT_EQ(*ParseEpochSeconds("1.775016266006e9"), 1775016266006);
  EXPECT_EQ(*ParseEpochSeconds("-1.5"), -1500);
  for (const char* bad :
       {"", "abc", "1.0.0", "17000000x0.300", "1e400", "nan", "inf", "99999999999999999999"}) {
    EXPECT_FALSE(ParseEpochSeconds(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpucanary::importers
