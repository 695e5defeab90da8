#include "actions/execute.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "actions/bundle.h"
#include "actions/command.h"
#include "net/http_client.h"
#include "net/url.h"

namespace gpucanary::actions {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxRecordedOutput = 16 << 10;

std::string Bounded(std::string text) {
  if (text.size() > kMaxRecordedOutput) {
    text.resize(kMaxRecordedOutput);
    text += "\n[truncated]";
  }
  return text;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// The incident's distinct cause kinds as their wire names: what
// `when.causes` lists and GPUCANARY_CAUSE_KINDS carries.
std::vector<std::string> CauseKindNames(const Incident& incident) {
  std::vector<std::string> out;
  for (vocab::CauseKind k : incident.CauseKinds()) out.emplace_back(vocab::Name(k));
  return out;
}

// A bearer token file's content without surrounding whitespace (files
// mounted from Secrets often end with a newline).
Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(StatusCode::kNotFound, "token file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  const auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  token.erase(token.begin(), std::find_if(token.begin(), token.end(), not_space));
  token.erase(std::find_if(token.rbegin(), token.rend(), not_space).base(), token.end());
  if (token.empty()) return Error(StatusCode::kInvalidArgument, "token file " + path + ": empty");
  if (token.find_first_of("\r\n") != std::string::npos) {
    return Error(StatusCode::kInvalidArgument, "token file " + path + ": more than one line");
  }
  return token;
}

// Sends one request with the action's retry policy (HttpPolicy): retried
// on no response, 5xx and 429; final on anything else. Adds to o.attempts,
// sets o.detail, o.output; returns whether a 2xx came back.
bool SendWithRetries(const std::string& url, const net::FetchOptions& request,
                     const HttpPolicy& policy, Clock& clock, ActionOutcome& o) {
  double backoff_s = policy.backoff_s;
  const int first = o.attempts;
  for (int attempt = 0;; ++attempt) {
    ++o.attempts;
    auto response = net::Fetch(url, request);
    bool ok = false;
    bool retry = false;
    std::string what;
    if (!response) {
      what = response.error().message();
      // No answer (refused, timed out, connection broken) may be transient;
      // a bad URL or a reply that is not HTTP will not improve.
      retry = response.error().code() == StatusCode::kUnavailable ||
              response.error().code() == StatusCode::kIoError;
    } else {
      what = request.method + " " + url + ": HTTP " + std::to_string(response->status);
      ok = response->status >= 200 && response->status < 300;
      retry = response->status >= 500 || response->status == 429;
      o.output = Bounded(response->body);
    }
    const int sent = o.attempts - first;
    o.detail = sent > 1 ? what + " (after " + std::to_string(sent) + " attempts)" : what;
    if (ok) return true;
    if (!retry || attempt >= policy.retries) return false;
    clock.SleepUntilMs(clock.NowMs() + static_cast<std::int64_t>(backoff_s * 1000.0));
    backoff_s *= 2;
  }
}

net::FetchOptions JsonRequest(std::string method, std::string body, const HttpPolicy& policy) {
  net::FetchOptions request;
  request.method = std::move(method);
  request.body = std::move(body);
  request.content_type = "application/json";
  request.timeout_ms = static_cast<int>(std::max(1.0, policy.timeout_s * 1000.0));
  request.accept_gzip = false;
  request.tls = policy.tls;  // for https:// URLs
  return request;
}

void RunWebhook(const ActionConfig& a, const Incident& incident, Clock& clock, ActionOutcome& o) {
  net::FetchOptions request = JsonRequest("POST", IncidentToJson(incident), a.http);
  // Lets the receiver drop a retried delivery it already has.
  request.headers.emplace_back("Idempotency-Key", "gpucanary-" + incident.canary_id);
  for (const auto& header : a.headers) request.headers.push_back(header);
  std::string token = a.bearer_token;
  if (!a.bearer_token_file.empty()) {
    auto t = ReadToken(a.bearer_token_file);
    if (!t) {
      o.detail = t.error().message();
      return;
    }
    token = std::move(*t);
  }
  if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  o.ok = SendWithRetries(a.url, request, a.http, clock, o);
}

// Argo Rollouts' abort is a merge patch of the status subresource, what
// `kubectl argo rollouts abort` sends:
// https://argoproj.github.io/argo-rollouts/generated/kubectl-argo-rollouts/kubectl-argo-rollouts_abort/
void RunArgoAbort(const ActionConfig& a, const Incident& incident, Clock& clock, ActionOutcome& o) {
  Result<std::string> ns = ExpandChecked(a.k8s_namespace, incident, "");
  Result<std::string> rollout = ExpandChecked(a.rollout, incident, "");
  if (!ns || !rollout) {
    o.detail = (!ns ? ns : rollout).error().message();
    return;
  }
  const std::string url = a.api_server + "/apis/argoproj.io/v1alpha1/namespaces/" +
                          net::UrlEncode(*ns) + "/rollouts/" + net::UrlEncode(*rollout) + "/status";
  net::FetchOptions request = JsonRequest("PATCH", R"({"status":{"abort":true}})", a.http);
  request.content_type = "application/merge-patch+json";
  auto token = ReadToken(a.bearer_token_file);
  if (token) {
    request.headers.emplace_back("Authorization", "Bearer " + *token);
  } else if (a.bearer_token_file != kInClusterTokenFile) {
    o.detail = token.error().message();
    return;
  }
  // Outside a cluster with the default token path: no token, as through
  // `kubectl proxy`, which authenticates for us.
  o.ok = SendWithRetries(url, request, a.http, clock, o);
}

void RunFlagger(const Incident& incident, FlaggerGate* gate, ActionOutcome& o) {
  if (gate == nullptr) {
    o.detail = "no Flagger gate: the daemon's Flagger webhook is not enabled";
    return;
  }
  std::string reason = "verdict " + std::string(vocab::Name(incident.verdict));
  if (!incident.causes.empty()) reason += ": " + incident.causes.front().summary;
  gate->SetRollback(incident.canary_id, reason);
  if (!incident.release.id.empty()) gate->SetRollback(incident.release.id, reason);
  ++o.attempts;
  o.ok = true;
  o.detail = "rollback answer set for canary " + incident.canary_id + " and release " +
             incident.release.id;
}

bool UsesNode(const std::vector<std::string>& argv) {
  return std::any_of(argv.begin(), argv.end(),
                     [](const std::string& s) { return s.find("{node}") != std::string::npos; });
}

std::vector<std::pair<std::string, std::string>> CommandEnv(const Incident& incident,
                                                            const std::string& node) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"GPUCANARY_RELEASE", incident.release.id},
      {"GPUCANARY_SERVICE", incident.release.service},
      {"GPUCANARY_CANARY", incident.canary_id},
      {"GPUCANARY_VERDICT", std::string(vocab::Name(incident.verdict))},
      {"GPUCANARY_CAUSE_KINDS", Join(CauseKindNames(incident), ",")},
      {"GPUCANARY_NODES", Join(incident.NodeScopedNodes(), ",")},
  };
  if (!node.empty()) env.emplace_back("GPUCANARY_NODE", node);
  return env;
}

