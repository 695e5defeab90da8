#include "config/http_headers.h"

#include <algorithm>

#include "net/http_message.h"

namespace gpucanary::config {
namespace {

// The entry's value under `rules`, or why not.
Result<std::string> ReadValue(const Reporter& r, const Fields::Entry& e, std::string_view field,
                              const HttpHeaderRules& rules) {
  std::string value;
  if (rules.non_empty_value) {
    auto text = ReadString(r, e.value, field);
    if (!text) return Error(text.error());
    value = std::move(*text);
  } else {
    if (!e.value.IsScalar()) return r.Fail(e.value, field, "expected a string");
    value = e.value.Scalar();
  }
  if (value.find_first_of("\r\n") != std::string::npos ||
      (rules.refuse_nul && value.find('\0') != std::string::npos)) {
    return r.Fail(e.value, field, rules.line_break);
  }
  return value;
}

}  // namespace

Result<HttpHeaders> ReadHttpHeaders(const Reporter& r, const YAML::Node& node,
                                    std::string_view field, const HttpHeaderRules& rules) {
  auto entries = Fields::Read(r, node, field, {});
  if (!entries) return Error(entries.error());
  HttpHeaders out;
  for (const Fields::Entry& e : entries->entries()) {
    const std::string f = Child(field, e.name);
    if (!net::IsHeaderName(e.name)) return r.Fail(e.key, f, rules.bad_name);
    if (std::any_of(rules.reserved.begin(), rules.reserved.end(),
                    [&](std::string_view name) { return net::EqualsIgnoreCase(e.name, name); })) {
      return r.Fail(e.key, f, rules.reserved_name);
    }
    auto value = ReadValue(r, e, f, rules);
    if (!value) return Error(value.error());
    out.emplace_back(e.name, std::move(*value));
  }
  return out;
}

}  // namespace gpucanary::config
