// gpucanary's verdict endpoint as Argo Rollouts reads it, with the
// templates and Rollout of docs/ci-cd.md ("Argo Rollouts"), read from the
// page. The harness follows argoproj/argo-rollouts at 9f8d111 (2026-08-17):
//   - validation: utils/analysis/factory.go ValidateMetric, and
//     pkg/apis/rollouts/validation/validation_references.go (a step
//     template's metric must not run indefinitely; a background template's
//     arguments without a value must come from the Rollout's analysis args);
//   - arguments: utils/analysis/factory.go (valueFrom.fieldRef on the
//     Rollout's metadata);
//   - a measurement: metricproviders/webmetric (a non-2xx status is an
//     error; the body's jsonPath is `result`), utils/evaluate EvaluateResult
//     (success and failure conditions, either alone, or neither);
//   - the metric's phase: analysis/analysis.go assessMetricStatus and
//     assessMetricFailureInconclusiveOrError (failureLimit,
//     inconclusiveLimit, consecutiveErrorLimit 4, consecutiveSuccessLimit,
//     count).
// The conditions are evaluated by a small evaluator of the expression
// forms the templates use (`result.a == "x"`, `!=`, `&&`, `||`, `!`,
// parentheses, true/false), not the whole of expr-lang.

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "canary/api.h"
#include "canary/harness_util.h"
#include "canary/test_util.h"

namespace gpucanary::canary {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
constexpr std::int64_t kStart = testing::kSimStart;

// The YAML block of docs/ci-cd.md after `marker`.
YAML::Node FromPage(const std::string& marker) { return testing::YamlAfter(marker); }

// --- Conditions: the expression forms the templates use. ---
class Condition {
 public:
  Condition(std::string text, const Json& result) : s_(std::move(text)), result_(result) {}
  // The condition's value; nullopt (with why) on an error, as Argo's
  // evaluation error.
  std::optional<bool> Eval(std::string* error) {
    Json v = Or();
    Skip();
    if (!error_.empty() || pos_ != s_.size() || !v.is_boolean()) {
      *error = error_.empty() ? "not a boolean expression: " + s_ : error_;
      return std::nullopt;
    }
    return v.get<bool>();
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(std::string_view token) {
    Skip();
    if (s_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  Json Or() {
    Json v = And();
    while (Eat("||")) {
      Json r = And();
      v = Truth(v) || Truth(r);
    }
    return v;
  }
  Json And() {
    Json v = Unary();
    while (Eat("&&")) {
      Json r = Unary();
      v = Truth(v) && Truth(r);
    }
    return v;
  }
  Json Unary() {
    if (Eat("!") && !Eat("=")) return !Truth(Unary());
    return Compare();
  }
  Json Compare() {
    Json v = Primary();
    if (Eat("==")) return v == Primary();
    if (Eat("!=")) return v != Primary();
    return v;
  }
  Json Primary() {
    Skip();
    if (Eat("(")) {
      Json v = Or();
      if (!Eat(")")) error_ = "missing ) in " + s_;
      return v;
    }
    if (pos_ < s_.size() && s_[pos_] == '"') {
      const std::size_t end = s_.find('"', pos_ + 1);
      std::string lit = s_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      return lit;
    }
    std::size_t end = pos_;
    while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) ||
                               s_[end] == '_' || s_[end] == '.')) {
      ++end;
    }
    const std::string word = s_.substr(pos_, end - pos_);
    pos_ = end;
    if (word == "true") return true;
    if (word == "false") return false;
    if (word.starts_with("result")) {
      Json v = result_;
      std::stringstream path(word.size() > 6 ? word.substr(7) : "");
      std::string key;
      while (std::getline(path, key, '.')) {
        if (!v.is_object() || !v.contains(key)) return nullptr;
        v = v[key];
      }
      return v;
    }
    error_ = "cannot read '" + word + "' in " + s_;
    return nullptr;
  }
  bool Truth(const Json& v) {
    if (!v.is_boolean()) {
      error_ = "not a boolean in " + s_;
      return false;
    }
    return v.get<bool>();
  }