// Runs argv once, or once per node of a node-scoped cause when it uses
// {node}; `per_node` forces the latter (isolate_node).
void RunCommands(const ActionConfig& a, const Incident& incident, bool per_node, ActionOutcome& o) {
  std::vector<std::string> nodes = {""};
  if (per_node || UsesNode(a.argv)) {
    nodes = incident.NodeScopedNodes();
    if (nodes.empty()) {
      o.ok = true;
      o.skipped = true;
      o.detail = "no node-scoped cause: nothing to run";
      return;
    }
  }
  const std::string stdin_json = IncidentToJson(incident);
  std::vector<std::string> details;
  std::string output;
  bool all_ok = true;
  for (const std::string& node : nodes) {
    CommandSpec spec;
    Status expanded = Status::Ok();
    for (const std::string& arg : a.argv) {
      Result<std::string> e = ExpandChecked(arg, incident, node);
      if (!e) {
        expanded = Status(e.error());
        break;
      }
      spec.argv.push_back(std::move(*e));
    }
    if (!expanded.ok()) {
      all_ok = false;
      details.push_back(node.empty() ? expanded.message() : node + ": " + expanded.message());
      continue;
    }
    spec.env = CommandEnv(incident, node);
    spec.stdin_data = stdin_json;
    spec.timeout_s = a.command_timeout_s;
    ++o.attempts;
    auto result = RunCommand(spec);
    std::string what = result ? result->Describe() : result.error().message();
    all_ok = all_ok && result && result->ok();
    details.push_back(node.empty() ? what : node + ": " + what);
    output += "$ " + Join(spec.argv, " ") + "\n";
    if (result) output += result->stdout_text + result->stderr_text;
  }
  o.ok = all_ok;
  o.detail = Join(details, "; ");
  o.output = Bounded(std::move(output));
}

