#include "eval/suite/suite.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "config/yaml_fields.h"
#include "sim/engine.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::suite {
namespace {

using config::Child;
using config::Contains;
using config::Fields;
using config::Index;
using config::JoinNames;
using config::ReadDuration;
using config::ReadString;
using config::Reporter;

// The vocabulary's cause kinds by name, in its order (vocab/vocab.h).
constexpr auto kCauseKinds = [] {
  std::array<std::string_view, vocab::kCauseKinds.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = vocab::kCauseKinds[i].name;
  return names;
}();
constexpr std::string_view kCategories[] = {"aa", "release", "node", "regression"};
constexpr std::string_view kVerdicts[] = {"pass", "fail", "not_fail"};
// The scopes a label takes (not the correlation's fleet).
constexpr std::string_view kScopes[] = {vocab::Name(vocab::Scope::kRelease),
                                        vocab::Name(vocab::Scope::kNode)};
constexpr std::string_view kTopKeys[] = {"cases"};
constexpr std::string_view kCaseKeys[] = {"file",          "category",   "release", "canary_nodes",
                                          "release_start", "verdict",    "causes",  "onset_s",
                                          "tags",          "description"};
constexpr std::string_view kCaseRequired[] = {"file",          "category",   "release",
                                              "canary_nodes",  "verdict",    "causes",
                                              "release_start", "description"};
constexpr std::string_view kCauseKeys[] = {"kind", "scope", "node", "gpus"};

// The index of `name` in `names` (REQUIRES: it is there).
template <typename Enum>
Enum IndexOf(std::span<const std::string_view> names, std::string_view name) {
  return static_cast<Enum>(std::find(names.begin(), names.end(), name) - names.begin());
}

// The GPU count of `host` in `s`, or 0 when it is not in the fleet.
int GpusOn(const sim::Scenario& s, std::string_view host) {
  for (const sim::NodeGroup& g : s.fleet) {
    if (std::find(g.hostnames.begin(), g.hostnames.end(), host) != g.hostnames.end()) {
      return g.gpus_per_node;
    }
  }
  return 0;
}

// Reads and checks one labels file. Thread-compatible; one per parse.
class SuiteParser {
 public:
  SuiteParser(const Reporter& r, std::filesystem::path dir) : r_(r), dir_(std::move(dir)) {}

  Result<std::vector<SuiteCase>> Parse(const YAML::Node& root) {
    if (!root.IsMap()) return r_.Fail(root, "labels", "expected a map with `cases`");
    Result<Fields> top = Fields::Read(r_, root, "", kTopKeys);
    if (!top) return Error(top.error());
    const YAML::Node* list = top->Find("cases");
    if (list == nullptr) return r_.Fail(top->mark(), "cases", "required field is missing");
    if (!list->IsSequence() || list->size() == 0) {
      return r_.Fail(*list, "cases", "expected a non-empty list of cases");
    }
    std::vector<SuiteCase> cases;
    for (std::size_t i = 0; i < list->size(); ++i) {
      Result<SuiteCase> c = ParseCase((*list)[i], Index("cases", i));
      if (!c) return Error(c.error());
      cases.push_back(std::move(*c));
    }
    return cases;
  }

