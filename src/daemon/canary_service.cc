#include "daemon/canary_service.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "model/family_writer.h"
#include "model/matcher.h"
#include "recording/openmetrics_text.h"
#include "recording/recording_writer.h"
#include "vocab/vocab.h"

namespace gpucanary::daemon {
namespace {

actions::Incident IncidentOf(const canary::CanaryView& view, const releases::Release* release) {
  actions::Incident incident;
  incident.canary_id = view.id;
  incident.release.id = view.release_id;
  if (release != nullptr) {
    incident.release.service = release->service;
    incident.release.annotation_json = release->annotation;
  }
  incident.verdict = view.report.verdict;
  incident.decided_at = view.report.decided_at.value_or(0.0);
  for (const analysis::Cause& c : view.report.causes) {
    actions::IncidentCause cause;
    cause.kind = c.kind;
    cause.scope = c.scope;
    cause.node = c.nodes.size() == 1 ? c.nodes.front() : "";
    cause.gpus = c.gpus;
    cause.summary = c.summary;
    incident.causes.push_back(std::move(cause));
  }
  incident.canary_nodes = view.canary_hosts;
  incident.baseline_nodes = view.baseline_hosts;
  return incident;
}

}  // namespace

CanaryService::CanaryService(store::Store& store, store::MetaDb& meta, Clock& clock,
                             scrape::ScrapeManager* scraper, CanaryServiceOptions options)
    : store_(store), meta_(meta), clock_(clock), options_(std::move(options)) {
  actions::RunnerOptions runner;
  runner.actions = options_.actions;
  runner.flagger_gate = &gate_;
  runner.clock = &clock_;
  runner.on_outcome = [this](const actions::Incident& incident,
                             const actions::ActionOutcome& outcome) {
    store::ActionRecord record{
        incident.canary_id, outcome.name, outcome.kind,
        static_cast<double>(outcome.started_at_ms) / 1000.0,
        static_cast<double>(outcome.duration_ms), outcome.ok, outcome.attempts,
        // "skipped: why" marks a skipped action in the record
        outcome.skipped && !outcome.detail.starts_with("skipped") ? "skipped: " + outcome.detail
                                                                  : outcome.detail,
        incident.part};
    if (Status st = meta_.AddAction(record); !st.ok()) Log("actions: " + st.message());
    Log("canary " + incident.canary_id + ": action " + outcome.name + " (" + outcome.kind + "): " +
        (outcome.skipped ? "skipped"
         : outcome.ok    ? "ok"
                         : "FAILED") +
        ", " + outcome.detail);
  };
  runner_ = std::make_unique<actions::Runner>(std::move(runner));

  canary::CanaryHooks hooks;
  if (scraper != nullptr) {
    hooks.set_fast = [scraper](const std::string& key, const std::vector<std::string>& hosts) {
      scraper->SetFast("canary:" + key, scrape::MatchHosts(hosts));
    };
    hooks.clear_fast = [scraper](const std::string& key) { scraper->ClearFast("canary:" + key); };
  }
  hooks.on_fail = [this](const canary::CanaryView& view) { OnFail(view); };
  hooks.on_node_fault = [this](const canary::CanaryView& view, const std::string& node) {
    OnNodeFault(view, node);
  };
  hooks.log = options_.log;
  hooks.on_end = options_.on_end;
  hooks.trusted_instances = options_.trusted_instances;
  manager_ = std::make_unique<canary::CanaryManager>(store_, meta_, clock_, options_.canary,
                                                     std::move(hooks));
  api_ = std::make_unique<canary::CanaryApi>(*manager_, meta_, options_.log);
}

CanaryService::~CanaryService() { Stop(); }

void CanaryService::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Status CanaryService::Start() {
  // Canaries whose actions an earlier process ran are not acted on again. A
  // failed canary whose fail actions are not all recorded (the process died
  // while they ran, or between the verdict and the first) gets the rest run
  // now: at least once, never twice for an action whose outcome was kept.
  auto canaries = meta_.ListCanaries("");
  if (!canaries) return canaries.error();
  std::vector<std::string> acted;  // incident keys (actions::Incident::Key)
  std::map<std::string, std::set<std::string>> unfinished;  // failed canary -> actions recorded
  const double now_s = static_cast<double>(clock_.NowMs()) / 1000.0;
  for (const store::CanaryRecord& c : *canaries) {
    auto recorded = meta_.Actions(c.id);
    if (!recorded) return recorded.error();
    std::vector<std::string> fail_order;
    for (const store::ActionRecord& a : *recorded) {
      if (a.incident.empty()) {
        fail_order.push_back(a.name);
      } else {
        acted.push_back(c.id + "#" + a.incident);
      }
    }
    // Cut short: what was recorded is a proper prefix of the configured
    // actions (they run in order), and the fail is recent (an hour), so that
    // an action added to the configuration later does not fire for old
    // canaries.
    bool prefix = fail_order.size() < options_.actions.size();
    for (std::size_t i = 0; prefix && i < fail_order.size(); ++i) {
      prefix = fail_order[i] == options_.actions[i].name;
    }
    const bool recent = c.ended_at.has_value() && now_s - *c.ended_at < 3600;
    std::set<std::string> fail_done(fail_order.begin(), fail_order.end());
    const bool failed = vocab::Parse<vocab::CanaryState>(c.state) == vocab::CanaryState::kFailed;
    if (failed && prefix && recent) {
      unfinished.emplace(c.id, std::move(fail_done));
    } else if (!fail_order.empty() || failed) {
      acted.push_back(c.id);
    }
  }
  runner_->Seed(acted);
  GC_RETURN_IF_ERROR(manager_->Resume());
  for (auto& [id, done] : unfinished) {
    const std::optional<canary::CanaryView> view = manager_->Get(id);
    if (!view) continue;
    Log("canary " + id + ": failed, but an earlier process recorded " +
        std::to_string(done.size()) + " of its " + std::to_string(options_.actions.size()) +
        " actions; running the rest");
    const actions::RunTicket ticket = runner_->Finish(
        FailIncident(*view),
        [this, v = *view](const std::filesystem::path& dir) { return WriteTelemetry(v, dir); },
        std::move(done));
    Log(ticket.message);
  }
  manager_->StartThread();
  return Status::Ok();
}

void CanaryService::Stop() {
  if (manager_) manager_->StopThread();
  if (runner_) runner_->WaitIdle();
}

Result<std::optional<std::string>> CanaryService::OnRelease(const releases::Release& release) {
  canary::CanaryRequest request;
  request.release_id = release.id;
  request.started_at = release.started_at;
  request.targets = release.targets;
  request.previous = release.previous;
  if (!release.selector.empty()) {
    auto matchers = model::ParseSelector(release.selector);
    if (!matchers) {
      return Error(StatusCode::kInvalidArgument,
                   "release " + release.id + ": selector: " + matchers.error().message());
    }
    request.selector = std::move(*matchers);
  }
  if (request.targets.empty() && request.selector.empty()) return std::optional<std::string>();
  auto id = manager_->Start(request);
  if (!id) return Error(id.error());
  return std::optional<std::string>(*id);
}

bool CanaryService::Handle(const net::HttpRequest& request, net::HttpResponse& response) {
  return api_->Handle(request, response);
}

namespace {

// canary="…",release="…" plus more labels. The views point into `c` and
// `more`: use the result within the same full expression.
std::vector<model::LabelView> CanaryLabels(const canary::CanaryView& c,
                                           std::initializer_list<model::LabelView> more) {
  std::vector<model::LabelView> labels = {{"canary", c.id}, {"release", c.release_id}};
  labels.insert(labels.end(), more.begin(), more.end());
  return labels;
}

// A sample value as the recording format writes it (shortest round trip).
std::string ValueText(double value) {
  std::string text;
  recording::AppendValue(text, value);
  return text;
}

}  // namespace

void CanaryService::AppendMetrics(std::string& out, std::int64_t window_ms) const {
  const double since = static_cast<double>(clock_.NowMs() - window_ms) / 1000.0;
  std::vector<canary::CanaryView> canaries;
  for (canary::CanaryView& c : manager_->List()) {
    if (c.started_at >= since) canaries.push_back(std::move(c));
  }
  model::FamilyWriter metrics(out);
  // One series per word of the vocabulary (vocab::Words), 1 for the current.
  auto one_hot = [&](std::string_view family, std::string_view label, std::string_view help,
                     auto words, auto current) {
    metrics.Family(family, model::MetricType::kGauge, help);
    for (const canary::CanaryView& c : canaries) {
      for (const auto& w : words) {
        metrics.Sample(CanaryLabels(c, {{label, w.name}}), w.value == current(c) ? "1" : "0");
      }
    }
  };
  one_hot("gpucanary_canary_state", "state",
          "A live canary's state (1 for the current one), for canaries started within "
          "releases.info_window.",
          vocab::Words<vocab::CanaryState>(), [](const canary::CanaryView& c) { return c.state; });
  one_hot("gpucanary_canary_verdict", "verdict", "The judge's verdict now (1 for the current one).",
          vocab::Words<vocab::Verdict>(),
          [](const canary::CanaryView& c) { return c.report.verdict; });
  metrics.Family("gpucanary_canary_score", model::MetricType::kGauge,
                 "-log10 of the error rate at which the verdict holds (0: none).");
  for (const canary::CanaryView& c : canaries) {
    metrics.Sample(CanaryLabels(c, {}), ValueText(c.report.score));
  }
  metrics.Family("gpucanary_canary_decided_timestamp_seconds", model::MetricType::kGauge,
                 "When the verdict was decided (Unix seconds).");
  for (const canary::CanaryView& c : canaries) {
    if (!c.report.decided_at) continue;
    metrics.Sample(CanaryLabels(c, {}), ValueText(*c.report.decided_at));
  }
  metrics.Family(
      "gpucanary_canary_cause", model::MetricType::kGauge,
      "1 for each cause the judge names (DESIGN.md section 6 kinds), per node it sits on.");
  for (const canary::CanaryView& c : canaries) {
    for (const analysis::Cause& cause : c.report.causes) {
      std::vector<std::string> nodes = cause.nodes;
      if (nodes.empty()) nodes.emplace_back();
      for (const std::string& node : nodes) {
        metrics.Sample(CanaryLabels(c, {{"kind", vocab::Name(cause.kind)},
                                        {"scope", vocab::Name(cause.scope)},
                                        {"node", node}}),
                       "1");
      }
    }
  }
  metrics.Family("gpucanary_canary_actions", model::MetricType::kGauge,
                 "Circuit-breaker actions recorded for the canary, by outcome.");
  for (const canary::CanaryView& c : canaries) {
    auto recorded = meta_.Actions(c.id);
    if (!recorded) continue;
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const store::ActionRecord& a : *recorded) {
      const std::string outcome = a.detail.starts_with("skipped") ? "skipped"
                                  : a.ok                          ? "ok"
                                                                  : "failed";
      ++counts[{a.kind, outcome}];
    }
    for (const auto& [key, n] : counts) {
      metrics.Sample(CanaryLabels(c, {{"kind", key.first}, {"outcome", key.second}}),
                     std::to_string(n));
    }
  }
}

