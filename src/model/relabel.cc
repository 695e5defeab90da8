#include "model/relabel.h"

#include <locale.h>
#include <nettle/md5.h>
#include <re2/re2.h>
#include <wctype.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "model/names.h"
#include "model/utf8.h"

namespace gpucanary::model {
namespace {

struct ActionName {
  RelabelAction action;
  std::string_view name;
};
constexpr ActionName kActions[] = {
    {RelabelAction::kReplace, "replace"},     {RelabelAction::kKeep, "keep"},
    {RelabelAction::kDrop, "drop"},           {RelabelAction::kKeepEqual, "keepequal"},
    {RelabelAction::kDropEqual, "dropequal"}, {RelabelAction::kHashMod, "hashmod"},
    {RelabelAction::kLabelMap, "labelmap"},   {RelabelAction::kLabelDrop, "labeldrop"},
    {RelabelAction::kLabelKeep, "labelkeep"}, {RelabelAction::kLowercase, "lowercase"},
    {RelabelAction::kUppercase, "uppercase"},
};

Status Invalid(std::string what) { return Status(StatusCode::kInvalidArgument, std::move(what)); }

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool HasVar(std::string_view s) { return s.find('$') != std::string_view::npos; }

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Go accepts "(?<name>" as well as "(?P<name>"; RE2 of Debian 12 only the
// latter. Rewrites the first outside character classes, leaving escapes alone.
std::string GoToRe2(std::string_view re) {
  std::string out;
  out.reserve(re.size() + 4);
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      out += c;
      out += re[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is literal.
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];
      continue;
    }
    if (re.substr(i).starts_with("(?<") && i + 3 < re.size() && re[i + 3] != '=' &&
        re[i + 3] != '!') {
      out += "(?P<";
      i += 2;
      continue;
    }
    out += c;
  }
  return out;
}

// Go's regexp extract(): a group reference after '$' ("1", "{name}"). Sets
// *num (-1 for a name) and *name; returns the length consumed, 0 if malformed.
std::size_t ExtractRef(std::string_view s, std::string_view* name, int* num) {
  if (s.empty()) return 0;
  const bool brace = s.front() == '{';
  const std::size_t start = brace ? 1 : 0;
  std::size_t i = start;
  while (i < s.size() && IsWordChar(s[i])) ++i;
  if (i == start) return 0;
  *name = s.substr(start, i - start);
  if (brace) {
    if (i >= s.size() || s[i] != '}') return 0;
    ++i;
  }
  int n = 0;
  for (const char c : *name) {
    if (c < '0' || c > '9' || n >= 100'000'000) {
      n = -1;
      break;
    }
    n = n * 10 + (c - '0');
  }
  if (name->front() == '0' && name->size() > 1) n = -1;  // no leading zeros
  *num = n;
  return i;
}

// Go's Regexp.Expand of `tmpl` with the submatches `groups` of `re`.
std::string Expand(const re2::RE2& re, std::string_view tmpl,
                   const std::vector<re2::StringPiece>& groups) {
  std::string out;
  while (!tmpl.empty()) {
    const std::size_t dollar = tmpl.find('$');
    if (dollar == std::string_view::npos) break;
    out.append(tmpl.substr(0, dollar));
    tmpl.remove_prefix(dollar + 1);
    if (!tmpl.empty() && tmpl.front() == '$') {
      out += '$';
      tmpl.remove_prefix(1);
      continue;
    }
    std::string_view name;
    int num = -1;
    const std::size_t used = ExtractRef(tmpl, &name, &num);
    if (used == 0) {  // malformed: the '$' is text
      out += '$';
      continue;
    }
    tmpl.remove_prefix(used);
    if (num < 0) {
      const auto& named = re.NamedCapturingGroups();
      const auto it = named.find(std::string(name));
      if (it == named.end()) continue;
      num = it->second;
    }
    const auto n = static_cast<std::size_t>(num);
    if (n < groups.size() && groups[n].data() != nullptr) {
      out.append(groups[n].data(), groups[n].size());
    }
  }
  out.append(tmpl);
  return out;
}

