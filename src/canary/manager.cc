#include "canary/manager.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "analysis/live/store_source.h"
#include "analysis/report/report_json.h"
#include "core/mutex.h"
#include "core/time_format.h"
#include "vocab/vocab.h"

namespace gpucanary::canary {
namespace {

using Json = nlohmann::json;
using vocab::CanaryState;
using vocab::Verdict;

// The exporters name the host label either way (docs/contracts.md §3).
constexpr std::string_view kHostLabels[] = {"Hostname", "hostname"};
// How far ahead of the daemon's clock a canary may start (clock skew
// between a CI runner and the daemon).
constexpr std::int64_t kMaxStartAheadS = 600;

double Seconds(std::int64_t ms) { return static_cast<double>(ms) / 1000.0; }

// floor(ms / 1000) for any sign.
std::int64_t FloorSeconds(std::int64_t ms) {
  return ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1;
}

// The canary and baseline hosts of a canary record's detail (Persist's JSON).
void ReadHosts(const std::string& detail_json, std::vector<std::string>& canary,
               std::vector<std::string>& baseline) {
  const Json detail = Json::parse(detail_json, nullptr, /*allow_exceptions=*/false);
  const auto read = [&](const char* key, std::vector<std::string>& out) {
    if (!detail.is_object() || !detail.contains(key) || !detail[key].is_array()) return;
    for (const Json& h : detail[key]) {
      if (h.is_string()) out.push_back(h.get<std::string>());
    }
  };
  read("canary_hosts", canary);
  read("baseline_hosts", baseline);
}

// The state a canary ends in with the judge's verdict.
CanaryState EndedWith(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return CanaryState::kPassed;
    case Verdict::kFail:
      return CanaryState::kFailed;
    case Verdict::kInconclusive:
      return CanaryState::kInconclusive;
  }
  return CanaryState::kInconclusive;
}

}  // namespace

struct CanaryManager::Canary {
  CanaryView view;
  std::int64_t end_s = 0;  // the last second judged
  std::unique_ptr<analysis::Replay> replay;
  std::vector<analysis::LiveTickSource*> sources;
  std::unique_ptr<CanaryHistory> history;  // null: the store's own history only
  std::unique_ptr<analysis::Judge> judge;
  analysis::Tick tick;
  // What was last committed to MetaDb: a verdict row is added when it changes.
  std::optional<Verdict> persisted_verdict;  // unset: none, or a word this version does not know
  std::size_t persisted_causes = 0;
  bool aborted = false;                // Stop() asked
  std::set<std::string> faulty_nodes;  // nodes on_node_fault was called for
  // The store's failed writes when the canary was built: more since then
  // are samples this canary could not see, said in its notes.
  std::uint64_t write_failures_at_start = 0;
};

CanaryManager::CanaryManager(store::Store& store, store::MetaDb& meta, const Clock& clock,
                             CanaryOptions options, CanaryHooks hooks)
    : store_(store),
      meta_(meta),
      clock_(clock),
      options_(std::move(options)),
      hooks_(std::move(hooks)) {}

CanaryManager::~CanaryManager() { StopThread(); }

void CanaryManager::Log(const std::string& line) const {
  if (hooks_.log) hooks_.log(line);
}

std::optional<model::Matcher> CanaryManager::TrustedMatcher() const {
  if (!hooks_.trusted_instances) return std::nullopt;
  std::vector<std::string> instances = hooks_.trusted_instances();
  if (instances.empty()) return std::nullopt;  // nothing scraped yet: see Build
  std::sort(instances.begin(), instances.end());
  instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
  auto m = model::Matcher::Make(model::Matcher::Type::kRegex, "instance",
                                model::ExactAlternation(instances));
  GC_CHECK(m.has_value(), "quoted label values make a valid regex");
  return std::move(*m);
}

