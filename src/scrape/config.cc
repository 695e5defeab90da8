#include "scrape/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "config/tls_config.h"
#include "config/yaml_fields.h"
#include "model/names.h"
#include "net/url.h"
#include "scrape/kubernetes_sd_config.h"
#include "scrape/relabel_config.h"

namespace gpucanary::scrape {
namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::ReadBool;
using config::ReadString;
using config::Reporter;

constexpr std::string_view kTopKeys[] = {"global", "scrape_configs"};
constexpr std::string_view kGlobalKeys[] = {"scrape_interval",
                                            "scrape_timeout",
                                            "fast_interval",
                                            "sample_limit",
                                            "label_limit",
                                            "label_name_length_limit",
                                            "label_value_length_limit",
                                            "body_size_limit"};
constexpr std::string_view kJobKeys[] = {"job_name",
                                         "scrape_interval",
                                         "scrape_timeout",
                                         "metrics_path",
                                         "honor_labels",
                                         "honor_timestamps",
                                         "scheme",
                                         "tls_config",
                                         "static_configs",
                                         "file_sd_configs",
                                         "prometheus_sd_configs",
                                         "kubernetes_sd_configs",
                                         "params",
                                         "relabel_configs",
                                         "metric_relabel_configs",
                                         "sample_limit",
                                         "label_limit",
                                         "label_name_length_limit",
                                         "label_value_length_limit",
                                         "body_size_limit"};
constexpr std::string_view kStaticKeys[] = {"targets", "labels"};
constexpr std::string_view kFileSdKeys[] = {"files", "refresh_interval"};
constexpr std::string_view kPrometheusSdKeys[] = {"url", "job", "refresh_interval", "tls_config"};

std::string FormatMs(std::int64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// Prometheus file_sd accepts "^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$"
// (discovery/file/file.go patFileSDName): at most one '*', only in the last
// path element, and one of the three extensions.
bool IsValidFileSdPattern(std::string_view path) {
  const std::size_t star = path.find('*');
  if (star != std::string_view::npos) {
    const std::string_view rest = path.substr(star + 1);
    if (rest.find('*') != std::string_view::npos || rest.find('/') != std::string_view::npos) {
      return false;
    }
  }
  constexpr std::string_view kExtensions[] = {".json", ".yml", ".yaml", ".JSON", ".YML", ".YAML"};
  return std::any_of(std::begin(kExtensions), std::end(kExtensions),
                     [&](std::string_view ext) { return path.ends_with(ext); });
}

class Parser {
 public:
  Parser(const Reporter& r, std::string base_dir) : r_(r), base_dir_(std::move(base_dir)) {}

  Status ParseGlobal(const YAML::Node& node, GlobalConfig* g) {
    Result<Fields> f = Fields::Read(r_, node, "global", kGlobalKeys);
    if (!f) return f.error();
    GC_RETURN_IF_ERROR(ReadPositive(*f, "scrape_interval", "global", &g->scrape_interval_ms));
    GC_RETURN_IF_ERROR(ReadPositive(*f, "scrape_timeout", "global", &g->scrape_timeout_ms));
    GC_RETURN_IF_ERROR(ReadPositive(*f, "fast_interval", "global", &g->fast_interval_ms));
    GC_RETURN_IF_ERROR(ReadLimits(*f, "global", &g->limits));
    if (g->scrape_timeout_ms > g->scrape_interval_ms) {
      const YAML::Node* at = f->Find("scrape_timeout");
      return r_
          .Fail(at != nullptr ? at->Mark() : f->mark(), "global.scrape_timeout",
                "greater than scrape_interval (" + FormatMs(g->scrape_interval_ms) + ")")
          .value();
    }
    return Status::Ok();
  }

  Status ParseJobs(const YAML::Node& node, const GlobalConfig& g, std::vector<JobConfig>* jobs) {
    if (node.IsNull()) return Status::Ok();
    if (!node.IsSequence()) return r_.Fail(node, "scrape_configs", "expected a list").value();
    for (std::size_t i = 0; i < node.size(); ++i) {
      JobConfig job;
      GC_RETURN_IF_ERROR(ParseJob(node[i], Index("scrape_configs", i), g, &job));
      for (const JobConfig& other : *jobs) {
        if (other.job_name == job.job_name) {
          return r_
              .Fail(node[i]["job_name"], Child(Index("scrape_configs", i), "job_name"),
                    "duplicate job name '" + job.job_name + "'")
              .value();
        }
      }
      jobs->push_back(std::move(job));
    }
    return Status::Ok();
  }

 private:
  Result<std::int64_t> ReadDurationMs(const YAML::Node& node, const std::string& field) {
    std::int64_t ms = 0;
    if (!node.IsScalar() || !ParsePrometheusDuration(node.Scalar(), &ms)) {
      return r_.Fail(node, field,
                     "bad duration '" + (node.IsScalar() ? node.Scalar() : std::string()) +
                         "' (expected e.g. 15s, 1m30s, 500ms)");
    }
    return ms;
  }

  // Reads an optional positive duration `key` of `f` into *out (unchanged when absent).
  Status ReadPositive(const Fields& f, std::string_view key, std::string_view parent,
                      std::int64_t* out) {
    const YAML::Node* n = f.Find(key);
    if (n == nullptr) return Status::Ok();
    const std::string field = Child(parent, key);
    Result<std::int64_t> ms = ReadDurationMs(*n, field);
    if (!ms) return ms.error();
    if (*ms <= 0) return r_.Fail(*n, field, "must be greater than 0").value();
    *out = *ms;
    return Status::Ok();
  }

  // Reads the limits `f` sets into *out (the others stay as they are).
  Status ReadLimits(const Fields& f, std::string_view parent, ScrapeLimits* out) {
    for (const auto& [key, count] :
         {std::pair{"sample_limit", &out->sample_limit},
          std::pair{"label_limit", &out->label_limit},
          std::pair{"label_name_length_limit", &out->label_name_length_limit},
          std::pair{"label_value_length_limit", &out->label_value_length_limit}}) {
      const YAML::Node* n = f.Find(key);
      if (n == nullptr) continue;
      Result<std::int64_t> v = config::ReadInt(r_, *n, Child(parent, key), 0, INT32_MAX);
      if (!v) return v.error();
      *count = static_cast<std::size_t>(*v);
    }
    if (const YAML::Node* n = f.Find("body_size_limit")) {
      const std::string field = Child(parent, "body_size_limit");
      if (!n->IsScalar() || !ParsePrometheusSize(n->Scalar(), &out->body_size_limit)) {
        return r_
            .Fail(*n, field,
                  "bad size '" + (n->IsScalar() ? n->Scalar() : std::string()) +
                      "' (a number and a unit, e.g. 10MB or 512KiB; B KB MB GB TB, powers of "
                      "1024 as in Prometheus)")
            .value();
      }
    }
    return Status::Ok();
  }

  Status ParseJob(const YAML::Node& node, const std::string& field, const GlobalConfig& g,
                  JobConfig* job) {
    Result<Fields> f = Fields::Read(r_, node, field, kJobKeys);
    if (!f) return f.error();
    const YAML::Node* name = f->Find("job_name");
    if (name == nullptr) return r_.Fail(node, Child(field, "job_name"), "missing").value();
    Result<std::string> n = ReadString(r_, *name, Child(field, "job_name"));
    if (!n) return n.error();
    job->job_name = *n;
    job->scrape_interval_ms = g.scrape_interval_ms;
    GC_RETURN_IF_ERROR(ReadPositive(*f, "scrape_interval", field, &job->scrape_interval_ms));
    // Prometheus: an unset timeout is the global one, capped at the interval.
    job->scrape_timeout_ms = std::min(g.scrape_timeout_ms, job->scrape_interval_ms);
    GC_RETURN_IF_ERROR(ReadPositive(*f, "scrape_timeout", field, &job->scrape_timeout_ms));
    if (job->scrape_timeout_ms > job->scrape_interval_ms) {
      return r_
          .Fail(*f->Find("scrape_timeout"), Child(field, "scrape_timeout"),
                "greater than scrape_interval (" + FormatMs(job->scrape_interval_ms) + ")")
          .value();
    }
    job->limits = g.limits;
    GC_RETURN_IF_ERROR(ReadLimits(*f, field, &job->limits));
    if (const YAML::Node* p = f->Find("metrics_path")) {
      Result<std::string> path = ReadString(r_, *p, Child(field, "metrics_path"));
      if (!path) return path.error();
      if (path->front() != '/' || path->find_first_of(" \t\r\n#") != std::string::npos) {
        return r_.Fail(*p, Child(field, "metrics_path"), "must be a path starting with '/'")
            .value();
      }
      job->metrics_path = *path;
    }
    if (const YAML::Node* s = f->Find("scheme")) {
      Result<std::string> scheme = ReadString(r_, *s, Child(field, "scheme"));
      if (!scheme) return scheme.error();
      if (*scheme != "http" && *scheme != "https") {
        return r_.Fail(*s, Child(field, "scheme"), "must be http or https").value();
      }
      job->scheme = *scheme;
    }
    if (const YAML::Node* t = f->Find("tls_config")) {
      auto tls = config::ReadTlsClientConfig(r_, *t, Child(field, "tls_config"), base_dir_);
      if (!tls) return tls.error();
      job->tls_config = std::move(*tls);
    }
    if (const YAML::Node* b = f->Find("honor_labels")) {
      Result<bool> v = ReadBool(r_, *b, Child(field, "honor_labels"));
      if (!v) return v.error();
      job->honor_labels = *v;
    }
    if (const YAML::Node* b = f->Find("honor_timestamps")) {
      Result<bool> v = ReadBool(r_, *b, Child(field, "honor_timestamps"));
      if (!v) return v.error();
      job->honor_timestamps = *v;
    }
    if (const YAML::Node* p = f->Find("params")) {
      GC_RETURN_IF_ERROR(ParseParams(*p, Child(field, "params"), &job->params));
    }
    for (const auto& [key, rules] :
         {std::pair{"relabel_configs", &job->relabel_configs},
          std::pair{"metric_relabel_configs", &job->metric_relabel_configs}}) {
      if (const YAML::Node* l = f->Find(key)) {
        Result<std::vector<model::RelabelRule>> read =
            ReadRelabelConfigs(r_, *l, Child(field, key));
        if (!read) return read.error();
        *rules = std::move(*read);
      }
    }
    if (const YAML::Node* s = f->Find("static_configs")) {
      GC_RETURN_IF_ERROR(
          ParseList(*s, Child(field, "static_configs"),
                    [&](const auto& item, const auto& at) { return ParseStatic(item, at, job); }));
    }
    if (const YAML::Node* s = f->Find("file_sd_configs")) {
      GC_RETURN_IF_ERROR(
          ParseList(*s, Child(field, "file_sd_configs"),
                    [&](const auto& item, const auto& at) { return ParseFileSd(item, at, job); }));
    }
    if (const YAML::Node* s = f->Find("prometheus_sd_configs")) {
      GC_RETURN_IF_ERROR(ParseList(
          *s, Child(field, "prometheus_sd_configs"),
          [&](const auto& item, const auto& at) { return ParsePrometheusSd(item, at, job); }));
    }
    if (const YAML::Node* s = f->Find("kubernetes_sd_configs")) {
      GC_RETURN_IF_ERROR(ParseList(
          *s, Child(field, "kubernetes_sd_configs"), [&](const auto& item, const auto& at) {
            Result<KubernetesSdConfig> k = ReadKubernetesSdConfig(r_, item, at, base_dir_);
            if (!k) return k.error();
            job->kubernetes_sd_configs.push_back(std::move(*k));
            return Status::Ok();
          }));
    }
    return Status::Ok();
  }

  template <typename Fn>
  Status ParseList(const YAML::Node& node, const std::string& field, Fn&& parse_one) {
    if (!node.IsSequence()) return r_.Fail(node, field, "expected a list").value();
    for (std::size_t i = 0; i < node.size(); ++i) {
      GC_RETURN_IF_ERROR(parse_one(node[i], Index(field, i)));
    }
    return Status::Ok();
  }

  Status ParseStatic(const YAML::Node& node, const std::string& field, JobConfig* job) {
    Result<Fields> f = Fields::Read(r_, node, field, kStaticKeys);
    if (!f) return f.error();
    StaticConfig sc;
    if (const YAML::Node* t = f->Find("targets")) {
      const std::string tf = Child(field, "targets");
      if (!t->IsSequence()) return r_.Fail(*t, tf, "expected a list of host:port").value();
      for (std::size_t i = 0; i < t->size(); ++i) {
        const YAML::Node& item = (*t)[i];
        if (!item.IsScalar()) return r_.Fail(item, Index(tf, i), "expected host:port").value();
        // Prometheus's addPort: 443 for https.
        Result<std::string> address =
            NormalizeAddress(item.Scalar(), job->scheme == "https" ? 443 : 80);
        if (!address) return r_.Fail(item, Index(tf, i), address.error().message()).value();
        sc.targets.push_back(std::move(*address));
      }
    }
    if (const YAML::Node* l = f->Find("labels")) {
      GC_RETURN_IF_ERROR(ParseLabels(*l, Child(field, "labels"), &sc.labels));
    }
    job->static_configs.push_back(std::move(sc));
    return Status::Ok();
  }

  // Prometheus's params: a map of names to lists of values ({module: [if_mib]}).
  Status ParseParams(const YAML::Node& node, const std::string& field,
                     std::map<std::string, std::vector<std::string>>* out) {
    Result<Fields> f = Fields::Read(r_, node, field, {});
    if (!f) return f.error();
    for (const Fields::Entry& e : f->entries()) {
      Result<std::vector<std::string>> values =
          config::ReadStrings(r_, e.value, Child(field, e.name), "expected a list of values");
      if (!values) return values.error();
      (*out)[e.name] = std::move(*values);
    }
    return Status::Ok();
  }

  Status ParseLabels(const YAML::Node& node, const std::string& field, LabelPairs* out) {
    Result<Fields> f = Fields::Read(r_, node, field, {});
    if (!f) return f.error();
    for (const Fields::Entry& e : f->entries()) {
      if (!model::IsValidLabelName(e.name)) {
        return r_.Fail(e.key, Child(field, e.name), "invalid label name").value();
      }
      if (!e.value.IsNull() && !e.value.IsScalar()) {
        return r_.Fail(e.value, Child(field, e.name), "expected a string value").value();
      }
      out->emplace_back(e.name, e.value.IsNull() ? std::string() : e.value.Scalar());
    }
    return Status::Ok();
  }

  Status ParseFileSd(const YAML::Node& node, const std::string& field, JobConfig* job) {
    Result<Fields> f = Fields::Read(r_, node, field, kFileSdKeys);
    if (!f) return f.error();
    FileSdConfig fc;
    fc.where = r_.Where(node.Mark());
    const YAML::Node* files = f->Find("files");
    const std::string ff = Child(field, "files");
    if (files == nullptr) return r_.Fail(node, ff, "missing").value();
    if (!files->IsSequence() || files->size() == 0) {
      return r_.Fail(*files, ff, "expected a list of files or globs").value();
    }
    for (std::size_t i = 0; i < files->size(); ++i) {
      Result<std::string> pattern = ReadString(r_, (*files)[i], Index(ff, i));
      if (!pattern) return pattern.error();
      if (!IsValidFileSdPattern(*pattern)) {
        return r_
            .Fail((*files)[i], Index(ff, i),
                  "not a valid file_sd path: one '*' at most, in the file name only, and a "
                  ".json, .yml or .yaml extension")
            .value();
      }
      std::filesystem::path p(*pattern);
      if (p.is_relative()) p = std::filesystem::path(base_dir_) / p;
      fc.files.push_back(p.lexically_normal().string());
    }
    GC_RETURN_IF_ERROR(ReadPositive(*f, "refresh_interval", field, &fc.refresh_interval_ms));
    job->file_sd_configs.push_back(std::move(fc));
    return Status::Ok();
  }

  Status ParsePrometheusSd(const YAML::Node& node, const std::string& field, JobConfig* job) {
    Result<Fields> f = Fields::Read(r_, node, field, kPrometheusSdKeys);
    if (!f) return f.error();
    PrometheusSdConfig pc;
    pc.where = r_.Where(node.Mark());
    const YAML::Node* url = f->Find("url");
    if (url == nullptr) return r_.Fail(node, Child(field, "url"), "missing").value();
    Result<std::string> u = ReadString(r_, *url, Child(field, "url"));
    if (!u) return u.error();
    Result<net::HttpUrl> parsed = net::ParseHttpUrl(*u);
    if (!parsed) return r_.Fail(*url, Child(field, "url"), parsed.error().message()).value();
    while (u->ends_with("/")) u->pop_back();
    pc.url = *u;
    if (const YAML::Node* j = f->Find("job")) {
      Result<std::string> v = ReadString(r_, *j, Child(field, "job"));
      if (!v) return v.error();
      pc.job = *v;
    }
    GC_RETURN_IF_ERROR(ReadPositive(*f, "refresh_interval", field, &pc.refresh_interval_ms));
    if (const YAML::Node* t = f->Find("tls_config")) {
      auto tls = config::ReadTlsClientConfig(r_, *t, Child(field, "tls_config"), base_dir_);
      if (!tls) return tls.error();
      pc.tls = std::move(*tls);
    }
    job->prometheus_sd_configs.push_back(std::move(pc));
    return Status::Ok();
  }

  const Reporter& r_;
  std::string base_dir_;
};

std::string BaseDir(std::string_view file_name) {
  const std::filesystem::path dir = std::filesystem::path(file_name).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

}  // namespace

bool ParsePrometheusDuration(std::string_view text, std::int64_t* ms) {
  // Units in the only order Prometheus accepts, with their length in ms.
  struct Unit {
    std::string_view name;
    std::int64_t ms;
  };
  static constexpr Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000},
                                    {"w", 7LL * 24 * 3600 * 1000},
                                    {"d", 24LL * 3600 * 1000},
                                    {"h", 3600LL * 1000},
                                    {"m", 60LL * 1000},
                                    {"s", 1000},
                                    {"ms", 1}};
  if (text == "0") {
    *ms = 0;
    return true;
  }
  if (text.empty()) return false;
  std::int64_t total = 0;
  std::size_t next_unit = 0;  // units must come in kUnits order, each once
  while (!text.empty()) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 12) return false;
    std::int64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) value = value * 10 + (text[i] - '0');
    text.remove_prefix(digits);
    std::size_t len = 0;
    while (len < text.size() && text[len] >= 'a' && text[len] <= 'z') ++len;
    const std::string_view unit = text.substr(0, len);
    text.remove_prefix(len);
    std::size_t u = next_unit;
    while (u < std::size(kUnits) && kUnits[u].name != unit) ++u;
    if (u == std::size(kUnits)) return false;
    next_unit = u + 1;
    if (value > (INT64_MAX - total) / kUnits[u].ms) return false;
    total += value * kUnits[u].ms;
  }
  *ms = total;
  return true;
}

