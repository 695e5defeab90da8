#include "scrape/target.h"

#include <algorithm>
#include <map>
#include <utility>

#include "model/names.h"
#include "model/relabel.h"
#include "model/utf8.h"
#include "net/url.h"

namespace gpucanary::scrape {

namespace {

constexpr std::string_view kParamPrefix = "__param_";

// Go's url.QueryEscape: unreserved bytes kept, ' ' as '+', the rest %XX.
std::string QueryEscape(std::string_view in) {
  std::string out;
  for (const char c : in) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' ||
        b == '_' || b == '.' || b == '~') {
      out += c;
    } else if (b == ' ') {
      out += '+';
    } else {
      out += '%';
      out += "0123456789ABCDEF"[b >> 4];
      out += "0123456789ABCDEF"[b & 15];
    }
  }
  return out;
}

// Sets `name` only where it is absent (model::Labels hold no empty values).
void SetIfUnset(model::Labels& labels, std::string_view name, std::string_view value) {
  if (model::LabelValue(labels, name).empty()) model::SetLabel(labels, name, value);
}

}  // namespace

std::string Target::Key() const {
  std::string key = job;
  key += '\n';
  key += url;
  key += '\n';
  key += std::to_string(interval_ms) + "/" + std::to_string(timeout_ms);
  for (const model::Label& l : labels) {
    key += '\n';
    key += l.name;
    key += '=';
    key += l.value;
  }
  return key;
}

model::Labels DiscoveredLabels(const JobConfig& job, std::string_view address,
                               const TargetGroup& group) {
  model::Labels labels;
  model::SetLabel(labels, "__address__", address);
  // Later entries of the group win, as in a Go map read from a file; the
  // target's own __address__ wins over the group's.
  for (const auto& [name, value] : group.labels) {
    if (name != "__address__") model::SetLabel(labels, name, value);
  }
  SetIfUnset(labels, "job", job.job_name);
  SetIfUnset(labels, "__scrape_interval__", FormatPrometheusDuration(job.scrape_interval_ms));
  SetIfUnset(labels, "__scrape_timeout__", FormatPrometheusDuration(job.scrape_timeout_ms));
  SetIfUnset(labels, "__metrics_path__", job.metrics_path);
  SetIfUnset(labels, "__scheme__", job.scheme);
  for (const auto& [name, values] : job.params) {
    if (!values.empty()) SetIfUnset(labels, std::string(kParamPrefix) + name, values.front());
  }
  return labels;
}

Result<std::optional<Target>> MakeTarget(const JobConfig& job, std::string_view address,
                                         const TargetGroup& group) {
  const auto fail = [&](const std::string& why) {
    return Error(StatusCode::kInvalidArgument,
                 (group.source.empty() ? std::string() : group.source + ": ") + why);
  };
  for (const auto& [name, value] : group.labels) {
    if (!model::IsValidLabelName(name)) return fail("invalid label name '" + name + "'");
  }
  model::Labels labels = DiscoveredLabels(job, address, group);
  if (!model::Relabel(job.relabel_configs, labels)) return std::optional<Target>();

  const std::string_view raw_address = model::LabelValue(labels, "__address__");
  if (raw_address.empty()) return fail("no address");
  Result<std::string> normalized = NormalizeAddress(raw_address);
  if (!normalized) return fail(normalized.error().message());
  const std::string scheme(model::LabelValue(labels, "__scheme__"));
  if (scheme != "http" && scheme != "https") {
    return fail("scheme '" + scheme + "' not supported (http or https)");
  }
  Target t;
  const auto duration = [&](std::string_view name, std::int64_t* ms) -> Status {
    const std::string_view text = model::LabelValue(labels, name);
    if (!ParsePrometheusDuration(text, ms)) {
      return Status(StatusCode::kInvalidArgument,
                    "bad " + std::string(name) + " '" + std::string(text) + "'");
    }
    if (*ms == 0) return Status(StatusCode::kInvalidArgument, std::string(name) + " is 0");
    return Status::Ok();
  };
  for (const auto& [name, ms] :
       {std::pair{"__scrape_interval__", &t.interval_ms}, {"__scrape_timeout__", &t.timeout_ms}}) {
    if (Status st = duration(name, ms); !st.ok()) return fail(st.message());
  }
  if (t.timeout_ms > t.interval_ms) {
    return fail("scrape timeout cannot be greater than scrape interval (\"" +
                std::string(model::LabelValue(labels, "__scrape_timeout__")) + "\" > \"" +
                std::string(model::LabelValue(labels, "__scrape_interval__")) + "\")");
  }
  std::string path(model::LabelValue(labels, "__metrics_path__"));
  if (path.empty() || path.front() != '/') return fail("bad __metrics_path__ '" + path + "'");
  // Prometheus's Target.URL: the job's params, the first value of each
  // replaced by its __param_ label, which may add names; sorted by name (Go's
  // url.Values.Encode). Our extension: a path that has a query keeps it.
  std::map<std::string, std::vector<std::string>> params = job.params;
  for (const model::Label& l : labels) {
    if (!l.name.starts_with(kParamPrefix)) continue;
    std::vector<std::string>& values = params[l.name.substr(kParamPrefix.size())];
    if (values.empty()) {
      values.push_back(l.value);
    } else {
      values.front() = l.value;
    }
  }
  char joiner = path.find('?') == std::string::npos ? '?' : '&';
  for (const auto& [name, values] : params) {
    for (const std::string& value : values) {
      path += joiner;
      joiner = '&';
      path += QueryEscape(name);
      path += '=';
      path += QueryEscape(value);
    }
  }
  std::erase_if(labels, [](const model::Label& l) { return l.name.starts_with("__meta_"); });
  SetIfUnset(labels, "instance", *normalized);

  t.job = job.job_name;
  t.url = scheme + "://" + *normalized + path;
  Result<net::HttpUrl> url = net::ParseHttpUrl(t.url);
  if (!url) return fail(url.error().message());
  t.host = url->host;
  t.port = url->port;
  t.path = url->target;
  t.https = url->https;
  for (model::Label& l : labels) {
    if (l.name.starts_with("__")) continue;
    if (!model::IsValidLabelName(l.name)) return fail("invalid label name '" + l.name + "'");
    if (!model::IsValidUtf8(l.value)) return fail("invalid label value for '" + l.name + "'");
    t.labels.push_back(std::move(l));
  }
  return std::optional<Target>(std::move(t));
}

std::vector<Target> MakeTargets(const JobConfig& job, const std::vector<TargetGroup>& groups,
                                std::vector<Status>* errors) {
  std::map<std::string, Target> by_key;
  for (const TargetGroup& g : groups) {
    for (const std::string& address : g.targets) {
      Result<std::optional<Target>> t = MakeTarget(job, address, g);
      if (!t) {
        if (errors != nullptr) errors->push_back(t.error());
        continue;
      }
      if (!t->has_value()) continue;  // dropped by relabeling
      std::string key = (*t)->Key();
      by_key.emplace(std::move(key), std::move(**t));
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