void RunTrafficShift(const ActionConfig& a, const Incident& incident, Clock& clock,
                     ActionOutcome& o) {
  const std::string stable = a.stable.empty() ? incident.PreviousRelease() : a.stable;
  if (stable.empty()) {
    o.detail = "no stable release: set `stable` or send `previous` in the release annotation";
    return;
  }
  if (stable == incident.release.id) {
    o.detail = "the stable release '" + stable + "' is the failing release";
    return;
  }
  const Json body = {{"weights", {{stable, 1}, {incident.release.id, 0}}}};
  o.ok = SendWithRetries(a.url + "/traffic", JsonRequest("POST", body.dump(), a.http), a.http,
                         clock, o);
}

void RunIsolate(const ActionConfig& a, const Incident& incident, Clock& clock, ActionOutcome& o) {
  if (!a.argv.empty()) {
    RunCommands(a, incident, /*per_node=*/true, o);
    return;
  }
  const std::vector<std::string> nodes = incident.NodeScopedNodes();
  if (nodes.empty()) {
    o.ok = true;
    o.skipped = true;
    o.detail = "no node-scoped cause: nothing to isolate";
    return;
  }
  std::vector<std::string> details;
  bool all_ok = true;
  for (const std::string& node : nodes) {
    const Json body = {{"node", node}};
    const bool ok = SendWithRetries(a.url + "/cordon", JsonRequest("POST", body.dump(), a.http),
                                    a.http, clock, o);
    all_ok = all_ok && ok;
    details.push_back(node + ": " + o.detail);
  }
  o.ok = all_ok;
  o.detail = Join(details, "; ");
}

void RunBundle(const ActionConfig& a, const Incident& incident, const ActionContext& context,
               ActionOutcome& o) {
  ++o.attempts;
  auto bundle = WriteDiagnosticBundle(a.dir, incident, context.clock->NowMs(), context.telemetry);
  if (!bundle) {
    o.detail = bundle.error().message();
    return;
  }
  o.output = bundle->path.string();
  o.detail = "wrote " + bundle->path.string() + " (" + Join(bundle->files, ", ") + ")";
  o.ok = bundle->telemetry.ok();
  if (!o.ok) o.detail += "; telemetry not written: " + bundle->telemetry.message();
}

}  // namespace

bool Selects(const ActionConfig& action, const Incident& incident, std::string* why) {
  const bool scope_ok =
      action.scope == ScopeFilter::kAny ||
      (action.scope == ScopeFilter::kRelease && incident.HasScope(vocab::Scope::kRelease)) ||
      (action.scope == ScopeFilter::kNode && incident.HasScope(vocab::Scope::kNode));
  if (!scope_ok) {
    if (why != nullptr) *why = "no " + std::string(ScopeFilterName(action.scope)) + "-scoped cause";
    return false;
  }
  if (!action.cause_kinds.empty()) {
    const std::vector<std::string> kinds = CauseKindNames(incident);
    const bool kind_ok = std::any_of(kinds.begin(), kinds.end(), [&](const std::string& k) {
      return std::find(action.cause_kinds.begin(), action.cause_kinds.end(), k) !=
             action.cause_kinds.end();
    });
    if (!kind_ok) {
      if (why != nullptr) *why = "no cause of kind " + Join(action.cause_kinds, ", ");
      return false;
    }
  }
  return true;
}