actions::Incident CanaryService::FailIncident(const canary::CanaryView& view) const {
  std::optional<releases::Release> release;
  if (auto stored = meta_.GetRelease(view.release_id); stored && stored->has_value()) {
    if (auto parsed = releases::ParseRelease((*stored)->annotation)) release = std::move(*parsed);
  }
  return IncidentOf(view, release ? &*release : nullptr);
}

void CanaryService::OnFail(const canary::CanaryView& view) {
  actions::Incident incident = FailIncident(view);
  for (const actions::IncidentCause& c : incident.causes) {
    if (c.scope == vocab::Scope::kRelease) {
      gate_.SetRollback(view.id, c.summary);
      break;
    }
  }
  const actions::RunTicket ticket = runner_->Run(
      std::move(incident),
      [this, view](const std::filesystem::path& dir) { return WriteTelemetry(view, dir); });
  Log(ticket.message);
}

// A node's own fault while the canary runs: the actions that admit
// node-scoped causes (isolate_node, node-filtered commands, a bundle) run for
// that node now, once; the release is not blamed and the canary goes on.
void CanaryService::OnNodeFault(const canary::CanaryView& view, const std::string& node) {
  actions::Incident incident = FailIncident(view);
  incident.part = "node:" + node;
  std::erase_if(incident.causes, [&](const actions::IncidentCause& c) {
    if (c.scope != vocab::Scope::kNode) return true;
    if (c.node == node) return false;
    return std::none_of(c.gpus.begin(), c.gpus.end(),
                        [&](const std::string& g) { return g.rfind(node + "/", 0) == 0; });
  });
  const actions::RunTicket ticket = runner_->Run(
      std::move(incident),
      [this, view](const std::filesystem::path& dir) { return WriteTelemetry(view, dir); });
  Log(ticket.message);
}

