#include "dcgm/fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gpucanary::dcgm {
namespace {

using ::testing::IsEmpty;

TEST(FieldsTest, DcgmIdsAreUniqueAndExporterMetricsHaveNone) {
  std::set<FieldId> ids;
  for (const FieldInfo& f : AllFields()) {
    if (f.origin == FieldOrigin::kExporterMetric) {
      EXPECT_EQ(f.id, kNoFieldId) << f.name;
      EXPECT_EQ(f.name.substr(0, 9), "DCGM_EXP_") << f.name;
      continue;
    }
    EXPECT_NE(f.id, kNoFieldId) << f.name;
    EXPECT_TRUE(ids.insert(f.id).second) << "duplicate id " << f.id;
  }
}

TEST(FieldsTest, AllNamesAreUniqueAcrossLegacyAnd46) {
  std::set<std::string_view> names;
  for (const FieldInfo& f : AllFields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    if (!f.dcgm46_name.empty()) {
      EXPECT_NE(f.dcgm46_name, f.name);
      EXPECT_TRUE(names.insert(f.dcgm46_name).second) << f.dcgm46_name;
    }
  }
}

TEST(FieldsTest, EveryEntryIsDescribed) {
  for (const FieldInfo& f : AllFields()) {
    EXPECT_FALSE(f.meaning.empty()) << f.name;
    EXPECT_EQ(f.name.substr(0, 5), "DCGM_") << f.name;
    if (f.kind == ValueKind::kLabel) {
      EXPECT_EQ(f.category, FieldCategory::kIdentity) << f.name;
    }
  }
}

TEST(FieldsTest, EveryEntryIsFoundByIdAndByEachName) {
  for (const FieldInfo& f : AllFields()) {
    EXPECT_EQ(FindFieldByName(f.name), &f) << f.name;
    if (!f.dcgm46_name.empty()) {
      EXPECT_EQ(FindFieldByName(f.dcgm46_name), &f) << f.dcgm46_name;
    }
    if (f.origin == FieldOrigin::kDcgmField) {
      EXPECT_EQ(FindFieldById(f.id), &f) << f.id;
    }
  }
}

TEST(FieldsTest, LegacyAnd46NamesResolveToTheSameId) {
  const std::pair<std::string_view, std::string_view> pairs[] = {
      {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"},
      {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"},
      {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS"},
      {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL"},
  };
  for (const auto& [legacy, renamed] : pairs) {
    const FieldInfo* a = FindFieldByName(legacy);
    const FieldInfo* b = FindFieldByName(renamed);
    ASSERT_NE(a, nullptr) << legacy;
    ASSERT_NE(b, nullptr) << renamed;
    EXPECT_EQ(a->id, b->id) << legacy;
    EXPECT_EQ(CanonicalFieldName(renamed), legacy);
    EXPECT_EQ(CanonicalFieldName(legacy), legacy);
  }
  EXPECT_EQ(FindFieldByName("DCGM_FI_DEV_GPU_TEMP_CELSIUS")->id, 150);
  EXPECT_EQ(FindFieldByName("DCGM_FI_DEV_CLOCKS_EVENT_REASONS")->id, 112);
  EXPECT_EQ(FindFieldByName("DCGM_FI_PROF_SM_UTIL_RATIO")->id, 1002);
}

TEST(FieldsTest, NameLookupIsExact) {
  EXPECT_EQ(FindFieldByName("dcgm_fi_dev_gpu_temp"), nullptr);
  EXPECT_EQ(FindFieldByName("DCGM_FI_DEV_GPU"), nullptr);
  EXPECT_EQ(FindFieldByName("DCGM_FI_DEV_GPU_TEMP "), nullptr);
  EXPECT_EQ(FindFieldByName(""), nullptr);
  EXPECT_EQ(FindFieldByName("ZZZ"), nullptr);
}

TEST(FieldsTest, UnknownNameIsReturnedUnchanged) {
  const std::string_view unknown = "DCGM_FI_DEV_SOMETHING_NEW";
  const std::string_view canonical = CanonicalFieldName(unknown);
  EXPECT_EQ(canonical, unknown);
  EXPECT_EQ(canonical.data(), unknown.data());
}

TEST(FieldsTest, IdLookupMissesCleanly) {
  EXPECT_EQ(FindFieldById(kNoFieldId), nullptr);
  EXPECT_EQ(FindFieldById(205), nullptr);  // accounting blob: not catalogued
  EXPECT_EQ(FindFieldById(65535), nullptr);
  ASSERT_NE(FindFieldById(1), nullptr);
  EXPECT_EQ(FindFieldById(1)->name, "DCGM_FI_DRIVER_VERSION");
}

// The ids the reference lists in sections 2.2-2.8 (plus the per-link tables).
TEST(FieldsTest, CoversEveryFieldOfTheReferenceTables) {
  std::vector<int> ids = {
      1,   2,   3,   4,   5,   50,  51,  53,  54,  57,  63,  100,  101,  102,  110,  111,  112, 113,
      114, 190, 140, 150, 151, 152, 153, 158, 159, 155, 156, 157,  160,  161,  162,  163,  164, 200,
      201, 202, 203, 204, 206, 207, 230, 235, 236, 237, 238, 300,  301,  310,  311,  312,  313, 390,
      391, 392, 393, 394, 395, 396, 409, 419, 429, 439, 449, 1084, 1085, 1091, 1092, 1532, 1533};
  for (int id = 240; id <= 247; ++id) ids.push_back(id);
  for (int id = 1420; id <= 1424; ++id) ids.push_back(id);
  for (int id = 250; id <= 254; ++id) ids.push_back(id);
  for (int id = 1001; id <= 1016; ++id) ids.push_back(id);
  for (int id = 1040; id <= 1075; ++id) ids.push_back(id);
  for (int id :
       {440, 441, 442, 443, 444, 445, 475, 476, 477, 478, 479, 480, 446, 447, 448, 494, 495, 496}) {
    ids.push_back(id);
  }
  for (int id : ids) {
    EXPECT_NE(FindFieldById(static_cast<FieldId>(id)), nullptr) << "field " << id;
  }
  for (std::string_view name : {"DCGM_EXP_CLOCK_EVENTS_COUNT", "DCGM_EXP_XID_ERRORS_COUNT",
                                "DCGM_EXP_GPU_HEALTH_STATUS", "DCGM_EXP_P2P_STATUS"}) {
    const FieldInfo* f = FindFieldByName(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->origin, FieldOrigin::kExporterMetric);
  }
}

TEST(FieldsTest, SemanticsOfKeyFields) {
  const FieldInfo* throttle = FindFieldById(112);
  EXPECT_EQ(throttle->kind, ValueKind::kBitmask);
  EXPECT_EQ(throttle->category, FieldCategory::kClocks);

  const FieldInfo* energy = FindFieldById(156);
  EXPECT_EQ(energy->kind, ValueKind::kCounter);
  EXPECT_EQ(UnitSymbol(energy->unit), "mJ");

  const FieldInfo* power = FindFieldByName("DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(power->type, DcgmType::kDouble);
  EXPECT_EQ(UnitSymbol(power->unit), "W");
  EXPECT_EQ(power->kind, ValueKind::kGauge);

  EXPECT_EQ(FindFieldById(1005)->category, FieldCategory::kMemoryDram);
  EXPECT_EQ(FindFieldById(1002)->unit, Unit::kRatio);
  EXPECT_EQ(FindFieldById(203)->unit, Unit::kPercent);
  EXPECT_EQ(FindFieldById(240)->unit, Unit::kNanoseconds);
  EXPECT_EQ(FindFieldById(230)->kind, ValueKind::kEnum);
  EXPECT_EQ(FindFieldById(1)->kind, ValueKind::kLabel);
  EXPECT_EQ(FieldCategoryName(FindFieldById(1003)->category), "sm_occupancy");
  EXPECT_EQ(ValueKindName(FindFieldById(202)->kind), "counter");
  EXPECT_EQ(DcgmTypeName(FindFieldById(50)->type), "string");
}

// Every DCGM name in the real scrapes (family names and label names such as
// DCGM_FI_DRIVER_VERSION) must be known to the catalog.
std::vector<std::string> DcgmNamesIn(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    for (std::size_t pos = line.find("DCGM_"); pos != std::string::npos;
         pos = line.find("DCGM_", pos)) {
      std::size_t end = pos;
      while (end < line.size() &&
             (std::isupper(static_cast<unsigned char>(line[end])) ||
              std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
        ++end;
      }
      names.insert(line.substr(pos, end - pos));
      pos = end;
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> TypeFamiliesIn(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> families;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string hash, type, name;
    if (words >> hash >> type >> name && hash == "#" && type == "TYPE") families.push_back(name);
  }
  return families;
}

const std::string kSamples = std::string(GPUCANARY_SHARED_DIR) + "/data/dcgm-samples/";

TEST(FieldsTest, EveryFamilyOfTheL4DefaultCountersScrapeIsKnown) {
  const std::vector<std::string> families =
      TypeFamiliesIn(kSamples + "l4-default-counters-kops.txt");
  ASSERT_EQ(families.size(), 23u);  // 25 default metrics minus XID (blank) and NVLink (no NVLink)
  for (const std::string& family : families) {
    const FieldInfo* f = FindFieldByName(family);
    ASSERT_NE(f, nullptr) << family;
    EXPECT_EQ(f->name, family) << "the shipped CSV uses the legacy names";
  }
}

TEST(FieldsTest, EveryDcgmNameInAllSamplesIsKnown) {
  for (const char* file : {"l4-default-counters-kops.txt", "h100-20c-vgpu-k8s-vks.txt",
                           "h100x8-gpu-operator-k8s-aicr.txt", "t4-mixed-fixture-datadog.txt"}) {
    const std::vector<std::string> names = DcgmNamesIn(kSamples + file);
    EXPECT_FALSE(names.empty()) << file;
    for (const std::string& name : names) {
      EXPECT_NE(FindFieldByName(name), nullptr) << name << " in " << file;
    }
  }
}

TEST(FieldsTest, Int64SentinelsReadAsDoublesAreBlank) {
  // The README of old dcgm-exporter builds shows this raw value on MEMORY_TEMP.
  const double not_supported = std::strtod("9223372036854775794", nullptr);
  EXPECT_EQ(not_supported, 9.223372036854776e18);
  EXPECT_TRUE(IsBlankSentinel(not_supported));
  EXPECT_TRUE(IsBlankSentinel(std::strtod("9223372036854775792", nullptr)));  // BLANK
  EXPECT_TRUE(IsBlankSentinel(std::strtod("9223372036854775795", nullptr)));  // NOT_PERMISSIONED
  EXPECT_TRUE(IsBlankSentinel(static_cast<double>(kInt64Blank)));
}

TEST(FieldsTest, Int32AndFp64SentinelsAreBlank) {
  for (int offset = 0; offset < 4; ++offset) {
    EXPECT_TRUE(IsBlankSentinel(static_cast<double>(kInt32Blank + offset))) << offset;
    EXPECT_TRUE(IsBlankSentinel(kFp64Blank + offset)) << offset;
  }
  EXPECT_TRUE(IsBlankSentinel(std::strtod("140737488355328.000000", nullptr)));
  EXPECT_TRUE(IsBlankSentinel(2147483634.0));
}

TEST(FieldsTest, OrdinaryValuesAreNotBlank) {
  for (double v : {0.0, 1.0, -1.0, 16.365, 700.0, 2147483631.0, 2147483636.0, 140737488355327.0,
                   140737488355332.0, 1e18, 9.2e18}) {
    EXPECT_FALSE(IsBlankSentinel(v)) << v;
  }
  EXPECT_FALSE(IsBlankSentinel(std::numeric_limits<double>::quiet_NaN()));
  // A PCIe byte counter past 2^47 is data, not the FP64 sentinel.
  EXPECT_FALSE(IsBlankSentinel(3.0e14));
}

TEST(FieldsTest, StringSentinels) {
  for (std::string_view s :
       {"<<<NULL>>>", "<<<NOT_FOUND>>>", "<<<NOT_SUPPORTED>>>", "<<<NOT_PERM>>>"}) {
    EXPECT_TRUE(IsBlankStringSentinel(s)) << s;
  }
  EXPECT_FALSE(IsBlankStringSentinel(""));
  EXPECT_FALSE(IsBlankStringSentinel("NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(IsBlankStringSentinel("<<<NULL>>"));
}

TEST(FieldsTest, LabelSpellingsMapToOneName) {
  EXPECT_EQ(CanonicalLabelName("Hostname"), "hostname");
  EXPECT_EQ(CanonicalLabelName("hostname"), "hostname");
  EXPECT_EQ(CanonicalLabelName("uuid"), "UUID");
  EXPECT_EQ(CanonicalLabelName("UUID"), "UUID");
  EXPECT_EQ(CanonicalLabelName("pod_name"), "pod");
  EXPECT_EQ(CanonicalLabelName("pod_namespace"), "namespace");
  EXPECT_EQ(CanonicalLabelName("container_name"), "container");
  EXPECT_EQ(CanonicalLabelName("modelName"), "modelName");
  EXPECT_EQ(CanonicalLabelName("HOSTNAME"), "HOSTNAME");
}

TEST(FieldsTest, NamesOfEnumsAreStable) {
  EXPECT_EQ(UnitSymbol(Unit::kNone), "");
  EXPECT_EQ(UnitSymbol(Unit::kMegahertz), "MHz");
  EXPECT_EQ(FieldCategoryName(FieldCategory::kMemoryDram), "memory_dram");
  EXPECT_THAT(std::string(UnitSymbol(Unit::kNone)), IsEmpty());
}

}  // namespace
}  // namespace gpucanary::dcgm
