#include "eval/field/field_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "analysis/replay/replay.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::field {

namespace {

using analysis::Cause;
using analysis::Judge;
using analysis::Replay;
using analysis::Report;
using analysis::Role;
using analysis::Tick;
using analysis::Verdict;

// judge_command.cc's JudgeRecordings and JudgeReplay, less the CLI's messages.
Result<Report> JudgeFiles(const CaseFiles& files, const analysis::Policy& policy) {
  std::optional<Result<Report>> judged;
  const Status st = analysis::ReplayRecordings(
      {{files.baseline, Role::kBaseline, std::nullopt},
       {files.canary, Role::kCanary, std::nullopt}},
      {}, [&](Replay& replay) -> Status {
        Judge judge({.policy = policy, .release_start_s = files.release_unix_s});
        Tick tick;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) {
            judged = Error(more.error());
            return more.error();
          }
          if (!*more) break;
          judge.Add(tick, analysis::Catalog::Of(replay));
        }
        judged = judge.Finish();
        return Status::Ok();
      });
  if (!st.ok()) return Error(st);
  return std::move(*judged);
}

std::string Seconds(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", v);
  return buf;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", 100 * (ratio - 1));
  return buf;
}

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string MedianText(const std::vector<double>& v) {
  const std::optional<double> m = Median(v);
  return m ? Seconds(*m) : "–";
}

bool IsConfounder(CaseClass c) {
  switch (c) {
    case CaseClass::kHeatEvent:
    case CaseClass::kFacilityPowerCap:
    case CaseClass::kLoadShift:
    case CaseClass::kLoadMismatch:
    case CaseClass::kMissingFields:
    case CaseClass::kBaselineNodeHot:
    case CaseClass::kCanaryNodePreThrottled:
      return true;
    default:
      return false;
  }
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

}  // namespace

Result<FieldOutcome> JudgeCase(const FieldCase& c, const CaseFiles& files,
                               const analysis::Policy& policy) {
  Result<Report> report = JudgeFiles(files, policy);
  if (!report) return Error(report.error().WithPrefix(c.name + ": "));
  FieldOutcome out;
  out.c = c;
  out.files = files;
  out.verdict = report->verdict;
  out.decided_at = report->decided_at;
  out.score = report->score;
  out.notes = report->notes;
  const double from =
      c.expect == Expect::kFail ? files.onset_unix_s : static_cast<double>(files.release_unix_s);
  if (report->decided_at) out.delay_s = *report->decided_at - from;
  for (const Cause& cause : report->causes) {
    std::string s(cause.failing ? "!" : "");
    s.append(vocab::Name(cause.kind)).append("/").append(vocab::Name(cause.scope));
    if (cause.scope == vocab::Scope::kNode) {
      std::string nodes;
      for (const std::string& n : cause.nodes) nodes += (nodes.empty() ? "" : ",") + n;
      s += "@" + nodes;
    }
    out.causes.push_back(s);
    if (out.first_summary.empty() || (cause.failing && out.first_summary[0] != '!')) {
      out.first_summary = (cause.failing ? "!" : "") + cause.summary;
    }
  }
  switch (c.expect) {
    case Expect::kPass:
      out.verdict_ok = report->verdict == Verdict::kPass;
      break;
    case Expect::kNotFail:
      out.verdict_ok = report->verdict != Verdict::kFail;
      break;
    case Expect::kFail:
      out.verdict_ok = report->verdict == Verdict::kFail;
      break;
  }
  const auto kind_ok = [&](const Cause& cause) {
    return std::find(c.kinds.begin(), c.kinds.end(), vocab::Name(cause.kind)) != c.kinds.end();
  };
  if (c.scope == "release") {
    out.cause_ok = std::any_of(report->causes.begin(), report->causes.end(), [&](const Cause& x) {
      return x.failing && x.scope == vocab::Scope::kRelease && kind_ok(x);
    });
  } else if (c.scope == "node") {
    out.cause_ok = std::any_of(report->causes.begin(), report->causes.end(), [&](const Cause& x) {
      return x.scope == vocab::Scope::kNode && kind_ok(x) &&
             std::find(x.nodes.begin(), x.nodes.end(), c.node) != x.nodes.end();
    });
  } else {
    out.cause_ok = std::none_of(report->causes.begin(), report->causes.end(),
                                [](const Cause& x) { return x.failing; });
  }
  return out;
}