namespace {

// The samples of a canary's window: every series, and every sample as a row
// that points at its series.
struct Window {
  struct Row {
    std::int64_t t;
    std::size_t series;
    double v;
  };
  std::vector<model::Labels> series;
  std::vector<Row> rows;
};

// Every sample (NaN ones left out) in [from_ms, to_ms] of the series whose
// Hostname or hostname is one of `hosts`, or that have neither and whose
// scrape instance names one of them (an inference server's, docs/canaries.md).
Result<Window> SelectWindow(store::Store& store, const std::vector<std::string>& hosts,
                            std::int64_t from_ms, std::int64_t to_ms) {
  Window window;
  std::vector<std::vector<model::Matcher>> selections;
  for (std::string_view label : {"Hostname", "hostname"}) {
    auto matcher = model::Matcher::Make(model::Matcher::Type::kRegex, std::string(label),
                                        model::ExactAlternation(hosts));
    if (!matcher) return Error(matcher.error());
    selections.push_back({std::move(*matcher)});
  }
  if (!hosts.empty()) selections.push_back(model::InstanceHostMatchers(hosts));
  for (const std::vector<model::Matcher>& matchers : selections) {
    auto got = store.Select(matchers, from_ms, to_ms);
    if (!got) return Error(got.error());
    for (store::SeriesSamples& s : *got) {
      for (const store::Sample& x : s.samples) {
        if (!std::isnan(x.v)) window.rows.push_back({x.t, window.series.size(), x.v});
      }
      window.series.push_back(std::move(s.labels));
    }
  }
  return window;
}

// Types are not stored. Histograms are told by their samples, as
// StoreTickSource tells them (an `x_bucket` series with `le`), and declared
// as histograms so that the bundle replays their quantiles; every other
// name is "unknown", kept as scraped (the judge knows DCGM's counters).
class HistogramNames {
 public:
  explicit HistogramNames(const std::vector<model::Labels>& series) {
    for (const model::Labels& l : series) {
      const std::string_view name = model::LabelValue(l, model::kMetricNameLabel);
      if (name.ends_with("_bucket") && !model::LabelValue(l, "le").empty()) {
        histograms_.emplace(name.substr(0, name.size() - 7));
      }
    }
  }

