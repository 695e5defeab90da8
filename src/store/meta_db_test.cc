#include "store/meta_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace gpucanary::store {
namespace {

namespace fs = std::filesystem;

class MetaDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_meta_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path File() const { return dir_ / "meta.sqlite"; }
  fs::path dir_;
};

ReleaseRecord Release(const std::string& id, const std::string& service, double at) {
  return {id, service, at, R"({"id":")" + id + R"(","started_at":)" + std::to_string(at) + "}"};
}

TEST_F(MetaDbTest, ReleasesAreStoredListedAndIdempotent) {
  auto db = MetaDb::Open(File());
  ASSERT_TRUE(db.has_value()) << db.error().ToString();
  ASSERT_TRUE((*db)->PutRelease(Release("r1", "chat", 100)).ok());
  ASSERT_TRUE((*db)->PutRelease(Release("r2", "chat", 200)).ok());
  ASSERT_TRUE((*db)->PutRelease(Release("r3", "embed", 300)).ok());
  EXPECT_TRUE((*db)->PutRelease(Release("r1", "chat", 100)).ok());  // the same again
  const Status clash = (*db)->PutRelease(Release("r1", "chat", 101));
  EXPECT_EQ(clash.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(clash.message(), "release 'r1' exists with a different annotation");

  auto all = (*db)->ListReleases({});
  ASSERT_EQ(all->size(), 3U);
  EXPECT_EQ((*all)[0].id, "r3");  // newest first
  ReleaseFilter chat;
  chat.service = "chat";
  chat.from = 150;
  auto some = (*db)->ListReleases(chat);
  ASSERT_EQ(some->size(), 1U);
  EXPECT_EQ((*some)[0].id, "r2");
  auto one = (*db)->GetRelease("r2");
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->started_at, 200);
  EXPECT_FALSE((*db)->GetRelease("nope")->has_value());
}

TEST_F(MetaDbTest, CanariesAndVerdictsWithCauses) {
  auto db = MetaDb::Open(File());
  ASSERT_TRUE((*db)->PutCanary({"c1", "r1", 100, std::nullopt, "running"}).ok());
  ASSERT_TRUE((*db)->PutCanary({"c1", "r1", 100, 160.5, "failed"}).ok());
  auto c = (*db)->GetCanary("c1");
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->state, "failed");
  EXPECT_EQ((*c)->ended_at, 160.5);
  VerdictRecord v{"c1",
                  134,
                  "fail",
                  12.5,
                  R"({"verdict":"fail"})",
                  {{"power_brake", "release", 130.0, "HW power brake held SM clock at 1050 MHz"},
                   {"pcie_downtrain", "node", std::nullopt, "node-3 at x8"}}};
  ASSERT_TRUE((*db)->AddVerdict(v).ok());
  auto vs = (*db)->Verdicts("c1");
  ASSERT_EQ(vs->size(), 1U);
  EXPECT_EQ((*vs)[0].verdict, "fail");
  ASSERT_EQ((*vs)[0].causes.size(), 2U);
  EXPECT_EQ((*vs)[0].causes[0].kind, "power_brake");
  EXPECT_FALSE((*vs)[0].causes[1].since.has_value());
  EXPECT_EQ((*db)->ListCanaries("r1")->size(), 1U);
}

TEST_F(MetaDbTest, CanaryDetailAndActionsAreKept) {
  auto db = MetaDb::Open(File());
  ASSERT_TRUE(
      (*db)
          ->PutCanary({"c1", "r1", 100, std::nullopt, "running", R"({"canary":["node-4"]})"})
          .ok());
  EXPECT_EQ((*(*db)->GetCanary("c1"))->detail, R"({"canary":["node-4"]})");
  ASSERT_TRUE((*db)->AddAction({"c1", "page", "webhook", 130, 12.5, true, 2, "HTTP 200"}).ok());
  ASSERT_TRUE((*db)->AddAction({"c1", "cordon", "command", 131, 40, false, 1, "exit 1"}).ok());
  ASSERT_TRUE((*db)->AddAction({"c2", "page", "webhook", 140, 3, true, 1, "HTTP 204"}).ok());
  ASSERT_TRUE(
      (*db)->AddAction({"c1", "cordon", "command", 90, 5, true, 1, "exit 0", "node:node-6"}).ok());
  auto actions = (*db)->Actions("c1");
  ASSERT_TRUE(actions.has_value());
  ASSERT_EQ(actions->size(), 3U);
  EXPECT_EQ((*actions)[0].incident, "");
  EXPECT_EQ((*actions)[2].incident, "node:node-6");
  EXPECT_EQ((*actions)[0].name, "page");
  EXPECT_EQ((*actions)[0].attempts, 2);
  EXPECT_FALSE((*actions)[1].ok);
  EXPECT_EQ((*actions)[1].detail, "exit 1");
}

