// Flagger's hooks one by one: the answer table (the one docs/ci-cd.md
// shows, read from the page), payloads refused with the field at fault,
// the release found from a payload and kept per revision, and log lines a
// payload cannot forge.

#include "canary/flagger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "canary/api.h"
#include "canary/harness_util.h"
#include "canary/test_util.h"

namespace gpucanary::canary {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Every row of the page's answer table checked against AnswerHook: the
// hooks named in the first cell, a status per standing (the last column
// "rollback-policy / promote-policy").
TEST(FlaggerTest, TheAnswersAreTheDocumentedTable) {
  const std::string page = testing::CiCdPage();
  const std::size_t table = page.find("| hook (Flagger's type) |");
  ASSERT_NE(table, std::string::npos);
  std::istringstream rows(page.substr(table));
  std::string line;
  std::getline(rows, line);  // header
  std::getline(rows, line);  // rule
  const FlaggerStanding columns[] = {FlaggerStanding::kUnknown, FlaggerStanding::kUndecided,
                                     FlaggerStanding::kPassed, FlaggerStanding::kFailed};
  int checked = 0;
  std::set<FlaggerHook> seen;
  while (std::getline(rows, line) && line.starts_with("|")) {
    std::vector<std::string> cells;
    std::stringstream cs(line.substr(1));
    std::string cell;
    while (std::getline(cs, cell, '|')) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 6U) << line;
    std::vector<FlaggerHook> hooks;
    const std::regex name("`([a-z-]+)`");
    for (auto it = std::sregex_iterator(cells[0].begin(), cells[0].end(), name);
         it != std::sregex_iterator(); ++it) {
      const auto hook = ParseFlaggerHook((*it)[1].str());
      ASSERT_TRUE(hook.has_value()) << (*it)[1].str();
      hooks.push_back(*hook);
      seen.insert(*hook);
    }
    ASSERT_FALSE(hooks.empty()) << line;
    const auto status = [](const std::string& c, std::size_t from = 0) {
      const std::size_t at = c.find_first_of("0123456789", from);
      return std::stoi(c.substr(at, 3));
    };
    for (FlaggerHook hook : hooks) {
      for (std::size_t k = 0; k < 4; ++k) {
        for (OnInconclusive policy : {OnInconclusive::kRollback, OnInconclusive::kPromote}) {
          EXPECT_EQ(AnswerHook(hook, columns[k], policy).status, status(cells[1 + k]))
              << FlaggerHookName(hook) << " " << FlaggerStandingName(columns[k]);
          ++checked;
        }
      }
      const std::string& last = cells[5];
      const std::size_t slash = last.find(" / ");
      const int rollback = status(last);
      const int promote = slash == std::string::npos ? rollback : status(last, slash);
      for (FlaggerStanding s : {FlaggerStanding::kInconclusive, FlaggerStanding::kAborted,
                                FlaggerStanding::kNoCanary}) {
        EXPECT_EQ(AnswerHook(hook, s, OnInconclusive::kRollback).status, rollback)
            << FlaggerHookName(hook);
        EXPECT_EQ(AnswerHook(hook, s, OnInconclusive::kPromote).status, promote)
            << FlaggerHookName(hook);
      }
      // A passing canary (still running, the judge passed it) reads as passed.
      EXPECT_EQ(AnswerHook(hook, FlaggerStanding::kPassing, OnInconclusive::kRollback).status,
                status(cells[3]));
    }
  }
  EXPECT_EQ(seen.size(), 8U);  // every Flagger hook type has a row
  EXPECT_GT(checked, 50);
}

TEST(FlaggerTest, PayloadsAreReadAsFlaggerSendsThemAndRefusedWithTheField) {
  auto p = ParseFlaggerPayload(
      R"({"name":"chat-api","namespace":"prod","phase":"Progressing","checksum":"6d8f9c",)"
      R"("metadata":{"release":"r7","eventMessage":"x"}})");
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->name, "chat-api");
  EXPECT_EQ(p->namespace_, "prod");
  EXPECT_EQ(p->phase, "Progressing");
  EXPECT_EQ(p->checksum, "6d8f9c");
  EXPECT_EQ(p->metadata.at("release"), "r7");
  EXPECT_EQ(ParseFlaggerPayload("[1]").error().message(), "the webhook body is not a JSON object");
  EXPECT_EQ(ParseFlaggerPayload("{").error().message(), "the webhook body is not a JSON object");
  EXPECT_EQ(ParseFlaggerPayload(R"({"name": 3})").error().message(),
            "field 'name': expected a string");
  EXPECT_EQ(ParseFlaggerPayload(R"({"metadata": {"canary": 3}})").error().message(),
            "field 'metadata.canary': expected a string");
  EXPECT_EQ(ParseFlaggerPayload(R"({"metadata": []})").error().message(),
            "field 'metadata': expected an object of strings");
  EXPECT_EQ(ParseOnInconclusive({{"on_inconclusive", "wait"}}).error().message(),
            "metadata 'on_inconclusive': expected rollback or promote, got 'wait'");
  EXPECT_EQ(*ParseOnInconclusive({}), OnInconclusive::kRollback);
  EXPECT_EQ(*ParseOnInconclusive({{"on_inconclusive", "promote"}}), OnInconclusive::kPromote);
}

class FlaggerReleasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_flagger_rel_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    meta_ = std::move(*store::MetaDb::Open(dir_ / "meta.sqlite"));
  }
  void TearDown() override {
    meta_.reset();
    fs::remove_all(dir_);
  }
  void Put(const std::string& id, double at, const Json& extra) {
    Json a = {{"id", id}, {"started_at", at}};
    a.update(extra);
    ASSERT_TRUE(meta_->PutRelease({id, a.value("service", ""), at, a.dump()}).ok());
  }
  static FlaggerPayload Payload(std::string checksum, std::string ns = "prod",
                                std::string name = "chat-api") {
    FlaggerPayload p;
    p.name = std::move(name);
    p.namespace_ = std::move(ns);
    p.checksum = std::move(checksum);
    return p;
  }
  fs::path dir_;
  std::unique_ptr<store::MetaDb> meta_;
};

TEST_F(FlaggerReleasesTest, EachRevisionKeepsItsReleaseAndANewOneWaitsForItsOwn) {
  FlaggerReleases releases(*meta_);
  Put("other-ns", 100, {{"namespace", "staging"}, {"workload", "chat-api"}});
  Put("r1", 50, {{"namespace", "prod"}, {"workload", "chat-api"}});
  Put("by-service", 10, {{"service", "chat-api"}});
  // Revision a: the newest release of prod/chat-api (not staging's).
  EXPECT_EQ(*releases.Find(Payload("a"), false), "r1");
  // confirm-rollout of the next revision carries a's checksum: r1 is a's, and
  // no newer annotation exists, so none.
  EXPECT_EQ(*releases.Find(Payload("a"), true), std::nullopt);
  Put("r2", 200, {{"namespace", "prod"}, {"workload", "chat-api"}});
  EXPECT_EQ(*releases.Find(Payload("a"), true), "r2");   // the next revision's, not bound yet
  EXPECT_EQ(*releases.Find(Payload("a"), false), "r1");  // a keeps r1
  EXPECT_EQ(*releases.Find(Payload("b"), false), "r2");  // b takes r2
  Put("r3", 300, {{"namespace", "prod"}, {"workload", "chat-api"}});
  EXPECT_EQ(*releases.Find(Payload("b"), false), "r2");  // a newer annotation does not hijack b
  // `service` stands in for `workload` (an annotation without a namespace
  // matches any); metadata names a release outright; no match is none.
  Put("search-1", 20, {{"service", "search"}});
  EXPECT_EQ(*releases.Find(Payload("s", "prod", "search"), false), "search-1");
  EXPECT_EQ(*releases.Find(Payload("x", "prod", "chat-api-svc"), false), std::nullopt);
  FlaggerPayload named = Payload("z");
  named.metadata["release"] = "by-service";
  EXPECT_EQ(*releases.Find(named, false), "by-service");
}

// Through the API: a Canary name with a newline cannot forge a log line,
// and an unknown hook lists the real ones.
TEST_F(FlaggerReleasesTest, PayloadTextCannotForgeALogLine) {
  auto store = store::Store::Open(dir_ / "data", {});
  ASSERT_TRUE(store.has_value());
  ManualClock clock(1764680000000);
  CanaryOptions options;
  options.policy = analysis::DefaultPolicy();
  CanaryManager manager(**store, *meta_, clock, options, CanaryHooks{});
  std::vector<std::string> log;
  CanaryApi api(manager, *meta_, [&](std::string_view line) { log.emplace_back(line); });
  const net::HttpResponse r = testing::Call(
      api, "POST", "/api/v1/flagger/event",
      R"({"name":"x\ngpucanary: canary r1 failed","namespace":"prod","phase":"Progressing"})");
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(log.size(), 1U);
  EXPECT_EQ(log[0].find('\n'), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("x\\x0agpucanary"), std::string::npos) << log[0];
  const net::HttpResponse unknown = testing::Call(api, "POST", "/api/v1/flagger/promote", "{}");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find(FlaggerHookList()), std::string::npos) << unknown.body;
}

}  // namespace
}  // namespace gpucanary::canary
