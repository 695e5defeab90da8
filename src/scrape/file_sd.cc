#include "scrape/file_sd.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "config/yaml_fields.h"
#include "model/names.h"

namespace gpucanary::scrape {
namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::Reporter;

constexpr std::string_view kGroupKeys[] = {"targets", "labels"};

bool IsJsonFile(std::string_view name) {
  return name.ends_with(".json") || name.ends_with(".JSON");
}

// nlohmann's parse errors carry a byte offset; Prometheus-style messages want
// LINE:COL. Returns "" when the text is valid JSON.
std::string JsonSyntaxError(std::string_view text, const std::string& file_name) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end());
    static_cast<void>(doc);
    return "";
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based: the position of the character that broke the parse.
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    std::size_t line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    const std::size_t column_at = what.find("column ");
    const std::size_t colon = what.find(": ", column_at == std::string::npos ? 0 : column_at);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    return file_name + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) +
           ": syntax: " + what;
  } catch (const nlohmann::json::exception& e) {
    return file_name + ":1:1: syntax: " + e.what();
  }
}

Status ParseGroup(const Reporter& r, const YAML::Node& node, const std::string& field,
                  TargetGroup* g) {
  Result<Fields> f = Fields::Read(r, node, field, kGroupKeys);
  if (!f) return f.error();
  g->source = r.Where(node.Mark());
  const YAML::Node* targets = f->Find("targets");
  const std::string tf = Child(field, "targets");
  if (targets == nullptr) return r.Fail(node, tf, "missing").value();
  if (!targets->IsSequence()) return r.Fail(*targets, tf, "expected a list of host:port").value();
  for (std::size_t i = 0; i < targets->size(); ++i) {
    const YAML::Node& t = (*targets)[i];
    if (!t.IsScalar()) return r.Fail(t, Index(tf, i), "expected host:port").value();
    Result<std::string> address = NormalizeAddress(t.Scalar());
    if (!address) return r.Fail(t, Index(tf, i), address.error().message()).value();
    g->targets.push_back(std::move(*address));
  }
  if (const YAML::Node* labels = f->Find("labels")) {
    const std::string lf = Child(field, "labels");
    if (labels->IsNull()) return Status::Ok();
    Result<Fields> lfields = Fields::Read(r, *labels, lf, {});
    if (!lfields) return lfields.error();
    for (const Fields::Entry& e : lfields->entries()) {
      if (!model::IsValidLabelName(e.name)) {
        return r.Fail(e.key, Child(lf, e.name), "invalid label name").value();
      }
      if (!e.value.IsScalar() && !e.value.IsNull()) {
        return r.Fail(e.value, Child(lf, e.name), "expected a string value").value();
      }
      g->labels.emplace_back(e.name, e.value.IsNull() ? std::string() : e.value.Scalar());
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<TargetGroup>> ParseTargetFile(std::string_view text,
                                                 const std::string& file_name) {
  if (IsJsonFile(file_name)) {
    std::string syntax = JsonSyntaxError(text, file_name);
    if (!syntax.empty()) return Error(StatusCode::kParseError, std::move(syntax));
  }
  const Reporter r{file_name};
  std::vector<TargetGroup> groups;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (root.IsNull()) return groups;  // an empty YAML file: no targets
    if (!root.IsSequence()) return r.Fail(root, "file", "expected a list of target groups");
    for (std::size_t i = 0; i < root.size(); ++i) {
      TargetGroup g;
      GC_RETURN_IF_ERROR(ParseGroup(r, root[i], Index("", i), &g));
      groups.push_back(std::move(g));
    }
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  return groups;
}

// Patterns may use wildcards in their last element only (the config checks
// it), so one directory listing per pattern, matched with fnmatch(3), does.
std::vector<std::string> ExpandFilePatterns(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    const std::filesystem::path p(pattern);
    const std::string name = p.filename().string();
    if (name.find_first_of("*?[") == std::string::npos) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) out.push_back(pattern);
      continue;
    }
    const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string file = it->path().filename().string();
      std::error_code type_ec;
      if (!file.starts_with(".") && fnmatch(name.c_str(), file.c_str(), FNM_PATHNAME) == 0 &&
          it->is_regular_file(type_ec)) {
        out.push_back((dir / file).string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool FileSd::Refresh(bool force, std::vector<Status>* errors) {
  bool changed = false;
  const std::vector<std::string> now = ExpandFilePatterns(config_.files);
  // Files gone since the last refresh take their groups with them.
  for (auto it = files_.begin(); it != files_.end();) {
    if (std::binary_search(now.begin(), now.end(), it->first)) {
      ++it;
      continue;
    }
    changed = changed || !it->second.groups.empty();
    it = files_.erase(it);
  }
  for (const std::string& path : now) {
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(path, ec);
    const std::int64_t mtime_ns = ec ? -1 : mtime.time_since_epoch().count();
    const auto size = std::filesystem::file_size(path, ec);
    const std::int64_t size_bytes = ec ? -1 : static_cast<std::int64_t>(size);
    FileState& state = files_[path];
    if (!force && state.mtime_ns == mtime_ns && state.size == size_bytes) continue;
    state.mtime_ns = mtime_ns;
    state.size = size_bytes;
    Result<std::vector<TargetGroup>> groups = Result<std::vector<TargetGroup>>();
    Result<std::string> text = config::ReadConfigFile(path);
    if (text) groups = ParseTargetFile(*text, path);
    if (!text || !groups) {
      // The last good groups stay; the same bad file is reported again on a forced refresh.
      state.error = text ? groups.error() : text.error();
      if (errors != nullptr) errors->push_back(state.error);
      continue;
    }
    state.error = Status::Ok();
    if (groups->size() != state.groups.size() ||
        !std::equal(groups->begin(), groups->end(), state.groups.begin(),
                    [](const TargetGroup& a, const TargetGroup& b) {
                      return a.targets == b.targets && a.labels == b.labels;
                    })) {
      changed = true;
    }
    state.groups = std::move(*groups);
  }
  return changed;
}

std::vector<Status> FileSd::CurrentErrors() const {
  std::vector<Status> out;
  for (const auto& [path, state] : files_) {
    if (!state.error.ok()) out.push_back(state.error);
  }
  return out;
}

std::vector<TargetGroup> FileSd::Groups() const {
  std::vector<TargetGroup> out;
  for (const auto& [path, state] : files_) {
    for (TargetGroup g : state.groups) {
      // Prometheus's file SD labels every group with its file (relabeling may read it).
      g.labels.emplace_back("__meta_filepath", path);
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace gpucanary::scrape
