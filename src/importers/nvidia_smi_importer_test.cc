#include "importers/nvidia_smi_importer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "importers/csv_importer.h"
#include "importers/import_test_util.h"
#include "recording/openmetrics_text.h"

namespace gpucanary::importers {
namespace {

using testing::ForEachLine;
using testing::ReadLines;
using testing::TempPath;
using testing::WriteTempFile;

const std::string kTraceDir =
    std::string(GPUCANARY_SHARED_DIR) + "/data/gpu-traces/yqg9651-cuda_test/";

using testing::HelpLine;

Result<ImportReport> Import(const std::string& input, const std::filesystem::path& output,
                            const ImportOptions& options) {
  return testing::ImportInto(ImportNvidiaSmiCsv, input, output, options);
}

// ---- The yqg9651/cuda_test logs: every file, exact counts and first samples.

struct TraceCase {
  const char* file;
  std::uint64_t rows;
  const char* first_time;  // OpenMetrics timestamp of the first row (UTC offset 0)
  const char* last_time;
  // First row: utilization.gpu, temperature.gpu, temperature.memory, power.draw,
  // power.draw.instant, clocks.current.sm, clocks.current.memory.
  std::vector<std::string> first_values;
};

class NvidiaSmiTraceTest : public ::testing::TestWithParam<TraceCase> {};

TEST_P(NvidiaSmiTraceTest, ImportsEveryRowAndField) {
  const TraceCase& trace = GetParam();
  const std::string stem = std::string(trace.file).substr(0, std::string(trace.file).find('.'));
  const auto output = TempPath(stem + ".om.gz");
  auto report = Import(kTraceDir + trace.file, output, {});
  ASSERT_TRUE(report.has_value()) << report.error().ToString();

  constexpr std::uint64_t kFields = 7;
  EXPECT_EQ(report->rows_read, trace.rows);
  EXPECT_EQ(report->rows_imported, trace.rows);
  EXPECT_EQ(report->rows_skipped, 0u);
  EXPECT_EQ(report->missing_cells, 0u);
  EXPECT_EQ(report->samples_written, trace.rows * kFields);
  EXPECT_TRUE(report->unknown_columns.empty());
  EXPECT_EQ(report->gpus, std::vector<std::string>{stem + "/0"});
  ASSERT_EQ(report->imported_columns.size(), kFields);
  EXPECT_EQ(report->imported_columns[3].column, "power.draw [W]");
  EXPECT_EQ(report->imported_columns[3].metric, "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(report->imported_columns[4].metric, "DCGM_FI_DEV_POWER_USAGE_INSTANT");

  const std::vector<std::string> metrics = {"DCGM_FI_DEV_GPU_UTIL",
                                            "DCGM_FI_DEV_GPU_TEMP",
                                            "DCGM_FI_DEV_MEMORY_TEMP",
                                            "DCGM_FI_DEV_POWER_USAGE",
                                            "DCGM_FI_DEV_POWER_USAGE_INSTANT",
                                            "DCGM_FI_DEV_SM_CLOCK",
                                            "DCGM_FI_DEV_MEM_CLOCK"};
  const std::string labels = "{gpu=\"0\",device=\"nvidia0\",Hostname=\"" + stem + "\"}";
  std::vector<std::string> first_samples;
  std::uint64_t sample_lines = 0;
  std::uint64_t type_lines = 0;
  std::string last_line;
  std::string last_sample;
  ForEachLine(output, [&](std::string_view line) {
    if (line.starts_with("# TYPE ")) ++type_lines;
    if (!line.starts_with("#")) {
      ++sample_lines;
      if (first_samples.size() < kFields) first_samples.emplace_back(line);
      last_sample = line;
    }
    last_line = line;
  });
  EXPECT_EQ(sample_lines, trace.rows * kFields);
  EXPECT_EQ(type_lines, kFields);
  EXPECT_EQ(last_line, "# EOF");
  ASSERT_EQ(first_samples.size(), kFields);
  for (size_t i = 0; i < kFields; ++i) {
    EXPECT_EQ(first_samples[i],
              metrics[i] + labels + " " + trace.first_values[i] + " " + trace.first_time);
  }
  EXPECT_TRUE(last_sample.ends_with(std::string(" ") + trace.last_time)) << last_sample;
}

INSTANTIATE_TEST_SUITE_P(
    Yqg9651, NvidiaSmiTraceTest,
    ::testing::Values(TraceCase{"a100pcie250w_fp16gemm_allzero.csv",
                                3195,
                                "1692915514.203",
                                "1692915564.361",
                                {"0", "35", "36", "34.63", "34.63", "210", "1215"}},
                      TraceCase{"a100pcie250w_fp16gemm_maxpower.csv",
                                2938,
                                "1692915616.285",
                                "1692915671.928",
                                {"0", "43", "44", "64.07", "64.07", "1410", "1215"}},
                      TraceCase{"a100pcie250w_fp16gemm_random.csv",
                                3314,
                                "1692915564.420",
                                "1692915616.223",
                                {"0", "41", "42", "63.12", "63.12", "1410", "1215"}},
                      TraceCase{"h100pcie350w_fp8gemm_allzero.csv",
                                6642,
                                "1692888032.680",
                                "1692888083.844",
                                {"0", "58", "70", "56.09", "55.94", "345", "1593"}},
                      TraceCase{"h100pcie350w_fp8gemm_maxpower.csv",
                                8491,
                                "1692888083.886",
                                "1692888156.141",
                                {"0", "59", "69", "56.24", "55.91", "345", "1593"}},
                      TraceCase{"h100pcie350w_fp8gemm_random.csv",
                                7691,
                                "1692888156.182",
                                "1692888219.249",
                                {"0", "61", "72", "57.41", "57.01", "345", "1593"}}));

TEST(NvidiaSmiImporterTest, FirstLinesOfTheH100LogExactly) {
  const auto output = TempPath("h100_allzero_head.om");
  ImportOptions options;
  options.hostname = "h100-pcie";
  options.gpu = "3";
  auto report = Import(kTraceDir + "h100pcie350w_fp8gemm_allzero.csv", output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  std::vector<std::string> head;
  ForEachLine(output, [&](std::string_view line) {
    if (head.size() < 8) head.emplace_back(line);
  });
  const std::string labels = R"({gpu="3",device="nvidia3",Hostname="h100-pcie"})";
  EXPECT_EQ(head, (std::vector<std::string>{
                      HelpLine("DCGM_FI_DEV_GPU_UTIL"),
                      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
                      "DCGM_FI_DEV_GPU_UTIL" + labels + " 0 1692888032.680",
                      HelpLine("DCGM_FI_DEV_GPU_TEMP"),
                      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
                      "DCGM_FI_DEV_GPU_TEMP" + labels + " 58 1692888032.680",
                      HelpLine("DCGM_FI_DEV_MEMORY_TEMP"),
                      "# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge",
                  }));
  EXPECT_EQ(report->gpus, std::vector<std::string>{"h100-pcie/3"});
}

// The real logs have no name column: --model gives them their modelName, in
// dcgm-exporter's label order (after device, before Hostname).
TEST(NvidiaSmiImporterTest, ModelOptionGivesALogWithoutANameColumnItsModel) {
  const auto output = TempPath("a100_model.om");
  ImportOptions options;
  options.hostname = "a100-pcie";
  options.model_name = "NVIDIA A100-PCIE-40GB";
  auto report = Import(kTraceDir + "a100pcie250w_fp16gemm_maxpower.csv", output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  std::vector<std::string> samples;
  ForEachLine(output, [&](std::string_view line) {
    if (!line.starts_with('#') && samples.size() < 2) samples.emplace_back(line);
  });
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_TRUE(samples[0].starts_with(
      R"(DCGM_FI_DEV_GPU_UTIL{gpu="0",device="nvidia0",modelName="NVIDIA A100-PCIE-40GB",)"
      R"(Hostname="a100-pcie"} 0 )"))
      << samples[0];
}

// A name cell wins over --model; an empty one falls back to it.
TEST(NvidiaSmiImporterTest, NameColumnWinsOverTheModelOption) {
  const auto input = WriteTempFile("named.csv",
                                   "timestamp, name, power.draw [W]\n"
                                   "2024/01/02 03:04:05.678, NVIDIA H100 PCIe, 101.50 W\n"
                                   "2024/01/02 03:04:06.678, , 102.50 W\n");
  const auto output = TempPath("named.om");
  ImportOptions options;
  options.hostname = "n";
  options.model_name = "NVIDIA A100-PCIE-40GB";
  auto report = Import(input.string(), output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  std::vector<std::string> samples;
  ForEachLine(output, [&](std::string_view line) {
    if (!line.starts_with('#')) samples.emplace_back(line);
  });
  EXPECT_EQ(samples, (std::vector<std::string>{
                         R"(DCGM_FI_DEV_POWER_USAGE{gpu="0",device="nvidia0",)"
                         R"(modelName="NVIDIA H100 PCIe",Hostname="n"} 101.5 1704164645.678)",
                         R"(DCGM_FI_DEV_POWER_USAGE{gpu="0",device="nvidia0",)"
                         R"(modelName="NVIDIA A100-PCIE-40GB",Hostname="n"} 102.5 1704164646.678)",
                     }));
}

// ---- Synthetic multi-GPU log with identity columns, units, hex, P-states, N/A.

constexpr std::string_view kHeader =
    "timestamp, index, uuid, name, pci.bus_id, utilization.gpu [%], power.draw [W], "
    "clocks_event_reasons.active, pstate, fan.speed [%], driver_version, temperature.gpu\n";

// Line numbers in comments; the expected columns were counted by hand and
// checked with a script.
constexpr std::string_view kRowsWithErrors =
    // 2: ok, fan [N/A]
    "2024/01/02 03:04:05.678, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 12 %, "
    "101.50 W, 0x0000000000000004, P0, [N/A], 550.54.15, 40\n"
    // 3: ok, utilization [Not Supported]
    "2024/01/02 03:04:05.678, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, "
    "[Not Supported], 99 W, 0x0000000000000000, P2, 30 %, 550.54.15, 41\n"
    // 4: power.draw does not parse (column 86)
    "2024/01/02 03:04:06.678, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 13 %, "
    "12.x W, 0x0000000000000001, P0, 31 %, 550.54.15, 42\n"
    // 5: temperature.gpu missing (11 of 12 cells; end of line is column 132)
    "2024/01/02 03:04:06.678, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 13 %, "
    "100 W, 0x0000000000000001, P0, 31 %, 550.54.15\n"
    // 6: GPU 1 goes back in time
    "2024/01/02 03:04:04.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
    "90 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39\n"
    // 7: bad hex (column 91)
    "2024/01/02 03:04:07.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
    "90 W, 0x00000000000000zz, P8, 30 %, 550.54.15, 39\n"
    // 8: month 13
    "2024/13/02 03:04:07.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
    "90 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39\n"
    // 9: one cell too many (column 136)
    "2024/01/02 03:04:08.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 7 %, "
    "91 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39, extra\n"
    // 10: ok, HW power brake
    "2024/01/02 03:04:09.000, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 14 %, "
    "102 W, 0x0000000000000080, P0, 32 %, 550.54.15, 43\n";

TEST(NvidiaSmiImporterTest, StopsAtTheFirstBadRowWithFileLineColumnAndField) {
  const auto input =
      WriteTempFile("bad_smi.csv", std::string(kHeader) + std::string(kRowsWithErrors));
  auto report = Import(input.string(), TempPath("bad_smi.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kParseError);
  EXPECT_EQ(report.error().message(),
            input.string() + ":4:86: field 'power.draw [W]': cannot parse \"12.x W\" as a number");
}

TEST(NvidiaSmiImporterTest, EachKindOfBadRowHasItsExactPosition) {
  const std::string header(kHeader);
  const std::string good =
      "2024/01/02 03:04:05.678, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, "
      "[Not Supported], 99 W, 0x0000000000000000, P2, 30 %, 550.54.15, 41\n";
  struct Case {
    std::string row;
    std::string expected;  // after "FILE:"
  };
  const std::vector<Case> cases = {
      {"2024/01/02 03:04:06.678, 0, GPU-aaaa, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 13 %, "
       "100 W, 0x0000000000000001, P0, 31 %, 550.54.15\n",
       "3:132: field 'temperature.gpu': missing: row has 11 cells, header has 12"},
      {"2024/01/02 03:04:04.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
       "90 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39\n",
       "3:1: field 'timestamp': timestamp 2024-01-02T03:04:04.000Z goes back before "
       "2024-01-02T03:04:05.678Z, the previous row of GPU bad_row/1"},
      {"2024/01/02 03:04:07.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
       "90 W, 0x00000000000000zz, P8, 30 %, 550.54.15, 39\n",
       "3:91: field 'clocks_event_reasons.active': cannot parse \"0x00000000000000zz\" as a "
       "bitmask"},
      {"2024/13/02 03:04:07.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 5 %, "
       "90 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39\n",
       "3:1: field 'timestamp': cannot parse timestamp \"2024/13/02 03:04:07.000\": no such date"},
      {"2024/01/02 03:04:08.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 7 %, "
       "91 W, 0x0000000000000001, P8, 30 %, 550.54.15, 39, extra\n",
       "3:136: extra cell after the last field 'temperature.gpu': row has 13 cells, header has 12"},
      {"2024/01/02 03:04:08.000, 1, GPU-bbbb, NVIDIA H100 80GB HBM3, 00000000:54:00.0, 7 %, "
       "91 W, 0x0000000000000001, PX, 30 %, 550.54.15, 39\n",
       "3:111: field 'pstate': cannot parse \"PX\" as a P-state"},
  };
  for (const Case& c : cases) {
    const auto input = WriteTempFile("bad_row.csv", header + good + c.row);
    auto report = Import(input.string(), TempPath("bad_row.om"), {});
    ASSERT_FALSE(report.has_value()) << c.row;
    EXPECT_EQ(report.error().message(), input.string() + ":" + c.expected);
  }
}

TEST(NvidiaSmiImporterTest, SkipBadLinesKeepsTheGoodRowsExactly) {
  const auto input =
      WriteTempFile("skip_smi.csv", std::string(kHeader) + std::string(kRowsWithErrors));
  const auto output = TempPath("skip_smi.om");
  ImportOptions options;
  options.skip_bad_lines = true;
  options.hostname = "node-7";
  options.utc_offset_minutes = 120;  // the log was written at UTC+02:00
  auto report = Import(input.string(), output, options);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();

  EXPECT_EQ(report->rows_read, 9u);
  EXPECT_EQ(report->rows_imported, 3u);
  EXPECT_EQ(report->rows_skipped, 6u);
  EXPECT_EQ(report->samples_written, 16u);
  EXPECT_EQ(report->missing_cells, 2u);
  EXPECT_EQ(report->samples_written + report->missing_cells,
            report->rows_imported * report->imported_columns.size());
  EXPECT_EQ(report->unknown_columns, std::vector<std::string>{"driver_version"});
  EXPECT_EQ(report->gpus, (std::vector<std::string>{"node-7/0", "node-7/1"}));
  EXPECT_EQ(report->first_timestamp_ms, 1704157445678);
  EXPECT_EQ(report->last_timestamp_ms, 1704157449000);
  const std::string file = input.string();
  EXPECT_EQ(report->skipped_messages,
            (std::vector<std::string>{
                file + ":4:86: field 'power.draw [W]': cannot parse \"12.x W\" as a number",
                file + ":5:132: field 'temperature.gpu': missing: row has 11 cells, header has 12",
                file + ":6:1: field 'timestamp': timestamp 2024-01-02T01:04:04.000Z goes back "
                       "before 2024-01-02T01:04:05.678Z, the previous row of GPU node-7/1",
                file + ":7:91: field 'clocks_event_reasons.active': cannot parse "
                       "\"0x00000000000000zz\" as a bitmask",
                file + ":8:1: field 'timestamp': cannot parse timestamp \"2024/13/02 "
                       "03:04:07.000\": no such date",
                file + ":9:136: extra cell after the last field 'temperature.gpu': row has 13 "
                       "cells, header has 12",
            }));

  const std::string gpu0 =
      R"({gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:53:00.0",device="nvidia0",)"
      R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"})";
  const std::string gpu1 =
      R"({gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:54:00.0",device="nvidia1",)"
      R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"})";
  const std::vector<std::string> expected = {
      HelpLine("DCGM_FI_DEV_GPU_UTIL"),
      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
      "DCGM_FI_DEV_GPU_UTIL" + gpu0 + " 12 1704157445.678",
      HelpLine("DCGM_FI_DEV_POWER_USAGE"),
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
      "DCGM_FI_DEV_POWER_USAGE" + gpu0 + " 101.5 1704157445.678",
      HelpLine("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
      "# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + gpu0 + " 4 1704157445.678",
      HelpLine("DCGM_FI_DEV_PSTATE"),
      "# TYPE DCGM_FI_DEV_PSTATE gauge",
      "DCGM_FI_DEV_PSTATE" + gpu0 + " 0 1704157445.678",
      HelpLine("DCGM_FI_DEV_GPU_TEMP"),
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
      "DCGM_FI_DEV_GPU_TEMP" + gpu0 + " 40 1704157445.678",
      "DCGM_FI_DEV_POWER_USAGE" + gpu1 + " 99 1704157445.678",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + gpu1 + " 0 1704157445.678",
      "DCGM_FI_DEV_PSTATE" + gpu1 + " 2 1704157445.678",
      HelpLine("DCGM_FI_DEV_FAN_SPEED"),
      "# TYPE DCGM_FI_DEV_FAN_SPEED gauge",
      "DCGM_FI_DEV_FAN_SPEED" + gpu1 + " 30 1704157445.678",
      "DCGM_FI_DEV_GPU_TEMP" + gpu1 + " 41 1704157445.678",
      "DCGM_FI_DEV_GPU_UTIL" + gpu0 + " 14 1704157449.000",
      "DCGM_FI_DEV_POWER_USAGE" + gpu0 + " 102 1704157449.000",
      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + gpu0 + " 128 1704157449.000",
      "DCGM_FI_DEV_PSTATE" + gpu0 + " 0 1704157449.000",
      "DCGM_FI_DEV_FAN_SPEED" + gpu0 + " 32 1704157449.000",
      "DCGM_FI_DEV_GPU_TEMP" + gpu0 + " 43 1704157449.000",
      "# EOF",
  };
  EXPECT_EQ(ReadLines(output), expected);
}

TEST(NvidiaSmiImporterTest, HeaderProblems) {
  const auto no_timestamp = WriteTempFile("no_ts.csv", "index, power.draw [W]\n0, 1 W\n");
  auto report = Import(no_timestamp.string(), TempPath("no_ts.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().message(),
            no_timestamp.string() + ":1:1: the header has no 'timestamp' column");

  const auto nothing_known = WriteTempFile("unknown.csv", "timestamp, driver_version\n");
  report = Import(nothing_known.string(), TempPath("unknown.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().message(),
            nothing_known.string() + ":1:1: no column of the header maps to a DCGM field");

  const auto empty = WriteTempFile("empty.csv", "\n\n");
  report = Import(empty.string(), TempPath("empty.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kParseError);

  report = Import(TempPath("absent.csv").string(), TempPath("absent.om"), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kNotFound);
}

TEST(NvidiaSmiImporterTest, DuplicateFieldsAndRepeatedHeadersAndGzipInput) {
  // power.draw and power.draw.average are the same DCGM field: the second is
  // not imported (its samples would collide) and the report says why.
  const std::string text =
      "timestamp, power.draw [W], power.draw.average [W], clocks.sm [MHz]\r\n"
      "2024/01/02 03:04:05.6, 100.25 W, 100.25 W, 1980 MHz\r\n"
      "\r\n"
      "timestamp, power.draw [W], power.draw.average [W], clocks.sm [MHz]\r\n"
      "2024/01/02 03:04:06.123456, N/A, 101 W, 1755 MHz\r\n";
  const auto input = testing::WriteTempGzip("dup.csv.gz", text);
  const auto output = TempPath("dup.om");
  auto report = Import(input.string(), output, {});
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->rows_read, 2u);
  EXPECT_EQ(report->samples_written, 3u);
  EXPECT_EQ(report->missing_cells, 1u);
  EXPECT_EQ(report->unknown_columns,
            std::vector<std::string>{"power.draw.average [W] (same DCGM field as power.draw [W])"});
  const std::string labels = R"({gpu="0",device="nvidia0",Hostname="dup"})";
  const std::vector<std::string> expected = {
      HelpLine("DCGM_FI_DEV_POWER_USAGE"),
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
      "DCGM_FI_DEV_POWER_USAGE" + labels + " 100.25 1704164645.600",
      HelpLine("DCGM_FI_DEV_SM_CLOCK"),
      "# TYPE DCGM_FI_DEV_SM_CLOCK gauge",
      "DCGM_FI_DEV_SM_CLOCK" + labels + " 1980 1704164645.600",
      "DCGM_FI_DEV_SM_CLOCK" + labels + " 1755 1704164646.123",
      "# EOF",
  };
  EXPECT_EQ(ReadLines(output), expected);
}

TEST(NvidiaSmiImporterTest, TimestampParsing) {
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32.680", 0), 1692888032680);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023-08-24 14:40:32.680", 0), 1692888032680);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32", 0), 1692888032000);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32.68", 0), 1692888032680);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32.680999", 0), 1692888032680);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32.680", 120), 1692888032680 - 7'200'000);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2023/08/24 14:40:32.680", -420), 1692888032680 + 25'200'000);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("1969/12/31 23:59:59.999", 0), -1);
  EXPECT_EQ(*ParseNvidiaSmiTimestamp("2024/02/29 00:00:00.000", 0), 1709164800000);
  for (const char* bad : {"", "2023/08/24", "2023/08/24 14:40", "2023/02/30 00:00:00",
                          "2023/08/24 24:00:00", "2023/08/24 14:60:00", "2023/08/24 14:40:32.",
                          "2023/08/24 14:40:32.680 UTC", "2023/08-24 14:40:32", "Thu Aug 24"}) {
    EXPECT_FALSE(ParseNvidiaSmiTimestamp(bad, 0).has_value()) << bad;
  }
}

TEST(NvidiaSmiImporterTest, ValueCells) {
  double value = 0;
  EXPECT_EQ(ParseValueCell("34.63 W", ValueSyntax::kNumber, &value), CellValue::kNumber);
  EXPECT_EQ(value, 34.63);
  EXPECT_EQ(ParseValueCell("0 %", ValueSyntax::kNumber, &value), CellValue::kNumber);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(ParseValueCell("1024 MiB", ValueSyntax::kNumber, &value), CellValue::kNumber);
  EXPECT_EQ(value, 1024);
  EXPECT_EQ(ParseValueCell("5e-06", ValueSyntax::kNumber, &value), CellValue::kNumber);
  EXPECT_EQ(value, 5e-06);
  EXPECT_EQ(ParseValueCell("+3", ValueSyntax::kNumber, &value), CellValue::kNumber);
  EXPECT_EQ(value, 3);
  EXPECT_EQ(ParseValueCell("0x0000000000000004", ValueSyntax::kBitmask, &value),
            CellValue::kNumber);
  EXPECT_EQ(value, 4);
  EXPECT_EQ(ParseValueCell("0x00000000000000C8", ValueSyntax::kBitmask, &value),
            CellValue::kNumber);
  EXPECT_EQ(value, 200);
  EXPECT_EQ(ParseValueCell("128", ValueSyntax::kBitmask, &value), CellValue::kNumber);
  EXPECT_EQ(value, 128);
  EXPECT_EQ(ParseValueCell("P8", ValueSyntax::kPstate, &value), CellValue::kNumber);
  EXPECT_EQ(value, 8);
  EXPECT_EQ(ParseValueCell("2", ValueSyntax::kPstate, &value), CellValue::kNumber);
  EXPECT_EQ(value, 2);
  for (const char* missing :
       {"", "N/A", "[N/A]", "[Not Supported]", "[Unknown Error]", "nan", "NaN"}) {
    EXPECT_EQ(ParseValueCell(missing, ValueSyntax::kNumber, &value), CellValue::kMissing)
        << missing;
  }
  for (const char* bad : {"12.x", "12 W W", "12  W", "W", "0x4", "+-3", "1,5", "P0"}) {
    EXPECT_EQ(ParseValueCell(bad, ValueSyntax::kNumber, &value), CellValue::kBad) << bad;
  }
  EXPECT_EQ(ParseValueCell("4.5", ValueSyntax::kBitmask, &value), CellValue::kBad);
  EXPECT_EQ(ParseValueCell("-1", ValueSyntax::kBitmask, &value), CellValue::kBad);
  EXPECT_EQ(ParseValueCell("0x", ValueSyntax::kBitmask, &value), CellValue::kBad);
  EXPECT_EQ(ParseValueCell("P", ValueSyntax::kPstate, &value), CellValue::kBad);
}

}  // namespace
}  // namespace gpucanary::importers
