#include "actions/action_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpucanary::actions {
namespace {

using ::testing::HasSubstr;

TEST(ParseActionsTest, ReadsEveryKindWithItsDefaults) {
  const char* yaml = R"(
listen: 127.0.0.1:9464
actions:
  - kind: webhook
    url: http://alerts.internal:8080/hooks/gpucanary/
    headers: {X-Team: gpu-infra}
    bearer_token_file: /etc/gpucanary/token
  - kind: webhook
    url: http://127.0.0.1:9/second
    timeout: 2s
    retries: 0
    backoff: 100ms
  - kind: argo_rollouts_abort
    api_server: http://127.0.0.1:8001
    namespace: inference
    rollout: "{service}"
  - kind: flagger_rollback
  - kind: command
    name: dcgm-diag
    command: [dcgmi, diag, -r, "1", --host, "{node}"]
    when: {scope: node, causes: [xid_errors, ecc_errors]}
  - kind: traffic_shift
    url: http://127.0.0.1:9100
  - kind: isolate_node
    url: http://127.0.0.1:9100
  - kind: isolate_node
    command: [kubectl, cordon, "{node}"]
  - kind: diagnostic_bundle
    dir: /var/lib/gpucanary/bundles
)";
  auto actions = ParseActionsYaml(yaml, "serve.yaml");
  ASSERT_TRUE(actions) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 9U);
  const auto& a = *actions;

  EXPECT_EQ(a[0].name, "webhook");
  EXPECT_EQ(a[0].kind, ActionKind::kWebhook);
  EXPECT_EQ(a[0].scope, ScopeFilter::kRelease);
  EXPECT_EQ(a[0].url, "http://alerts.internal:8080/hooks/gpucanary");  // trailing '/' dropped
  ASSERT_EQ(a[0].headers.size(), 1U);
  EXPECT_EQ(a[0].headers[0].first, "X-Team");
  EXPECT_EQ(a[0].bearer_token_file, "/etc/gpucanary/token");
  EXPECT_DOUBLE_EQ(a[0].http.timeout_s, 5.0);
  EXPECT_EQ(a[0].http.retries, 3);
  EXPECT_DOUBLE_EQ(a[0].http.backoff_s, 0.5);

  EXPECT_EQ(a[1].name, "webhook#2");
  EXPECT_DOUBLE_EQ(a[1].http.timeout_s, 2.0);
  EXPECT_EQ(a[1].http.retries, 0);
  EXPECT_DOUBLE_EQ(a[1].http.backoff_s, 0.1);

  EXPECT_EQ(a[2].kind, ActionKind::kArgoRolloutsAbort);
  EXPECT_EQ(a[2].api_server, "http://127.0.0.1:8001");
  EXPECT_EQ(a[2].k8s_namespace, "inference");
  EXPECT_EQ(a[2].rollout, "{service}");
  EXPECT_EQ(a[2].bearer_token_file, kInClusterTokenFile);
  EXPECT_EQ(a[2].scope, ScopeFilter::kRelease);

  EXPECT_EQ(a[3].kind, ActionKind::kFlaggerRollback);
  EXPECT_EQ(a[3].scope, ScopeFilter::kRelease);

  EXPECT_EQ(a[4].name, "dcgm-diag");
  EXPECT_EQ(a[4].scope, ScopeFilter::kNode);
  EXPECT_THAT(a[4].cause_kinds, ::testing::ElementsAre("xid_errors", "ecc_errors"));
  EXPECT_THAT(a[4].argv, ::testing::ElementsAre("dcgmi", "diag", "-r", "1", "--host", "{node}"));
  EXPECT_DOUBLE_EQ(a[4].command_timeout_s, 60.0);

  EXPECT_EQ(a[5].kind, ActionKind::kTrafficShift);
  EXPECT_EQ(a[5].scope, ScopeFilter::kRelease);
  EXPECT_EQ(a[5].stable, "");

  EXPECT_EQ(a[6].kind, ActionKind::kIsolateNode);
  EXPECT_EQ(a[6].scope, ScopeFilter::kNode);
  EXPECT_EQ(a[6].url, "http://127.0.0.1:9100");
  EXPECT_EQ(a[7].name, "isolate_node#2");
  EXPECT_THAT(a[7].argv, ::testing::ElementsAre("kubectl", "cordon", "{node}"));

  EXPECT_EQ(a[8].kind, ActionKind::kDiagnosticBundle);
  EXPECT_EQ(a[8].scope, ScopeFilter::kAny);
  EXPECT_EQ(a[8].dir, "/var/lib/gpucanary/bundles");
}

