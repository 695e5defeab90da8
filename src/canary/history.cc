#include "canary/history.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "model/labels.h"

namespace gpucanary::canary {
namespace {

// floor(ms / 1000) for any sign.
std::int64_t FloorSeconds(std::int64_t ms) {
  return ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// The client's error without its request line ("GET <url with the whole
// query>: "), which would bury the reason in a note: "connect: Connection
// refused", "HTTP 503 timeout: ...".
std::string Reason(const std::string& message) {
  if (!message.starts_with("GET ") && !message.starts_with("POST ")) return message;
  const std::size_t colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

// The hosts (values of `label`) with a sample in the store in [from_ms, to_ms].
std::set<std::string> StoreHosts(const store::Store& store,
                                 const std::vector<model::Matcher>& matchers,
                                 const std::string& label, std::int64_t from_ms,
                                 std::int64_t to_ms) {
  std::set<std::string> hosts;
  const Status read = store.ForEachSeries(matchers, from_ms, to_ms, [&](const model::Labels& l) {
    const std::string_view v = model::LabelValue(l, label);
    if (!v.empty()) hosts.emplace(v);
  });
  if (!read.ok()) hosts.clear();  // unreadable: as if absent, Prometheus is asked
  return hosts;
}

}  // namespace

std::unique_ptr<CanaryHistory> CanaryHistory::Attach(
    const store::Store& store, const HistoryPrometheusOptions& options,
    const analysis::Policy& policy, const std::vector<std::string>& canary_hosts,
    const std::vector<std::string>& baseline_hosts, std::int64_t from_s, std::int64_t until_s,
    std::int64_t now_ms, std::vector<analysis::StoreInput>& inputs,
    std::function<void(std::string_view)> log) {
  if (options.url.empty()) return nullptr;
  // Nothing after now exists yet; the store has what comes later.
  until_s = std::min(until_s, FloorSeconds(now_ms) + 1);
  if (until_s <= from_s) return nullptr;
  const std::vector<std::string> names = analysis::JudgeInputNames(policy);
  std::unique_ptr<CanaryHistory> history(new CanaryHistory());
  // Covered: the store has the host, under either host label, at the start
  // of the window (within a slow scrape interval, at most a tenth of it).
  const std::int64_t slack =
      std::min(kCoveredWithinS, std::max<std::int64_t>(1, (until_s - from_s) / 10));
  std::set<std::string> covered;
  for (const analysis::StoreInput& in : inputs) {
    if (in.matchers.empty()) continue;
    covered.merge(StoreHosts(store, in.matchers, in.matchers.front().name(), from_s * 1000,
                             (from_s + slack) * 1000 - 1));
  }
  std::set<std::string> asked;
  for (analysis::StoreInput& in : inputs) {
    if (in.matchers.empty()) continue;
    const std::string& label = in.matchers.front().name();
    const std::vector<std::string>& hosts =
        in.role == analysis::Role::kCanary ? canary_hosts : baseline_hosts;
    std::vector<std::string> missing;
    for (const std::string& h : hosts) {
      if (!covered.contains(h)) missing.push_back(h);
    }
    if (missing.empty()) continue;
    asked.insert(missing.begin(), missing.end());
    in.history = analysis::PrometheusHistory::Start({options.url, options.client}, label, missing,
                                                    names, from_s, until_s);
    history->fetches_.push_back(in.history);
  }
  if (history->fetches_.empty()) return nullptr;
  history->url_ = options.url;
  history->from_s_ = from_s;
  history->until_s_ = until_s;
  history->log_ = std::move(log);
  if (history->log_) {
    history->log_("history [" + std::to_string(from_s) + ", " + std::to_string(until_s) + ") of " +
                  Join({asked.begin(), asked.end()}) +
                  " is not in the store: reading it from Prometheus " + options.url);
  }
  return history;
}

std::string CanaryHistory::Note() const {
  const std::string window = "[" + std::to_string(from_s_) + ", " + std::to_string(until_s_) + ")";
  std::vector<std::string> errors;
  std::map<std::string, std::uint64_t> used;  // host -> samples filed
  std::set<std::string> asked;
  std::set<std::string> answered;  // hosts with samples, filed or shadowed by the store
  for (const auto& f : fetches_) {
    if (!f->Done()) {
      return "history " + window + ": still reading it from Prometheus " + url_;
    }
    if (!f->status().ok()) {
      const std::string reason = Reason(f->status().message());
      if (std::find(errors.begin(), errors.end(), reason) == errors.end()) {
        errors.push_back(reason);
      }
      continue;
    }
    asked.insert(f->hosts().begin(), f->hosts().end());
    for (const auto& [host, counts] : f->host_counts()) {
      if (counts.used > 0) used[host] += counts.used;
      if (counts.used + counts.shadowed > 0) answered.insert(host);
    }
  }
  std::string note;
  if (!errors.empty()) {
    note = "history " + window + ": Prometheus " + url_ + " unavailable (" + Join(errors) +
           "): judged on the store's own history only";
  }
  if (!asked.empty()) {
    if (!note.empty()) note += "; ";
    std::vector<std::string> parts;
    parts.reserve(used.size());
    for (const auto& [host, n] : used) parts.push_back(host + " (" + std::to_string(n) + ")");
    note += "history " + window + " from Prometheus " + url_ +
            " before each host's first second in the store: " +
            (parts.empty() ? "no samples" : Join(parts) + " samples");
    std::vector<std::string> silent;
    for (const std::string& h : asked) {
      if (!answered.contains(h)) silent.push_back(h);
    }
    if (!silent.empty()) note += "; Prometheus has none of " + Join(silent);
  }
  return note;
}

void CanaryHistory::Annotate(analysis::Report& report) {
  const std::string note = Note();
  if (!note.empty()) report.notes.push_back(note);
  // Logged once the counts are final: every fetch failed or was read through.
  const bool done = std::all_of(fetches_.begin(), fetches_.end(), [](const auto& f) {
    return f->Done() && (!f->status().ok() || f->released());
  });
  if (done && !logged_ && log_) {
    logged_ = true;
    log_(note);
  }
}

}  // namespace gpucanary::canary
