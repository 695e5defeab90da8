#include "dcgm/xid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

namespace gpucanary::dcgm {
namespace {

using ::testing::HasSubstr;

TEST(XidTest, CatalogIsSortedUniqueAndDescribed) {
  std::uint32_t previous = 0;
  for (const XidInfo& x : AllXids()) {
    EXPECT_GT(x.code, previous);
    previous = x.code;
    EXPECT_FALSE(x.mnemonic.empty()) << x.code;
    EXPECT_FALSE(x.err_msg.empty()) << x.code;
    EXPECT_FALSE(x.meaning.empty()) << x.code;
    EXPECT_EQ(FindXid(x.code), &x);
  }
}

// Section 4 of the reference, including its ranges as single entries.
TEST(XidTest, HoldsEveryXidOfTheReference) {
  const std::uint32_t codes[] = {8,   13,  31,  32,  43,  45,  46,  48,  61,  62,  63,  64,  68,
                                 69,  74,  79,  92,  94,  95,  109, 119, 120, 136, 140, 143, 144,
                                 145, 146, 147, 148, 149, 150, 154, 155, 156, 158, 160};
  for (std::uint32_t code : codes) EXPECT_NE(FindXid(code), nullptr) << code;
  EXPECT_EQ(AllXids().size(), std::size(codes));
}

TEST(XidTest, FatalFlagsFollowNvidiasMapping) {
  const std::set<std::uint32_t> fatal = {46,  48,  61,  62,  64,  74,  79,  95,  109,
                                         119, 120, 136, 140, 143, 144, 145, 146, 147,
                                         148, 149, 150, 155, 156, 158, 160};
  for (const XidInfo& x : AllXids()) {
    EXPECT_EQ(x.fatal, fatal.count(x.code) == 1) << x.code;
  }
}

TEST(XidTest, FallenOffTheBus) {
  const XidInfo* x = FindXid(79);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->mnemonic, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
  EXPECT_EQ(x->err_msg, "GPU has fallen off the bus");
  EXPECT_EQ(x->action, XidAction::kRestartBareMetal);
  EXPECT_TRUE(x->fatal);
  EXPECT_EQ(x->severity(), XidSeverity::kNode);
  EXPECT_EQ(x->likely_source, XidSource::kHardware);
}

TEST(XidTest, CanaryRegressionSignalsPointAtSoftware) {
  for (std::uint32_t code : {13u, 31u, 43u, 45u, 69u}) {
    EXPECT_EQ(FindXid(code)->likely_source, XidSource::kSoftware) << code;
  }
  EXPECT_EQ(FindXid(31)->severity(), XidSeverity::kApp);
  EXPECT_EQ(FindXid(43)->severity(), XidSeverity::kInfo);
  for (std::uint32_t code : {48u, 63u, 64u, 92u, 94u, 95u, 140u, 74u, 136u, 144u, 150u, 79u}) {
    EXPECT_EQ(FindXid(code)->likely_source, XidSource::kHardware) << code;
  }
  for (std::uint32_t code : {119u, 120u}) {
    EXPECT_EQ(FindXid(code)->likely_source, XidSource::kDriverFirmware) << code;
  }
}

TEST(XidTest, SeverityIsDerivedFromTheAction) {
  EXPECT_EQ(SeverityOf(XidAction::kIgnore), XidSeverity::kInfo);
  EXPECT_EQ(SeverityOf(XidAction::kFollowRelatedXid), XidSeverity::kInfo);
  EXPECT_EQ(SeverityOf(XidAction::kRestartApp), XidSeverity::kApp);
  EXPECT_EQ(SeverityOf(XidAction::kWorkflowXid45), XidSeverity::kApp);
  EXPECT_EQ(SeverityOf(XidAction::kResetGpu), XidSeverity::kGpuReset);
  EXPECT_EQ(SeverityOf(XidAction::kWorkflowXid48), XidSeverity::kGpuReset);
  EXPECT_EQ(SeverityOf(XidAction::kWorkflowNvlink5), XidSeverity::kGpuReset);
  EXPECT_EQ(SeverityOf(XidAction::kRestartBareMetal), XidSeverity::kNode);
  EXPECT_EQ(SeverityOf(XidAction::kRestartVm), XidSeverity::kNode);
  for (const XidInfo& x : AllXids()) EXPECT_EQ(x.severity(), SeverityOf(x.action)) << x.code;
  EXPECT_EQ(XidSeverityName(XidSeverity::kGpuReset), "gpu_reset");
  EXPECT_EQ(XidActionName(XidAction::kRestartBareMetal), "RESTART_BM");
  EXPECT_EQ(XidActionName(XidAction::kWorkflowNvlink5), "WORKFLOW_NVLINK5_ERR");
  EXPECT_EQ(XidSourceName(XidSource::kDriverFirmware), "driver_firmware");
}

TEST(XidTest, NvlinkRangeEntries) {
  EXPECT_EQ(FindXid(144)->mnemonic, "NVLINK_SAW_ERROR");
  EXPECT_EQ(FindXid(148)->err_msg, "NVLINK: NVLPW_CTRL Error");
  EXPECT_EQ(FindXid(150)->action, XidAction::kWorkflowNvlink5);
  EXPECT_EQ(FindXid(155)->mnemonic, "NVLINK_SW_DEFINED_ERROR");
  EXPECT_EQ(FindXid(156)->mnemonic, "RESOURCE_RETIREMENT_EVENT");
  EXPECT_EQ(FindXid(158)->mnemonic, "GPU_FATAL_TIMEOUT");
  EXPECT_EQ(FindXid(157), nullptr);  // not among the reference's entries
}

TEST(XidTest, UnknownCodeIsNotFoundNotACrash) {
  EXPECT_EQ(FindXid(999), nullptr);
  EXPECT_EQ(FindXid(0), nullptr);
  EXPECT_EQ(FindXid(4294967295u), nullptr);
  const Result<const XidInfo*> missing = LookupXid(999);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("not in gpucanary's catalog"));
  const Result<const XidInfo*> found = LookupXid(31);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ((*found)->code, 31u);
}

TEST(XidTest, DescribesOneLine) {
  EXPECT_EQ(DescribeXid(79),
            "XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS): GPU has fallen off the bus "
            "\u2014 fatal; action: reboot the node (RESTART_BM); points at hardware");
  EXPECT_EQ(DescribeXid(31),
            "XID 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT): GPU memory page fault \u2014 not "
            "fatal; action: restart the application (RESTART_APP); points at software");
  EXPECT_EQ(DescribeXid(999), "XID 999: not in gpucanary's catalog; see NVIDIA's Xid catalog");
  EXPECT_THAT(DescribeXid(0), HasSubstr("no XID"));
  EXPECT_EQ(DescribeXid(79).find('\n'), std::string::npos);
}

TEST(XidTest, ParsesDecimalCodes) {
  EXPECT_EQ(ParseXidCode("79").value(), 79u);
  EXPECT_EQ(ParseXidCode("0").value(), 0u);
  EXPECT_EQ(ParseXidCode("4294967295").value(), 4294967295u);
  for (std::string_view bad : {"", "-1", "abc", "7.9", "0x4F", " 79", "79 ", "+79", "4294967296"}) {
    const Result<std::uint32_t> code = ParseXidCode(bad);
    ASSERT_FALSE(code.has_value()) << "'" << bad << "' was accepted";
    EXPECT_EQ(code.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(code.error().message(), HasSubstr("XID")) << bad;
  }
  EXPECT_THAT(ParseXidCode("4294967296").error().message(), HasSubstr("32 bits"));
  EXPECT_THAT(ParseXidCode("-1").error().message(), HasSubstr("negative"));
}

}  // namespace
}  // namespace gpucanary::dcgm