 private:
  Result<SuiteCase> ParseCase(const YAML::Node& node, const std::string& field) {
    Result<Fields> f = Fields::Read(r_, node, field, kCaseKeys);
    if (!f) return Error(f.error());
    for (std::string_view key : kCaseRequired) {
      if (f->Find(key) == nullptr) {
        return r_.Fail(f->mark(), Child(field, key), "required field is missing");
      }
    }
    SuiteCase c;
    GC_RETURN_IF_ERROR(ReadScenario(*f->Find("file"), Child(field, "file"), &c));
    GC_RETURN_IF_ERROR(
        ReadEnum(*f->Find("category"), Child(field, "category"), kCategories, &c.category));
    GC_RETURN_IF_ERROR(
        ReadEnum(*f->Find("verdict"), Child(field, "verdict"), kVerdicts, &c.verdict));
    GC_RETURN_IF_ERROR(ReadRelease(*f->Find("release"), Child(field, "release"), &c));
    GC_RETURN_IF_ERROR(
        ReadNodes(*f->Find("canary_nodes"), Child(field, "canary_nodes"), c, &c.canary_nodes));
    Result<double> start =
        ReadTime(*f->Find("release_start"), Child(field, "release_start"), c.scenario);
    if (!start) return Error(start.error());
    c.release_start_s = *start;
    GC_RETURN_IF_ERROR(CheckDeploy(*f->Find("release_start"), Child(field, "release_start"), c));
    GC_RETURN_IF_ERROR(ReadCauses(*f->Find("causes"), Child(field, "causes"), &c));
    if (const YAML::Node* onset = f->Find("onset_s")) {
      Result<double> t = ReadTime(*onset, Child(field, "onset_s"), c.scenario);
      if (!t) return Error(t.error());
      c.onset_s = *t;
    }
    if (const YAML::Node* tags = f->Find("tags")) {
      GC_RETURN_IF_ERROR(ReadStrings(*tags, Child(field, "tags"), &c.tags));
    }
    Result<std::string> description =
        ReadString(r_, *f->Find("description"), Child(field, "description"));
    if (!description) return Error(description.error());
    c.description = *description;
    GC_RETURN_IF_ERROR(CheckCategory(*f, field, c));
    return c;
  }

  // `file`: relative to the labels file; read, parsed, and named once.
  Status ReadScenario(const YAML::Node& node, const std::string& field, SuiteCase* c) {
    Result<std::string> file = ReadString(r_, node, field);
    if (!file) return file.error();
    if (!files_.insert(*file).second) {
      return r_.Fail(node, field, "'" + *file + "' is labelled twice");
    }
    const std::filesystem::path path = dir_ / *file;
    Result<sim::Scenario> scenario = sim::LoadScenario(path.string());
    if (!scenario) return r_.Fail(node, field, scenario.error().message());
    c->file = *file;
    c->path = path.string();
    c->name = std::filesystem::path(*file).stem().string();
    c->scenario = std::move(*scenario);
    return Status::Ok();
  }

  template <typename Enum>
  Status ReadEnum(const YAML::Node& node, const std::string& field,
                  std::span<const std::string_view> names, Enum* out) const {
    if (!node.IsScalar() || !Contains(names, node.Scalar())) {
      return r_.Fail(node, field, "expected one of " + JoinNames(names));
    }
    *out = IndexOf<Enum>(names, node.Scalar());
    return Status::Ok();
  }

  Status ReadRelease(const YAML::Node& node, const std::string& field, SuiteCase* c) const {
    Result<std::string> release = ReadString(r_, node, field);
    if (!release) return release.error();
    if (!c->scenario.releases.contains(*release)) {
      return r_.Fail(node, field, "release '" + *release + "' is not in " + c->file);
    }
    c->release = *release;
    return Status::Ok();
  }

  Status ReadStrings(const YAML::Node& node, const std::string& field,
                     std::vector<std::string>* out) const {
    Result<std::vector<std::string>> list = config::ReadStrings(r_, node, field);
    if (!list) return list.error();
    out->insert(out->end(), list->begin(), list->end());
    return Status::Ok();
  }

  // A non-empty list of distinct hostnames of the case's fleet.
  Status ReadNodes(const YAML::Node& node, const std::string& field, const SuiteCase& c,
                   std::vector<std::string>* out) const {
    GC_RETURN_IF_ERROR(ReadStrings(node, field, out));
    if (out->empty()) return r_.Fail(node, field, "expected at least one node");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < out->size(); ++i) {
      const std::string& host = (*out)[i];
      if (GpusOn(c.scenario, host) == 0) {
        return r_.Fail(node[i], Index(field, i), "node '" + host + "' is not in " + c.file);
      }
      if (!seen.insert(host).second) {
        return r_.Fail(node[i], Index(field, i), "duplicate node '" + host + "'");
      }
    }
    return Status::Ok();
  }

  // Seconds from the scenario start, within its duration.
  Result<double> ReadTime(const YAML::Node& node, const std::string& field,
                          const sim::Scenario& s) const {
    Result<double> t = ReadDuration(r_, node, field);
    if (!t) return t;
    if (*t > s.duration_s) return r_.Fail(node, field, "after the end of the scenario");
    return t;
  }

