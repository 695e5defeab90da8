#include "scrape/kubernetes_sd_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <utility>

#include "config/authorization.h"
#include "config/tls_config.h"
#include "config/yaml_fields.h"
#include "net/url.h"

namespace gpucanary::scrape {
namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::ReadBool;
using config::ReadString;
using config::Reporter;

constexpr std::string_view kKeys[] = {"role",      "api_server", "namespaces",
                                      "selectors", "tls_config", "authorization"};
constexpr std::string_view kNamespaceKeys[] = {"names", "own_namespace"};
constexpr std::string_view kSelectorKeys[] = {"role", "label", "field"};

constexpr KubernetesKind kKinds[] = {KubernetesKind::kPod, KubernetesKind::kEndpoints,
                                     KubernetesKind::kNode, KubernetesKind::kService};

bool KindByName(std::string_view name, KubernetesKind* kind) {
  for (const KubernetesKind k : kKinds) {
    if (KubernetesKindName(k) == name) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// Prometheus's allowedSelectors: the kinds each role lists and watches.
std::vector<KubernetesKind> SelectableKinds(KubernetesKind role) {
  switch (role) {
    case KubernetesKind::kPod:
      return {KubernetesKind::kPod, KubernetesKind::kNode};
    case KubernetesKind::kEndpoints:
      return {KubernetesKind::kPod, KubernetesKind::kService, KubernetesKind::kEndpoints};
    case KubernetesKind::kNode:
    case KubernetesKind::kService:
      break;
  }
  return {KubernetesKind::kNode};
}

std::string JoinKinds(const std::vector<KubernetesKind>& kinds) {
  std::string out;
  for (const KubernetesKind k : kinds) {
    if (!out.empty()) out += ", ";
    out += KubernetesKindName(k);
  }
  return out;
}

// --- Label selectors: k8s.io/apimachinery/pkg/labels/selector.go ---

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// validation.IsQualifiedName's name part and IsValidLabelValue's pattern:
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters.
bool IsLabelToken(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS-1123 subdomain: lower-case alphanumerics, '-' and '.', at most 253.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t dot = std::min(s.find('.', start), s.size());
    const std::string_view part = s.substr(start, dot - start);
    const auto lower_alnum = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    if (part.empty() || !lower_alnum(part.front()) || !lower_alnum(part.back())) return false;
    if (!std::all_of(part.begin(), part.end(),
                     [&](char c) { return lower_alnum(c) || c == '-'; })) {
      return false;
    }
    start = dot + 1;
  }
  return true;
}

bool IsLabelKey(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return IsLabelToken(key);
  return IsDnsSubdomain(key.substr(0, slash)) && IsLabelToken(key.substr(slash + 1));
}

bool IsLabelValue(std::string_view value) { return value.empty() || IsLabelToken(value); }

// The lexer of labels.Parse: identifiers run until white space or one of
// the special characters.
class SelectorLexer {
 public:
  explicit SelectorLexer(std::string_view s) : s_(s) {}

  // The next token: "" at the end; operators and punctuation as themselves.
  std::string_view Next() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
    if (pos_ == s_.size()) return {};
    const std::size_t start = pos_;
    const char c = s_[pos_];
    if (c == '(' || c == ')' || c == ',' || c == '>' || c == '<') {
      ++pos_;
    } else if (c == '!' || c == '=') {
      ++pos_;
      if (pos_ < s_.size() && s_[pos_] == '=') ++pos_;
    } else {
      while (pos_ < s_.size() &&
             std::string_view(" \t\n\r()!=,<>").find(s_[pos_]) == std::string_view::npos) {
        ++pos_;
      }
    }
    return s_.substr(start, pos_ - start);
  }
  std::string_view Peek() {
    const std::size_t saved = pos_;
    const std::string_view t = Next();
    pos_ = saved;
    return t;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

bool IsPunctuation(std::string_view t) {
  return t == "(" || t == ")" || t == "," || t == ">" || t == "<" || t == "!" || t == "!=" ||
         t == "=" || t == "==";
}

Status BadSelector(std::string_view why) {
  return Status(StatusCode::kInvalidArgument, std::string(why));
}

Status CheckValue(std::string_view value) {
  if (IsLabelValue(value)) return Status::Ok();
  return BadSelector("invalid label value '" + std::string(value) +
                     "': at most 63 characters, alphanumerics, '-', '_' or '.', starting and "
                     "ending with an alphanumeric");
}

// One requirement: !key | key | key op value | key (in|notin) (v, ...).
Status CheckRequirement(SelectorLexer& lex) {
  std::string_view key = lex.Next();
  const bool negated = key == "!";
  if (negated) key = lex.Next();
  if (key.empty() || IsPunctuation(key)) {
    return BadSelector("found '" + std::string(key) + "', expected: identifier");
  }
  if (!IsLabelKey(key)) {
    return BadSelector("invalid label key '" + std::string(key) +
                       "': a name of at most 63 characters (alphanumerics, '-', '_', '.'), "
                       "optionally after a DNS subdomain prefix and '/'");
  }
  const std::string_view next = lex.Peek();
  if (next.empty() || next == ",") return Status::Ok();  // exists / does not exist
  if (negated) return BadSelector("found '" + std::string(next) + "', expected: ',' or end");
  const std::string_view op = lex.Next();
  if (op == "in" || op == "notin") {
    if (const std::string_view open = lex.Next(); open != "(") {
      return BadSelector("found '" + std::string(open) + "', expected: '('");
    }
    std::string_view t = lex.Next();
    if (t == ")") return Status::Ok();
    while (true) {
      if (IsPunctuation(t) || t.empty()) {
        return BadSelector("found '" + std::string(t) + "', expected: identifier");
      }
      GC_RETURN_IF_ERROR(CheckValue(t));
      t = lex.Next();
      if (t == ")") return Status::Ok();
      if (t != ",") return BadSelector("found '" + std::string(t) + "', expected: ',' or ')'");
      t = lex.Next();
    }
  }
  if (op != "=" && op != "==" && op != "!=" && op != ">" && op != "<") {
    return BadSelector("found '" + std::string(op) + "', expected: in, notin, =, ==, !=, gt, lt");
  }
  const std::string_view value = lex.Peek();
  if (value.empty() || value == ",") {
    if (op == ">" || op == "<") return BadSelector("'>' and '<' need an integer value");
    return Status::Ok();  // key= : the empty value
  }
  if (IsPunctuation(value)) {
    return BadSelector("found '" + std::string(value) + "', expected: identifier");
  }
  lex.Next();
  if (op == ">" || op == "<") {
    const bool integer = !value.empty() &&
                         std::all_of(value.begin() + (value.front() == '-' ? 1 : 0), value.end(),
                                     [](char c) { return c >= '0' && c <= '9'; }) &&
                         value != "-";
    if (!integer)
      return BadSelector("'" + std::string(value) + "' is not an integer for " + std::string(op));
    return Status::Ok();
  }
  return CheckValue(value);
}

// authorization: config::ReadAuthorization; the file's path is kept: it is
// read again for every request, as Prometheus does, so a rotated token is
// used.
Status ReadAuthorization(const Reporter& r, const YAML::Node& node, const std::string& field,
                         const std::string& base_dir, KubernetesSdConfig* out) {
  Result<config::Authorization> a =
      config::ReadAuthorization(r, node, field, base_dir, "(Basic is not supported)");
  if (!a) return a.error();
  out->authorization_type = std::move(a->type);
  if (!a->credentials_file.empty()) {
    out->credentials_file = std::move(a->credentials_file);
  } else {
    out->credentials = std::move(a->credentials);
  }
  return Status::Ok();
}

Status ReadNamespaces(const Reporter& r, const YAML::Node& node, const std::string& field,
                      KubernetesSdConfig* out) {
  Result<Fields> f = Fields::Read(r, node, field, kNamespaceKeys);
  if (!f) return f.error();
  if (const YAML::Node* n = f->Find("names")) {
    Result<std::vector<std::string>> names =
        config::ReadStrings(r, *n, Child(field, "names"), "expected a list of namespaces");
    if (!names) return names.error();
    for (std::size_t i = 0; i < names->size(); ++i) {
      // A namespace is a DNS-1123 label; anything else could not be one
      // and would change the request's path.
      const std::string& ns = (*names)[i];
      if (ns.size() > 63 || !IsDnsSubdomain(ns) || ns.find('.') != std::string::npos) {
        return r
            .Fail((*n)[i], Index(Child(field, "names"), i),
                  "not a namespace name (lower-case alphanumerics and '-', at most 63)")
            .value();
      }
    }
    out->namespaces = std::move(*names);
  }
  if (const YAML::Node* o = f->Find("own_namespace")) {
    Result<bool> v = ReadBool(r, *o, Child(field, "own_namespace"));
    if (!v) return v.error();
    out->own_namespace = *v;
  }
  return Status::Ok();
}

// One selectors[] entry; `out` holds the role and the entries before it.
Status ReadSelector(const Reporter& r, const YAML::Node& node, const std::string& at,
                    KubernetesSdConfig* out) {
  Result<Fields> f = Fields::Read(r, node, at, kSelectorKeys);
  if (!f) return f.error();
  const std::vector<KubernetesKind> allowed = SelectableKinds(out->role);
  const std::string only = std::string(KubernetesKindName(out->role)) + " role supports only " +
                           JoinKinds(allowed) + " selectors";
  const YAML::Node* role = f->Find("role");
  if (role == nullptr) return r.Fail(node, Child(at, "role"), only).value();
  Result<std::string> name = ReadString(r, *role, Child(at, "role"));
  if (!name) return name.error();
  KubernetesSelector s;
  if (!KindByName(*name, &s.kind) ||
      std::find(allowed.begin(), allowed.end(), s.kind) == allowed.end()) {
    return r.Fail(*role, Child(at, "role"), only).value();
  }
  if (out->SelectorFor(s.kind) != nullptr) {
    return r.Fail(*role, Child(at, "role"), "duplicated selector role: " + *name).value();
  }
  for (const auto& [key, text, check] : {std::tuple{"label", &s.label, &CheckLabelSelector},
                                         std::tuple{"field", &s.field, &CheckFieldSelector}}) {
    const YAML::Node* n = f->Find(key);
    if (n == nullptr) continue;
    Result<std::string> v = ReadString(r, *n, Child(at, key));
    if (!v) return v.error();
    if (Status ok = check(*v); !ok.ok()) return r.Fail(*n, Child(at, key), ok.message()).value();
    *text = std::move(*v);
  }
  out->selectors.push_back(std::move(s));
  return Status::Ok();
}

Status ReadSelectors(const Reporter& r, const YAML::Node& node, const std::string& field,
                     KubernetesSdConfig* out) {
  if (!node.IsSequence()) return r.Fail(node, field, "expected a list").value();
  for (std::size_t i = 0; i < node.size(); ++i) {
    GC_RETURN_IF_ERROR(ReadSelector(r, node[i], Index(field, i), out));
  }
  return Status::Ok();
}

Status ReadApiServer(const Reporter& r, const YAML::Node& node, const std::string& field,
                     KubernetesSdConfig* out) {
  Result<std::string> u = ReadString(r, node, field);
  if (!u) return u.error();
  Result<net::HttpUrl> parsed = net::ParseHttpUrl(*u);
  if (!parsed) return r.Fail(node, field, parsed.error().message()).value();
  if (parsed->target.find_first_of("?#") != std::string::npos) {
    return r.Fail(node, field, "no query or fragment allowed").value();
  }
  std::string url = *u;
  while (url.ends_with("/")) url.pop_back();
  out->api_server = std::move(url);
  return Status::Ok();
}

}  // namespace

std::string_view KubernetesKindName(KubernetesKind kind) {
  switch (kind) {
    case KubernetesKind::kPod:
      return "pod";
    case KubernetesKind::kEndpoints:
      return "endpoints";
    case KubernetesKind::kNode:
      return "node";
    case KubernetesKind::kService:
      break;
  }
  return "service";
}

const KubernetesSelector* KubernetesSdConfig::SelectorFor(KubernetesKind kind) const {
  for (const KubernetesSelector& s : selectors) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

Status CheckLabelSelector(std::string_view selector) {
  SelectorLexer lex(selector);
  if (lex.Peek().empty()) return Status::Ok();
  while (true) {
    GC_RETURN_IF_ERROR(CheckRequirement(lex));
    const std::string_view t = lex.Next();
    if (t.empty()) return Status::Ok();
    if (t != ",") return BadSelector("found '" + std::string(t) + "', expected: ',' or end");
  }
}

Status CheckFieldSelector(std::string_view selector) {
  // fields.ParseSelector: terms split at unescaped ',', each "key=value",
  // "key==value" or "key!=value"; '\' escapes '\', ',' and '=' in values.
  std::size_t start = 0;
  while (start <= selector.size()) {
    std::size_t end = start;
    bool escaped = false;
    for (; end < selector.size(); ++end) {
      if (escaped) {
        escaped = false;
      } else if (selector[end] == '\\') {
        escaped = true;
      } else if (selector[end] == ',') {
        break;
      }
    }
    const std::string_view term = selector.substr(start, end - start);
    start = end + 1;
    if (term.empty()) continue;
    std::size_t op = std::string_view::npos;
    std::size_t op_len = 0;
    for (std::size_t i = 0; i < term.size() && op == std::string_view::npos; ++i) {
      for (const std::string_view o : {"!=", "==", "="}) {
        if (term.substr(i).starts_with(o)) {
          op = i;
          op_len = o.size();
          break;
        }
      }
    }
    if (op == std::string_view::npos) {
      return BadSelector("invalid selector: '" + std::string(selector) + "'; can't understand '" +
                         std::string(term) + "'");
    }
    const std::string_view value = term.substr(op + op_len);
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (value[i] != '\\') continue;
      if (i + 1 == value.size() ||
          std::string_view("\\,=").find(value[i + 1]) == std::string_view::npos) {
        return BadSelector("invalid escape sequence in field selector value '" +
                           std::string(value) + "'");
      }
      ++i;
    }
  }
  return Status::Ok();
}

Result<KubernetesSdConfig> ReadKubernetesSdConfig(const Reporter& r, const YAML::Node& node,
                                                  const std::string& field,
                                                  const std::string& base_dir) {
  Result<Fields> f = Fields::Read(r, node, field, kKeys);
  if (!f) return Error(f.error());
  KubernetesSdConfig out;
  out.where = r.Where(node.Mark());
  const YAML::Node* role = f->Find("role");
  if (role == nullptr) {
    return r.Fail(node, Child(field, "role"), "role missing (one of: pod, endpoints, node)");
  }
  Result<std::string> role_name = ReadString(r, *role, Child(field, "role"));
  if (!role_name) return Error(role_name.error());
  if (!KindByName(*role_name, &out.role) || out.role == KubernetesKind::kService) {
    const bool prometheus_has =
        *role_name == "service" || *role_name == "endpointslice" || *role_name == "ingress";
    return r.Fail(
        *role, Child(field, "role"),
        prometheus_has
            ? "role " + *role_name + " is not supported by gpucanary (pod, endpoints or node)"
            : "unknown Kubernetes SD role \"" + *role_name + "\" (one of: pod, endpoints, node)");
  }
  if (const YAML::Node* a = f->Find("api_server")) {
    GC_RETURN_IF_ERROR(ReadApiServer(r, *a, Child(field, "api_server"), &out));
  }
  if (const YAML::Node* n = f->Find("namespaces")) {
    GC_RETURN_IF_ERROR(ReadNamespaces(r, *n, Child(field, "namespaces"), &out));
  }
  if (const YAML::Node* s = f->Find("selectors")) {
    GC_RETURN_IF_ERROR(ReadSelectors(r, *s, Child(field, "selectors"), &out));
  }
  if (const YAML::Node* t = f->Find("tls_config")) {
    auto tls = config::ReadTlsClientConfig(r, *t, Child(field, "tls_config"), base_dir);
    if (!tls) return Error(tls.error());
    out.tls = std::move(*tls);
  }
  if (const YAML::Node* a = f->Find("authorization")) {
    GC_RETURN_IF_ERROR(ReadAuthorization(r, *a, Child(field, "authorization"), base_dir, &out));
  }
  // kubernetes.go: the in-cluster client takes its TLS and token from the
  // service account; custom ones need an explicit api_server, and
  // own_namespace is the in-cluster pod's.
  if (out.api_server.empty()) {
    for (const char* key : {"tls_config", "authorization"}) {
      if (const YAML::Node* n = f->Find(key)) {
        return r.Fail(*n, Child(field, key),
                      "to use custom HTTP client configuration please provide the 'api_server' "
                      "URL explicitly");
      }
    }
  } else if (out.own_namespace) {
    return r.Fail(*f->Find("namespaces"), Child(field, "namespaces.own_namespace"),
                  "cannot use 'api_server' and 'namespaces.own_namespace' simultaneously");
  }
  return out;
}

}  // namespace gpucanary::scrape