  // The histogram that sample name `name` belongs to, or "" for none.
  std::string FamilyOf(const std::string& name) const {
    for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
      if (name.ends_with(suffix)) {
        std::string base = name.substr(0, name.size() - suffix.size());
        if (histograms_.contains(base)) return base;
      }
    }
    return "";
  }

 private:
  std::set<std::string> histograms_;
};

// Within a second, one histogram's samples must come together with its
// buckets in increasing `le` (OpenMetrics): rank the series by (family,
// other labels, bucket/count/sum, le). Returns each series' rank.
std::vector<std::size_t> RankSeries(const std::vector<model::Labels>& series,
                                    const HistogramNames& histograms) {
  struct SeriesKey {
    std::string family;
    std::string labels;  // without __name__ and le
    int part = 0;        // 0 bucket (or not a histogram), 1 count, 2 sum
    double le = 0;
  };
  std::vector<SeriesKey> keys(series.size());
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::string name(model::LabelValue(series[i], model::kMetricNameLabel));
    const std::string histogram = histograms.FamilyOf(name);
    SeriesKey& k = keys[i];
    k.family = histogram.empty() ? name : histogram;
    for (const model::Label& label : series[i]) {
      if (label.name == model::kMetricNameLabel || label.name == "le") continue;
      k.labels += label.name + '\x01' + label.value + '\x02';
    }
    if (!histogram.empty()) {
      k.part = name.ends_with("_count") ? 1 : name.ends_with("_sum") ? 2 : 0;
      const std::string le(model::LabelValue(series[i], "le"));
      k.le =
          le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr);
    }
  }
  std::vector<std::size_t> order(series.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(keys[a].family, keys[a].labels, keys[a].part, keys[a].le) <
           std::tie(keys[b].family, keys[b].labels, keys[b].part, keys[b].le);
  });
  std::vector<std::size_t> rank(series.size());
  for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  return rank;
}