std::vector<std::string> CanaryManager::HostsOf(std::vector<model::Matcher> matchers,
                                                std::int64_t now_ms) const {
  std::set<std::string> hosts;
  if (hooks_.trusted_instances) {
    std::optional<model::Matcher> trusted = TrustedMatcher();
    if (!trusted) return {};  // no target known: no host can be chosen
    matchers.push_back(std::move(*trusted));
  }
  const Status read = store_.ForEachSeries(matchers, now_ms - options_.discovery_window_s * 1000,
                                           now_ms, [&](const model::Labels& labels) {
                                             for (std::string_view label : kHostLabels) {
                                               const std::string_view v =
                                                   model::LabelValue(labels, label);
                                               if (!v.empty()) hosts.emplace(v);
                                             }
                                           });
  if (!read.ok()) return {};
  return {hosts.begin(), hosts.end()};
}

std::vector<std::string> CanaryManager::PickBaseline(const std::vector<std::string>& canary,
                                                     std::int64_t now_ms) const {
  // Every present host with the GPU models it carries.
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> models;
  std::vector<model::Matcher> matchers = {
      *model::Matcher::Make(model::Matcher::Type::kRegex, "modelName", ".+")};
  if (hooks_.trusted_instances) {
    std::optional<model::Matcher> trusted = TrustedMatcher();
    if (!trusted) return {};
    matchers.push_back(std::move(*trusted));
  }
  const Status read = store_.ForEachSeries(
      matchers, now_ms - options_.discovery_window_s * 1000, now_ms,
      [&](const model::Labels& labels) {
        for (std::string_view label : kHostLabels) {
          const std::string_view host = model::LabelValue(labels, label);
          if (host.empty()) continue;
          auto it = models.find(host);
          if (it == models.end()) it = models.try_emplace(std::string(host)).first;
          const std::string_view model_name = model::LabelValue(labels, "modelName");
          if (it->second.find(model_name) == it->second.end()) it->second.emplace(model_name);
        }
      });
  if (!read.ok()) return {};
  std::set<std::string> wanted;
  for (const std::string& h : canary) {
    if (auto it = models.find(h); it != models.end())
      wanted.insert(it->second.begin(), it->second.end());
  }
  std::vector<std::string> out;
  for (const auto& [host, host_models] : models) {
    if (static_cast<int>(out.size()) >= options_.baseline_nodes) break;
    if (std::find(canary.begin(), canary.end(), host) != canary.end()) continue;
    const bool same_model =
        wanted.empty() || std::any_of(host_models.begin(), host_models.end(),
                                      [&](const std::string& m) { return wanted.contains(m); });
    if (same_model) out.push_back(host);
  }
  return out;
}

