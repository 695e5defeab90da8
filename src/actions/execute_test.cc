#include "actions/execute.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actions/test_util.h"
#include "core/clock.h"

namespace gpucanary::actions {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

class ExecuteTest : public ::testing::Test {
 protected:
  ActionOutcome Execute(const ActionConfig& a, const Incident& incident = test::SampleIncident()) {
    return ExecuteAction(a, incident, ActionContext{&clock_, &gate_, {}});
  }
  static ActionConfig Webhook(const std::string& url) {
    ActionConfig a;
    a.name = "hook";
    a.kind = ActionKind::kWebhook;
    a.url = url;
    a.http.backoff_s = 0.01;  // the policy's shape, fast
    return a;
  }

  RealClock clock_;
  FlaggerGate gate_;
};

TEST_F(ExecuteTest, WebhookPostsTheIncidentWithHeadersAndToken) {
  test::Receiver receiver;
  const auto dir = test::TempDir("webhook");
  test::WriteAll(dir / "token", "s3cret-token\n");
  ActionConfig a = Webhook(receiver.Url("/hooks/gpucanary"));
  a.headers = {{"X-Team", "gpu-infra"}};
  a.bearer_token_file = (dir / "token").string();
  const Incident incident = test::SampleIncident();

  const ActionOutcome o = Execute(a, incident);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.name, "hook");
  EXPECT_EQ(o.kind, "webhook");
  EXPECT_EQ(o.attempts, 1);
  EXPECT_EQ(o.detail, "POST " + receiver.Url("/hooks/gpucanary") + ": HTTP 200");
  EXPECT_EQ(o.output, R"({"answer":0})");
  EXPECT_GT(o.started_at_ms, 0);

  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1U);
  const net::HttpRequest& r = requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/hooks/gpucanary");
  EXPECT_EQ(r.Header("content-type"), "application/json");
  EXPECT_EQ(r.Header("authorization"), "Bearer s3cret-token");
  EXPECT_EQ(r.Header("x-team"), "gpu-infra");
  EXPECT_EQ(r.Header("idempotency-key"), "gpucanary-canary-7");
  EXPECT_THAT(std::string(r.Header("user-agent")), ::testing::StartsWith("gpucanary/"));
  int user_agents = 0;
  for (const auto& h : r.headers) user_agents += h.first == "user-agent" ? 1 : 0;
  EXPECT_EQ(user_agents, 1);
  EXPECT_EQ(r.body, IncidentToJson(incident));

  const Json body = Json::parse(r.body);
  EXPECT_EQ(body["canary"], "canary-7");
  EXPECT_EQ(body["verdict"], "fail");
  EXPECT_DOUBLE_EQ(body["decided_at"].get<double>(), 1764680034.0);
  EXPECT_EQ(body["release"]["id"], "llama3-70b-2026-12-02.1");
  EXPECT_EQ(body["release"]["service"], "chat-api");
  EXPECT_EQ(body["release"]["annotation"]["previous"], "llama3-70b-2026-11-28.2");
  ASSERT_EQ(body["causes"].size(), 3U);
  EXPECT_EQ(body["causes"][0]["kind"], "power_brake");
  EXPECT_EQ(body["causes"][0]["scope"], "release");
  EXPECT_EQ(body["causes"][0]["node"], "node-4");
  EXPECT_EQ(body["causes"][0]["gpus"], Json::array({"node-4/0", "node-4/1"}));
  EXPECT_EQ(body["causes"][0]["summary"],
            "HW power brake held SM clock at 1050 MHz (baseline 1980) for 14 s");
  EXPECT_EQ(body["canary_nodes"], Json::array({"node-4", "node-6", "node-7"}));
  EXPECT_EQ(body["baseline_nodes"], Json::array({"node-1", "node-2"}));
}

TEST_F(ExecuteTest, WebhookRetries503And429ThenSucceeds) {
  test::Receiver receiver({503, 429, 200});
  const ActionOutcome o = Execute(Webhook(receiver.Url("/h")));
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.attempts, 3);
  EXPECT_THAT(o.detail, HasSubstr("HTTP 200 (after 3 attempts)"));
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0].body, requests[2].body);  // the same delivery, again
}

