#include "model/matcher.h"

#include <re2/re2.h>

#include <tuple>
#include <utility>

#include "model/escaping.h"
#include "model/labels.h"

namespace gpucanary::model {

Result<Matcher> Matcher::Make(Type type, std::string name, std::string value) {
  Matcher m;
  m.type_ = type;
  m.name_ = std::move(name);
  m.value_ = std::move(value);
  if (type == Type::kRegex || type == Type::kNotRegex) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_dot_nl(true);  // Prometheus compiles with (?s)
    auto re = std::make_shared<const RE2>("^(?:" + m.value_ + ")$", options);
    if (!re->ok()) {
      return Error(StatusCode::kInvalidArgument,
                   "bad regex \"" + m.value_ + "\" for label " + m.name_ + ": " + re->error());
    }
    m.re_ = std::move(re);
  }
  m.matches_empty_ = m.Matches("");
  return m;
}

bool Matcher::Matches(std::string_view value) const {
  switch (type_) {
    case Type::kEqual:
      return value == value_;
    case Type::kNotEqual:
      return value != value_;
    case Type::kRegex:
      return RE2::FullMatch(value, *re_);
    case Type::kNotRegex:
      return !RE2::FullMatch(value, *re_);
  }
  return false;
}

std::string Matcher::ToString() const {
  static constexpr const char* kOps[] = {"=", "!=", "=~", "!~"};
  std::string out = name_ + kOps[static_cast<int>(type_)] + "\"";
  model::AppendEscaped(out, value_);
  return out + "\"";
}

namespace {

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  Result<std::vector<Matcher>> Parse() {
    std::vector<Matcher> out;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] != '{') {
      const std::string name = Identifier(true);
      if (name.empty()) return Fail("expected a metric name or '{'");
      auto m = Matcher::Make(Matcher::Type::kEqual, std::string(kMetricNameLabel), name);
      out.push_back(std::move(*m));
      SkipSpace();
    }
    if (pos_ < text_.size() && text_[pos_] == '{') {
      ++pos_;
      if (Status s = Braces(out); !s.ok()) return Error(s);
    }
    SkipSpace();
    if (pos_ != text_.size()) return Fail("unexpected character after the selector");
    if (out.empty()) return Fail("empty selector");
    bool selective = false;
    for (const Matcher& m : out) selective = selective || !m.MatchesEmpty();
    if (!selective) {
      return Error(StatusCode::kParseError,
                   "vector selector must contain at least one non-empty matcher");
    }
    return out;
  }

 private:
  Status Braces(std::vector<Matcher>& out) {
    for (;;) {
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status::Ok();
      }
      const std::string name = Identifier(false);
      if (name.empty()) return FailStatus("expected a label name or '}'");
      SkipSpace();
      Matcher::Type type{};
      if (Consume("=~")) {
        type = Matcher::Type::kRegex;
      } else if (Consume("!~")) {
        type = Matcher::Type::kNotRegex;
      } else if (Consume("!=")) {
        type = Matcher::Type::kNotEqual;
      } else if (Consume("=")) {
        type = Matcher::Type::kEqual;
      } else {
        return FailStatus("expected '=', '!=', '=~' or '!~'");
      }
      SkipSpace();
      const std::size_t value_at = pos_;
      auto value = QuotedString();
      if (!value) return value.error();
      auto m = Matcher::Make(type, name, std::move(*value));
      if (!m) return Status(StatusCode::kParseError, Where(value_at) + m.error().message());
      out.push_back(std::move(*m));
      SkipSpace();
      if (Consume(",")) continue;
      if (pos_ < text_.size() && text_[pos_] == '}') continue;
      return FailStatus("expected ',' or '}'");
    }
  }

  std::string Identifier(bool metric) {
    const std::size_t start = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                      (metric && c == ':') || (pos_ > start && c >= '0' && c <= '9');
      if (!ok) break;
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  Result<std::string> QuotedString() {
    if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\'')) {
      return Fail("expected a quoted string");
    }
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        const char e = text_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case '\\':
          case '"':
          case '\'':
            c = e;
            break;
          default:
            pos_ -= 2;
            return Fail(std::string("unknown escape sequence '\\") + e + "'");
        }
      }
      out += c;
    }
    if (pos_ >= text_.size()) return Fail("unterminated string");
    ++pos_;
    return out;
  }

  bool Consume(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  std::string Where(std::size_t at) const {
    int line = 1;
    int col = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return std::to_string(line) + ":" + std::to_string(col) + ": ";
  }
  Status FailStatus(const std::string& what) const {
    return Status(StatusCode::kParseError, Where(pos_) + what);
  }
  tl::unexpected<Status> Fail(const std::string& what) const { return Error(FailStatus(what)); }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<std::vector<Matcher>> ParseSelector(std::string_view text) {
  return SelectorParser(text).Parse();
}

std::string ExactAlternation(const std::vector<std::string>& values) {
  std::string regex;
  for (const std::string& v : values) {
    if (!regex.empty()) regex += '|';
    for (char c : v) {
      if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) regex += '\\';
      regex += c;
    }
  }
  return regex;
}

std::string InstanceHostRegex(const std::vector<std::string>& hosts) {
  return "(?:" + ExactAlternation(hosts) + ")(?::[0-9]+)?";
}

std::string JoinMatchers(const std::vector<Matcher>& matchers) {
  std::string out;
  for (const Matcher& m : matchers) out += (out.empty() ? "" : ",") + m.ToString();
  return out;
}

std::string_view InstanceHost(std::string_view instance) {
  if (instance.starts_with('[')) {
    const auto close = instance.find(']');
    return close == std::string_view::npos ? instance.substr(1) : instance.substr(1, close - 1);
  }
  const auto colon = instance.rfind(':');
  return colon == std::string_view::npos ? instance : instance.substr(0, colon);
}

std::vector<Matcher> InstanceHostMatchers(const std::vector<std::string>& hosts) {
  std::vector<Matcher> out;
  for (auto [type, name, value] :
       {std::tuple{Matcher::Type::kRegex, "instance", InstanceHostRegex(hosts)},
        std::tuple{Matcher::Type::kEqual, "Hostname", std::string()},
        std::tuple{Matcher::Type::kEqual, "hostname", std::string()}}) {
    Result<Matcher> m = Matcher::Make(type, name, value);
    GC_CHECK(m.has_value(), "quoted host names make a valid regex");
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace gpucanary::model
