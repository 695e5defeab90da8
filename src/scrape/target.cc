#include "scrape/target.h"

#include <algorithm>
#include <map>
#include <utility>

#include "model/names.h"
#include "net/url.h"

namespace gpucanary::scrape {

std::string Target::Key() const {
  std::string key = job;
  key += '\n';
  key += url;
  for (const model::Label& l : labels) {
    key += '\n';
    key += l.name;
    key += '=';
    key += l.value;
  }
  return key;
}

Result<Target> MakeTarget(const JobConfig& job, std::string_view address,
                          const TargetGroup& group) {
  const auto fail = [&](const std::string& why) {
    return Error(StatusCode::kInvalidArgument,
                 (group.source.empty() ? std::string() : group.source + ": ") + why);
  };
  Result<std::string> normalized = NormalizeAddress(address);
  if (!normalized) return fail(normalized.error().message());
  // Later entries of the group win, as in a Go map read from a file.
  std::map<std::string, std::string, std::less<>> labels;
  for (const auto& [name, value] : group.labels) {
    if (!model::IsValidLabelName(name)) return fail("invalid label name '" + name + "'");
    labels[name] = value;
  }
  // Prometheus fills these only where the discovered labels leave them empty.
  const auto fill = [&](const std::string& name, const std::string& value) {
    auto it = labels.find(name);
    if (it == labels.end() || it->second.empty()) labels[name] = value;
  };
  fill("job", job.job_name);
  fill("instance", *normalized);
  fill("__metrics_path__", job.metrics_path);
  const std::string& path = labels["__metrics_path__"];
  if (path.empty() || path.front() != '/') return fail("bad __metrics_path__ '" + path + "'");

  Target t;
  t.job = job.job_name;
  t.url = "http://" + *normalized + path;
  Result<net::HttpUrl> url = net::ParseHttpUrl(t.url);
  if (!url) return fail(url.error().message());
  t.host = url->host;
  t.port = url->port;
  t.path = url->target;
  for (auto& [name, value] : labels) {  // already sorted by name
    if (name.starts_with("__") || value.empty()) continue;
    t.labels.push_back({name, value});
  }
  return t;
}

std::vector<Target> MakeTargets(const JobConfig& job, const std::vector<TargetGroup>& groups,
                                std::vector<Status>* errors) {
  std::map<std::string, Target> by_key;
  for (const TargetGroup& g : groups) {
    for (const std::string& address : g.targets) {
      Result<Target> t = MakeTarget(job, address, g);
      if (!t) {
        if (errors != nullptr) errors->push_back(t.error());
        continue;
      }
      std::string key = t->Key();
      by_key.emplace(std::move(key), std::move(*t));
    }
  }
  std::vector<Target> out;
  out.reserve(by_key.size());
  for (auto& [key, t] : by_key) out.push_back(std::move(t));
  return out;
}

TargetMatcher MatchHosts(std::vector<std::string> hosts) {
  return [hosts = std::move(hosts)](const Target& t) {
    const std::string_view instance = t.instance();
    std::string_view instance_host = instance.substr(0, instance.rfind(':'));
    if (instance_host.size() >= 2 && instance_host.front() == '[') {
      instance_host = instance_host.substr(1, instance_host.size() - 2);
    }
    for (const std::string& h : hosts) {
      if (h == instance || h == instance_host || h == t.host) return true;
      for (const char* name : {"hostname", "Hostname", "node", "host"}) {
        if (model::LabelValue(t.labels, name) == h) return true;
      }
    }
    return false;
  };
}

std::uint64_t Fnv1a64(std::string_view data) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// Prometheus scrape/target.go: "offset = t.hash() % uint64(interval)", the
// first scrape at the next instant that is offset past a multiple of the
// interval ("Base is pinned to absolute time").
std::int64_t PhaseMs(std::string_view url, std::int64_t interval_ms) {
  return static_cast<std::int64_t>(Fnv1a64(url) % static_cast<std::uint64_t>(interval_ms));
}

std::int64_t SlotAtOrAfter(std::int64_t phase_ms, std::int64_t interval_ms, std::int64_t t_ms) {
  std::int64_t k = (t_ms - phase_ms) / interval_ms;  // truncates toward zero
  std::int64_t slot = phase_ms + k * interval_ms;
  while (slot < t_ms) slot += interval_ms;
  while (slot - interval_ms >= t_ms) slot -= interval_ms;
  return slot;
}

}  // namespace gpucanary::scrape