  std::string s_;
  const Json& result_;
  std::size_t pos_ = 0;
  std::string error_;
};

enum class Phase { kPending, kRunning, kSuccessful, kFailed, kInconclusive, kError };
const char* Name(Phase p) {
  constexpr const char* kNames[] = {"Pending", "Running",      "Successful",
                                    "Failed",  "Inconclusive", "Error"};
  return kNames[static_cast<int>(p)];
}

int IntOr(const YAML::Node& n, int fallback) { return n ? n.as<int>() : fallback; }

// ValidateMetric, and the reference validation's "runs indefinitely".
std::string Validate(const YAML::Node& metric, bool background) {
  const int count = IntOr(metric["count"], 0);
  const int failure_limit = IntOr(metric["failureLimit"], 0);
  const int success_limit = IntOr(metric["consecutiveSuccessLimit"], 0);
  const int inconclusive_limit = IntOr(metric["inconclusiveLimit"], 0);
  const bool interval = static_cast<bool>(metric["interval"]);
  if (success_limit < 0) return "consecutiveSuccessLimit must be >= 0";
  if (failure_limit < -1) return "failureLimit must be >= 0, or -1 to be disabled";
  if (success_limit == 0 && failure_limit == -1) {
    return "failureLimit and consecutiveSuccessLimit cannot both be disabled";
  }
  if (inconclusive_limit < 0) return "inconclusiveLimit must be >= 0";
  if (count > 0) {
    if (success_limit >= 0 && failure_limit >= 0 && count < failure_limit + success_limit) {
      return "count must be >= failureLimit + consecutiveSuccessLimit";
    }
    if (failure_limit < 0 && count < success_limit)
      return "count must be >= consecutiveSuccessLimit";
    if (count < inconclusive_limit) return "count must be >= inconclusiveLimit";
  }
  if (count > 1 && !interval) return "interval must be specified when count > 1";
  // EffectiveCount: count, or 1 when neither count nor interval; nil (runs
  // indefinitely) with only an interval.
  if (!background && count == 0 && interval) {
    return "metric " + metric["name"].as<std::string>() + " runs indefinitely";
  }
  return "";
}

// One AnalysisRun of one metric, measured against the CanaryApi.
class MetricRun {
 public:
  MetricRun(const YAML::Node& metric, std::string url_path, CanaryApi& api)
      : metric_(metric), path_(std::move(url_path)), api_(api) {
    interval_s_ = std::stoll(metric["interval"].as<std::string>("60s"));
    count_ = IntOr(metric["count"], metric["interval"] ? 0 : 1);
  }
  std::int64_t interval_s() const { return interval_s_; }

  // A measurement, then the metric's phase (assessMetricStatus).
  Phase Measure(bool terminating = false) {
    if (terminating) return measurements_ == 0 ? Phase::kSuccessful : Assess(true);
    ++measurements_;
    const net::HttpResponse r = testing::Call(api_, "GET", path_);
    Phase m = Phase::kError;
    if (r.status >= 200 && r.status < 300) {
      const Json result = Json::parse(r.body, nullptr, false);  // jsonPath "{$}": the whole body
      m = Evaluate(result);
      last_body_ = r.body;
    }
    consecutive_error_ = m == Phase::kError ? consecutive_error_ + 1 : 0;
    consecutive_success_ = m == Phase::kSuccessful ? consecutive_success_ + 1 : 0;
    failed_ += m == Phase::kFailed ? 1 : 0;
    inconclusive_ += m == Phase::kInconclusive ? 1 : 0;
    return Assess(false);
  }
  const std::string& last_body() const { return last_body_; }

 private:
  Phase Evaluate(const Json& result) {
    const std::string success = metric_["successCondition"].as<std::string>("");
    const std::string failure = metric_["failureCondition"].as<std::string>("");
    bool ok = false;
    bool bad = false;
    std::string error;
    if (!success.empty()) {
      const std::optional<bool> v = Condition(success, result).Eval(&error);
      if (!v) return Phase::kError;
      ok = *v;
    }
    if (!failure.empty()) {
      const std::optional<bool> v = Condition(failure, result).Eval(&error);
      if (!v) return Phase::kError;
      bad = *v;
    }
    if (success.empty() && failure.empty()) return Phase::kSuccessful;
    if (!success.empty() && failure.empty()) bad = !ok;
    if (success.empty() && !failure.empty()) ok = !bad;
    if (bad) return Phase::kFailed;
    if (!ok) return Phase::kInconclusive;
    return Phase::kSuccessful;
  }
  Phase Assess(bool terminating) {
    const int failure_limit = IntOr(metric_["failureLimit"], 0);
    const int inconclusive_limit = IntOr(metric_["inconclusiveLimit"], 0);
    const int success_limit = IntOr(metric_["consecutiveSuccessLimit"], 0);
    std::optional<Phase> bad;
    if (failure_limit >= 0 && failed_ > failure_limit) bad = Phase::kFailed;
    if (inconclusive_ > inconclusive_limit) bad = Phase::kInconclusive;
    if (consecutive_error_ > 4) bad = Phase::kError;  // the default consecutiveErrorLimit
    if (bad) return *bad;
    if (success_limit > 0 && consecutive_success_ >= success_limit) return Phase::kSuccessful;
    if (count_ > 0 && measurements_ >= count_) {
      const bool failure_applicable = failure_limit >= 0;
      const bool success_applicable = success_limit > 0;
      if (failure_applicable && success_applicable) return Phase::kInconclusive;
      if (success_applicable) return Phase::kFailed;
      return Phase::kSuccessful;
    }
    return terminating ? Phase::kSuccessful : Phase::kRunning;
  }