// Go's strings.ToLower / ToUpper: per code point, invalid bytes become U+FFFD.
std::string MapCase(std::string_view in, bool upper) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", nullptr);
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b < 0x80) {
      out += static_cast<char>(upper ? (b >= 'a' && b <= 'z' ? b - 32 : b)
                                     : (b >= 'A' && b <= 'Z' ? b + 32 : b));
      ++i;
      continue;
    }
    const std::size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    std::uint32_t cp = 0xFFFD;
    std::size_t used = 1;
    if (len > 1 && i + len <= in.size() && IsValidUtf8(in.substr(i, len))) {
      cp = b & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (in[i + k] & 0x3F);
      used = len;
    }
    if (utf8 != nullptr && cp != 0xFFFD) {
      cp = upper ? towupper_l(static_cast<wint_t>(cp), utf8)
                 : towlower_l(static_cast<wint_t>(cp), utf8);
    }
    if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    }
    out += static_cast<char>(0x80 | (cp & 0x3F));
    i += used;
  }
  return out;
}

auto FindLabel(Labels& labels, std::string_view name) {
  return std::lower_bound(labels.begin(), labels.end(), name,
                          [](const Label& l, std::string_view n) { return l.name < n; });
}

std::string_view Get(const Labels& labels, std::string_view name) {
  return LabelValue(labels, name);
}

bool FullMatch(const re2::RE2& re, std::string_view text) {
  return re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), re2::RE2::UNANCHORED,
                  nullptr, 0);
}

}  // namespace

std::string_view RelabelActionName(RelabelAction action) {
  for (const ActionName& a : kActions) {
    if (a.action == action) return a.name;
  }
  return "";
}

Result<RelabelAction> ParseRelabelAction(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
  for (const ActionName& a : kActions) {
    if (a.name == lower) return a.action;
  }
  return Error(Invalid("unknown relabel action " + Quoted(text)));
}

bool IsValidLabelNameFor(NameValidation scheme, std::string_view name) {
  if (scheme == NameValidation::kUtf8) return !name.empty() && IsValidUtf8(name);
  return IsValidLabelName(name);
}

bool IsValidLegacyTargetTemplate(std::string_view text) {
  static const re2::RE2 re(R"(^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$)");
  return FullMatch(re, text);
}

Status ValidateRelabelConfig(const RelabelConfig& c) {
  using A = RelabelAction;
  const A a = c.action;
  const std::string name(RelabelActionName(a));
  if (a == A::kUnset) return Invalid("relabel action cannot be empty");
  if (c.modulus == 0 && a == A::kHashMod) {
    return Invalid("relabel configuration for hashmod requires non-zero modulus");
  }
  const bool needs_target = a == A::kReplace || a == A::kHashMod || a == A::kLowercase ||
                            a == A::kUppercase || a == A::kKeepEqual || a == A::kDropEqual;
  if (needs_target && c.target_label.empty()) {
    return Invalid("relabel configuration for " + name + " action requires 'target_label' value");
  }
  const auto bad_target = [&] {
    return Invalid(Quoted(c.target_label) + " is invalid 'target_label' for " + name + " action");
  };
  const auto valid_with_vars = [&](std::string_view v) {
    return c.validation == NameValidation::kUtf8 ? IsValidLabelNameFor(c.validation, v)
                                                 : IsValidLegacyTargetTemplate(v);
  };
  if (a == A::kReplace) {
    const bool ok = HasVar(c.target_label) ? valid_with_vars(c.target_label)
                                           : IsValidLabelNameFor(c.validation, c.target_label);
    if (!ok) return bad_target();
  }
  const bool case_or_equal =
      a == A::kLowercase || a == A::kUppercase || a == A::kKeepEqual || a == A::kDropEqual;
  if (case_or_equal && !IsValidLabelNameFor(c.validation, c.target_label)) return bad_target();
  const RelabelConfig defaults;
  if (case_or_equal && c.replacement != defaults.replacement) {
    return Invalid("'replacement' can not be set for " + name + " action");
  }
  if (a == A::kLabelMap && !valid_with_vars(c.replacement)) {
    return Invalid(Quoted(c.replacement) + " is invalid 'replacement' for " + name + " action");
  }
  if (a == A::kHashMod && !IsValidLabelNameFor(c.validation, c.target_label)) return bad_target();
  if (a == A::kDropEqual || a == A::kKeepEqual) {
    if (c.regex.has_value() || c.modulus != defaults.modulus || c.separator != defaults.separator ||
        c.replacement != defaults.replacement) {
      return Invalid(name +
                     " action requires only 'source_labels' and `target_label`, and no other "
                     "fields");
    }
  }
  if (a == A::kLabelDrop || a == A::kLabelKeep) {
    if (c.source_labels_set || !c.source_labels.empty() || !c.target_label.empty() ||
        c.modulus != defaults.modulus || c.separator != defaults.separator ||
        c.replacement != defaults.replacement) {
      return Invalid(name + " action requires only 'regex', and no other fields");
    }
  }
  return Status::Ok();
}