Result<std::unique_ptr<CanaryManager::Canary>> CanaryManager::Build(
    const std::string& id, const std::string& release_id, double started_at,
    std::vector<std::string> canary_hosts, std::vector<std::string> baseline_hosts) {
  auto c = std::make_unique<Canary>();
  c->write_failures_at_start = store_.write_failures().count;
  c->view.id = id;
  c->view.release_id = release_id;
  c->view.state = CanaryState::kRunning;
  c->view.started_at = started_at;
  c->view.canary_hosts = std::move(canary_hosts);
  c->view.baseline_hosts = std::move(baseline_hosts);
  const auto start_s = static_cast<std::int64_t>(std::floor(started_at));
  c->end_s = start_s + options_.duration_s - 1;
  std::vector<analysis::StoreInput> inputs;
  auto add = [&](analysis::Role role, const std::vector<std::string>& hosts) {
    if (hosts.empty()) return;
    const std::string regex = model::ExactAlternation(hosts);
    for (std::string_view label : kHostLabels) {
      auto matcher = model::Matcher::Make(model::Matcher::Type::kRegex, std::string(label), regex);
      if (!matcher) continue;  // hosts are label values: always a valid regex
      inputs.push_back({std::string(analysis::RoleName(role)) + " {" + std::string(label) + "=~\"" +
                            regex + "\"}",
                        role,
                        {std::move(*matcher)}});
    }
    // Series without a host label (a vLLM server's) by their scrape's
    // instance, as `gpucanary judge` files them (by files or --prometheus):
    // without them a live canary was judged without its service metrics.
    std::vector<model::Matcher> by_instance = model::InstanceHostMatchers(hosts);
    inputs.push_back(
        {std::string(analysis::RoleName(role)) + " {" + model::JoinMatchers(by_instance) + "}",
         role, std::move(by_instance)});
  };
  add(analysis::Role::kCanary, c->view.canary_hosts);
  add(analysis::Role::kBaseline, c->view.baseline_hosts);
  // Only the daemon's own targets feed the judge. With none known yet (a
  // restart whose discovery has not answered) nothing is excluded, and the
  // log says so.
  if (std::optional<model::Matcher> trusted = TrustedMatcher()) {
    for (analysis::StoreInput& input : inputs) input.matchers.push_back(*trusted);
  } else if (hooks_.trusted_instances) {
    Log("canary " + id +
        ": no scrape target known yet: its window is not limited to the daemon's own targets");
  }
  c->history = CanaryHistory::Attach(
      store_, options_.history_prometheus, options_.policy, c->view.canary_hosts,
      c->view.baseline_hosts, start_s - options_.history_s, start_s, clock_.NowMs(), inputs,
      [this, id](std::string_view line) { Log("canary " + id + ": " + std::string(line)); });
  auto replay = analysis::OpenStoreReplay(store_, std::move(inputs), start_s - options_.history_s,
                                          &c->sources);
  if (!replay) return Error(replay.error());
  c->replay = std::move(*replay);
  c->judge = std::make_unique<analysis::Judge>(analysis::JudgeOptions{options_.policy, start_s});
  c->view.report = c->judge->Snapshot();
  return c;
}

Status CanaryManager::Persist(Canary& c, bool with_verdict) {
  // The verdict before the state: a canary recorded as ended always has the
  // verdict it ended on. Killed in between, it is still running on disk, and
  // Resume replays it to the same verdict (and end, and fail handler).
  if (with_verdict) {
    const analysis::Report& r = c.view.report;
    store::VerdictRecord v;
    v.canary_id = c.view.id;
    v.at = r.last_tick.value_or(Seconds(clock_.NowMs()));
    v.verdict = std::string(vocab::Name(r.verdict));
    v.score = r.score;
    v.report = analysis::ReportToJson(r);
    for (const analysis::Cause& cause : r.causes) {
      v.causes.push_back({std::string(vocab::Name(cause.kind)),
                          std::string(vocab::Name(cause.scope)), cause.since, cause.summary});
    }
    GC_RETURN_IF_ERROR(meta_.AddVerdict(v));
    c.persisted_verdict = r.verdict;
    c.persisted_causes = r.causes.size();
  }
  Json detail = {{"canary_hosts", c.view.canary_hosts},
                 {"baseline_hosts", c.view.baseline_hosts},
                 {"duration_s", options_.duration_s},
                 {"history_s", options_.history_s}};
  return meta_.PutCanary({c.view.id, c.view.release_id, c.view.started_at, c.view.ended_at,
                          std::string(vocab::Name(c.view.state)), detail.dump()});
}

