#include "releases/release.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "config/yaml_fields.h"
#include "model/matcher.h"

namespace gpucanary::releases {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxIdBytes = 256;
// Unix seconds beyond this (year 5138) are almost surely milliseconds.
constexpr double kMaxStartedAt = 1e11;

// What is wrong and where: a byte offset into the annotation's text.
struct Problem {
  std::size_t offset = 0;
  std::string message;
  bool syntax = false;  // a JSON syntax error (the HTTP API gives its position)
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t SkipSpace(std::string_view text, std::size_t i) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  return i;
}

// REQUIRES: text[i] == '"' opening a valid JSON string. Returns the offset
// just after its closing quote.
std::size_t SkipString(std::string_view text, std::size_t i) {
  ++i;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? std::size_t{2} : std::size_t{1};
  return std::min(i + 1, text.size());
}

// REQUIRES: a valid JSON value starts at i. Returns the offset of the ',' or
// '}' that ends it inside its object.
std::size_t SkipValue(std::string_view text, std::size_t i) {
  int depth = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      i = SkipString(text, i);
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      --depth;
    } else if (c == ',' && depth == 0) {
      return i;
    }
    ++i;
  }
  return i;
}

struct KeyAt {
  std::string name;
  std::size_t value_offset;
};

// The keys of the object that `text` holds, in order, each with the offset of
// its value. nlohmann::json keeps no positions, so this walks the text again.
// REQUIRES: `text` is one valid JSON object (it parsed).
std::vector<KeyAt> TopLevelKeys(std::string_view text) {
  std::vector<KeyAt> keys;
  std::size_t i = SkipSpace(text, 0) + 1;  // past '{'
  while (true) {
    i = SkipSpace(text, i);
    if (i >= text.size() || text[i] == '}') break;
    const std::size_t end = SkipString(text, i);
    std::string name(text.substr(i + 1, end - i - 2));
    if (name.find('\\') != std::string::npos) {
      name = Json::parse(text.substr(i, end - i)).get<std::string>();
    }
    i = SkipSpace(text, end) + 1;  // past ':'
    i = SkipSpace(text, i);
    keys.push_back({std::move(name), i});
    i = SkipValue(text, i);
    if (i < text.size() && text[i] == ',') ++i;
  }
  return keys;
}

// nlohmann's parse_error points at the last byte it read: the end of the
// offending token. People look for its start, so walk the tokens again.
// REQUIRES: the text before `offset` lexes as JSON (nlohmann read it).
std::size_t TokenStart(std::string_view text, std::size_t offset) {
  std::size_t i = 0;
  while (i < text.size()) {
    i = SkipSpace(text, i);
    if (i >= offset) return offset;
    const std::size_t start = i;
    const char c = text[i];
    if (c == '"') {
      i = SkipString(text, i);
    } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':') {
      ++i;
    } else {
      while (i < text.size() && !IsSpace(text[i]) &&
             std::string_view("{}[],:\"").find(text[i]) == std::string_view::npos) {
        ++i;
      }
    }
    if (offset < i) return start;
  }
  return offset;
}

