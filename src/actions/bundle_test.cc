#include "actions/bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "actions/execute.h"
#include "actions/test_util.h"
#include "core/clock.h"

namespace gpucanary::actions {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kNowMs = 1764680040123;  // 2025-12-02T12:54:00.123Z

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(BundleTest, NameIsTheCanaryAndUtcTime) {
  EXPECT_EQ(BundleName("canary-7", kNowMs), "canary-7-20251202T125400Z");
  EXPECT_EQ(BundleName("a/b c", kNowMs), "a_b_c-20251202T125400Z");
  EXPECT_EQ(BundleName("..", kNowMs), "canary..-20251202T125400Z");
}

TEST(BundleTest, WritesIncidentTelemetryAndReadmeAtomically) {
  const fs::path root = test::TempDir("bundle") / "bundles";  // created on demand
  const Incident incident = test::SampleIncident();
  fs::path seen_by_writer;
  auto telemetry = [&](const fs::path& dir) {
    seen_by_writer = dir;
    // Written while the bundle is still hidden.
    EXPECT_THAT(dir.filename().string(), ::testing::StartsWith("."));
    EXPECT_TRUE(fs::exists(dir / "incident.json"));
    test::WriteAll(dir / "telemetry.om",
                   "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1050 1764680030\n# EOF\n");
    return Status::Ok();
  };
  auto bundle = WriteDiagnosticBundle(root, incident, kNowMs, telemetry);
  ASSERT_TRUE(bundle) << bundle.error().ToString();
  EXPECT_TRUE(bundle->telemetry.ok());
  EXPECT_EQ(bundle->path, root / "canary-7-20251202T125400Z");
  EXPECT_THAT(bundle->files, ElementsAre("README.txt", "incident.json", "telemetry.om"));
  EXPECT_THAT(Names(root), ElementsAre("canary-7-20251202T125400Z"));  // no temp folder left
  EXPECT_FALSE(fs::exists(seen_by_writer));
  EXPECT_THAT(Names(bundle->path), ElementsAre("README.txt", "incident.json", "telemetry.om"));

  const auto json = nlohmann::json::parse(test::ReadAll(bundle->path / "incident.json"));
  EXPECT_EQ(json, nlohmann::json::parse(IncidentToJson(incident)));
  EXPECT_THAT(test::ReadAll(bundle->path / "telemetry.om"), HasSubstr("1050"));

  const std::string readme = test::ReadAll(bundle->path / "README.txt");
  EXPECT_THAT(readme, HasSubstr("canary:   canary-7\n"));
  EXPECT_THAT(readme, HasSubstr("release:  llama3-70b-2026-12-02.1 (service chat-api)\n"));
  EXPECT_THAT(readme, HasSubstr("verdict:  fail, decided at 2025-12-02T12:53:54.000Z\n"));
  EXPECT_THAT(readme, HasSubstr("  - power_brake (release, node-4): HW power brake held"));
  EXPECT_THAT(readme, HasSubstr("  - xid_errors (node, node-6): XID 79"));
  EXPECT_THAT(readme, HasSubstr("  incident.json  the verdict, its causes and the release"));
  EXPECT_THAT(readme, HasSubstr("  telemetry.om   telemetry of the affected GPUs"));
  EXPECT_THAT(readme, HasSubstr("  README.txt     this file"));
  EXPECT_THAT(readme, ::testing::Not(HasSubstr("not written")));

  // The same canary and second again (a restarted daemon): a new folder.
  auto again = WriteDiagnosticBundle(root, incident, kNowMs, telemetry);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->path, root / "canary-7-20251202T125400Z-2");
}

TEST(BundleTest, ATelemetryFailureKeepsTheBundleAndSaysSo) {
  const fs::path root = test::TempDir("bundle-fail");
  auto bundle = WriteDiagnosticBundle(root, test::SampleIncident(), kNowMs, [](const fs::path&) {
    return Status(StatusCode::kUnavailable, "store: no samples for node-4/0");
  });
  ASSERT_TRUE(bundle) << bundle.error().ToString();
  EXPECT_FALSE(bundle->telemetry.ok());
  EXPECT_THAT(bundle->files, ElementsAre("README.txt", "incident.json"));
  EXPECT_THAT(test::ReadAll(bundle->path / "README.txt"),
              HasSubstr("telemetry: not written: store: no samples for node-4/0"));
}

TEST(BundleTest, AnUnwritableRootIsAnError) {
  const fs::path root = test::TempDir("bundle-file");
  test::WriteAll(root / "file", "x");
  auto bundle = WriteDiagnosticBundle(root / "file", test::SampleIncident(), kNowMs, {});
  ASSERT_FALSE(bundle);
  EXPECT_EQ(bundle.error().code(), StatusCode::kIoError);
}

TEST(BundleTest, TheActionReportsThePathAndTheTelemetryOutcome) {
  const fs::path root = test::TempDir("bundle-action");
  ActionConfig a;
  a.kind = ActionKind::kDiagnosticBundle;
  a.name = "bundle";
  a.dir = root.string();
  ManualClock clock(kNowMs);
  ActionContext context{&clock, nullptr, [](const fs::path& dir) {
                          test::WriteAll(dir / "gpus.om.gz", "");
                          return Status::Ok();
                        }};
  ActionOutcome o = ExecuteAction(a, test::SampleIncident(), context);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.output, (root / "canary-7-20251202T125400Z").string());
  EXPECT_EQ(o.detail, "wrote " + o.output + " (README.txt, gpus.om.gz, incident.json)");
  EXPECT_EQ(o.started_at_ms, kNowMs);

  context.telemetry = nullptr;
  o = ExecuteAction(a, test::SampleIncident(), context);
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.detail, HasSubstr("telemetry not written: no telemetry writer was given"));
}

}  // namespace
}  // namespace gpucanary::actions