TEST_F(MetaDbTest, ASchemaOneFileIsUpgradedInPlace) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(File().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "CREATE TABLE canaries (id TEXT PRIMARY KEY, release_id TEXT NOT NULL, "
                           "started_at REAL NOT NULL, ended_at REAL, state TEXT NOT NULL);"
                           "INSERT INTO canaries VALUES ('old', 'r0', 50, 60, 'passed');"
                           "PRAGMA user_version=1;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = MetaDb::Open(File());
  ASSERT_TRUE(db.has_value()) << db.error().ToString();
  auto old = (*db)->GetCanary("old");
  ASSERT_TRUE(old.has_value() && old->has_value());
  EXPECT_EQ((*old)->state, "passed");
  EXPECT_EQ((*old)->detail, "{}");
  ASSERT_TRUE((*db)->PutCanary({"new", "r1", 100, std::nullopt, "running", R"({"a":1})"}).ok());
  EXPECT_TRUE((*db)->AddAction({"new", "page", "webhook", 1, 1, true, 1, ""}).ok());
}

TEST_F(MetaDbTest, ASchemaTwoFileGainsTheIncidentColumn) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(File().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "CREATE TABLE actions (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                           "canary_id TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, "
                           "at REAL NOT NULL, duration_ms REAL NOT NULL, ok INTEGER NOT NULL, "
                           "attempts INTEGER NOT NULL, detail TEXT NOT NULL);"
                           "INSERT INTO actions (canary_id, name, kind, at, duration_ms, ok, "
                           "attempts, detail) VALUES ('c1', 'page', 'webhook', 1, 2, 1, 1, 'ok');"
                           "PRAGMA user_version=2;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = MetaDb::Open(File());
  ASSERT_TRUE(db.has_value()) << db.error().ToString();
  ASSERT_TRUE((*db)->AddAction({"c1", "cordon", "command", 3, 1, true, 1, "", "node:n2"}).ok());
  auto actions = (*db)->Actions("c1");
  ASSERT_TRUE(actions.has_value());
  ASSERT_EQ(actions->size(), 2U);
  EXPECT_EQ((*actions)[0].detail, "ok");
  EXPECT_EQ((*actions)[0].incident, "");
  EXPECT_EQ((*actions)[1].incident, "node:n2");
}

TEST_F(MetaDbTest, AnAcknowledgedWriteSurvivesKillNine) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto db = MetaDb::Open(File());
    if (!db || !(*db)->PutRelease(Release("r9", "chat", 9)).ok()) ::_exit(1);
    if (!(*db)->AddVerdict({"c9", 10, "pass", 3.0, "{}", {}}).ok()) ::_exit(1);
    ::_exit(0);  // no close, no destructors
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto db = MetaDb::Open(File());
  ASSERT_TRUE(db.has_value());
  EXPECT_TRUE((*db)->GetRelease("r9")->has_value());
  EXPECT_EQ((*db)->Verdicts("c9")->size(), 1U);
}

TEST_F(MetaDbTest, NotADatabaseIsAClearError) {
  {
    std::FILE* f = std::fopen(File().c_str(), "w");
    std::fputs("this is not sqlite, just text that is long enough to be read as a header....\n", f);
    std::fclose(f);
  }
  auto db = MetaDb::Open(File());
  ASSERT_FALSE(db.has_value());
  EXPECT_NE(db.error().message().find("meta.sqlite"), std::string::npos) << db.error().message();
  EXPECT_NE(db.error().message().find("not a database"), std::string::npos) << db.error().message();
}

}  // namespace
}  // namespace gpucanary::store