TEST_F(ExecuteTest, WebhookBacksOffExponentially) {
  test::Receiver receiver({500, 500, 200});
  ActionConfig a = Webhook(receiver.Url("/h"));
  a.http.backoff_s = 0.1;  // waits 0.1 s then 0.2 s
  const auto start = std::chrono::steady_clock::now();
  const ActionOutcome o = Execute(a);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 3.0);
}

TEST_F(ExecuteTest, WebhookDoesNotRetryA400) {
  test::Receiver receiver({400});
  const ActionOutcome o = Execute(Webhook(receiver.Url("/h")));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_THAT(o.detail, HasSubstr("HTTP 400"));
  EXPECT_EQ(receiver.requests().size(), 1U);
}

TEST_F(ExecuteTest, WebhookGivesUpAfterItsRetries) {
  test::Receiver receiver({502, 502, 502, 502, 502});
  ActionConfig a = Webhook(receiver.Url("/h"));
  a.http.retries = 2;
  const ActionOutcome o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 3);
  EXPECT_THAT(o.detail, HasSubstr("HTTP 502 (after 3 attempts)"));
  EXPECT_EQ(receiver.requests().size(), 3U);
}

TEST_F(ExecuteTest, WebhookTimesOut) {
  test::Receiver receiver({}, /*delay_ms=*/1500);
  ActionConfig a = Webhook(receiver.Url("/slow"));
  a.http.timeout_s = 0.2;
  a.http.retries = 0;
  const auto start = std::chrono::steady_clock::now();
  const ActionOutcome o = Execute(a);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_THAT(o.detail, HasSubstr("timed out after 200 ms"));
  EXPECT_LT(took, 1.0);
}

TEST_F(ExecuteTest, WebhookRetriesARefusedConnection) {
  std::string url;
  {
    test::Receiver gone;
    url = gone.Url("/h");
    gone.Stop();
  }
  ActionConfig a = Webhook(url);
  a.http.retries = 1;
  const ActionOutcome o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 2);
  EXPECT_THAT(o.detail, HasSubstr("Connection refused"));
}

TEST_F(ExecuteTest, WebhookWithAMissingTokenFileSendsNothing) {
  test::Receiver receiver;
  ActionConfig a = Webhook(receiver.Url("/h"));
  a.bearer_token_file = "/nonexistent/token";
  const ActionOutcome o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_THAT(o.detail, HasSubstr("token file /nonexistent/token"));
  EXPECT_TRUE(receiver.requests().empty());
}

TEST_F(ExecuteTest, ArgoRolloutsAbortPatchesTheStatusSubresource) {
  test::Receiver api_server;
  const auto dir = test::TempDir("argo");
  test::WriteAll(dir / "token", "eyJhbGciOi.k8s\n");
  ActionConfig a;
  a.name = "argo";
  a.kind = ActionKind::kArgoRolloutsAbort;
  a.api_server = api_server.Url();
  a.k8s_namespace = "inference";
  a.rollout = "{service}";
  a.bearer_token_file = (dir / "token").string();
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  const auto requests = api_server.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].target,
            "/apis/argoproj.io/v1alpha1/namespaces/inference/rollouts/chat-api/status");
  EXPECT_EQ(requests[0].Header("content-type"), "application/merge-patch+json");
  EXPECT_EQ(requests[0].Header("authorization"), "Bearer eyJhbGciOi.k8s");
  EXPECT_EQ(requests[0].body, R"({"status":{"abort":true}})");
}

TEST_F(ExecuteTest, ArgoRolloutsAbortReportsA404WithoutRetrying) {
  test::Receiver api_server({404});
  ActionConfig a;
  a.kind = ActionKind::kArgoRolloutsAbort;
  a.api_server = api_server.Url();
  a.rollout = "missing";
  a.bearer_token_file = std::string(kInClusterTokenFile);  // absent here: no token sent
  const ActionOutcome o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 1);
  EXPECT_THAT(o.detail, HasSubstr("HTTP 404"));
  const auto requests = api_server.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].target,
            "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/missing/status");
  EXPECT_EQ(requests[0].Header("authorization"), "");
}

