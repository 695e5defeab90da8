#include "analysis/live/prometheus_history.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "dcgm/fields.h"
#include "model/matcher.h"

namespace gpucanary::analysis {
namespace {

std::vector<std::string> SortedUnique(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

}  // namespace

std::string HistorySelector(const std::string& host_label, const std::vector<std::string>& hosts,
                            const std::vector<std::string>& names) {
  std::string selector = "{";
  if (host_label == kInstanceLabel) {
    // Series without a host label (vLLM's) by their scrape's instance.
    selector += model::JoinMatchers(model::InstanceHostMatchers(SortedUnique(hosts)));
  } else {
    auto host = model::Matcher::Make(model::Matcher::Type::kRegex, host_label,
                                     model::ExactAlternation(SortedUnique(hosts)));
    GC_CHECK(host.has_value(), "quoted host names are a valid regex");
    selector += host->ToString();
  }
  if (!names.empty()) {
    // dcgm-exporter prints the name its counter CSV has: the legacy name or,
    // with a CSV written for DCGM 4.6, the new one (dcgm/fields.h).
    std::set<std::string> unique;
    for (const std::string& n : names) {
      unique.insert(n);
      if (const dcgm::FieldInfo* f = dcgm::FindFieldByName(n)) {
        unique.emplace(f->name);
        if (!f->dcgm46_name.empty()) unique.emplace(f->dcgm46_name);
      }
    }
    auto name = model::Matcher::Make(model::Matcher::Type::kRegex, "__name__",
                                     model::ExactAlternation({unique.begin(), unique.end()}));
    GC_CHECK(name.has_value(), "quoted metric names are a valid regex");
    selector += "," + name->ToString();
  }
  return selector + "}";
}

std::shared_ptr<PrometheusHistory> PrometheusHistory::Start(Server server, std::string host_label,
                                                            std::vector<std::string> hosts,
                                                            const std::vector<std::string>& names,
                                                            std::int64_t from_s,
                                                            std::int64_t until_s) {
  GC_CHECK(!hosts.empty() && from_s < until_s, "a history window needs hosts and seconds");
  std::string selector = HistorySelector(host_label, hosts, names);
  std::shared_ptr<PrometheusHistory> history(
      new PrometheusHistory(std::move(server), std::move(host_label), std::move(hosts),
                            std::move(selector), from_s, until_s));
  history->thread_ = std::thread([h = history.get()] { h->Fetch(); });
  return history;
}

PrometheusHistory::PrometheusHistory(Server server, std::string host_label,
                                     std::vector<std::string> hosts, std::string selector,
                                     std::int64_t from_s, std::int64_t until_s)
    : server_(std::move(server)),
      host_label_(std::move(host_label)),
      hosts_(std::move(hosts)),
      selector_(std::move(selector)),
      from_s_(from_s),
      until_s_(until_s) {}

PrometheusHistory::~PrometheusHistory() {
  if (thread_.joinable()) thread_.join();
}

void PrometheusHistory::Fetch() {
  // Both bounds of QueryRaw are inclusive: the window's last millisecond is
  // until_s * 1000 - 1.
  Result<promql::QueryResult> r =
      promql::QueryRaw(server_.url, selector_, from_s_ * 1000, until_s_ * 1000 - 1, server_.client);
  if (r) {
    series_ = std::move(r->series);
    for (const promql::Series& s : series_) fetched_samples_ += s.samples.size();
  } else {
    status_ = r.error();
  }
  done_.store(true, std::memory_order_release);
}

void PrometheusHistory::Release() {
  GC_CHECK(Done(), "Release before the fetch is done");
  std::vector<promql::Series>().swap(series_);
  released_ = true;
}

}  // namespace gpucanary::analysis
