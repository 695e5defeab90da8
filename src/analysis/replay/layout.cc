#include "analysis/replay/layout.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpucanary::analysis {
namespace {

// The series part of a sample line: the name and its label block, up to the
// space before the value (label values may hold spaces, braces and quotes).
std::string_view SeriesKey(std::string_view line) {
  bool quoted = false;
  bool in_labels = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == '{') {
      in_labels = true;
    } else if (c == '}') {
      in_labels = false;
    } else if (c == ' ' && !in_labels) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string_view SampleName(std::string_view key) {
  const std::size_t brace = key.find('{');
  return brace == std::string_view::npos ? key : key.substr(0, brace);
}

// The label block of `key` without `le` and `quantile`: the samples of one
// histogram or summary point (buckets, _count, _sum) share it.
std::string PointLabels(std::string_view key) {
  const std::size_t brace = key.find('{');
  if (brace == std::string_view::npos) return "";
  std::string out;
  std::string_view rest = key.substr(brace + 1);
  while (!rest.empty() && rest.front() != '}') {
    // name="value" with escapes, then an optional comma.
    std::size_t i = rest.find('"');
    if (i == std::string_view::npos) break;
    for (++i; i < rest.size() && rest[i] != '"'; ++i) {
      if (rest[i] == '\\') ++i;
    }
    const std::size_t end = std::min(i + 1, rest.size());
    const std::string_view pair = rest.substr(0, end);
    if (!pair.starts_with("le=") && !pair.starts_with("quantile=")) {
      if (!out.empty()) out.push_back(',');
      out.append(pair);
    }
    rest.remove_prefix(end < rest.size() && rest[end] == ',' ? end + 1 : end);
  }
  return out;
}

struct Family {
  std::string metadata;
  std::vector<std::string> series;  // each: its lines, in file order (by point labels)
  std::unordered_map<std::string, std::size_t> series_ids;
};

}  // namespace

std::string SeriesGroupedText(std::string_view text) {
  std::vector<Family> families;
  std::unordered_map<std::string, std::size_t> family_ids;   // family name -> index
  std::unordered_map<std::string, std::size_t> name_family;  // sample name -> index
  std::size_t current = 0;
  bool have_current = false;
  bool eof = false;
  auto family_of = [&](const std::string& name) {
    auto [it, inserted] = family_ids.emplace(name, families.size());
    if (inserted) families.emplace_back();
    return it->second;
  };
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    if (line.starts_with('#')) {
      if (line == "# EOF") {
        eof = true;
        continue;
      }
      if (!line.starts_with("# HELP ") && !line.starts_with("# TYPE ") &&
          !line.starts_with("# UNIT ")) {
        continue;
      }
      std::string_view name = line.substr(7);
      name = name.substr(0, name.find(' '));
      current = family_of(std::string(name));
      have_current = true;
      Family& f = families[current];
      if (f.series.empty()) f.metadata.append(line).push_back('\n');
      continue;
    }
    const std::string_view key = SeriesKey(line);
    const std::string name(SampleName(key));
    auto [nit, first] = name_family.emplace(name, 0);
    if (first) {
      // The family named by the sample's name or its name less a suffix,
      // else the one whose metadata came last.
      std::optional<std::size_t> known;
      for (std::string_view suffix :
           {"", "_total", "_bucket", "_count", "_sum", "_created", "_gcount", "_gsum", "_info"}) {
        if (!std::string_view(name).ends_with(suffix)) continue;
        auto it = family_ids.find(name.substr(0, name.size() - suffix.size()));
        if (it != family_ids.end()) {
          known = it->second;
          break;
        }
      }
      nit->second = known ? *known : have_current ? current : family_of(name);
    }
    Family& f = families[nit->second];
    auto [sit, fresh] = f.series_ids.emplace(PointLabels(key), f.series.size());
    if (fresh) f.series.emplace_back();
    f.series[sit->second].append(line).push_back('\n');
  }
  std::string out;
  out.reserve(text.size());
  for (const Family& f : families) {
    out += f.metadata;
    for (const std::string& s : f.series) out += s;
  }
  if (eof) out += "# EOF\n";
  return out;
}

}  // namespace gpucanary::analysis
