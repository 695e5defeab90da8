#pragma once
// Label matchers, as PromQL's vector selectors have them: name="v",
// name!="v", name=~"re", name!~"re", regexes fully anchored, RE2 syntax
// (what Prometheus uses). A matcher against an absent label sees the empty
// string, so {gpu!="3"} matches series with no gpu label and {gpu=""}
// matches only those.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace re2 {
class RE2;
}

namespace gpucanary::model {

class Matcher {
 public:
  enum class Type : std::uint8_t { kEqual, kNotEqual, kRegex, kNotRegex };

  // Errors: kInvalidArgument for a regex RE2 rejects, with RE2's reason.
  static Result<Matcher> Make(Type type, std::string name, std::string value);

  bool Matches(std::string_view value) const;
  Type type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }
  // True when the empty string matches (the matcher selects series that lack
  // the label).
  bool MatchesEmpty() const { return matches_empty_; }
  std::string ToString() const;

 private:
  Type type_ = Type::kEqual;
  std::string name_;
  std::string value_;
  std::shared_ptr<const re2::RE2> re_;  // kRegex / kNotRegex
  bool matches_empty_ = false;
};

// Parses a PromQL vector selector: `metric`, `metric{a="x",b=~"y.*"}` or
// `{__name__=~"DCGM_.*"}`, strings in double or single quotes with Go escapes
// (\\ \" \' \n \t \uXXXX not supported beyond ASCII escapes). At least one
// matcher must not match the empty string, as Prometheus requires. Errors:
// kParseError "1:12: expected '=', '!=', '=~' or '!~'" (line:column).
Result<std::vector<Matcher>> ParseSelector(std::string_view text);

// A regex (RE2, PromQL's syntax) that matches exactly one of `values`, each
// with its metacharacters escaped, joined by '|' ("node\\-1|node\\.2" for
// "node-1", "node.2"): host lists in matchers and in PromQL sent to a
// Prometheus. "" for no values.
std::string ExactAlternation(const std::vector<std::string>& values);

// `(?:h1|h2)(?::[0-9]+)?`: an `instance` label naming one of `hosts`, with or
// without a port ("node-4", "node-4:8000").
std::string InstanceHostRegex(const std::vector<std::string>& hosts);

// The matchers as written inside a selector's braces, comma-separated:
// `instance=~"...",Hostname=""`.
std::string JoinMatchers(const std::vector<Matcher>& matchers);

// The host part of an `instance` label ("10.0.0.7:8000" -> "10.0.0.7",
// "[::1]:80" -> "::1", "node-4" -> "node-4").
std::string_view InstanceHost(std::string_view instance);

// The matchers of series that carry no host label (neither `Hostname` nor
// `hostname`) and whose scrape `instance` names one of `hosts`: an inference
// server's series as a scrape of a target named by its host stores them.
// REQUIRES: `hosts` not empty.
std::vector<Matcher> InstanceHostMatchers(const std::vector<std::string>& hosts);

}  // namespace gpucanary::model
