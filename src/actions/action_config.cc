#include "actions/action_config.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <span>
#include <system_error>

#include "config/http_headers.h"
#include "config/tls_config.h"
#include "config/yaml_fields.h"
#include "net/url.h"
#include "vocab/vocab.h"

namespace gpucanary::actions {
namespace {

using config::Child;
using config::Fields;
using config::Reporter;

struct KindInfo {
  ActionKind kind;
  std::string_view name;
  ScopeFilter default_scope;
};

constexpr std::array<KindInfo, 7> kKinds = {{
    {ActionKind::kWebhook, "webhook", ScopeFilter::kRelease},
    {ActionKind::kArgoRolloutsAbort, "argo_rollouts_abort", ScopeFilter::kRelease},
    {ActionKind::kFlaggerRollback, "flagger_rollback", ScopeFilter::kRelease},
    {ActionKind::kCommand, "command", ScopeFilter::kAny},
    {ActionKind::kTrafficShift, "traffic_shift", ScopeFilter::kRelease},
    {ActionKind::kIsolateNode, "isolate_node", ScopeFilter::kNode},
    {ActionKind::kDiagnosticBundle, "diagnostic_bundle", ScopeFilter::kAny},
}};

// The filters `when.scope` takes, by ScopeFilterName.
constexpr std::array<ScopeFilter, 3> kScopeFilters = {ScopeFilter::kRelease, ScopeFilter::kNode,
                                                      ScopeFilter::kAny};

constexpr std::array<std::string_view, 18> kAllKeys = {
    "kind",         "name",       "when",    "url",     "headers", "bearer_token_file",
    "bearer_token", "token_file", "timeout", "retries", "backoff", "tls_config",
    "api_server",   "namespace",  "rollout", "command", "stable",  "dir"};
constexpr std::array<std::string_view, 3> kCommonKeys = {"kind", "name", "when"};
// The HTTP kinds' keys: how they retry and their TLS.
constexpr std::array<std::string_view, 4> kRetryKeys = {"timeout", "retries", "backoff",
                                                        "tls_config"};
constexpr std::array<std::string_view, 2> kWhenKeys = {"scope", "causes"};
constexpr std::array<std::string_view, 5> kTemplates = {"node", "release", "service", "canary",
                                                        "verdict"};

// The fields each kind takes besides kind, name and when.
std::vector<std::string_view> KindKeys(ActionKind kind) {
  std::vector<std::string_view> keys;
  switch (kind) {
    case ActionKind::kWebhook:
      keys = {"url", "headers", "bearer_token_file", "bearer_token"};
      break;
    case ActionKind::kArgoRolloutsAbort:
      keys = {"api_server", "namespace", "rollout", "token_file"};
      break;
    case ActionKind::kFlaggerRollback:
      return keys;
    case ActionKind::kCommand:
      return {"command", "timeout"};
    case ActionKind::kTrafficShift:
      keys = {"url", "stable"};
      break;
    case ActionKind::kIsolateNode:
      keys = {"url", "command"};
      break;
    case ActionKind::kDiagnosticBundle:
      return {"dir"};
  }
  keys.insert(keys.end(), kRetryKeys.begin(), kRetryKeys.end());
  return keys;
}

// "{name}" placeholders in `text` must be known templates; other braces
// (JSON in an argument) are left alone.
Status CheckTemplates(const Reporter& r, const YAML::Node& node, std::string_view field,
                      const std::string& text) {
  for (std::size_t open = text.find('{'); open != std::string::npos;
       open = text.find('{', open + 1)) {
    const std::size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    const std::string_view name = std::string_view(text).substr(open + 1, close - open - 1);
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || c == '_';
    });
    if (word && !config::Contains(kTemplates, name)) {
      return r.Fail(node, field,
                    "unknown template '{" + std::string(name) + "}' (expected one of {" +
                        config::JoinNames(kTemplates) + "})");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadUrl(const Reporter& r, const YAML::Node& node, const std::string& field) {
  auto text = config::ReadString(r, node, field);
  if (!text) return text;
  if (auto url = net::ParseHttpUrl(*text); !url) return r.Fail(node, field, url.error().message());
  while (!text->empty() && text->back() == '/') text->pop_back();
  return text;
}

Result<std::vector<std::string>> ReadArgv(const Reporter& r, const YAML::Node& node,
                                          const std::string& field) {
  if (!node.IsSequence() || node.size() == 0) {
    return r.Fail(node, field,
                  "expected a non-empty list of arguments, e.g. [kubectl, cordon, "
                  "\"{node}\"] (no shell)");
  }
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string f = config::Index(field, i);
    if (!node[i].IsScalar()) return r.Fail(node[i], f, "expected a string");
    argv.push_back(node[i].Scalar());
    GC_RETURN_IF_ERROR(CheckTemplates(r, node[i], f, argv.back()));
  }
  if (argv[0].empty()) return r.Fail(node[0], config::Index(field, 0), "empty program name");
  return argv;
}

// A webhook's headers. Its own rules, older than the shared reader's
// defaults: its messages, empty values allowed, NUL not refused.
constexpr std::array<std::string_view, 5> kReservedHeaders = {
    "host", "content-type", "content-length", "transfer-encoding", "connection"};

Status ReadHeaders(const Reporter& r, const YAML::Node& node, const std::string& field,
                   ActionConfig& out) {
  config::HttpHeaderRules rules;
  rules.reserved = kReservedHeaders;
  rules.bad_name = "not a valid header name";
  rules.reserved_name = "set by gpucanary, not configurable";
  rules.non_empty_value = false;
  rules.refuse_nul = false;
  rules.line_break = "header values must not contain line breaks";
  auto headers = config::ReadHttpHeaders(r, node, field, rules);
  if (!headers) return headers.error();
  out.headers = std::move(*headers);
  return Status::Ok();
}

Status ReadWhen(const Reporter& r, const YAML::Node& node, const std::string& field,
                ActionConfig& out) {
  auto fields = Fields::Read(r, node, field, kWhenKeys);
  if (!fields) return fields.error();
  if (const YAML::Node* n = fields->Find("scope")) {
    auto s = config::ReadString(r, *n, Child(field, "scope"));
    if (!s) return s.error();
    const auto known = std::find_if(kScopeFilters.begin(), kScopeFilters.end(),
                                    [&](ScopeFilter f) { return ScopeFilterName(f) == *s; });
    if (known == kScopeFilters.end()) {
      return r.Fail(*n, Child(field, "scope"),
                    "unknown scope '" + *s + "' (expected release, node or any)");
    }
    out.scope = *known;
  }
  if (const YAML::Node* n = fields->Find("causes")) {
    const std::string f = Child(field, "causes");
    auto kinds = config::ReadStrings(r, *n, f, "expected a list of cause kinds");
    if (!kinds) return kinds.error();
    out.cause_kinds = std::move(*kinds);
  }
  return Status::Ok();
}

Status ReadRetry(const Reporter& r, const Fields& fields, const std::string& field,
                 ActionConfig& out) {
  if (const YAML::Node* n = fields.Find("timeout")) {
    auto s = config::ReadDuration(r, *n, Child(field, "timeout"));
    if (!s) return s.error();
    if (*s <= 0) return r.Fail(*n, Child(field, "timeout"), "must be positive");
    out.http.timeout_s = *s;
    out.command_timeout_s = *s;
  }
  if (const YAML::Node* n = fields.Find("retries")) {
    auto v = config::ReadInt(r, *n, Child(field, "retries"), 0, 10);
    if (!v) return v.error();
    out.http.retries = static_cast<int>(*v);
  }
  if (const YAML::Node* n = fields.Find("backoff")) {
    auto s = config::ReadDuration(r, *n, Child(field, "backoff"));
    if (!s) return s.error();
    out.http.backoff_s = *s;
  }
  return Status::Ok();
}

// `key` must be present in `fields`.
Result<const YAML::Node*> Require(const Reporter& r, const Fields& fields, std::string_view key,
                                  const std::string& field, std::string_view kind) {
  const YAML::Node* n = fields.Find(key);
  if (n == nullptr) {
    return r.Fail(fields.mark(), Child(field, key), "required for kind " + std::string(kind));
  }
  return n;
}

// Reads one string field, if present, into *out.
Status ReadOptionalString(const Reporter& r, const Fields& fields, std::string_view key,
                          const std::string& field, std::string* out) {
  if (const YAML::Node* n = fields.Find(key)) {
    auto s = config::ReadString(r, *n, Child(field, key));
    if (!s) return s.error();
    *out = std::move(*s);
  }
  return Status::Ok();
}

// The kind's required `url` into out.url.
Status ReadRequiredUrl(const Reporter& r, const Fields& fields, const std::string& field,
                       std::string_view kind_name, ActionConfig& out) {
  auto n = Require(r, fields, "url", field, kind_name);
  if (!n) return n.error();
  auto url = ReadUrl(r, **n, Child(field, "url"));
  if (!url) return url.error();
  out.url = std::move(*url);
  return Status::Ok();
}

// The kind's required `command` (an argv list) into out.argv.
Status ReadRequiredArgv(const Reporter& r, const Fields& fields, const std::string& field,
                        std::string_view kind_name, ActionConfig& out) {
  auto n = Require(r, fields, "command", field, kind_name);
  if (!n) return n.error();
  auto argv = ReadArgv(r, **n, Child(field, "command"));
  if (!argv) return argv.error();
  out.argv = std::move(*argv);
  return Status::Ok();
}

Status ReadWebhookFields(const Reporter& r, const Fields& fields, const std::string& field,
                         std::string_view kind_name, ActionConfig& out) {
  GC_RETURN_IF_ERROR(ReadRequiredUrl(r, fields, field, kind_name, out));
  if (const YAML::Node* n = fields.Find("headers")) {
    GC_RETURN_IF_ERROR(ReadHeaders(r, *n, Child(field, "headers"), out));
  }
  GC_RETURN_IF_ERROR(
      ReadOptionalString(r, fields, "bearer_token_file", field, &out.bearer_token_file));
  GC_RETURN_IF_ERROR(ReadOptionalString(r, fields, "bearer_token", field, &out.bearer_token));
  if (!out.bearer_token.empty() && !out.bearer_token_file.empty()) {
    return r.Fail(*fields.Find("bearer_token"), Child(field, "bearer_token"),
                  "give bearer_token or bearer_token_file, not both");
  }
  return Status::Ok();
}

Status ReadArgoFields(const Reporter& r, const Fields& fields, const std::string& field,
                      std::string_view kind_name, ActionConfig& out) {
  auto api = Require(r, fields, "api_server", field, kind_name);
  if (!api) return api.error();
  auto url = ReadUrl(r, **api, Child(field, "api_server"));
  if (!url) return url.error();
  out.api_server = std::move(*url);
  auto rollout = Require(r, fields, "rollout", field, kind_name);
  if (!rollout) return rollout.error();
  GC_RETURN_IF_ERROR(ReadOptionalString(r, fields, "rollout", field, &out.rollout));
  GC_RETURN_IF_ERROR(CheckTemplates(r, **rollout, Child(field, "rollout"), out.rollout));
  GC_RETURN_IF_ERROR(ReadOptionalString(r, fields, "namespace", field, &out.k8s_namespace));
  if (const YAML::Node* n = fields.Find("namespace")) {
    GC_RETURN_IF_ERROR(CheckTemplates(r, *n, Child(field, "namespace"), out.k8s_namespace));
  }
  out.bearer_token_file = std::string(kInClusterTokenFile);
  return ReadOptionalString(r, fields, "token_file", field, &out.bearer_token_file);
}

Status ReadIsolateFields(const Reporter& r, const Fields& fields, const std::string& field,
                         std::string_view kind_name, ActionConfig& out) {
  const YAML::Node* url = fields.Find("url");
  const YAML::Node* command = fields.Find("command");
  if ((url == nullptr) == (command == nullptr)) {
    return r.Fail(command != nullptr ? command->Mark() : fields.mark(), field,
                  "isolate_node takes exactly one of url (a control API) or command");
  }
  if (url != nullptr) return ReadRequiredUrl(r, fields, field, kind_name, out);
  return ReadRequiredArgv(r, fields, field, kind_name, out);
}

Status ReadKindFields(const Reporter& r, const Fields& fields, const std::string& field,
                      std::string_view kind_name, ActionConfig& out) {
  switch (out.kind) {
    case ActionKind::kWebhook:
      GC_RETURN_IF_ERROR(ReadWebhookFields(r, fields, field, kind_name, out));
      break;
    case ActionKind::kArgoRolloutsAbort:
      GC_RETURN_IF_ERROR(ReadArgoFields(r, fields, field, kind_name, out));
      break;
    case ActionKind::kFlaggerRollback:
      break;
    case ActionKind::kCommand:
      GC_RETURN_IF_ERROR(ReadRequiredArgv(r, fields, field, kind_name, out));
      break;
    case ActionKind::kTrafficShift:
      GC_RETURN_IF_ERROR(ReadRequiredUrl(r, fields, field, kind_name, out));
      GC_RETURN_IF_ERROR(ReadOptionalString(r, fields, "stable", field, &out.stable));
      break;
    case ActionKind::kIsolateNode:
      GC_RETURN_IF_ERROR(ReadIsolateFields(r, fields, field, kind_name, out));
      break;
    case ActionKind::kDiagnosticBundle: {
      auto n = Require(r, fields, "dir", field, kind_name);
      if (!n) return n.error();
      GC_RETURN_IF_ERROR(ReadOptionalString(r, fields, "dir", field, &out.dir));
      break;
    }
  }
  return ReadRetry(r, fields, field, out);
}

// `tls_config` (only the HTTP kinds take it) into out.http.tls; an
// argo_rollouts_abort without a ca_file trusts the in-cluster CA when there
// is one (the API server's certificate is signed by it).
Status ReadTls(const Reporter& r, const Fields& fields, const std::string& field,
               const std::string& base_dir, ActionConfig& out) {
  if (const YAML::Node* n = fields.Find("tls_config")) {
    auto tls = config::ReadTlsClientConfig(r, *n, Child(field, "tls_config"), base_dir);
    if (!tls) return tls.error();
    out.http.tls = std::move(*tls);
  }
  if (out.kind == ActionKind::kArgoRolloutsAbort && out.http.tls.ca_file.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(kInClusterCaFile, ec)) {
      out.http.tls.ca_file = std::string(kInClusterCaFile);
    }
  }
  return Status::Ok();
}

Result<ActionConfig> ReadAction(const Reporter& r, const YAML::Node& node, const std::string& field,
                                const std::string& base_dir) {
  auto fields = Fields::Read(r, node, field, kAllKeys);
  if (!fields) return Error(fields.error());
  const YAML::Node* kind_node = fields->Find("kind");
  if (kind_node == nullptr) {
    return r.Fail(fields->mark(), Child(field, "kind"),
                  "required (one of webhook, "
                  "argo_rollouts_abort, flagger_rollback, "
                  "command, traffic_shift, isolate_node, "
                  "diagnostic_bundle)");
  }
  auto kind_name = config::ReadString(r, *kind_node, Child(field, "kind"));
  if (!kind_name) return Error(kind_name.error());
  auto info = std::find_if(kKinds.begin(), kKinds.end(),
                           [&](const KindInfo& k) { return k.name == *kind_name; });
  if (info == kKinds.end()) {
    std::vector<std::string_view> names;
    names.reserve(kKinds.size());
    for (const KindInfo& k : kKinds) names.push_back(k.name);
    return r.Fail(
        *kind_node, Child(field, "kind"),
        "unknown kind '" + *kind_name + "' (expected one of " + config::JoinNames(names) + ")");
  }
  ActionConfig out;
  out.kind = info->kind;
  out.scope = info->default_scope;
  const std::vector<std::string_view> keys = KindKeys(info->kind);
  for (const Fields::Entry& e : fields->entries()) {
    if (config::Contains(kCommonKeys, e.name) || config::Contains(keys, e.name)) continue;
    std::vector<std::string_view> allowed(kCommonKeys.begin(), kCommonKeys.end());
    allowed.insert(allowed.end(), keys.begin(), keys.end());
    return r.Fail(e.key, Child(field, e.name),
                  "not a field of kind " + *kind_name + " (expected one of " +
                      config::JoinNames(allowed) + ")");
  }
  if (Status s = ReadOptionalString(r, *fields, "name", field, &out.name); !s.ok()) {
    return Error(s);
  }
  if (const YAML::Node* n = fields->Find("when")) {
    if (Status s = ReadWhen(r, *n, Child(field, "when"), out); !s.ok()) return Error(s);
  }
  if (Status s = ReadKindFields(r, *fields, field, *kind_name, out); !s.ok()) return Error(s);
  if (Status s = ReadTls(r, *fields, field, base_dir, out); !s.ok()) return Error(s);
  return out;
}

}  // namespace

