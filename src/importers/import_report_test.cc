#include "importers/import_report.h"

#include <gtest/gtest.h>

#include "importers/csv_importer.h"
#include "importers/dcgm_csv_importer.h"
#include "importers/nvidia_smi_importer.h"

namespace gpucanary::importers {
namespace {

TEST(ImportReportTest, ParseUtcOffset) {
  EXPECT_EQ(*ParseUtcOffset("+00:00"), 0);
  EXPECT_EQ(*ParseUtcOffset("Z"), 0);
  EXPECT_EQ(*ParseUtcOffset("+02:00"), 120);
  EXPECT_EQ(*ParseUtcOffset("-07:00"), -420);
  EXPECT_EQ(*ParseUtcOffset("+0530"), 330);
  EXPECT_EQ(*ParseUtcOffset("+08"), 480);
  EXPECT_EQ(*ParseUtcOffset("+14:00"), 840);
  for (const char* bad : {"", "2", "+2", "+2:00", "02:00", "+14:01", "+01:60", "+01:0", "UTC"}) {
    auto offset = ParseUtcOffset(bad);
    ASSERT_FALSE(offset.has_value()) << bad;
    EXPECT_EQ(offset.error().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ImportReportTest, DefaultHostname) {
  EXPECT_EQ(DefaultHostname("logs/node-3.csv.gz"), "node-3");
  EXPECT_EQ(DefaultHostname("/data/b1_telemetry.csv"), "b1_telemetry");
  EXPECT_EQ(DefaultHostname("plain"), "plain");
  EXPECT_EQ(DefaultHostname(".hidden.csv"), ".hidden");
  EXPECT_EQ(DefaultHostname("-"), "stdin");
}

TEST(ImportReportTest, Summary) {
  ImportReport report;
  report.rows_read = 10;
  report.rows_imported = 8;
  report.rows_skipped = 2;
  report.skipped_messages = {"f.csv:3:5: bad", "f.csv:7:1: worse"};
  report.samples_written = 15;
  report.missing_cells = 1;
  report.imported_columns = {{"power_w", "DCGM_FI_DEV_POWER_USAGE"},
                             {"temp_c", "DCGM_FI_DEV_GPU_TEMP"}};
  report.unknown_columns = {"node_power_w"};
  report.gpus = {"n/0", "n/1"};
  report.first_timestamp_ms = 1700000000000;
  report.last_timestamp_ms = 1700000000300;
  report.phase_transitions = {{1700000000000, "init"}, {1700000000100, "steady"}};
  report.phase_transitions_total = 2;
  EXPECT_EQ(FormatImportSummary(report),
            "rows: 10 read, 8 imported, 2 skipped\n"
            "samples: 15 written, 1 empty or N/A cells\n"
            "columns: 2 imported, 1 not imported (node_power_w)\n"
            "gpus: 2 (n/0, n/1)\n"
            "time: 2023-11-14T22:13:20.000Z .. 2023-11-14T22:13:20.300Z (0.300 s)\n"
            "phases: init at 2023-11-14T22:13:20.000Z, steady at 2023-11-14T22:13:20.100Z\n"
            "skipped rows (first 2):\n"
            "  f.csv:3:5: bad\n"
            "  f.csv:7:1: worse\n");
}

// Every mapping must name a value field of the DCGM catalog by its canonical
// (legacy) name: a typo would otherwise only show up as an unimported column.
TEST(ImportReportTest, MappingTablesNameCanonicalDcgmFields) {
  for (const QueryFieldMapping& mapping : NvidiaSmiQueryFields()) {
    const dcgm::FieldInfo* field = FindValueField(mapping.dcgm_field);
    ASSERT_NE(field, nullptr) << mapping.query_field;
    EXPECT_EQ(field->name, mapping.dcgm_field);
  }
  for (const CsvColumnMapping& mapping : DcgmCsvColumns()) {
    const dcgm::FieldInfo* field = FindValueField(mapping.dcgm_field);
    ASSERT_NE(field, nullptr) << mapping.column;
    EXPECT_EQ(field->name, mapping.dcgm_field);
  }
}

TEST(ImportReportTest, FieldTypingSyntaxAndHelp) {
  const dcgm::FieldInfo* energy = FindValueField("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  ASSERT_NE(energy, nullptr);
  EXPECT_EQ(MetricKindOf(*energy), model::MetricType::kCounter);
  EXPECT_EQ(HelpOf(*energy), "energy used since the driver was last loaded (in mJ)");
  const dcgm::FieldInfo* sm_clock = FindValueField("DCGM_FI_DEV_SM_CLOCK");
  ASSERT_NE(sm_clock, nullptr);
  EXPECT_EQ(MetricKindOf(*sm_clock), model::MetricType::kGauge);
  EXPECT_EQ(SyntaxOf(*sm_clock), ValueSyntax::kNumber);
  EXPECT_EQ(HelpOf(*sm_clock), "current SM clock (in MHz)");
  // The DCGM 4.6 name resolves to the legacy entry.
  const dcgm::FieldInfo* reasons = FindValueField("DCGM_FI_DEV_CLOCKS_EVENT_REASONS");
  ASSERT_NE(reasons, nullptr);
  EXPECT_EQ(reasons->name, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
  EXPECT_EQ(SyntaxOf(*reasons), ValueSyntax::kBitmask);
  EXPECT_EQ(MetricKindOf(*reasons), model::MetricType::kGauge);
  EXPECT_EQ(SyntaxOf(*FindValueField("DCGM_FI_DEV_PSTATE")), ValueSyntax::kPstate);
  // String fields are labels in dcgm-exporter, never value columns.
  EXPECT_EQ(FindValueField("DCGM_FI_DRIVER_VERSION"), nullptr);
  EXPECT_EQ(FindValueField("DCGM_FI_DEV_NOT_A_FIELD"), nullptr);
}

}  // namespace
}  // namespace gpucanary::importers