TEST_F(ExecuteTest, FlaggerRollbackSetsTheGate) {
  ActionConfig a;
  a.kind = ActionKind::kFlaggerRollback;
  EXPECT_FALSE(gate_.ShouldRollback("canary-7"));
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_TRUE(gate_.ShouldRollback("canary-7"));
  EXPECT_TRUE(gate_.ShouldRollback("llama3-70b-2026-12-02.1"));
  EXPECT_FALSE(gate_.ShouldRollback("canary-8"));
  EXPECT_THAT(gate_.Reason("canary-7").value_or(""), HasSubstr("HW power brake"));
  gate_.Clear("canary-7");
  EXPECT_FALSE(gate_.ShouldRollback("canary-7"));
  EXPECT_EQ(gate_.Reason("canary-7"), std::nullopt);

  const ActionOutcome no_gate =
      ExecuteAction(a, test::SampleIncident(), ActionContext{&clock_, nullptr, {}});
  EXPECT_FALSE(no_gate.ok);
  EXPECT_THAT(no_gate.detail, HasSubstr("no Flagger gate"));
}

TEST_F(ExecuteTest, TrafficShiftSendsTrafficBackToThePreviousRelease) {
  test::Receiver control;
  ActionConfig a;
  a.kind = ActionKind::kTrafficShift;
  a.url = control.Url();
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  const auto requests = control.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/traffic");
  EXPECT_EQ(requests[0].Header("content-type"), "application/json");
  EXPECT_EQ(Json::parse(requests[0].body), Json::parse(R"({"weights": {"llama3-70b-2026-11-28.2": 1,
                                        "llama3-70b-2026-12-02.1": 0}})"));

  a.stable = "pinned-stable";  // configured: wins over the annotation
  EXPECT_TRUE(Execute(a).ok);
  EXPECT_EQ(Json::parse(control.requests().at(1).body)["weights"]["pinned-stable"], 1);
}

TEST_F(ExecuteTest, TrafficShiftWithoutAStableReleaseFails) {
  test::Receiver control;
  ActionConfig a;
  a.kind = ActionKind::kTrafficShift;
  a.url = control.Url();
  Incident incident = test::SampleIncident();
  incident.release.annotation_json = R"({"id": "x"})";
  const ActionOutcome o = Execute(a, incident);
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.detail, HasSubstr("no stable release"));
  EXPECT_TRUE(control.requests().empty());
}

TEST_F(ExecuteTest, IsolateNodeCordonsEachNodeScopedNodeOnly) {
  test::Receiver control;
  ActionConfig a;
  a.kind = ActionKind::kIsolateNode;
  a.url = control.Url();
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.attempts, 2);
  const auto requests = control.requests();
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].target, "/cordon");
  EXPECT_EQ(requests[0].body, R"({"node":"node-6"})");  // node-4's cause is the release's
  EXPECT_EQ(requests[1].body, R"({"node":"node-7"})");

  const ActionOutcome release_only = Execute(a, test::ReleaseOnlyIncident());
  EXPECT_TRUE(release_only.ok);
  EXPECT_TRUE(release_only.skipped);
  EXPECT_EQ(control.requests().size(), 2U);  // nothing more
}

// A hook that appends its arguments, stdin and environment to a log file.
std::filesystem::path WriteHook(const std::filesystem::path& dir) {
  const auto script = dir / "hook.sh";
  test::WriteAll(script,
                 "#!/bin/sh\n"
                 "log=\"$1\"; shift\n"
                 "echo \"args=$*\" >> \"$log\"\n"
                 "echo \"RELEASE=$GPUCANARY_RELEASE CANARY=$GPUCANARY_CANARY "
                 "VERDICT=$GPUCANARY_VERDICT\" >> \"$log\"\n"
                 "echo \"KINDS=$GPUCANARY_CAUSE_KINDS NODES=$GPUCANARY_NODES "
                 "NODE=$GPUCANARY_NODE\" >> \"$log\"\n"
                 "echo \"stdin_canary=$(grep -o '\"canary\":\"[^\"]*\"')\" >> \"$log\"\n"
                 "echo \"hook ran for $1\"\n");
  return script;
}

TEST_F(ExecuteTest, CommandHookGetsTheIncidentInItsEnvironment) {
  const auto dir = test::TempDir("command");
  const auto log = dir / "log.txt";
  ActionConfig a;
  a.kind = ActionKind::kCommand;
  a.argv = {"/bin/sh", WriteHook(dir).string(), log.string(), "{release}", "{canary}"};
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.attempts, 1);
  EXPECT_EQ(o.detail, "exit 0");
  EXPECT_THAT(o.output, HasSubstr("hook ran for llama3-70b-2026-12-02.1"));
  EXPECT_EQ(test::ReadAll(log),
            "args=llama3-70b-2026-12-02.1 canary-7\n"
            "RELEASE=llama3-70b-2026-12-02.1 CANARY=canary-7 VERDICT=fail\n"
            "KINDS=power_brake,xid_errors,pcie_downtrain NODES=node-6,node-7 NODE=\n"
            "stdin_canary=\"canary\":\"canary-7\"\n");
}