std::string Got(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

// "syntax error while parsing object - ..." from nlohmann's what(), without
// its "[json.exception...] parse error at line 1, column 5: " prefix.
std::string SyntaxMessage(const std::string& what) {
  std::string_view m = what;
  if (m.starts_with("[json.exception.")) {
    const std::size_t close = m.find("] ");
    if (close != std::string_view::npos) m.remove_prefix(close + 2);
  }
  const std::size_t at = m.find("syntax error");
  if (at != std::string_view::npos) return std::string(m.substr(at));
  if (m.starts_with("parse error")) {
    const std::size_t colon = m.find(": ");
    if (colon != std::string_view::npos) m.remove_prefix(colon + 2);
  }
  return std::string(m);
}

Problem FieldProblem(std::size_t offset, std::string_view field, std::string_view what) {
  return {offset, "field '" + std::string(field) + "': " + std::string(what), false};
}

std::optional<Problem> ReadStarted(const Json& v, std::size_t at, Release& out) {
  if (!v.is_number()) {
    return FieldProblem(at, "started_at", "expected a number (Unix seconds), got " + Got(v));
  }
  const double t = v.get<double>();
  if (!std::isfinite(t) || t < 0) {
    return FieldProblem(at, "started_at", "expected Unix seconds >= 0, got " + v.dump());
  }
  if (t > kMaxStartedAt) {
    return FieldProblem(at, "started_at",
                        "expected Unix seconds, got " + v.dump() + " (milliseconds?)");
  }
  out.started_at = t;
  return std::nullopt;
}

std::optional<Problem> ReadId(const Json& v, std::size_t at, Release& out) {
  if (!v.is_string()) return FieldProblem(at, "id", "expected a string, got " + Got(v));
  const auto& id = v.get_ref<const std::string&>();
  if (id.empty()) return FieldProblem(at, "id", "must not be empty");
  if (id.size() > kMaxIdBytes) {
    return FieldProblem(at, "id", "longer than " + std::to_string(kMaxIdBytes) + " bytes");
  }
  for (char c : id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return FieldProblem(at, "id", "must not hold control characters");
    }
  }
  out.id = id;
  return std::nullopt;
}

std::optional<Problem> ReadTargets(const Json& v, std::size_t at, Release& out) {
  if (!v.is_array()) {
    return FieldProblem(at, "targets", "expected an array of hostnames, got " + Got(v));
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string field = config::Index("targets", i);
    if (!v[i].is_string()) {
      return FieldProblem(at, field, "expected a hostname string, got " + Got(v[i]));
    }
    if (v[i].get_ref<const std::string&>().empty()) {
      return FieldProblem(at, field, "must not be empty");
    }
    out.targets.push_back(v[i].get<std::string>());
  }
  return std::nullopt;
}

std::optional<Problem> ReadSelector(const Json& v, std::size_t at, Release& out) {
  if (!v.is_string()) return FieldProblem(at, "selector", "expected a string, got " + Got(v));
  out.selector = v.get<std::string>();
  auto matchers = model::ParseSelector(out.selector);
  if (!matchers) return FieldProblem(at, "selector", "bad selector: " + matchers.error().message());
  return std::nullopt;
}

std::optional<Problem> ReadField(const std::string& name, const Json& v, std::size_t at,
                                 Release& out) {
  if (name == "id") return ReadId(v, at, out);
  if (name == "started_at") return ReadStarted(v, at, out);
  if (name == "targets") return ReadTargets(v, at, out);
  if (name == "selector") return ReadSelector(v, at, out);
  for (const StringField& f : StringFields()) {
    if (f.name != name) continue;
    if (!v.is_string()) return FieldProblem(at, name, "expected a string, got " + Got(v));
    out.*f.member = v.get<std::string>();
  }
  return std::nullopt;  // an unknown field: kept in the annotation
}