Result<RelabelRule> RelabelRule::Compile(RelabelConfig config) {
  GC_RETURN_IF_ERROR(ValidateRelabelConfig(config));
  const std::string regex = config.regex.value_or("(.*)");
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>("^(?s:" + GoToRe2(regex) + ")$", options);
  if (!re->ok()) return Error(Invalid("bad regex '" + regex + "': " + re->error()));
  RelabelRule rule;
  rule.target_has_var_ = HasVar(config.target_label);
  rule.replacement_has_var_ = HasVar(config.replacement);
  rule.group_count_ = static_cast<std::size_t>(re->NumberOfCapturingGroups()) + 1;
  rule.config_ = std::make_shared<const RelabelConfig>(std::move(config));
  rule.re_ = std::move(re);
  return rule;
}

void SetLabel(Labels& labels, std::string_view name, std::string_view value) {
  auto it = FindLabel(labels, name);
  const bool present = it != labels.end() && it->name == name;
  if (value.empty()) {
    if (present) labels.erase(it);
  } else if (present) {
    it->value.assign(value);
  } else {
    labels.insert(it, Label{std::string(name), std::string(value)});
  }
}

std::array<std::uint8_t, 16> Md5(std::string_view data) {
  md5_ctx ctx;
  md5_init(&ctx);
  md5_update(&ctx, data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  std::array<std::uint8_t, 16> digest{};
  md5_digest(&ctx, digest.size(), digest.data());
  return digest;
}

bool RelabelRule::Apply(Labels& labels) const {
  using A = RelabelAction;
  const RelabelConfig& c = *config_;
  std::string val;
  for (std::size_t i = 0; i < c.source_labels.size(); ++i) {
    if (i > 0) val += c.separator;
    val += Get(labels, c.source_labels[i]);
  }
  switch (c.action) {
    case A::kDrop:
      return !FullMatch(*re_, val);
    case A::kKeep:
      return FullMatch(*re_, val);
    case A::kDropEqual:
      return Get(labels, c.target_label) != val;
    case A::kKeepEqual:
      return Get(labels, c.target_label) == val;
    case A::kReplace: {
      // Prometheus's fast path (same outcome as the general one).
      if (val.empty() && !c.regex.has_value() && !target_has_var_ && !replacement_has_var_) {
        SetLabel(labels, c.target_label, c.replacement);
        break;
      }
      std::vector<re2::StringPiece> groups(group_count_);
      if (!re_->Match(re2::StringPiece(val), 0, val.size(), re2::RE2::UNANCHORED, groups.data(),
                      static_cast<int>(groups.size()))) {
        break;  // no match, no replacement
      }
      const std::string target = Expand(*re_, c.target_label, groups);
      if (!IsValidLabelNameFor(c.validation, target)) break;
      SetLabel(labels, target, Expand(*re_, c.replacement, groups));
      break;
    }
    case A::kLowercase:
      SetLabel(labels, c.target_label, MapCase(val, false));
      break;
    case A::kUppercase:
      SetLabel(labels, c.target_label, MapCase(val, true));
      break;
    case A::kHashMod: {
      const std::array<std::uint8_t, 16> h = Md5(val);
      std::uint64_t v = 0;
      for (std::size_t i = 8; i < 16; ++i) v = (v << 8) | h[i];
      SetLabel(labels, c.target_label, std::to_string(v % c.modulus));
      break;
    }
    case A::kLabelMap: {
      std::vector<Label> mapped;
      std::vector<re2::StringPiece> groups(group_count_);
      for (const Label& l : labels) {
        if (re_->Match(re2::StringPiece(l.name), 0, l.name.size(), re2::RE2::UNANCHORED,
                       groups.data(), static_cast<int>(groups.size()))) {
          mapped.push_back({Expand(*re_, c.replacement, groups), l.value});
        }
      }
      for (const Label& l : mapped) SetLabel(labels, l.name, l.value);
      break;
    }
    case A::kLabelDrop:
      std::erase_if(labels, [&](const Label& l) { return FullMatch(*re_, l.name); });
      break;
    case A::kLabelKeep:
      std::erase_if(labels, [&](const Label& l) { return !FullMatch(*re_, l.name); });
      break;
    case A::kUnset:
      break;  // Compile rejects it
  }
  return true;
}

bool Relabel(std::span<const RelabelRule> rules, Labels& labels) {
  for (const RelabelRule& r : rules) {
    if (!r.Apply(labels)) return false;
  }
  return true;
}

}  // namespace gpucanary::model