Result<std::string> CanaryManager::Start(const CanaryRequest& request) {
  if (request.release_id.empty()) return Error(StatusCode::kInvalidArgument, "release id is empty");
  const std::int64_t now = clock_.NowMs();
  std::vector<std::string> canary = request.targets;
  const std::vector<std::string> own =
      hooks_.trusted_instances ? hooks_.trusted_instances() : std::vector<std::string>{};
  if (!canary.empty() && !own.empty()) {
    // Named hosts must be hosts the daemon scrapes (or its NVML node): a
    // name from nowhere would reach node actions and judge nothing. (With
    // no target known at all, as before discovery first answers, there is
    // nothing to check against: Build says so.)
    std::vector<std::string> known = HostsOf({}, now);
    for (std::string instance : own) {
      if (instance.starts_with('[')) {
        instance = instance.substr(1, instance.find(']') - 1);
      } else if (const std::size_t colon = instance.rfind(':');
                 colon != std::string::npos && instance.find(':') == colon) {
        instance.resize(colon);
      }
      known.push_back(std::move(instance));
    }
    std::vector<std::string> unknown;
    for (const std::string& host : canary) {
      if (std::find(known.begin(), known.end(), host) == known.end()) unknown.push_back(host);
    }
    if (!unknown.empty()) {
      std::string list;
      for (const std::string& u : unknown) list += (list.empty() ? "'" : ", '") + u + "'";
      return Error(StatusCode::kInvalidArgument,
                   "release " + request.release_id + ": target(s) " + list +
                       " are no host of a target this daemon scrapes (scrape_configs, "
                       "discovery or nvml)");
    }
  }
  if (canary.empty() && !request.selector.empty()) canary = HostsOf(request.selector, now);
  if (canary.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 request.targets.empty() && request.selector.empty()
                     ? "release " + request.release_id + " names no targets and no selector"
                     : "release " + request.release_id +
                           ": its selector matches no host with telemetry in the last " +
                           std::to_string(options_.discovery_window_s) + " s");
  }
  std::sort(canary.begin(), canary.end());
  canary.erase(std::unique(canary.begin(), canary.end()), canary.end());
  {
    MutexLock lock(mu_);
    if (canaries_.contains(request.release_id)) {
      return Error(StatusCode::kAlreadyExists,
                   "release " + request.release_id + " already has a canary");
    }
  }
  if (auto existing = meta_.GetCanary(request.release_id); existing && existing->has_value()) {
    return Error(StatusCode::kAlreadyExists,
                 "release " + request.release_id + " already has a canary");
  }
  // A release announced after its canary's whole window has passed (a log
  // replayed into the daemon, a backdated annotation) is not judged live:
  // its verdict would be final at once, over a window that may reach far
  // back. After the fact is the correlation's question.
  const double age_s = static_cast<double>(now) / 1000.0 - request.started_at;
  // A start far ahead of the clock would hold its hosts on fast scraping
  // until then and end never (a release dated in the year 5138).
  if (-age_s > static_cast<double>(kMaxStartAheadS)) {
    return Error(StatusCode::kInvalidArgument,
                 "release " + request.release_id + " starts " +
                     std::to_string(static_cast<std::int64_t>(-age_s)) + " s from now, more than " +
                     std::to_string(kMaxStartAheadS) +
                     " s ahead of this daemon's clock: not judged live");
  }
  if (age_s > static_cast<double>(options_.duration_s)) {
    return Error(StatusCode::kFailedPrecondition,
                 "release " + request.release_id + " started " +
                     std::to_string(static_cast<std::int64_t>(age_s)) +
                     " s ago, past the canary's duration (" + std::to_string(options_.duration_s) +
                     " s): not judged live; GET /api/v1/correlate answers after the fact");
  }
  std::vector<std::string> baseline = PickBaseline(canary, now);
  auto built = Build(request.release_id, request.release_id, request.started_at, canary, baseline);
  if (!built) return Error(built.error());
  Canary& c = **built;
  GC_RETURN_IF_ERROR(Persist(c, false));
  std::vector<std::string> all = canary;
  all.insert(all.end(), baseline.begin(), baseline.end());
  if (hooks_.set_fast) hooks_.set_fast(c.view.id, all);
  Log("canary " + c.view.id + ": " + std::to_string(canary.size()) + " canary host(s), " +
      std::to_string(baseline.size()) + " baseline host(s)" +
      (baseline.empty() ? " (none matched: judged against its own history)" : ""));
  const std::string id = c.view.id;
  {
    MutexLock lock(mu_);
    canaries_.emplace(id, std::move(*built));
  }
  wake_.NotifyAll();
  return id;
}