std::string_view ActionKindName(ActionKind kind) {
  for (const KindInfo& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string_view ScopeFilterName(ScopeFilter scope) {
  switch (scope) {
    case ScopeFilter::kRelease:
      return vocab::Name(vocab::Scope::kRelease);
    case ScopeFilter::kNode:
      return vocab::Name(vocab::Scope::kNode);
    case ScopeFilter::kAny:
      return "any";
  }
  return "any";
}

Result<std::vector<ActionConfig>> ParseActions(const YAML::Node& actions, std::string_view file) {
  const Reporter r{std::string(file)};
  std::vector<ActionConfig> out;
  if (!actions.IsDefined() || actions.IsNull()) return out;
  if (!actions.IsSequence()) return r.Fail(actions, "actions", "expected a list of actions");
  // tls_config's relative paths: from the configuration file's folder.
  const std::string base_dir = std::filesystem::path(file).parent_path().string();
  try {
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const YAML::Node item = actions[i];
      const std::string field = config::Index("actions", i);
      auto action = ReadAction(r, item, field, base_dir);
      if (!action) return Error(action.error());
      auto named = [&](const std::string& name) {
        return std::any_of(out.begin(), out.end(),
                           [&](const ActionConfig& a) { return a.name == name; });
      };
      if (action->name.empty()) {
        action->name = std::string(ActionKindName(action->kind));
        for (int n = 2; named(action->name); ++n) {
          action->name = std::string(ActionKindName(action->kind)) + "#" + std::to_string(n);
        }
      } else if (named(action->name)) {
        return r.Fail(item["name"], Child(field, "name"),
                      "duplicate action name '" + action->name + "'");
      }
      out.push_back(std::move(*action));
    }
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "actions", e.msg);
  }
  return out;
}

Result<std::vector<ActionConfig>> ParseActionsYaml(std::string_view yaml_text,
                                                   std::string_view file) {
  const Reporter r{std::string(file)};
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    if (root.IsNull()) return std::vector<ActionConfig>{};
    if (!root.IsMap()) return r.Fail(root, "config", "expected a map with an actions: key");
    return ParseActions(root["actions"], file);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
}

}  // namespace gpucanary::actions
