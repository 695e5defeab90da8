#include "analysis/live/prometheus_arms.h"

#include <map>
#include <string_view>
#include <utility>

#include "analysis/live/series_source.h"
#include "model/labels.h"
#include "model/matcher.h"
#include "promql/client.h"

namespace gpucanary::analysis {
namespace {

constexpr std::string_view kHostLabels[] = {"Hostname", "hostname"};

// The selectors one arm is read with: its hosts under each host label (with
// the judge's names), then its own selectors as given.
std::vector<std::string> ArmSelectors(const PrometheusArm& arm,
                                      const std::vector<std::string>& names) {
  std::vector<std::string> out;
  if (!arm.hosts.empty()) {
    for (std::string_view label : kHostLabels) {
      out.push_back(HistorySelector(std::string(label), arm.hosts, names));
    }
    // Series without a host label (vLLM's) by their scrape's instance.
    out.push_back(HistorySelector(std::string(kInstanceLabel), arm.hosts, names));
  }
  out.insert(out.end(), arm.selectors.begin(), arm.selectors.end());
  return out;
}

// One arm's series, each once (a series may match a host and a selector).
Result<std::map<model::Labels, promql::Series>> FetchArm(const PrometheusHistory::Server& server,
                                                         const PrometheusArm& arm,
                                                         const std::vector<std::string>& names,
                                                         std::int64_t from_s, std::int64_t to_s) {
  std::map<model::Labels, promql::Series> series;
  for (const std::string& selector : ArmSelectors(arm, names)) {
    // Both bounds of QueryRaw are inclusive.
    Result<promql::QueryResult> r =
        promql::QueryRaw(server.url, selector, from_s * 1000, to_s * 1000 - 1, server.client);
    if (!r) {
      return Error(r.error().code(), std::string(RoleName(arm.role)) + " arm, " + selector +
                                         " from " + server.url + ": " + r.error().message());
    }
    for (promql::Series& s : r->series) {
      if (model::LabelValue(s.labels, "__name__").empty()) continue;  // not a raw series
      model::Labels key = s.labels;
      series.try_emplace(std::move(key), std::move(s));
    }
  }
  return series;
}

}  // namespace

Result<std::unique_ptr<Replay>> FetchPrometheusArms(const PrometheusHistory::Server& server,
                                                    const std::vector<PrometheusArm>& arms,
                                                    const std::vector<std::string>& names,
                                                    std::int64_t from_s, std::int64_t to_s,
                                                    const ReplayOptions& options) {
  if (to_s <= from_s || to_s - from_s > kMaxPrometheusRangeS) {
    return Error(StatusCode::kInvalidArgument,
                 "a Prometheus range is 1 s to 24 h; got " + std::to_string(to_s - from_s) + " s");
  }
  std::vector<std::vector<promql::Series>> fetched;
  std::map<model::Labels, Role> owner;
  std::vector<ReplayInput> inputs;
  for (const PrometheusArm& arm : arms) {
    GC_CHECK(!arm.hosts.empty() || !arm.selectors.empty(), "an arm selects something");
    auto series = FetchArm(server, arm, names, from_s, to_s);
    if (!series) return Error(series.error());
    std::vector<promql::Series>& list = fetched.emplace_back();
    for (auto& [labels, s] : *series) {
      if (auto [it, inserted] = owner.try_emplace(labels, arm.role);
          !inserted && it->second != arm.role) {
        return Error(StatusCode::kInvalidArgument,
                     "the series " + model::LabelsToString(labels) +
                         " is selected by both the canary and the baseline arm");
      }
      list.push_back(std::move(s));
    }
    std::string name = server.url + " (" + std::string(RoleName(arm.role));
    for (std::size_t i = 0; i < arm.hosts.size(); ++i) name += (i ? "," : " ") + arm.hosts[i];
    for (const std::string& s : arm.selectors) name += " " + s;
    inputs.push_back({name + ")", arm.role, std::nullopt});
  }
  auto make = [&](const ReplayInput& input, int index,
                  SeriesSink& sink) -> Result<std::unique_ptr<TickSource>> {
    return std::unique_ptr<TickSource>(std::make_unique<SeriesListTickSource>(
        std::move(fetched[static_cast<std::size_t>(index)]), input.path, index,
        options.reorder_window_s, from_s, to_s, sink));
  };
  return Replay::OpenWith(std::move(inputs), make, options);
}

}  // namespace gpucanary::analysis