  YAML::Node metric_;
  std::string path_;
  CanaryApi& api_;
  std::int64_t interval_s_ = 60;
  int count_ = 0;
  int measurements_ = 0;
  int failed_ = 0;
  int inconclusive_ = 0;
  int consecutive_error_ = 0;
  int consecutive_success_ = 0;
  std::string last_body_;
};

// The template's one metric with its arguments resolved from the Rollout
// (valueFrom.fieldRef metadata.annotations['k']): the URL's path.
std::string ResolvedPath(const YAML::Node& metric, const YAML::Node& rollout_args,
                         const YAML::Node& rollout) {
  std::string url = metric["provider"]["web"]["url"].as<std::string>();
  for (const YAML::Node& arg : rollout_args) {
    std::string value;
    if (arg["value"]) {
      value = arg["value"].as<std::string>();
    } else {
      const std::string path = arg["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
      const std::string prefix = "metadata.annotations['";
      EXPECT_TRUE(path.starts_with(prefix)) << path;
      const std::string key = path.substr(prefix.size(), path.size() - prefix.size() - 2);
      value = rollout["metadata"]["annotations"][key].as<std::string>();
    }
    const std::string ref = "{{args." + arg["name"].as<std::string>() + "}}";
    for (std::size_t at = url.find(ref); at != std::string::npos; at = url.find(ref)) {
      url.replace(at, ref.size(), value);
    }
  }
  return url.substr(url.find('/', url.find("//") + 2));
}

class ArgoHarnessTest : public testing::LiveCanaryFixture {
 protected:
  // The Rollout of the page, its annotation set to `release`, which starts
  // on `node` at +20 s.
  YAML::Node Rollout(const std::string& release, const std::string& node) {
    EXPECT_TRUE(manager_
                    ->Start({.release_id = release,
                             .started_at = static_cast<double>(kStart + 20),
                             .targets = {node},
                             .selector = {},
                             .previous = ""})
                    .has_value());
    YAML::Node rollout = FromPage("argo-rollout");
    rollout["metadata"]["annotations"]["gpucanary.io/release"] = release;
    return rollout;
  }
  // Measures `run` every interval until it completes (or `max` measurements),
  // the canaries judged every second in between; the phase and when.
  std::pair<Phase, std::int64_t> RunToEnd(MetricRun& run, int max) {
    Phase p = Phase::kRunning;
    for (int i = 0; i < max && (p == Phase::kRunning || p == Phase::kPending); ++i) {
      p = run.Measure();
      if (p != Phase::kRunning) break;
      Judge(run.interval_s());
    }
    return {p, clock_.NowMs() / 1000 - kStart};
  }
  // The page's step template run against `release` on `node`, canaries
  // judged for `duration_s`: its phase, when (seconds after the fleet's
  // start) and the last body measured.
  struct StepOutcome {
    Phase phase;
    std::int64_t at;
    std::string body;
  };
  StepOutcome Step(std::int64_t duration_s, const std::string& release, const std::string& node) {
    NewManager(duration_s);
    const YAML::Node rollout = Rollout(release, node);
    const YAML::Node metric = FromPage("argo-step-template")["spec"]["metrics"][0];
    MetricRun run(metric, ResolvedPath(metric, StepArgs(rollout), rollout), *api_);
    const auto [phase, at] = RunToEnd(run, 60);
    return {phase, at, run.last_body()};
  }
  YAML::Node StepArgs(const YAML::Node& rollout) {
    for (const YAML::Node& step : rollout["spec"]["strategy"]["canary"]["steps"]) {
      if (step["analysis"]) return step["analysis"]["args"];
    }
    ADD_FAILURE() << "no analysis step";
    return {};
  }
};

// Both templates pass Argo's validation where the page uses them; the
// template docs/canaries.md used to show (an interval, no count) is
// refused as a step, as Argo refuses it.
TEST_F(ArgoHarnessTest, TheDocumentedTemplatesPassArgosValidation) {
  const YAML::Node step = FromPage("argo-step-template");
  const YAML::Node background = FromPage("argo-background-template");
  const YAML::Node rollout = FromPage("argo-rollout");
  EXPECT_EQ(Validate(step["spec"]["metrics"][0], false), "");
  EXPECT_EQ(Validate(background["spec"]["metrics"][0], true), "");
  // Background arguments without a value come from the Rollout's analysis args.
  for (const YAML::Node& arg : background["spec"]["args"]) {
    bool found = false;
    for (const YAML::Node& r : rollout["spec"]["strategy"]["canary"]["analysis"]["args"]) {
      found = found || r["name"].as<std::string>() == arg["name"].as<std::string>();
    }
    EXPECT_TRUE(found) << arg["name"].as<std::string>();
  }
  const YAML::Node old = YAML::Load(R"(
name: gpucanary-verdict
interval: 10s
successCondition: result.verdict == "pass"
failureCondition: result.verdict == "fail"
failureLimit: 0
inconclusiveLimit: 60
)");
  EXPECT_EQ(Validate(old, false), "metric gpucanary-verdict runs indefinitely");
  EXPECT_EQ(Validate(old, true), "");
}

// The power-brake release fails the analysis step within a minute of its
// start; the rollout would abort.
TEST_F(ArgoHarnessTest, TheStepTemplateFailsABadRelease) {
  const StepOutcome o = Step(600, "fp8-kernel", "node-4");
  EXPECT_STREQ(Name(o.phase), "Failed") << o.body;
  EXPECT_LE(o.at, 80);
}

// A release that changes nothing: the judge passes it (about 90 s in), the
// step succeeds at that measurement and the rollout goes on.
TEST_F(ArgoHarnessTest, TheStepTemplatePassesAHealthyRelease) {
  const StepOutcome o = Step(600, "noop", "node-5");
  EXPECT_STREQ(Name(o.phase), "Successful") << o.body;
  EXPECT_LE(o.at, 150);
}

// A canary that ends without a verdict (a 60 s window) fails the step: the
// failure condition reads its state, not only its verdict.
TEST_F(ArgoHarnessTest, TheStepTemplateFailsACanaryThatEndsWithoutAVerdict) {
  const StepOutcome o = Step(60, "noop", "node-5");
  EXPECT_STREQ(Name(o.phase), "Failed") << o.body;
  EXPECT_NE(o.body.find("\"state\":\"inconclusive\""), std::string::npos) << o.body;
}

// In the background, the bad release aborts; the healthy one keeps running
// (never Successful on its own: the steps advance the rollout) and ends
// Successful when the rollout completes and terminates it.
TEST_F(ArgoHarnessTest, TheBackgroundTemplateAbortsABadReleaseAndLetsAGoodOneRun) {
  NewManager(600);
  const YAML::Node bad = Rollout("fp8-kernel", "node-4");
  const YAML::Node good = Rollout("noop", "node-5");
  const YAML::Node metric = FromPage("argo-background-template")["spec"]["metrics"][0];
  const YAML::Node args = bad["spec"]["strategy"]["canary"]["analysis"]["args"];
  MetricRun bad_run(metric, ResolvedPath(metric, args, bad), *api_);
  MetricRun good_run(metric, ResolvedPath(metric, args, good), *api_);
  Phase bad_phase = Phase::kRunning;
  Phase good_phase = Phase::kRunning;
  for (int i = 0; i < 20; ++i) {
    if (bad_phase == Phase::kRunning) bad_phase = bad_run.Measure();
    if (good_phase == Phase::kRunning) good_phase = good_run.Measure();
    Judge(bad_run.interval_s());
  }
  EXPECT_STREQ(Name(bad_phase), "Failed") << bad_run.last_body();
  EXPECT_STREQ(Name(good_phase), "Running") << good_run.last_body();
  EXPECT_STREQ(Name(good_run.Measure(/*terminating=*/true)), "Successful");
}

// The evaluator reads the conditions as expr-lang does for these forms.
TEST(ArgoConditionTest, ConditionsOverTheVerdictBody) {
  const Json body = {{"verdict", "inconclusive"}, {"decided", true}, {"state", "inconclusive"}};
  std::string error;
  EXPECT_EQ(Condition(R"(result.verdict == "pass")", body).Eval(&error), false);
  EXPECT_EQ(
      Condition(R"(result.verdict == "fail" || result.state == "inconclusive")", body).Eval(&error),
      true);
  EXPECT_EQ(
      Condition(R"(result.decided && !(result.verdict != "inconclusive"))", body).Eval(&error),
      true);
  EXPECT_EQ(Condition(R"(result.verdict)", body).Eval(&error), std::nullopt);
  EXPECT_EQ(error, R"(not a boolean expression: result.verdict)");
}

}  // namespace
}  // namespace gpucanary::canary