Status CanaryManager::Resume() {
  auto records = meta_.ListCanaries("");
  if (!records) return records.error();
  for (const store::CanaryRecord& r : *records) {
    {
      MutexLock lock(mu_);
      if (canaries_.contains(r.id)) continue;
    }
    if (vocab::Parse<CanaryState>(r.state) != CanaryState::kRunning) {
      GC_RETURN_IF_ERROR(RestoreEnded(r));
      continue;
    }
    std::vector<std::string> canary;
    std::vector<std::string> baseline;
    ReadHosts(r.detail, canary, baseline);
    auto built = canary.empty() ? Result<std::unique_ptr<Canary>>(Error(
                                      StatusCode::kParseError, "no canary hosts in its record"))
                                : Build(r.id, r.release_id, r.started_at, canary, baseline);
    if (!built) {
      Log("canary " + r.id + ": cannot resume (" + built.error().message() + "); aborted");
      store::CanaryRecord aborted = r;
      aborted.state = std::string(vocab::Name(CanaryState::kAborted));
      aborted.ended_at = Seconds(clock_.NowMs());
      GC_RETURN_IF_ERROR(meta_.PutCanary(aborted));
      continue;
    }
    // The verdict last committed: replaying the same telemetry reaches it again
    // without adding a row for it.
    if (auto verdicts = meta_.Verdicts(r.id); verdicts && !verdicts->empty()) {
      (*built)->persisted_verdict = vocab::Parse<Verdict>(verdicts->back().verdict);
      (*built)->persisted_causes = verdicts->back().causes.size();
    }
    std::vector<std::string> all = canary;
    all.insert(all.end(), baseline.begin(), baseline.end());
    if (hooks_.set_fast) hooks_.set_fast(r.id, all);
    Log("canary " + r.id + ": resumed; replaying its window from the store");
    MutexLock lock(mu_);
    canaries_.emplace(r.id, std::move(*built));
  }
  wake_.NotifyAll();
  return Status::Ok();
}

// An ended canary as its record and its last verdict left it: served again
// (state, hosts, the judge's last report), never judged again.
Status CanaryManager::RestoreEnded(const store::CanaryRecord& r) {
  const std::optional<CanaryState> state = vocab::Parse<CanaryState>(r.state);
  if (!state) {
    Log("canary " + r.id + ": unknown state '" + r.state + "' in its record; not restored");
    return Status::Ok();
  }
  auto c = std::make_unique<Canary>();
  c->view.id = r.id;
  c->view.release_id = r.release_id;
  c->view.state = *state;
  c->view.started_at = r.started_at;
  c->view.ended_at = r.ended_at;
  ReadHosts(r.detail, c->view.canary_hosts, c->view.baseline_hosts);
  auto verdicts = meta_.Verdicts(r.id);
  if (!verdicts) return verdicts.error();
  if (!verdicts->empty()) {
    const store::VerdictRecord& last = verdicts->back();
    if (auto report = analysis::ReportFromJson(last.report)) {
      c->view.report = std::move(*report);
    } else {
      // The verdict and its causes' words still show; the rest of the report is lost.
      Log("canary " + r.id + ": its last report does not read back (" + report.error().message() +
          ")");
      c->view.report.verdict = vocab::Parse<Verdict>(last.verdict).value_or(Verdict::kInconclusive);
      c->view.report.score = last.score.value_or(0.0);
      for (const store::CauseRecord& cause : last.causes) {
        const std::optional<vocab::CauseKind> kind = vocab::Parse<vocab::CauseKind>(cause.kind);
        const std::optional<vocab::Scope> scope = vocab::Parse<vocab::Scope>(cause.scope);
        if (!kind || !scope) continue;  // a newer version's word
        analysis::Cause& restored = c->view.report.causes.emplace_back();
        restored.kind = *kind;
        restored.scope = *scope;
        restored.since = cause.since.value_or(0.0);
        restored.failing = *scope == vocab::Scope::kRelease;
        restored.summary = cause.summary;
      }
    }
    c->persisted_verdict = vocab::Parse<Verdict>(last.verdict);
    c->persisted_causes = last.causes.size();
  }
  if (c->view.report.last_tick) {
    c->view.last_tick = static_cast<std::int64_t>(*c->view.report.last_tick);
  }
  MutexLock lock(mu_);
  canaries_.emplace(r.id, std::move(c));
  return Status::Ok();
}