  // The scenario deploys the release on exactly the canary nodes at release_start.
  Status CheckDeploy(const YAML::Node& node, const std::string& field, const SuiteCase& c) const {
    const std::set<std::string> canary(c.canary_nodes.begin(), c.canary_nodes.end());
    for (const sim::ScenarioEvent& e : c.scenario.events) {
      if (e.kind != sim::ScenarioEvent::kDeploy || e.release != c.release) continue;
      if (std::abs(e.at_s - c.release_start_s) > 1e-9) continue;
      if (std::set<std::string>(e.nodes.begin(), e.nodes.end()) == canary) return Status::Ok();
    }
    return r_.Fail(node, field,
                   c.file + " does not deploy '" + c.release + "' on exactly [" +
                       JoinNames(c.canary_nodes) + "] at this time");
  }

  Status ReadCauses(const YAML::Node& node, const std::string& field, SuiteCase* c) const {
    if (!node.IsSequence()) return r_.Fail(node, field, "expected a list (or [])");
    for (std::size_t i = 0; i < node.size(); ++i) {
      Result<ExpectedCause> cause = ReadCause(node[i], Index(field, i), *c);
      if (!cause) return cause.error();
      c->causes.push_back(std::move(*cause));
    }
    return Status::Ok();
  }

  Result<ExpectedCause> ReadCause(const YAML::Node& node, const std::string& field,
                                  const SuiteCase& c) const {
    Result<Fields> f = Fields::Read(r_, node, field, kCauseKeys);
    if (!f) return Error(f.error());
    for (std::string_view key : {"kind", "scope"}) {
      if (f->Find(key) == nullptr) {
        return r_.Fail(f->mark(), Child(field, key), "required field is missing");
      }
    }
    ExpectedCause cause;
    const YAML::Node& kind = *f->Find("kind");
    if (!kind.IsScalar() || !Contains(kCauseKinds, kind.Scalar())) {
      return r_.Fail(kind, Child(field, "kind"),
                     "unknown cause kind (valid: " + JoinNames(kCauseKinds) + ")");
    }
    cause.kind = *vocab::Parse<vocab::CauseKind>(kind.Scalar());
    const YAML::Node& scope = *f->Find("scope");
    if (!scope.IsScalar() || !Contains(kScopes, scope.Scalar())) {
      return r_.Fail(scope, Child(field, "scope"), "expected one of " + JoinNames(kScopes));
    }
    cause.scope = *vocab::Parse<vocab::Scope>(scope.Scalar());
    if (const YAML::Node* host = f->Find("node")) {
      Result<std::string> name = ReadString(r_, *host, Child(field, "node"));
      if (!name) return Error(name.error());
      if (GpusOn(c.scenario, *name) == 0) {
        return r_.Fail(*host, Child(field, "node"), "node '" + *name + "' is not in " + c.file);
      }
      cause.node = *name;
    } else if (cause.scope == vocab::Scope::kNode) {
      return r_.Fail(f->mark(), Child(field, "node"), "a node-scoped cause must name its node");
    }
    if (const YAML::Node* gpus = f->Find("gpus")) {
      GC_RETURN_IF_ERROR(ReadGpus(*gpus, Child(field, "gpus"), c, cause.node, &cause.gpus));
    }
    return cause;
  }

  // "node-5/6": a GPU of the fleet, on the cause's node when it names one.
  Status ReadGpus(const YAML::Node& node, const std::string& field, const SuiteCase& c,
                  const std::string& host, std::vector<std::string>* out) const {
    GC_RETURN_IF_ERROR(ReadStrings(node, field, out));
    for (std::size_t i = 0; i < out->size(); ++i) {
      const std::string& id = (*out)[i];
      const std::size_t slash = id.rfind('/');
      std::int64_t index = -1;
      const bool ok = slash != std::string::npos &&
                      config::ParseInt(std::string_view(id).substr(slash + 1), &index) &&
                      index >= 0 && index < GpusOn(c.scenario, id.substr(0, slash)) &&
                      (host.empty() || id.substr(0, slash) == host);
      if (!ok) {
        return r_.Fail(
            node[i], Index(field, i),
            "'" + id + "' is not a GPU <node>/<index> of " + (host.empty() ? c.file : host));
      }
    }
    return Status::Ok();
  }