Status WriteLabels(const FieldCase& c, const CaseFiles& files, const std::string& dir) {
  nlohmann::json j = {
      {"name", c.name},
      {"class", ClassName(c.cls)},
      {"seed", c.seed},
      {"expect", ExpectName(c.expect)},
      {"kinds", c.kinds},
      {"scope", c.scope},
      {"node", c.node},
      {"description", c.description},
      {"start", files.start_unix_s},
      {"release_start", files.release_unix_s},
      {"onset", files.onset_unix_s},
      {"restart_s", c.restart_s},
      {"model", c.sku->model_name},
      {"served_model", c.model.model_name},
      {"tp", c.model.tp},
      {"hosts", c.hosts},
      {"judge", "gpucanary judge --baseline baseline.om --canary canary.om --release-start " +
                    std::to_string(files.release_unix_s)}};
  nlohmann::json canary = nlohmann::json::array();
  for (const int n : c.canary) canary.push_back(c.hosts[static_cast<std::size_t>(n)]);
  j["canary_hosts"] = canary;
  std::ofstream out(dir + "/labels.json");
  out << j.dump(2) << "\n";
  if (!out) return Status(StatusCode::kIoError, "cannot write " + dir + "/labels.json");
  return Status::Ok();
}

std::string Markdown(const std::vector<FieldOutcome>& outcomes, std::uint64_t seed) {
  std::string md;
  // Summary.
  int aa = 0, aa_fail = 0, aa_pass = 0, aa_pass5 = 0;
  int conf = 0, conf_fail = 0, reg = 0, reg_caught = 0, reg_cause = 0, node_cases = 0,
      node_cause = 0;
  std::vector<double> reg_delay, pass_delay;
  int right = 0;
  for (const FieldOutcome& o : outcomes) {
    right += o.verdict_ok ? 1 : 0;
    if (o.c.cls == CaseClass::kAa) {
      ++aa;
      aa_fail += o.verdict == Verdict::kFail;
      aa_pass += o.verdict == Verdict::kPass;
      aa_pass5 += o.verdict == Verdict::kPass && o.delay_s && *o.delay_s <= 300;
    }
    if (IsConfounder(o.c.cls)) {
      ++conf;
      conf_fail += o.verdict == Verdict::kFail;
    }
    if (o.c.scope == "node") {
      ++node_cases;
      node_cause += o.cause_ok;
    }
    if (o.c.expect == Expect::kFail) {
      ++reg;
      reg_caught += o.verdict == Verdict::kFail;
      reg_cause += o.verdict == Verdict::kFail && o.cause_ok;
      if (o.verdict == Verdict::kFail && o.delay_s) reg_delay.push_back(*o.delay_s);
    }
    if (o.verdict == Verdict::kPass && o.delay_s) pass_delay.push_back(*o.delay_s);
  }
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "Field suite, seed %llu, %zu cases: **%d right** (pass→pass, not_fail→not fail, "
                "fail→fail).\n\n"
                "| measure | value |\n| --- | ---: |\n"
                "| A/A false fails | %d / %d |\n"
                "| A/A passed | %d / %d (within 5 min of the release: %d) |\n"
                "| confounder false fails (fleet events, load, missing fields, node faults) | %d / "
                "%d |\n"
                "| regressions caught (fail) | %d / %d |\n"
                "| regressions caught with the right cause and scope release | %d / %d |\n"
                "| node faults named on their node (scope node) | %d / %d |\n"
                "| time to decision, caught regressions (median, from onset) | %s |\n"
                "| time to decision, passes (median, from the release) | %s |\n\n",
                static_cast<unsigned long long>(seed), outcomes.size(), right, aa_fail, aa, aa_pass,
                aa, aa_pass5, conf_fail, conf, reg_caught, reg, reg_cause, reg, node_cause,
                node_cases, MedianText(reg_delay).c_str(), MedianText(pass_delay).c_str());
  md += buf;

  // Per class.
  md +=
      "| class | expected | right / cases | cause right | verdicts (pass/fail/inconclusive) | "
      "median decision |\n| --- | --- | ---: | ---: | --- | ---: |\n";
  for (CaseClass cls : AllClasses()) {
    int n = 0, ok = 0, cause = 0, p = 0, f = 0, inc = 0;
    std::vector<double> delays;
    std::string expected, scope;
    std::vector<std::string> kinds;
    for (const FieldOutcome& o : outcomes) {
      if (o.c.cls != cls) continue;
      ++n;
      ok += o.verdict_ok;
      cause += o.cause_ok;
      p += o.verdict == Verdict::kPass;
      f += o.verdict == Verdict::kFail;
      inc += o.verdict == Verdict::kInconclusive;
      if (o.delay_s) delays.push_back(*o.delay_s);
      expected = std::string(ExpectName(o.c.expect));
      scope = o.c.scope;
      for (const std::string& k : o.c.kinds) {
        if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
      }
    }
    if (!kinds.empty()) {
      expected += " (";
      for (std::size_t i = 0; i < kinds.size(); ++i) expected += (i ? "\\|" : "") + kinds[i];
      expected += "/" + scope + ")";
    }
    if (n == 0) continue;
    std::snprintf(buf, sizeof buf, "| %s | %s | %d / %d | %d / %d | %d / %d / %d | %s |\n",
                  std::string(ClassName(cls)).c_str(), expected.c_str(), ok, n, cause, n, p, f, inc,
                  MedianText(delays).c_str());
    md += buf;
  }

  // Per case.
  md +=
      "\n| case | expected | verdict | right | decided | causes found | realised effect | "
      "scenario |\n| --- | --- | --- | --- | ---: | --- | --- | --- |\n";
  for (const FieldOutcome& o : outcomes) {
    std::string causes;
    for (const std::string& s : o.causes) causes += (causes.empty() ? "" : ", ") + s;
    const CaseFiles& f = o.files;
    std::string effect;
    if (f.baseline_clock_mhz > 0 && f.canary_clock_mhz > 0) {
      effect += "clock " + Percent(f.canary_clock_mhz / f.baseline_clock_mhz);
    } else if (f.canary_clock_mhz == 0) {
      effect += "canary idle";
    }
    if (f.baseline_itl_s > 0 && f.canary_itl_s > 0) {
      effect += ", ITL " + Percent(f.canary_itl_s / f.baseline_itl_s);
    }
    if (f.canary_capped_s + f.baseline_capped_s > 0) {
      effect += ", 0x4 GPU-s " + std::to_string(f.canary_capped_s) + "/" +
                std::to_string(f.baseline_capped_s);
    }
    if (f.canary_thermal_s + f.baseline_thermal_s > 0) {
      effect += ", thermal GPU-s " + std::to_string(f.canary_thermal_s) + "/" +
                std::to_string(f.baseline_thermal_s);
    }
    std::string expected(ExpectName(o.c.expect));
    if (!o.c.kinds.empty()) expected += " " + o.c.kinds[0] + "/" + o.c.scope;
    md += "| " + o.c.name + " | " + expected + " | " +
          std::string(analysis::VerdictName(o.verdict)) + " | " +
          (o.verdict_ok ? (o.cause_ok ? "yes" : "verdict") : "**no**") + " | " +
          (o.delay_s ? Seconds(*o.delay_s) : "–") + " | " + Escape(causes) + " | " + effect +
          " | " + Escape(o.c.description) + " |\n";
  }
  return md;
}

}  // namespace gpucanary::eval::field