TEST(ParseActionsTest, TlsConfigForHttpsUrlsRelativeToTheFile) {
  const std::string dir = ::testing::TempDir() + "gc-actions-tls";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ca.pem") << "x";
  auto actions = ParseActionsYaml(
      "actions:\n"
      "  - kind: webhook\n"
      "    url: https://hooks.example.com/x\n"
      "    tls_config: {ca_file: ca.pem, server_name: hooks.internal, insecure_skip_verify: "
      "true}\n"
      "  - kind: argo_rollouts_abort\n"
      "    api_server: https://kubernetes.default.svc\n"
      "    rollout: '{service}'\n"
      "    tls_config: {ca_file: " +
          dir + "/ca.pem}\n",
      dir + "/serve.yaml");
  ASSERT_TRUE(actions) << actions.error().message();
  const net::TlsClientOptions& hook = (*actions)[0].http.tls;
  EXPECT_EQ(hook.ca_file, dir + "/ca.pem");
  EXPECT_EQ(hook.server_name, "hooks.internal");
  EXPECT_TRUE(hook.insecure_skip_verify);
  EXPECT_EQ((*actions)[1].http.tls.ca_file, dir + "/ca.pem");
  // Without tls_config, argo trusts the in-cluster CA when the pod has one.
  actions = ParseActionsYaml(
      "actions:\n  - kind: argo_rollouts_abort\n    api_server: https://k\n    rollout: r\n",
      "serve.yaml");
  ASSERT_TRUE(actions) << actions.error().message();
  EXPECT_EQ((*actions)[0].http.tls.ca_file,
            std::filesystem::exists(kInClusterCaFile) ? std::string(kInClusterCaFile) : "");
}

TEST(ParseActionsTest, NoActionsIsEmpty) {
  auto none = ParseActionsYaml("listen: 127.0.0.1:0\n", "serve.yaml");
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_TRUE(none->empty());
  auto null = ParseActionsYaml("actions:\n", "serve.yaml");
  ASSERT_TRUE(null) << null.error().ToString();
  EXPECT_TRUE(null->empty());
}

struct BadCase {
  const char* yaml;
  const char* error;  // the whole message, FILE:LINE:COL first
};

class ParseActionsErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseActionsErrorTest, NamesFileLineColumnAndField) {
  auto actions = ParseActionsYaml(GetParam().yaml, "serve.yaml");
  ASSERT_FALSE(actions) << GetParam().yaml;
  EXPECT_EQ(actions.error().code(), StatusCode::kParseError);
  EXPECT_EQ(actions.error().message(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseActionsErrorTest,
    ::testing::Values(
        BadCase{"actions: {kind: webhook}\n",
                "serve.yaml:1:10: actions: expected a list of actions"},
        BadCase{"actions:\n  - kind: pager\n",
                "serve.yaml:2:11: actions[0].kind: unknown kind 'pager' (expected one of "
                "webhook, argo_rollouts_abort, flagger_rollback, command, traffic_shift, "
                "isolate_node, diagnostic_bundle)"},
        BadCase{"actions:\n  - url: http://x/\n",
                "serve.yaml:2:5: actions[0].kind: required (one of webhook, "
                "argo_rollouts_abort, flagger_rollback, command, traffic_shift, isolate_node, "
                "diagnostic_bundle)"},
        BadCase{"actions:\n  - kind: webhook\n    name: w\n",
                "serve.yaml:2:5: actions[0].url: required for kind webhook"},
        BadCase{"actions:\n  - kind: webhook\n    url: ftp://hooks.example.com/x\n",
                "serve.yaml:3:10: actions[0].url: bad URL 'ftp://hooks.example.com/x': only "
                "http:// and https:// are supported"},
        BadCase{"actions:\n  - kind: webhook\n    url: https://x/\n    tls_config:\n"
                "      ca_file: /nonexistent/ca.pem\n",
                "serve.yaml:5:16: actions[0].tls_config.ca_file: cannot read "
                "'/nonexistent/ca.pem': No such file or directory"},
        BadCase{"actions:\n  - kind: webhook\n    url: https://x/\n    tls_config: {ca: x}\n",
                "serve.yaml:4:18: actions[0].tls_config.ca: unknown field (expected one of "
                "ca_file, cert_file, key_file, server_name, insecure_skip_verify)"},
        BadCase{"actions:\n  - kind: command\n    command: [x]\n    tls_config: {}\n",
                "serve.yaml:4:5: actions[0].tls_config: not a field of kind command (expected "
                "one of kind, name, when, command, timeout)"},
        BadCase{"actions:\n  - kind: flagger_rollback\n    url: http://x/\n",
                "serve.yaml:3:5: actions[0].url: not a field of kind flagger_rollback (expected "
                "one of kind, name, when)"},
        BadCase{
            "actions:\n  - kind: webhook\n    url: http://x/\n    retrys: 2\n",
            "serve.yaml:4:5: actions[0].retrys: unknown field (expected one of kind, name, "
            "when, url, headers, bearer_token_file, bearer_token, token_file, timeout, "
            "retries, backoff, tls_config, api_server, namespace, rollout, command, stable, dir)"},
        BadCase{"actions:\n  - kind: webhook\n    url: http://x/\n    retries: 11\n",
                "serve.yaml:4:14: actions[0].retries: must be in 0..10"},
        BadCase{"actions:\n  - kind: webhook\n    url: http://x/\n    timeout: 0s\n",
                "serve.yaml:4:14: actions[0].timeout: must be positive"},
        BadCase{"actions:\n  - kind: command\n    command: [kubectl, cordon, \"{host}\"]\n",
                "serve.yaml:3:32: actions[0].command[2]: unknown template '{host}' (expected "
                "one of {node, release, service, canary, verdict})"},
        BadCase{"actions:\n  - kind: command\n    command: kubectl cordon\n",
                "serve.yaml:3:14: actions[0].command: expected a non-empty list of arguments, "
                "e.g. [kubectl, cordon, \"{node}\"] (no shell)"},
        BadCase{"actions:\n  - kind: isolate_node\n    url: http://x/\n    command: [echo]\n",
                "serve.yaml:4:14: actions[0]: isolate_node takes exactly one of url (a control "
                "API) or command"},
        BadCase{"actions:\n  - kind: flagger_rollback\n    when: {scope: nodes}\n",
                "serve.yaml:3:19: actions[0].when.scope: unknown scope 'nodes' (expected "
                "release, node or any)"},
        BadCase{"actions:\n  - kind: flagger_rollback\n    name: x\n  - kind: command\n    "
                "name: x\n    command: [true]\n",
                "serve.yaml:5:11: actions[1].name: duplicate action name 'x'"},
        BadCase{"actions:\n  - kind: webhook\n    url: http://x/\n    headers: {\"X Bad\": 1}\n",
                "serve.yaml:4:15: actions[0].headers.X Bad: not a valid header name"},
        BadCase{"actions:\n  - kind: webhook\n    url: http://x/\n    headers: {Host: y}\n",
                "serve.yaml:4:15: actions[0].headers.Host: set by gpucanary, not configurable"},
        BadCase{"actions:\n  - kind: argo_rollouts_abort\n    api_server: http://k/\n",
                "serve.yaml:2:5: actions[0].rollout: required for kind argo_rollouts_abort"}));

TEST(ParseActionsTest, SyntaxErrorsHaveAPosition) {
  auto actions = ParseActionsYaml("actions:\n  - kind: webhook\n    url: [http://x/\n", "s.yaml");
  ASSERT_FALSE(actions);
  EXPECT_THAT(actions.error().message(), ::testing::StartsWith("s.yaml:"));
  EXPECT_THAT(actions.error().message(), HasSubstr(": syntax: "));
}

TEST(ActionKindTest, NamesRoundTrip) {
  EXPECT_EQ(ActionKindName(ActionKind::kArgoRolloutsAbort), "argo_rollouts_abort");
  EXPECT_EQ(ActionKindName(ActionKind::kDiagnosticBundle), "diagnostic_bundle");
  EXPECT_EQ(ScopeFilterName(ScopeFilter::kNode), "node");
}

}  // namespace
}  // namespace gpucanary::actions
