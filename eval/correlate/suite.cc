#include "eval/correlate/suite.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string_view>
#include <vector>

#include "analysis/replay/replay.h"
#include "config/yaml_fields.h"
#include "releases/release.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::correlate {

using analysis::Replay;
using analysis::ReplayInput;
using analysis::Role;
using analysis::correlate::Correlate;
using analysis::correlate::CorrelateReport;
using analysis::correlate::Regression;
using analysis::correlate::Suspect;

namespace {

using config::Child;
using config::Fields;
using config::Index;
using config::ReadString;
using config::Reporter;

constexpr std::string_view kTopKeys[] = {"cases"};
constexpr std::string_view kCaseKeys[] = {"file",     "category", "guilty",      "kind",
                                          "releases", "onset_s",  "confounders", "description"};
constexpr std::string_view kCategories[] = {"guilty", "none", "mixed"};

// The vocabulary's cause kinds by name, in its order (vocab/vocab.h).
std::string CauseKindNames() {
  std::vector<std::string_view> names;
  for (const vocab::Word<vocab::CauseKind>& w : vocab::Words<vocab::CauseKind>()) {
    names.push_back(w.name);
  }
  return config::JoinNames(names);
}

Result<CorrelateCase> ParseCase(const Reporter& r, const YAML::Node& node, const std::string& field,
                                const std::filesystem::path& dir) {
  Result<Fields> f = Fields::Read(r, node, field, kCaseKeys);
  if (!f) return Error(f.error());
  for (std::string_view key : {"file", "category", "releases"}) {
    if (f->Find(key) == nullptr) {
      return r.Fail(f->mark(), Child(field, key), "required field is missing");
    }
  }
  CorrelateCase c;
  Result<std::string> file = ReadString(r, *f->Find("file"), Child(field, "file"));
  if (!file) return Error(file.error());
  c.path = (dir / *file).string();
  c.name = std::filesystem::path(*file).stem().string();
  Result<std::string> category = ReadString(r, *f->Find("category"), Child(field, "category"));
  if (!category) return Error(category.error());
  if (std::find(std::begin(kCategories), std::end(kCategories), *category) ==
      std::end(kCategories)) {
    return r.Fail(*f->Find("category"), Child(field, "category"),
                  "expected one of guilty, none, mixed");
  }
  c.category = *category;
  Result<std::vector<std::string>> releases =
      config::ReadStrings(r, *f->Find("releases"), Child(field, "releases"));
  if (!releases) return Error(releases.error());
  c.releases = std::move(*releases);
  for (std::string_view key : {"guilty", "kind"}) {
    const YAML::Node* n = f->Find(key);
    const bool needed = c.category != "none";
    if ((n != nullptr) != needed) {
      return r.Fail(n != nullptr ? n->Mark() : f->mark(), Child(field, key),
                    needed ? "required for a guilty or mixed case"
                           : "a case of category none names no guilty release");
    }
    if (n == nullptr) continue;
    Result<std::string> v = ReadString(r, *n, Child(field, key));
    if (!v) return Error(v.error());
    if (key == "guilty") {
      c.guilty = *v;
      continue;
    }
    c.kind = vocab::Parse<vocab::CauseKind>(*v);
    if (!c.kind) {
      return r.Fail(*n, Child(field, key),
                    "unknown cause kind '" + *v + "' (valid: " + CauseKindNames() + ")");
    }
  }
  if (!c.guilty.empty() &&
      std::find(c.releases.begin(), c.releases.end(), c.guilty) == c.releases.end()) {
    return r.Fail(*f->Find("guilty"), Child(field, "guilty"),
                  "release '" + c.guilty + "' is not in the case's releases");
  }
  if (const YAML::Node* n = f->Find("confounders")) {
    Result<std::vector<std::string>> tags = config::ReadStrings(r, *n, Child(field, "confounders"));
    if (!tags) return Error(tags.error());
    c.confounders = std::move(*tags);
  }
  if (const YAML::Node* n = f->Find("description")) {
    Result<std::string> v = ReadString(r, *n, Child(field, "description"));
    if (!v) return Error(v.error());
    c.description = *v;
  }
  return c;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::vector<CorrelateCase>> LoadCorrelateSuite(const std::string& labels_path) {
  Result<std::string> text = config::ReadConfigFile(labels_path);
  if (!text) return Error(text.error());
  const Reporter r(labels_path);
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "labels", e.msg);
  }
  if (!root.IsMap()) return r.Fail(root, "labels", "expected a map with `cases`");
  Result<Fields> top = Fields::Read(r, root, "", kTopKeys);
  if (!top) return Error(top.error());
  const YAML::Node* list = top->Find("cases");
  if (list == nullptr || !list->IsSequence() || list->size() == 0) {
    return r.Fail(list != nullptr ? list->Mark() : top->mark(), "cases",
                  "expected a non-empty list of cases");
  }
  const std::filesystem::path dir = std::filesystem::path(labels_path).parent_path();
  std::vector<CorrelateCase> cases;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list->size(); ++i) {
    Result<CorrelateCase> c = ParseCase(r, (*list)[i], Index("cases", i), dir);
    if (!c) return Error(c.error());
    if (!names.insert(c->name).second) {
      return r.Fail((*list)[i], Index("cases", i), "'" + c->name + "' is labelled twice");
    }
    cases.push_back(std::move(*c));
  }
  return cases;
}

Result<CaseOutcome> RunCorrelateCase(const CorrelateCase& c, const std::string& work_dir,
                                     const SuiteRunOptions& options) {
  Result<sim::Scenario> scenario = sim::LoadScenario(c.path);
  if (!scenario) return Error(scenario.error());
  CaseOutcome out;
  auto t0 = std::chrono::steady_clock::now();
  sim::Engine engine(*scenario);
  sim::OfflineOptions offline;
  offline.duration_s = scenario->duration_s;
  offline.scrape_interval_s = options.scrape_interval_s;
  Result<sim::OfflineRun> run = sim::RunScenarioOffline(engine, offline, work_dir, {}, false);
  if (!run) return Error(run.error());
  out.simulate_s = SecondsSince(t0);

  t0 = std::chrono::steady_clock::now();
  Result<std::vector<releases::Release>> log = releases::LoadReleasesJsonl(run->releases);
  if (!log) return Error(log.error());
  std::vector<ReplayInput> inputs;
  for (const std::string& path : run->telemetry) inputs.push_back({path, Role::kBaseline, {}});
  Result<std::unique_ptr<Replay>> replay = Replay::Open(std::move(inputs));
  if (!replay) return Error(replay.error());
  Result<CorrelateReport> report = Correlate(**replay, *log, options.correlate);
  if (!report) return Error(report.error());
  out.correlate_s = SecondsSince(t0);

  std::set<std::string> named;
  for (const Regression& reg : report->regressions) {
    for (const Suspect& s : reg.suspects) {
      named.insert(s.release);
      if (s.score > out.top_score) {
        out.top_score = s.score;
        out.top = s.release;
        out.top_kind = reg.causes.empty() ? std::nullopt : reg.causes.front().kind;
      }
    }
  }
  out.named.assign(named.begin(), named.end());
  out.regressions = static_cast<int>(report->regressions.size());
  if (c.guilty.empty()) {
    out.correct = named.empty();
  } else {
    out.top1 = out.top == c.guilty;
    out.correct = out.top1 && named.size() == 1;
  }
  out.report = std::move(*report);
  return out;
}

}  // namespace gpucanary::eval::correlate
