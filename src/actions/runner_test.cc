#include "actions/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actions/test_util.h"
#include "core/mutex.h"

namespace gpucanary::actions {
namespace {

using ::testing::HasSubstr;

ActionConfig Hook(const std::string& name, const std::string& url) {
  ActionConfig a;
  a.name = name;
  a.kind = ActionKind::kWebhook;
  a.scope = ScopeFilter::kRelease;
  a.url = url;
  a.http.retries = 0;
  return a;
}

TEST(RunnerTest, RunsEachCanaryOnceInConfigOrderAndReportsEveryOutcome) {
  test::Receiver first, second;
  FlaggerGate gate;
  Mutex mu;
  std::vector<std::string> recorded;  // "canary/name/ok"
  int done_calls = 0;
  ActionConfig flagger;
  flagger.name = "flagger";
  flagger.kind = ActionKind::kFlaggerRollback;
  flagger.scope = ScopeFilter::kRelease;
  RunnerOptions options;
  options.actions = {Hook("first", first.Url("/a")), flagger, Hook("second", second.Url("/b"))};
  options.flagger_gate = &gate;
  options.on_outcome = [&](const Incident& i, const ActionOutcome& o) {
    MutexLock lock(mu);
    recorded.push_back(i.canary_id + "/" + o.name + "/" + (o.ok ? "ok" : "failed"));
  };
  options.on_done = [&](const Incident&, const std::vector<ActionOutcome>& all) {
    MutexLock lock(mu);
    EXPECT_EQ(all.size(), 3U);
    ++done_calls;
  };
  Runner runner(std::move(options));

  const RunTicket t = runner.Run(test::SampleIncident());
  EXPECT_TRUE(t.started);
  EXPECT_EQ(t.message, "canary canary-7: 3 actions queued");
  const std::vector<ActionOutcome> outcomes = runner.Wait("canary-7");
  ASSERT_EQ(outcomes.size(), 3U);
  EXPECT_EQ(outcomes[0].name, "first");
  EXPECT_EQ(outcomes[1].name, "flagger");
  EXPECT_EQ(outcomes[2].name, "second");
  for (const ActionOutcome& o : outcomes) EXPECT_TRUE(o.ok) << o.name << ": " << o.detail;
  EXPECT_TRUE(gate.ShouldRollback("canary-7"));

  // The same canary again: nothing happens, and Run says so.
  const RunTicket again = runner.Run(test::SampleIncident());
  EXPECT_FALSE(again.started);
  EXPECT_THAT(again.message, HasSubstr("canary canary-7: actions already run"));
  runner.WaitIdle();
  EXPECT_EQ(first.requests().size(), 1U);
  EXPECT_EQ(second.requests().size(), 1U);
  MutexLock lock(mu);
  EXPECT_THAT(recorded, ::testing::ElementsAre("canary-7/first/ok", "canary-7/flagger/ok",
                                               "canary-7/second/ok"));
  EXPECT_EQ(done_calls, 1);
}

TEST(RunnerTest, AFailingActionDoesNotStopTheNextOnes) {
  std::string refused;
  {
    test::Receiver gone;
    refused = gone.Url("/dead");
    gone.Stop();
  }
  test::Receiver alive({400});
  test::Receiver last;
  RunnerOptions options;
  options.actions = {Hook("dead", refused), Hook("rejects", alive.Url("/r")),
                     Hook("last", last.Url("/l"))};
  Runner runner(std::move(options));
  ASSERT_TRUE(runner.Run(test::SampleIncident()).started);
  const auto outcomes = runner.Wait("canary-7");
  ASSERT_EQ(outcomes.size(), 3U);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_THAT(outcomes[0].detail, HasSubstr("Connection refused"));
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_THAT(outcomes[1].detail, HasSubstr("HTTP 400"));
  EXPECT_TRUE(outcomes[2].ok) << outcomes[2].detail;
  EXPECT_EQ(last.requests().size(), 1U);
}

TEST(RunnerTest, RunReturnsBeforeTheActionsFinish) {
  ActionConfig slow;
  slow.name = "slow";
  slow.kind = ActionKind::kCommand;
  slow.argv = {"/bin/sleep", "1"};
  RunnerOptions options;
  options.actions = {slow};
  Runner runner(std::move(options));
  ASSERT_TRUE(runner.Run(test::SampleIncident()).started);
  // The worker is still sleeping: nothing done yet, and a second Run for
  // the queued canary is refused all the same.
  EXPECT_EQ(runner.Outcomes("canary-7"), std::nullopt);
  const RunTicket again = runner.Run(test::SampleIncident());
  EXPECT_FALSE(again.started);
  EXPECT_THAT(again.message, HasSubstr("already queued or run"));
  const auto outcomes = runner.Wait("canary-7");
  ASSERT_EQ(outcomes.size(), 1U);
  EXPECT_TRUE(outcomes[0].ok) << outcomes[0].detail;
  EXPECT_GE(outcomes[0].duration_ms, 900);
  ASSERT_TRUE(runner.Outcomes("canary-7").has_value());
}

TEST(RunnerTest, ScopeFiltersSkipActionsAndSeededCanariesDoNotRun) {
  test::Receiver hook, control;
  ActionConfig isolate;
  isolate.name = "isolate";
  isolate.kind = ActionKind::kIsolateNode;
  isolate.scope = ScopeFilter::kNode;
  isolate.url = control.Url();
  RunnerOptions options;
  options.actions = {Hook("page", hook.Url("/p")), isolate};
  Runner runner(std::move(options));

  // Only node-scoped causes: the release-scoped webhook is skipped.
  Incident node_only = test::SampleIncident();
  node_only.canary_id = "canary-node";
  node_only.causes.erase(node_only.causes.begin());
  ASSERT_TRUE(runner.Run(node_only).started);
  auto outcomes = runner.Wait("canary-node");
  ASSERT_EQ(outcomes.size(), 2U);
  EXPECT_TRUE(outcomes[0].skipped);
  EXPECT_TRUE(outcomes[0].ok);
  EXPECT_EQ(outcomes[0].detail, "skipped: no release-scoped cause");
  EXPECT_FALSE(outcomes[1].skipped);
  EXPECT_TRUE(outcomes[1].ok) << outcomes[1].detail;
  EXPECT_TRUE(hook.requests().empty());
  EXPECT_EQ(control.requests().size(), 2U);

  runner.Seed({"canary-old"});
  Incident old = test::SampleIncident();
  old.canary_id = "canary-old";
  EXPECT_FALSE(runner.Run(old).started);
  EXPECT_TRUE(runner.Wait("canary-old").empty());
  EXPECT_TRUE(runner.Wait("never-seen").empty());
  EXPECT_TRUE(hook.requests().empty());
}

TEST(RunnerTest, DestructionFinishesQueuedIncidents) {
  test::Receiver hook;
  {
    RunnerOptions options;
    options.actions = {Hook("page", hook.Url("/p"))};
    Runner runner(std::move(options));
    for (int i = 0; i < 3; ++i) {
      Incident incident = test::SampleIncident();
      incident.canary_id = "c" + std::to_string(i);
      ASSERT_TRUE(runner.Run(incident).started);
    }
  }
  EXPECT_EQ(hook.requests().size(), 3U);
}

}  // namespace
}  // namespace gpucanary::actions