// Issue 22: with a shell hook, a release id holding "$(...)" ran as shell
// syntax, and a host named like an option reached a {node} argument.
TEST_F(ExecuteTest, PlaceholdersNeverBecomeShellSyntaxOrOptions) {
  const auto dir = test::TempDir("command-inject");
  const auto pwned = dir / "pwned";
  const auto log = dir / "log.txt";
  ActionConfig a;
  a.kind = ActionKind::kCommand;
  a.argv = {"/bin/sh", "-c", "echo rollback {release} >> " + log.string()};
  Incident evil = test::SampleIncident();
  evil.release.id = "r1$(touch " + pwned.string() + ")";
  ActionOutcome o = Execute(a, evil);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_THAT(o.detail, HasSubstr("{release} would be 'r1$(touch "));
  EXPECT_THAT(o.detail, HasSubstr("not run"));
  EXPECT_FALSE(std::filesystem::exists(pwned));
  EXPECT_FALSE(std::filesystem::exists(log));
  // Backticks, separators, spaces and newlines too.
  for (std::string id : {"r1`id`", "r1;id", "r1 && id", "r1\nid", "r1|id", "../r1", "-r1"}) {
    evil.release.id = id;
    EXPECT_FALSE(Execute(a, evil).ok) << id;
  }
  EXPECT_FALSE(std::filesystem::exists(log));
  // The same hook with a plain id runs.
  evil.release.id = "llama3-70b-2026-12-02.1";
  o = Execute(a, evil);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(test::ReadAll(log), "rollback llama3-70b-2026-12-02.1\n");

  // A node named like an option is not passed; the other node still is.
  ActionConfig cordon;
  cordon.kind = ActionKind::kCommand;
  cordon.argv = {"/bin/sh", WriteHook(dir).string(), log.string(), "cordon", "{node}"};
  Incident odd = test::SampleIncident();
  odd.causes[1].node = "--kubeconfig=evil.yaml";
  o = Execute(cordon, odd);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.attempts, 1);  // node-7 only
  EXPECT_THAT(o.detail,
              HasSubstr("--kubeconfig=evil.yaml: {node} would be '--kubeconfig=evil.yaml'"));
  EXPECT_THAT(o.detail, HasSubstr("node-7: exit 0"));
  EXPECT_EQ(test::ReadAll(log).find("args=cordon --kubeconfig"), std::string::npos);
  EXPECT_THAT(test::ReadAll(log), HasSubstr("args=cordon node-7\n"));
}

TEST(SafePlaceholderValueTest, HostNamesAndIdsPassShellAndOptionsDoNot) {
  for (std::string_view ok : {"node-4", "gpu-node-17.prod.example.com", "10.0.0.5:9400",
                              "llama3-70b-2026-12-02.1", "fail", "a_b", "sha256=ab+cd@x"}) {
    EXPECT_TRUE(SafePlaceholderValue(ok)) << ok;
  }
  for (std::string_view bad :
       {"", "-rf", "--kubeconfig=x", ".hidden", "a b", "a/b", "$(id)", "`id`", "a;b", "a|b", "a&b",
        "a\nb", "a'b", "a\"b", "a\\b", "a*", "a?", "a~", "a#b"}) {
    EXPECT_FALSE(SafePlaceholderValue(bad)) << bad;
  }
  EXPECT_FALSE(SafePlaceholderValue(std::string(254, 'a')));
  EXPECT_TRUE(SafePlaceholderValue(std::string(253, 'a')));
}