std::string FormatPrometheusDuration(std::int64_t ms) {
  if (ms == 0) return "0s";
  struct Unit {
    const char* name;
    std::int64_t ms;
    bool exact;
  };
  static constexpr Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000, true},
                                    {"w", 7LL * 24 * 3600 * 1000, true},
                                    {"d", 24LL * 3600 * 1000, false},
                                    {"h", 3600LL * 1000, false},
                                    {"m", 60LL * 1000, false},
                                    {"s", 1000, false},
                                    {"ms", 1, false}};
  std::string out;
  for (const Unit& u : kUnits) {
    if (u.exact && ms % u.ms != 0) continue;
    if (const std::int64_t v = ms / u.ms; v > 0) {
      out += std::to_string(v) + u.name;
      ms -= v * u.ms;
    }
  }
  return out;
}

bool ParsePrometheusSize(std::string_view text, std::uint64_t* bytes) {
  if (text == "0") {
    *bytes = 0;
    return true;
  }
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return false;
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < digits; ++i) n = n * 10 + static_cast<std::uint64_t>(text[i] - '0');
  // Prometheus parses sizes with units.ParseBase2Bytes: "MB" and "MiB" alike
  // are 1024 * 1024 bytes.
  struct Unit {
    std::string_view name;
    int shift;
  };
  static constexpr Unit kUnits[] = {{"B", 0},    {"KB", 10},  {"MB", 20},  {"GB", 30}, {"TB", 40},
                                    {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  const std::string_view unit = text.substr(digits);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    if (n > (UINT64_MAX >> u.shift)) return false;
    *bytes = n << u.shift;
    return true;
  }
  return false;
}