Status CanaryManager::Stop(std::string_view id, std::string_view reason) {
  MutexLock poll(poll_mu_);  // not in the middle of its step
  Canary* c = nullptr;
  {
    MutexLock lock(mu_);
    auto it = canaries_.find(id);
    if (it == canaries_.end()) {
      return Status(StatusCode::kNotFound, "no canary " + std::string(id));
    }
    c = it->second.get();
    if (c->view.state != CanaryState::kRunning) {
      return Status(StatusCode::kFailedPrecondition, "canary " + std::string(id) + " has ended (" +
                                                         std::string(vocab::Name(c->view.state)) +
                                                         ")");
    }
    // A canary the judge has already passed keeps its verdict: the rollout
    // was promoted on it. Any other stop is an abort.
    c->view.state =
        c->view.report.verdict == Verdict::kPass ? CanaryState::kPassed : CanaryState::kAborted;
    c->view.ended_at = Seconds(clock_.NowMs());
  }
  ReleaseJudging(*c);  // poll_mu_ is held: no Step uses them now
  if (hooks_.clear_fast) hooks_.clear_fast(c->view.id);
  Log("canary " + c->view.id + ": stopped (" + std::string(reason) + "), " +
      std::string(vocab::Name(c->view.state)));
  Status persisted = Persist(*c, false);
  NotifyEnd(*c);
  return persisted;
}

// An ended canary is never stepped again (Poll steps running ones): what
// judged it goes (the replay's buffers, the judge's windows, the history),
// and its view (state, hosts, last report) stays. Kept, they added up over
// every canary the daemon ever ran.
void CanaryManager::ReleaseJudging(Canary& c) {
  c.sources.clear();
  c.judge.reset();
  c.history.reset();
  c.replay.reset();  // after the sources, which point into it
}

void CanaryManager::NotifyEnd(const Canary& c) {
  if (!hooks_.on_end) return;
  CanaryView view;
  {
    MutexLock lock(mu_);
    view = c.view;
  }
  hooks_.on_end(view);
}