  // What each category's verdict and causes must look like.
  Status CheckCategory(const Fields& f, const std::string& field, const SuiteCase& c) const {
    const YAML::Node& verdict = *f.Find("verdict");
    const YAML::Node& causes = *f.Find("causes");
    const auto any = [&](auto pred) { return std::any_of(c.causes.begin(), c.causes.end(), pred); };
    const bool release_cause =
        any([](const ExpectedCause& x) { return x.scope == vocab::Scope::kRelease; });
    switch (c.category) {
      case Category::kAa:
        // not_fail: a healthy release under a fleet-wide event that makes
        // the canary slower too (it cannot be shown not worse, nor blamed).
        if (c.verdict == Verdict::kFail) {
          return r_.Fail(verdict, Child(field, "verdict"), "an aa case must not fail");
        }
        if (!c.causes.empty()) return r_.Fail(causes, Child(field, "causes"), "must be [] for aa");
        break;
      case Category::kRelease:
      case Category::kRegression:
        if (c.verdict != Verdict::kFail) {
          return r_.Fail(verdict, Child(field, "verdict"), "a release fault must fail");
        }
        if (!release_cause) {
          return r_.Fail(causes, Child(field, "causes"), "expected a cause with scope release");
        }
        if (c.category == Category::kRegression && !any([](const ExpectedCause& x) {
              return x.kind == vocab::CauseKind::kSoftwareRegression;
            })) {
          return r_.Fail(causes, Child(field, "causes"), "a regression needs software_regression");
        }
        break;
      case Category::kNode:
        // A node fault halts the canary only through the seed's throttle
        // rule on a canary GPU after the release (tag `halt`).
        if (std::find(c.tags.begin(), c.tags.end(), "halt") != c.tags.end()) {
          if (c.verdict != Verdict::kFail || !release_cause) {
            return r_.Fail(verdict, Child(field, "verdict"),
                           "a halt case must fail with a release-scoped cause");
          }
          break;
        }
        if (c.verdict == Verdict::kFail) {
          return r_.Fail(verdict, Child(field, "verdict"), "node faults alone never fail");
        }
        if (c.causes.empty() || release_cause) {
          return r_.Fail(causes, Child(field, "causes"), "expected only node-scoped causes");
        }
        break;
    }
    return Status::Ok();
  }

  const Reporter& r_;
  std::filesystem::path dir_;
  std::set<std::string> files_;
};

}  // namespace

std::string_view CategoryName(Category category) {
  return kCategories[static_cast<std::size_t>(category)];
}

std::string_view VerdictName(Verdict verdict) {
  return kVerdicts[static_cast<std::size_t>(verdict)];
}

std::span<const std::string_view> CauseKinds() { return kCauseKinds; }

Result<std::vector<SuiteCase>> ParseSuite(std::string_view yaml_text,
                                          const std::string& labels_path) {
  const Reporter r{labels_path};
  // yaml-cpp reports malformed input by throwing; nothing thrown leaves here.
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    SuiteParser parser(r, std::filesystem::path(labels_path).parent_path());
    return parser.Parse(root);
  } catch (const YAML::Exception& e) {
    return r.Fail(e.mark, "syntax", e.msg);
  }
}

Result<std::vector<SuiteCase>> LoadSuite(const std::string& labels_path) {
  std::ifstream in(labels_path, std::ios::binary);
  if (!in) return Error(StatusCode::kNotFound, labels_path + ": cannot open labels file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error(StatusCode::kIoError, labels_path + ": read failed");
  return ParseSuite(text.str(), labels_path);
}

Result<CaseFiles> GenerateCase(const SuiteCase& c, const std::string& out_dir, bool gzip) {
  sim::Engine engine(c.scenario);
  const std::int64_t start_ms = engine.now_ms();
  sim::OfflineOptions options;
  options.duration_s = c.scenario.duration_s;
  Result<sim::OfflineRun> run =
      sim::RunScenarioOffline(engine, options, out_dir, c.canary_nodes, gzip);
  if (!run) return Error(run.error());
  CaseFiles files;
  files.canary = run->canary;
  files.baseline = run->baseline;
  files.truth = run->truth;
  files.releases = run->releases;
  files.release_start_unix_s = static_cast<double>(start_ms) / 1000.0 + c.release_start_s;
  files.stats = run->stats;
  return files;
}

}  // namespace gpucanary::eval::suite