bool SafePlaceholderValue(std::string_view value) {
  if (value.empty() || value.size() > 253 || value.front() == '-' || value.front() == '.') {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '@' || c == '+' || c == '=' || c == '-';
  });
}

namespace {

// The placeholders and what they stand for (`verdict` holds the verdict's
// name for as long as the answer is used).
using Placeholders = std::array<std::pair<std::string_view, const std::string*>, 5>;
Placeholders PlaceholdersOf(const Incident& incident, const std::string& node,
                            const std::string& verdict) {
  return {{{"{node}", &node},
           {"{release}", &incident.release.id},
           {"{service}", &incident.release.service},
           {"{canary}", &incident.canary_id},
           {"{verdict}", &verdict}}};
}

}  // namespace

Result<std::string> ExpandChecked(const std::string& text, const Incident& incident,
                                  const std::string& node) {
  const std::string verdict(vocab::Name(incident.verdict));
  for (const auto& [name, value] : PlaceholdersOf(incident, node, verdict)) {
    if (text.find(name) != std::string::npos && !SafePlaceholderValue(*value)) {
      std::string shown;
      for (char c : value->substr(0, 80)) {
        shown += c >= 0x20 && c < 0x7f ? std::string(1, c) : "?";
      }
      return Error(StatusCode::kInvalidArgument,
                   std::string(name) + " would be '" + shown +
                       "': not run (a placeholder's value must be 1-253 characters of "
                       "[A-Za-z0-9._:@+=-], not starting with '-' or '.')");
    }
  }
  return ExpandTemplate(text, incident, node);
}

std::string ExpandTemplate(const std::string& text, const Incident& incident,
                           const std::string& node) {
  const std::string verdict(vocab::Name(incident.verdict));
  const Placeholders vars = PlaceholdersOf(incident, node, verdict);
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (const auto& [name, value] : vars) {
      if (text.compare(i, name.size(), name) == 0) {
        out += *value;
        i += name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

ActionOutcome ExecuteAction(const ActionConfig& action, const Incident& incident,
                            const ActionContext& context) {
  GC_CHECK(context.clock != nullptr, "ActionContext::clock is required");
  Clock& clock = *context.clock;
  ActionOutcome o;
  o.name = action.name;
  o.kind = std::string(ActionKindName(action.kind));
  o.started_at_ms = clock.NowMs();
  try {
    switch (action.kind) {
      case ActionKind::kWebhook:
        RunWebhook(action, incident, clock, o);
        break;
      case ActionKind::kArgoRolloutsAbort:
        RunArgoAbort(action, incident, clock, o);
        break;
      case ActionKind::kFlaggerRollback:
        RunFlagger(incident, context.flagger_gate, o);
        break;
      case ActionKind::kCommand:
        RunCommands(action, incident, /*per_node=*/false, o);
        break;
      case ActionKind::kTrafficShift:
        RunTrafficShift(action, incident, clock, o);
        break;
      case ActionKind::kIsolateNode:
        RunIsolate(action, incident, clock, o);
        break;
      case ActionKind::kDiagnosticBundle:
        RunBundle(action, incident, context, o);
        break;
    }
  } catch (const std::exception& e) {
    // A throwing telemetry writer or allocation failure: the action failed,
    // the runner goes on with the next.
    o.ok = false;
    o.detail = std::string("internal error: ") + e.what();
  }
  o.duration_ms = std::max<std::int64_t>(0, clock.NowMs() - o.started_at_ms);
  return o;
}

}  // namespace gpucanary::actions