// Parses and checks one annotation; `text` holds nothing else (one line of a
// JSONL file, or an HTTP body) and no byte order mark.
tl::expected<Release, Problem> ParseObject(std::string_view text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const std::size_t offset = TokenStart(text, e.byte > 0 ? e.byte - 1 : 0);
    return tl::unexpected(Problem{offset, SyntaxMessage(e.what()), true});
  } catch (const Json::exception& e) {
    // A number too large for a double (1e400): "number overflow parsing
    // '1e400'", without a position; the literal is in the text.
    const std::string what = SyntaxMessage(e.what());
    const std::size_t open = what.find('\'');
    const std::size_t close = what.rfind('\'');
    std::size_t offset = 0;
    if (open != std::string::npos && close > open) {
      offset = std::min(text.find(what.substr(open + 1, close - open - 1)), text.size());
    }
    return tl::unexpected(Problem{offset, what, true});
  }
  const std::size_t start = SkipSpace(text, 0);
  if (!doc.is_object()) {
    return tl::unexpected(Problem{start, "expected a JSON object, got " + Got(doc), false});
  }
  Release out;
  std::map<std::string, std::size_t, std::less<>> seen;
  for (const KeyAt& key : TopLevelKeys(text)) {
    if (!seen.emplace(key.name, key.value_offset).second) {
      return tl::unexpected(FieldProblem(key.value_offset, key.name, "given twice"));
    }
    const auto value = std::as_const(doc).find(key.name);
    if (value == doc.cend()) continue;  // cannot happen: the keys come from the same text
    if (auto problem = ReadField(key.name, *value, key.value_offset, out)) {
      return tl::unexpected(std::move(*problem));
    }
  }
  if (!seen.contains("id")) return tl::unexpected(FieldProblem(start, "id", "required"));
  if (!seen.contains("started_at")) {
    return tl::unexpected(FieldProblem(start, "started_at", "required (Unix seconds)"));
  }
  std::size_t end = text.size();
  while (end > start && IsSpace(text[end - 1])) --end;
  out.annotation = std::string(text.substr(start, end - start));
  return out;
}

// As ParseObject, for text that may start with a byte order mark.
tl::expected<Release, Problem> Parse(std::string_view text) {
  // nlohmann::json skips a UTF-8 byte order mark; so do the position
  // counting and the stored annotation.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const std::size_t bom = text.starts_with(kBom) ? kBom.size() : 0;
  auto result = ParseObject(text.substr(bom));
  if (!result) result.error().offset += bom;
  return result;
}

}  // namespace

const std::vector<StringField>& StringFields() {
  static const std::vector<StringField> kFields = {
      {"id", &Release::id},
      {"service", &Release::service},
      {"version", &Release::version},
      {"git_sha", &Release::git_sha},
      {"model", &Release::model},
      {"checkpoint", &Release::checkpoint},
      {"quantization", &Release::quantization},
      {"cuda_version", &Release::cuda_version},
      {"framework", &Release::framework},
      {"framework_version", &Release::framework_version},
      {"environment", &Release::environment},
      {"previous", &Release::previous},
  };
  return kFields;
}

TextPosition PositionOf(std::string_view text, std::size_t offset) {
  TextPosition pos;
  const std::size_t end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

Result<Release> ParseRelease(std::string_view json_text) {
  auto release = Parse(json_text);
  if (release) return std::move(*release);
  const Problem& p = release.error();
  if (!p.syntax) return Error(StatusCode::kParseError, p.message);
  const TextPosition pos = PositionOf(json_text, p.offset);
  return Error(StatusCode::kParseError,
               std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": " + p.message);
}

Result<std::vector<Release>> ParseReleasesJsonl(std::string_view text, std::string_view file_name) {
  std::vector<Release> out;
  std::map<std::string, std::size_t, std::less<>> lines_by_id;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (SkipSpace(line, 0) == line.size()) continue;
    auto where = [&](std::size_t offset) {
      return std::string(file_name) + ":" + std::to_string(line_no) + ":" +
             std::to_string(PositionOf(line, offset).column) + ": ";
    };
    auto release = Parse(line);
    if (!release) {
      return Error(StatusCode::kParseError,
                   where(release.error().offset) + release.error().message);
    }
    auto [it, added] = lines_by_id.emplace(release->id, line_no);
    if (!added) {
      std::size_t at = 0;
      for (const KeyAt& key : TopLevelKeys(line)) {
        if (key.name == "id") at = key.value_offset;
      }
      return Error(StatusCode::kParseError, where(at) + "field 'id': release '" + release->id +
                                                "' already on line " + std::to_string(it->second));
    }
    out.push_back(std::move(*release));
  }
  return out;
}

Result<std::vector<Release>> LoadReleasesJsonl(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return Error(text.error());
  return ParseReleasesJsonl(*text, path);
}

}  // namespace gpucanary::releases
