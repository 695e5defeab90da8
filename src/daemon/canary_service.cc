#include "daemon/canary_service.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "recording/recording_writer.h"
#include "store/matcher.h"

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
  incident.verdict = std::string(analysis::VerdictName(view.report.verdict));
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

std::string HostRegex(const std::vector<std::string>& hosts) {
  std::string regex;
  for (const std::string& h : hosts) {
    if (!regex.empty()) regex += '|';
    for (char c : h) {
      if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) regex += '\\';
      regex += c;
    }
  }
  return regex;
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
    store::ActionRecord record{incident.canary_id,
                               outcome.name,
                               outcome.kind,
                               static_cast<double>(outcome.started_at_ms) / 1000.0,
                               static_cast<double>(outcome.duration_ms),
                               outcome.ok,
                               outcome.attempts,
                               outcome.skipped ? "skipped: " + outcome.detail : outcome.detail};
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
  hooks.log = options_.log;
  manager_ = std::make_unique<canary::CanaryManager>(store_, meta_, clock_, options_.canary,
                                                     std::move(hooks));
  api_ = std::make_unique<canary::CanaryApi>(*manager_, meta_, options_.log);
}

CanaryService::~CanaryService() { Stop(); }

void CanaryService::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Status CanaryService::Start() {
  // Canaries whose actions an earlier process started are not acted on again.
  auto canaries = meta_.ListCanaries("");
  if (!canaries) return canaries.error();
  std::vector<std::string> acted;
  for (const store::CanaryRecord& c : *canaries) {
    auto recorded = meta_.Actions(c.id);
    if (recorded && !recorded->empty()) acted.push_back(c.id);
  }
  runner_->Seed(acted);
  GC_RETURN_IF_ERROR(manager_->Resume());
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
    auto matchers = store::ParseSelector(release.selector);
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

void CanaryService::OnFail(const canary::CanaryView& view) {
  std::optional<releases::Release> release;
  if (auto stored = meta_.GetRelease(view.release_id); stored && stored->has_value()) {
    if (auto parsed = releases::ParseRelease((*stored)->annotation)) release = std::move(*parsed);
  }
  actions::Incident incident = IncidentOf(view, release ? &*release : nullptr);
  for (const actions::IncidentCause& c : incident.causes) {
    if (c.scope == "release") {
      gate_.SetRollback(view.id, c.summary);
      break;
    }
  }
  const actions::RunTicket ticket = runner_->Run(
      std::move(incident),
      [this, view](const std::filesystem::path& dir) { return WriteTelemetry(view, dir); });
  Log(ticket.message);
}

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
  // time-blocked, DESIGN.md §4).
  struct Row {
    std::int64_t t;
    std::size_t series;
    double v;
  };
  std::vector<store::Labels> series;
  std::vector<Row> rows;
  for (std::string_view label : {"Hostname", "hostname"}) {
    auto matcher =
        store::Matcher::Make(store::Matcher::Type::kRegex, std::string(label), HostRegex(hosts));
    if (!matcher) return matcher.error();
    auto got = store_.Select({*matcher}, from_ms, to_ms);
    if (!got) return got.error();
    for (store::SeriesSamples& s : *got) {
      for (const store::Sample& x : s.samples) {
        if (!std::isnan(x.v)) rows.push_back({x.t, series.size(), x.v});
      }
      series.push_back(std::move(s.labels));
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.t < b.t; });
  auto writer = recording::RecordingWriter::Open((dir / "telemetry.om").string());
  if (!writer) return writer.error();
  std::set<std::string> declared;
  std::vector<recording::Label> labels;
  for (const Row& row : rows) {
    const store::Labels& l = series[row.series];
    const std::string name(store::LabelValue(l, store::kMetricNameLabel));
    if (declared.insert(name).second) {
      // Types are not stored: "unknown" keeps every name as scraped.
      GC_RETURN_IF_ERROR((*writer)->DeclareFamily(name, recording::MetricKind::kUnknown, ""));
    }
    labels.clear();
    for (const store::Label& label : l) {
      if (label.name != store::kMetricNameLabel) labels.push_back({label.name, label.value});
    }
    GC_RETURN_IF_ERROR((*writer)->Append(name, labels, row.v, row.t));
  }
  return (*writer)->Close();
}

}  // namespace gpucanary::daemon