// Writes the window's rows in order (each family declared at its first
// sample) and closes the recording.
Status WriteRows(recording::RecordingWriter& writer, const Window& window,
                 const HistogramNames& histograms) {
  std::set<std::string> declared;
  std::vector<model::LabelView> labels;
  for (const Window::Row& row : window.rows) {
    const model::Labels& l = window.series[row.series];
    const std::string name(model::LabelValue(l, model::kMetricNameLabel));
    if (declared.insert(name).second) {
      const std::string histogram = histograms.FamilyOf(name);
      GC_RETURN_IF_ERROR(histogram.empty()
                             ? writer.DeclareFamily(name, model::MetricType::kUnknown, "")
                             : writer.DeclareFamily(histogram, model::MetricType::kHistogram, ""));
    }
    labels.clear();
    for (const model::Label& label : l) {
      if (label.name != model::kMetricNameLabel) labels.push_back({label.name, label.value});
    }
    GC_RETURN_IF_ERROR(writer.Append(name, labels, row.v, row.t));
  }
  return writer.Close();
}

}  // namespace

// The canary's window (history included) for its canary and baseline hosts,
// as a time-blocked recording that `gpucanary judge` and `report` read back.
Status CanaryService::WriteTelemetry(const canary::CanaryView& view,
                                     const std::filesystem::path& dir) const {
  std::vector<std::string> hosts = view.canary_hosts;
  hosts.insert(hosts.end(), view.baseline_hosts.begin(), view.baseline_hosts.end());
  const auto from_ms = static_cast<std::int64_t>(std::floor(
                           view.started_at - static_cast<double>(options_.canary.history_s))) *
                       1000;
  const std::int64_t to_ms = view.last_tick ? (*view.last_tick + 1) * 1000 - 1 : clock_.NowMs();
  // Every sample, then written second by second (the recording format is
  // time-blocked).
  auto window = SelectWindow(store_, hosts, from_ms, to_ms);
  if (!window) return window.error();
  auto writer = recording::RecordingWriter::Open((dir / "telemetry.om").string());
  if (!writer) return writer.error();
  const HistogramNames histograms(window->series);
  const std::vector<std::size_t> rank = RankSeries(window->series, histograms);
  std::sort(window->rows.begin(), window->rows.end(),
            [&](const Window::Row& a, const Window::Row& b) {
              return a.t != b.t ? a.t < b.t : rank[a.series] < rank[b.series];
            });
  return WriteRows(**writer, *window, histograms);
}

}  // namespace gpucanary::daemon
