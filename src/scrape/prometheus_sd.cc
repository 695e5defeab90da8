#include "scrape/prometheus_sd.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "net/url.h"

namespace gpucanary::scrape {
namespace {

using Json = nlohmann::json;

Status Bad(const std::string& source, const std::string& why) {
  return Status(StatusCode::kParseError, source + "/api/v1/targets: " + why);
}

// One active target as a group, or why it cannot be scraped.
Result<TargetGroup> GroupOf(const Json& t, const Json& labels, const std::string& source) {
  const auto url_it = t.find("scrapeUrl");
  if (url_it == t.end() || !url_it->is_string()) {
    return Error(Bad(source, "an active target without scrapeUrl"));
  }
  const std::string scrape_url = url_it->get<std::string>();
  Result<net::HttpUrl> url = net::ParseHttpUrl(scrape_url);
  if (!url) {
    return Error(StatusCode::kInvalidArgument,
                 source + ": target " + scrape_url + " skipped: " + url.error().message());
  }
  TargetGroup g;
  g.source = source + " " + scrape_url;
  const bool v6 = url->host.find(':') != std::string::npos;
  g.targets.push_back((v6 ? "[" + url->host + "]" : url->host) + ":" + std::to_string(url->port));
  g.labels.emplace_back("__metrics_path__", url->target);
  if (url->https) g.labels.emplace_back("__scheme__", "https");
  for (const auto& [name, value] : labels.items()) {
    if (name == "job" || !value.is_string()) continue;
    g.labels.emplace_back(name, value.get<std::string>());
  }
  // The other Prometheus's discovery metadata, for our relabel_configs.
  if (const auto d = t.find("discoveredLabels"); d != t.end() && d->is_object()) {
    for (const auto& [name, value] : d->items()) {
      if (name.starts_with("__meta_") && value.is_string()) {
        g.labels.emplace_back(name, value.get<std::string>());
      }
    }
  }
  return g;
}

}  // namespace

Result<std::vector<TargetGroup>> ParsePrometheusTargets(std::string_view json, std::string_view job,
                                                        const std::string& source,
                                                        std::vector<Status>* skipped) {
  const Json doc = Json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded()) return Error(Bad(source, "answer is not JSON"));
  // Json::value throws when the field has another type, so the status is looked up and
  // type-checked by hand: {"status":{}} is a bad answer, not a crash (found by scrape_config_fuzz).
  const bool success = doc.is_object() && doc.contains("status") && doc["status"].is_string() &&
                       doc["status"].get<std::string>() == "success";
  if (!success) {
    return Error(Bad(source, "answer is not a success: " + std::string(json.substr(0, 200))));
  }
  const auto data = doc.find("data");
  if (data == doc.end() || !data->is_object()) return Error(Bad(source, "answer has no data"));
  const auto active = data->find("activeTargets");
  if (active == data->end() || !active->is_array()) {
    return Error(Bad(source, "answer has no activeTargets list"));
  }
  std::vector<TargetGroup> groups;
  for (const Json& t : *active) {
    if (!t.is_object()) return Error(Bad(source, "an active target is not an object"));
    const auto labels = t.find("labels");
    if (labels == t.end() || !labels->is_object()) {
      return Error(Bad(source, "an active target without labels"));
    }
    if (!job.empty()) {
      const auto j = labels->find("job");
      if (j == labels->end() || !j->is_string() || j->get<std::string>() != job) continue;
    }
    Result<TargetGroup> g = GroupOf(t, *labels, source);
    if (!g) {
      if (g.error().code() == StatusCode::kParseError) return Error(g.error());
      if (skipped != nullptr) skipped->push_back(g.error());
      continue;
    }
    groups.push_back(std::move(*g));
  }
  return groups;
}

}  // namespace gpucanary::scrape