TEST_F(ExecuteTest, CommandNodeTemplateRunsOncePerNodeScopedNode) {
  const auto dir = test::TempDir("command-node");
  const auto log = dir / "log.txt";
  ActionConfig a;
  a.kind = ActionKind::kCommand;
  a.argv = {"/bin/sh", WriteHook(dir).string(), log.string(), "cordon", "{node}"};
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.attempts, 2);
  EXPECT_EQ(o.detail, "node-6: exit 0; node-7: exit 0");
  const std::string text = test::ReadAll(log);
  EXPECT_THAT(text, HasSubstr("args=cordon node-6\n"));
  EXPECT_THAT(text, HasSubstr("NODES=node-6,node-7 NODE=node-6\n"));
  EXPECT_THAT(text, HasSubstr("args=cordon node-7\n"));
  EXPECT_THAT(text, HasSubstr("NODES=node-6,node-7 NODE=node-7\n"));
  EXPECT_EQ(text.find("node-4"), std::string::npos);

  const ActionOutcome none = Execute(a, test::ReleaseOnlyIncident());
  EXPECT_TRUE(none.ok);
  EXPECT_TRUE(none.skipped);
  EXPECT_EQ(none.attempts, 0);
}

TEST_F(ExecuteTest, CommandFailureAndTimeoutAreReported) {
  ActionConfig a;
  a.kind = ActionKind::kCommand;
  a.argv = {"/bin/sh", "-c", "echo broken >&2; exit 4"};
  ActionOutcome o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.detail, "exit 4");
  EXPECT_THAT(o.output, HasSubstr("broken"));

  a.argv = {"/bin/sleep", "30"};
  a.command_timeout_s = 0.2;
  o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.detail, HasSubstr("timed out after"));
  EXPECT_LT(o.duration_ms, 5000);

  a.argv = {"/nonexistent/hook"};
  o = Execute(a);
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.detail, HasSubstr("exec '/nonexistent/hook'"));
}

TEST_F(ExecuteTest, IsolateNodeByCommandRunsPerNode) {
  const auto dir = test::TempDir("isolate-command");
  const auto log = dir / "log.txt";
  ActionConfig a;
  a.kind = ActionKind::kIsolateNode;
  a.argv = {"/bin/sh", WriteHook(dir).string(), log.string(), "{node}"};
  const ActionOutcome o = Execute(a);
  EXPECT_TRUE(o.ok) << o.detail;
  EXPECT_EQ(o.detail, "node-6: exit 0; node-7: exit 0");
}

TEST(SelectsTest, ScopeAndCauseFilters) {
  ActionConfig a;
  a.scope = ScopeFilter::kRelease;
  std::string why;
  EXPECT_TRUE(Selects(a, test::SampleIncident(), &why));
  Incident node_only = test::SampleIncident();
  node_only.causes.erase(node_only.causes.begin());
  EXPECT_FALSE(Selects(a, node_only, &why));
  EXPECT_EQ(why, "no release-scoped cause");
  a.scope = ScopeFilter::kNode;
  EXPECT_TRUE(Selects(a, node_only, &why));
  EXPECT_FALSE(Selects(a, test::ReleaseOnlyIncident(), &why));
  a.scope = ScopeFilter::kAny;
  a.cause_kinds = {"ecc_errors", "xid_errors"};
  EXPECT_TRUE(Selects(a, node_only, &why));
  EXPECT_FALSE(Selects(a, test::ReleaseOnlyIncident(), &why));
  EXPECT_EQ(why, "no cause of kind ecc_errors, xid_errors");
}

TEST(IncidentTest, DerivedViews) {
  const Incident i = test::SampleIncident();
  EXPECT_THAT(i.NodeScopedNodes(), ElementsAre("node-6", "node-7"));
  Incident spread = i;
  spread.causes.push_back({vocab::CauseKind::kEccErrors,
                           vocab::Scope::kNode,
                           "",
                           {"node-8/0", "node-9/1", "node-8/2"},
                           "."});
  EXPECT_THAT(spread.NodeScopedNodes(), ElementsAre("node-6", "node-7", "node-8", "node-9"));
  EXPECT_THAT(i.CauseKinds(),
              ElementsAre(vocab::CauseKind::kPowerBrake, vocab::CauseKind::kXidErrors,
                          vocab::CauseKind::kPcieDowntrain));
  EXPECT_EQ(i.PreviousRelease(), "llama3-70b-2026-11-28.2");
  Incident bad = i;
  bad.release.annotation_json = "not json";
  EXPECT_EQ(bad.PreviousRelease(), "");
  EXPECT_EQ(Json::parse(IncidentToJson(bad))["release"]["annotation"], "not json");
  EXPECT_EQ(ExpandTemplate("{service}/{release}@{node}:{canary}:{verdict}:{other}", i, "n1"),
            "chat-api/llama3-70b-2026-12-02.1@n1:canary-7:fail:{other}");
}

}  // namespace
}  // namespace gpucanary::actions