void CanaryManager::Step(Canary& c, std::int64_t now_ms) {
  const std::int64_t ready = FloorSeconds(now_ms - options_.lag_ms) - 1;
  const std::int64_t through = std::min(ready, c.end_s);
  for (analysis::LiveTickSource* s : c.sources) {
    s->SetReadyThrough(through);
    if (through == c.end_s) s->Close();
  }
  bool fed = false;
  for (;;) {
    Result<bool> more = c.replay->Next(c.tick);
    if (!more) {
      Log("canary " + c.view.id + ": " + more.error().message() + "; aborted");
      MutexLock lock(mu_);
      c.view.state = CanaryState::kAborted;
      c.view.ended_at = Seconds(now_ms);
      c.view.report.notes.push_back("aborted: " + more.error().message());
      break;
    }
    if (!*more) break;
    c.judge->Add(c.tick, analysis::Catalog::Of(*c.replay));
    fed = true;
  }
  if (c.view.state == CanaryState::kAborted) {
    if (hooks_.clear_fast) hooks_.clear_fast(c.view.id);
    if (Status st = Persist(c, false); !st.ok()) Log("canary " + c.view.id + ": " + st.message());
    NotifyEnd(c);
    return;
  }
  if (!fed && through < c.end_s) return;
  analysis::Report report = c.judge->Snapshot();
  bool ended = false;
  CanaryState state = CanaryState::kRunning;
  if (report.verdict == Verdict::kFail) {
    state = CanaryState::kFailed;
    ended = true;
  } else if (through >= c.end_s && c.sources.front()->eof()) {
    report = c.judge->Finish();
    state = EndedWith(report.verdict);
    ended = true;
  }
  if (c.history) c.history->Annotate(report);
  if (const store::WriteFailures w = store_.write_failures(); w.count > c.write_failures_at_start) {
    report.notes.push_back(
        "the store could not write " + std::to_string(w.count - c.write_failures_at_start) +
        " batch(es) of telemetry while this canary ran (last at " + FormatUtcMillis(w.last_ms) +
        ": " + w.last_error +
        "): what they held is no data here, not judged; free the disk and look at the "
        "daemon's log");
  }
  const bool changed =
      report.verdict != c.persisted_verdict || report.causes.size() != c.persisted_causes || ended;
  {
    MutexLock lock(mu_);
    c.view.report = std::move(report);
    c.view.last_tick =
        c.view.report.last_tick
            ? std::optional<std::int64_t>(static_cast<std::int64_t>(*c.view.report.last_tick))
            : std::nullopt;
    c.view.state = state;
    if (ended) c.view.ended_at = Seconds(now_ms);
  }
  if (changed) {
    if (Status st = Persist(c, true); !st.ok()) Log("canary " + c.view.id + ": " + st.message());
  }
  NotifyNodeFaults(c);
  if (!ended) return;
  ReleaseJudging(c);
  if (hooks_.clear_fast) hooks_.clear_fast(c.view.id);
  Log("canary " + c.view.id + ": " + std::string(vocab::Name(state)));
  if (state == CanaryState::kFailed && hooks_.on_fail) {
    CanaryView view;
    {
      MutexLock lock(mu_);
      view = c.view;
    }
    hooks_.on_fail(view);
  }
  NotifyEnd(c);
}

void CanaryManager::NotifyNodeFaults(Canary& c) {
  std::vector<std::string> fresh;
  for (const analysis::Cause& cause : c.view.report.causes) {
    if (cause.scope != vocab::Scope::kNode) continue;
    for (const std::string& node : cause.nodes) {
      if (c.faulty_nodes.insert(node).second) fresh.push_back(node);
    }
  }
  if (fresh.empty() || !hooks_.on_node_fault) return;
  CanaryView view;
  {
    MutexLock lock(mu_);
    view = c.view;
  }
  for (const std::string& node : fresh) {
    Log("canary " + c.view.id + ": node " + node + " has a fault of its own");
    hooks_.on_node_fault(view, node);
  }
}

void CanaryManager::Poll() {
  MutexLock poll(poll_mu_);
  std::vector<Canary*> running;
  {
    MutexLock lock(mu_);
    for (auto& [id, c] : canaries_) {
      if (c->view.state == CanaryState::kRunning) running.push_back(c.get());
    }
  }
  const std::int64_t now = clock_.NowMs();
  for (Canary* c : running) Step(*c, now);
}

std::optional<CanaryView> CanaryManager::Get(std::string_view id) const {
  MutexLock lock(mu_);
  auto it = canaries_.find(id);
  if (it == canaries_.end()) return std::nullopt;
  return it->second->view;
}

std::vector<CanaryView> CanaryManager::List() const {
  std::vector<CanaryView> out;
  {
    MutexLock lock(mu_);
    for (const auto& [id, c] : canaries_) out.push_back(c->view);
  }
  std::sort(out.begin(), out.end(), [](const CanaryView& a, const CanaryView& b) {
    return a.started_at != b.started_at ? a.started_at > b.started_at : a.id < b.id;
  });
  return out;
}

void CanaryManager::StartThread() {
  MutexLock lock(thread_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    MutexLock guard(thread_mu_);
    while (!stopping_) {
      guard.Unlock();
      Poll();
      guard.Lock();
      wake_.WaitFor(thread_mu_, std::chrono::milliseconds(options_.poll_ms),
                    [this]() REQUIRES(thread_mu_) { return stopping_; });
    }
  });
}

void CanaryManager::StopThread() {
  {
    MutexLock lock(thread_mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpucanary::canary