Result<std::string> NormalizeAddress(std::string_view address, std::uint16_t default_port) {
  const auto bad = [&](std::string_view why) {
    return Error(StatusCode::kInvalidArgument,
                 "bad target address '" + std::string(address) + "': " + std::string(why));
  };
  if (address.empty()) return bad("empty");
  if (address.find("://") != std::string_view::npos) return bad("no scheme allowed (host:port)");
  if (address.find_first_of("/?#@ \t\r\n") != std::string_view::npos) {
    return bad("expected host:port, without a path");
  }
  if (address.front() != '[' && std::count(address.begin(), address.end(), ':') > 1) {
    return bad("an IPv6 address needs brackets: [::1]:9400");
  }
  // Parse it as the authority of a URL: one grammar for ports and brackets.
  Result<net::HttpUrl> url = net::ParseHttpUrl("http://" + std::string(address));
  if (!url) return bad("expected host:port");
  const std::size_t bracket = address.rfind(']');
  const std::size_t host_end = bracket == std::string_view::npos ? 0 : bracket + 1;
  const bool has_port = address.find(':', host_end) != std::string_view::npos;
  return has_port ? std::string(address)
                  : std::string(address) + ":" + std::to_string(default_port);
}

Result<ScrapeConfig> ReadScrapeSections(const Reporter& r, const YAML::Node* global,
                                        const YAML::Node* scrape_configs,
                                        const std::string& base_dir) {
  ScrapeConfig out;
  Parser parser(r, base_dir);
  try {
    if (global != nullptr && !global->IsNull()) {
      GC_RETURN_IF_ERROR(parser.ParseGlobal(*global, &out.global));
    }
    if (scrape_configs != nullptr) {
      GC_RETURN_IF_ERROR(parser.ParseJobs(*scrape_configs, out.global, &out.jobs));
    }
  } catch (const YAML::Exception& e) {  // yaml-cpp may throw on odd nodes
    return r.Fail(e.mark, "scrape_configs", e.msg);
  }
  return out;
}

Result<ScrapeConfig> ParseScrapeConfig(std::string_view yaml_text, std::string_view file_name) {
  const Reporter r{std::string(file_name)};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
  if (root.IsNull()) return ScrapeConfig{};
  Result<Fields> top;
  try {
    top = Fields::Read(r, root, "config", kTopKeys);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "config", e.msg);
  }
  if (!top) return Error(top.error());
  return ReadScrapeSections(r, top->Find("global"), top->Find("scrape_configs"),
                            BaseDir(file_name));
}

Result<ScrapeConfig> LoadScrapeConfig(const std::string& path) {
  auto text = config::ReadConfigFile(path);
  if (!text) return Error(text.error());
  return ParseScrapeConfig(*text, path);
}

}  // namespace gpucanary::scrape
