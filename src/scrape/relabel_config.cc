#include "scrape/relabel_config.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>

#include "config/yaml_fields.h"
#include "model/names.h"

namespace gpucanary::scrape {
namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::Reporter;

constexpr std::string_view kRuleKeys[] = {"source_labels", "separator",   "regex", "modulus",
                                          "target_label",  "replacement", "action"};

// A string field: null is "" (yaml.v2's zero value), any other scalar its text.
Result<std::string> ReadText(const Reporter& r, const YAML::Node& node, const std::string& field) {
  if (node.IsNull()) return std::string();
  if (!node.IsScalar()) return r.Fail(node, field, "expected a string");
  return node.Scalar();
}

Result<model::RelabelRule> ReadRule(const Reporter& r, const YAML::Node& node,
                                    const std::string& field) {
  Result<Fields> f = Fields::Read(r, node, field, kRuleKeys);
  if (!f) return Error(f.error());
  model::RelabelConfig c;
  c.validation = model::NameValidation::kLegacy;
  if (const YAML::Node* n = f->Find("source_labels")) {
    const std::string sf = Child(field, "source_labels");
    if (!n->IsNull()) {
      if (!n->IsSequence()) return r.Fail(*n, sf, "expected a list of label names");
      c.source_labels_set = true;
      for (std::size_t i = 0; i < n->size(); ++i) {
        const YAML::Node& item = (*n)[i];
        Result<std::string> name = ReadText(r, item, Index(sf, i));
        if (!name) return Error(name.error());
        if (!model::IsValidLabelName(*name)) {
          return r.Fail(item, Index(sf, i), "\"" + *name + "\" is not a valid label name");
        }
        c.source_labels.push_back(std::move(*name));
      }
    }
  }
  const auto text = [&](std::string_view key, std::string* out) -> Status {
    const YAML::Node* n = f->Find(key);
    if (n == nullptr) return Status::Ok();
    Result<std::string> v = ReadText(r, *n, Child(field, key));
    if (!v) return v.error();
    *out = std::move(*v);
    return Status::Ok();
  };
  GC_RETURN_IF_ERROR(text("separator", &c.separator));
  GC_RETURN_IF_ERROR(text("target_label", &c.target_label));
  GC_RETURN_IF_ERROR(text("replacement", &c.replacement));
  if (f->Find("regex") != nullptr) {
    std::string regex;
    GC_RETURN_IF_ERROR(text("regex", &regex));
    c.regex = std::move(regex);
  }
  if (const YAML::Node* n = f->Find("modulus")) {
    if (!n->IsNull()) {
      Result<std::int64_t> m = config::ReadInt(r, *n, Child(field, "modulus"), 0, INT64_MAX);
      if (!m) return Error(m.error());
      c.modulus = static_cast<std::uint64_t>(*m);
    }
  }
  c.action = model::RelabelAction::kUnset;  // null: Go's empty Action
  const YAML::Node* a = f->Find("action");
  if (a == nullptr) {
    c.action = model::RelabelAction::kReplace;
  } else if (!a->IsNull()) {
    Result<std::string> s = ReadText(r, *a, Child(field, "action"));
    if (!s) return Error(s.error());
    Result<model::RelabelAction> action = model::ParseRelabelAction(*s);
    if (!action) return r.Fail(*a, Child(field, "action"), action.error().message());
    c.action = *action;
  }
  Result<model::RelabelRule> rule = model::RelabelRule::Compile(std::move(c));
  if (!rule) {
    const bool regex_error = rule.error().message().starts_with("bad regex");
    const YAML::Node* at = regex_error ? f->Find("regex") : nullptr;
    return r.Fail(at != nullptr ? *at : node, regex_error ? Child(field, "regex") : field,
                  rule.error().message());
  }
  return rule;
}

}  // namespace

Result<std::vector<model::RelabelRule>> ReadRelabelConfigs(const Reporter& r,
                                                           const YAML::Node& node,
                                                           std::string_view field) {
  std::vector<model::RelabelRule> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) return r.Fail(node, field, "expected a list of relabel rules");
  out.reserve(node.size());
  for (std::size_t i = 0; i < node.size(); ++i) {
    Result<model::RelabelRule> rule = ReadRule(r, node[i], Index(field, i));
    if (!rule) return Error(rule.error());
    out.push_back(std::move(*rule));
  }
  return out;
}

Result<std::vector<model::RelabelRule>> ParseRelabelConfigs(std::string_view yaml_text,
                                                            std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    return ReadRelabelConfigs(r, root, "relabel_configs");
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "relabel_configs", e.msg);
  }
}

}  // namespace gpucanary::scrape
