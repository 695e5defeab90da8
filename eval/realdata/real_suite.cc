#include "eval/realdata/real_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include "analysis/replay/replay.h"
#include "eval/suite/sentences.h"
#include "importers/dcgm_csv_importer.h"
#include "importers/import_report.h"
#include "importers/nvidia_smi_importer.h"
#include "recording/recording_writer.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::realdata {
namespace {

// Where every case starts: 2027-01-15T08:00:00Z, a round second after every
// trace was recorded, so no arm's moved timestamps collide with its original ones.
constexpr std::int64_t kStartS = 1'800'000'000;
constexpr double kBusyUtilization = 90;  // % GPU utilisation: "busy" in the traces' READMEs

constexpr std::string_view kH100Pcie = "NVIDIA H100 PCIe";
constexpr std::string_view kA100Pcie = "NVIDIA A100-PCIE-40GB";
constexpr std::string_view kAtharva = "atharvanihalani-gpu-telemetry-exploration/";
constexpr std::string_view kYqg = "yqg9651-cuda_test/";

ArmSource Smi(const std::string& file, std::string_view model) {
  return {TraceFormat::kNvidiaSmi, std::string(kYqg) + file, {}, std::string(model), 0};
}
ArmSource Half(const std::string& file, bool upper, double offset_s = 0) {
  std::vector<std::string> gpus = upper ? std::vector<std::string>{"4", "5", "6", "7"}
                                        : std::vector<std::string>{"0", "1", "2", "3"};
  return {TraceFormat::kDcgmCsv, std::string(kAtharva) + file, std::move(gpus), "", offset_s};
}

}  // namespace

std::string_view ExpectName(Expect expect) {
  switch (expect) {
    case Expect::kPass:
      return "pass";
    case Expect::kNotFail:
      return "not_fail";
    case Expect::kNotPass:
      return "not_pass";
    case Expect::kFail:
      return "fail";
  }
  return "?";
}

std::vector<RealCase> RealCases() {
  const std::string h100z = "h100pcie350w_fp8gemm_allzero.csv";
  const std::string h100r = "h100pcie350w_fp8gemm_random.csv";
  const std::string h100m = "h100pcie350w_fp8gemm_maxpower.csv";
  const std::string a100z = "a100pcie250w_fp16gemm_allzero.csv";
  const std::string a100r = "a100pcie250w_fp16gemm_random.csv";
  const std::string a100m = "a100pcie250w_fp16gemm_maxpower.csv";
  std::vector<RealCase> cases;
  struct Gemm {
    const char* name;
    const char* what;
    Expect expect;
    const std::string& base;
    const std::string& canary;
    std::string_view model;
  };
  // One GEMM on one power-capped PCIe card; only the input data differs, and
  // with it the power the tensor cores draw (the folder's README).
  const Gemm gemms[] = {
      {"h100-gemm-random-vs-allzero",
       "H100 PCIe 350 W: SM clock 1620 -> 1305 MHz at the cap, -18% TFLOPS", Expect::kFail, h100z,
       h100r, kH100Pcie},
      {"h100-gemm-maxpower-vs-allzero", "H100 PCIe 350 W: 1620 -> 1020 MHz at the cap, -34% TFLOPS",
       Expect::kFail, h100z, h100m, kH100Pcie},
      {"h100-gemm-maxpower-vs-random", "H100 PCIe 350 W: 1305 -> 1020 MHz at the cap, -20% TFLOPS",
       Expect::kFail, h100r, h100m, kH100Pcie},
      {"a100-gemm-maxpower-vs-allzero",
       "A100 PCIe 250 W: 1410 -> 1275 MHz at the cap, -9.8% TFLOPS", Expect::kFail, a100z, a100m,
       kA100Pcie},
      {"a100-gemm-maxpower-vs-random", "A100 PCIe 250 W: 1410 -> 1275 MHz at the cap, -9.8% TFLOPS",
       Expect::kFail, a100r, a100m, kA100Pcie},
      {"a100-gemm-random-vs-allzero", "A100 PCIe: both at 1410 MHz, 215.7 vs 215.8 TFLOPS (A/A)",
       Expect::kNotFail, a100z, a100r, kA100Pcie},
      {"a100-gemm-allzero-vs-random", "A100 PCIe: the same pair the other way round (A/A)",
       Expect::kNotFail, a100r, a100z, kA100Pcie},
      {"h100-gemm-allzero-vs-random", "H100 PCIe: the canary is the faster run (+22% TFLOPS)",
       Expect::kNotFail, h100r, h100z, kH100Pcie},
      {"h100-gemm-random-vs-maxpower", "H100 PCIe: the canary is the faster run (+25% TFLOPS)",
       Expect::kNotFail, h100m, h100r, kH100Pcie},
      {"a100-gemm-allzero-vs-maxpower", "A100 PCIe: the canary is the faster run (+11% TFLOPS)",
       Expect::kNotFail, a100m, a100z, kA100Pcie},
  };
  // Each pair twice: with the card's model (whose default power limit the
  // cap is read against) and as an unnamed GPU, where nothing says what the
  // limit is (nvidia-smi logs carry neither limit nor throttle reasons) and
  // a cap is known only by the power held flat while the clock is held down.
  for (const bool named : {true, false}) {
    for (const Gemm& g : gemms) {
      std::string name = named ? g.name : std::string(g.name) + "-unnamed";
      std::string what = named ? g.what : std::string(g.what) + "; no model name";
      cases.push_back({std::move(name),
                       std::move(what),
                       g.expect,
                       g.expect == Expect::kFail ? "power_cap" : "",
                       {Smi(g.base, named ? g.model : std::string_view())},
                       {Smi(g.canary, named ? g.model : std::string_view())},
                       0});
    }
  }

  // Two halves of one 8x H100 SXM5 node (DCGM at 10 Hz), the same job on both.
  const auto halves = [&](std::string name, std::string what, Expect expect,
                          const std::string& file, bool canary_upper) {
    cases.push_back({std::move(name),
                     std::move(what),
                     expect,
                     "",
                     {Half(file, !canary_upper)},
                     {Half(file, canary_upper)},
                     0});
  };
  halves("i4-halves", "inference on all 8 GPUs: GPUs 0-3 against 4-7 (A/A)", Expect::kNotFail,
         "i4_telemetry.csv", false);
  halves("i4-halves-swapped", "the same, GPUs 4-7 against 0-3 (A/A)", Expect::kNotFail,
         "i4_telemetry.csv", true);
  halves("b1-halves", "model loaded, idle: GPUs 0-3 against 4-7 (A/A)", Expect::kNotFail,
         "b1_telemetry.csv", false);
  halves("t3-halves", "DDP training, all 8 at the 700 W cap: 0-3 against 4-7 (A/A)",
         Expect::kNotFail, "t3_telemetry.csv", false);
  halves("t6-halves", "FSDP with CPU offload: 0-3 against 4-7 (A/A)", Expect::kNotFail,
         "t6_telemetry.csv", false);
  halves("e2-training-vs-inference",
         "GPUs 4-7 train at the 700 W cap (SW power cap) beside 0-3 serving: another workload",
         Expect::kNotPass, "e2_telemetry.csv", true);
  halves("e2-inference-vs-training", "the same node the other way round: another workload",
         Expect::kNotPass, "e2_telemetry.csv", false);
  // A canary that stops working: GPUs with the model loaded and idle (b1)
  // against the same GPUs' peers serving (i4).
  cases.push_back({"idle-vs-inference",
                   "canary: model loaded, idle (b1); baseline serving (i4)",
                   Expect::kFail,
                   "software_regression",
                   {Half("i4_telemetry.csv", true)},
                   {Half("b1_telemetry.csv", false)},
                   0});
  // The same after some history: both serve for 330 s, then the canary's
  // release leaves its GPUs idle while the baseline keeps serving (its i4
  // half once more).
  cases.push_back({"inference-then-idle",
                   "canary serves (i4), then idles after the release (b1)",
                   Expect::kFail,
                   "software_regression",
                   {Half("i4_telemetry.csv", true), Half("i4_telemetry.csv", true, 330)},
                   {Half("i4_telemetry.csv", false), Half("b1_telemetry.csv", false, 330)},
                   330});
  cases.push_back({"training-vs-inference",
                   "canary trains (t3) where the baseline serves (i4)",
                   Expect::kNotPass,
                   "",
                   {Half("i4_telemetry.csv", true)},
                   {Half("t3_telemetry.csv", false)},
                   0});
  return cases;
}

namespace {

Status ImportArm(const std::vector<ArmSource>& sources, const std::string& hostname,
                 const std::string& shared_dir, const std::string& output) {
  auto writer = recording::RecordingWriter::Open(output);
  if (!writer) return writer.error();
  for (const ArmSource& source : sources) {
    importers::ImportOptions options;
    options.hostname = hostname;
    options.model_name = source.model;
    options.gpus = source.gpus;
    options.start_at_ms = (kStartS * 1000) + std::llround(source.offset_s * 1000);
    const std::string path = shared_dir + "/data/gpu-traces/" + source.file;
    auto report = source.format == TraceFormat::kNvidiaSmi
                      ? importers::ImportNvidiaSmiCsv(path, options, **writer)
                      : importers::ImportDcgmCsv(path, options, **writer);
    if (!report) return report.error();
  }
  return (*writer)->Close();
}

std::string CauseKey(const analysis::Cause& cause) {
  return std::string(vocab::Name(cause.kind)) + "/" + std::string(vocab::Name(cause.scope));
}

}  // namespace

Result<RealOutcome> RunRealCase(const RealCase& c, const RunOptions& options) {
  const std::filesystem::path dir = std::filesystem::path(options.work_dir) / c.name;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Error(StatusCode::kIoError, dir.string() + ": " + error.message());
  const std::string baseline = (dir / "baseline.om").string();
  const std::string canary = (dir / "canary.om").string();
  GC_RETURN_IF_ERROR(ImportArm(c.baseline, "baseline", options.shared_dir, baseline));
  GC_RETURN_IF_ERROR(ImportArm(c.canary, "canary", options.shared_dir, canary));

  const std::int64_t release = kStartS + std::llround(c.release_offset_s);
  RealOutcome out;
  out.name = c.name;
  out.expect = c.expect;
  out.expected_cause = c.cause;
  Status st = analysis::ReplayRecordings(
      {{baseline, analysis::Role::kBaseline, std::nullopt},
       {canary, analysis::Role::kCanary, std::nullopt}},
      {}, [&](analysis::Replay& replay) -> Status {
        analysis::Judge judge({.policy = options.policy, .release_start_s = release});
        out.busy_from_s.reset();
        out.busy_to_s.reset();
        analysis::Tick tick;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) return more.error();
          if (!*more) break;
          judge.Add(tick, analysis::Catalog::Of(replay));
          const int util = replay.MetricId("DCGM_FI_DEV_GPU_UTIL");
          if (util < 0 || tick.time_s < release) continue;
          for (const std::int32_t g : tick.gpus) {
            if (replay.gpus()[static_cast<size_t>(g)].role != analysis::Role::kCanary) continue;
            const analysis::Point* p = tick.FindGpu(g, util);
            if (p == nullptr || p->value < kBusyUtilization) continue;
            const double at = static_cast<double>(tick.time_s - release);
            if (!out.busy_from_s) out.busy_from_s = at;
            out.busy_to_s = at;
          }
        }
        out.report = judge.Finish();
        return Status::Ok();
      });
  if (!st.ok()) return Error(std::move(st));

  const analysis::Report& r = out.report;
  if (r.decided_at) out.decided_s = *r.decided_at - static_cast<double>(release);
  for (const analysis::Cause& cause : r.causes) {
    for (std::string& line : suite::SummaryContradictions(cause))
      out.contradictions.push_back(std::move(line));
    const std::string key = CauseKey(cause);
    if (std::find(out.causes.begin(), out.causes.end(), key) == out.causes.end()) {
      out.causes.push_back(key);
    }
  }
  const bool failed = r.verdict == analysis::Verdict::kFail;
  switch (c.expect) {
    case Expect::kPass:
      out.ok = r.verdict == analysis::Verdict::kPass;
      break;
    case Expect::kNotFail:
      out.ok = !failed;
      break;
    case Expect::kNotPass:
      out.ok = r.verdict != analysis::Verdict::kPass;
      break;
    case Expect::kFail: {
      const bool cause_found =
          std::any_of(r.causes.begin(), r.causes.end(), [&](const analysis::Cause& x) {
            return x.failing && vocab::Name(x.kind) == c.cause && x.scope == vocab::Scope::kRelease;
          });
      out.ok = failed && cause_found;
      out.within_busy =
          failed && out.decided_s && out.busy_to_s && *out.decided_s <= *out.busy_to_s;
      break;
    }
  }
  return out;
}

namespace {

std::string Seconds(const std::optional<double>& s) {
  if (!s) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f s", *s);
  return text;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::string Markdown(const std::vector<RealOutcome>& outcomes) {
  int right = 0;
  int fails = 0, fails_right = 0, fails_in_busy = 0;
  int aa = 0, aa_false_fail = 0, aa_pass = 0;
  std::size_t contradictions = 0;
  for (const RealOutcome& o : outcomes) {
    right += o.ok ? 1 : 0;
    contradictions += o.contradictions.size();
    if (o.expect == Expect::kFail) {
      ++fails;
      fails_right += o.ok ? 1 : 0;
      fails_in_busy += o.ok && o.within_busy ? 1 : 0;
    }
    if (o.expect == Expect::kNotFail || o.expect == Expect::kPass) {
      ++aa;
      aa_false_fail += o.report.verdict == analysis::Verdict::kFail ? 1 : 0;
      aa_pass += o.report.verdict == analysis::Verdict::kPass ? 1 : 0;
    }
  }
  std::string md;
  md += "| | real traces |\n| --- | ---: |\n";
  md += "| verdicts as labelled | " + std::to_string(right) + "/" +
        std::to_string(outcomes.size()) + " |\n";
  md += "| regressions failed with the right cause, scope release | " +
        std::to_string(fails_right) + "/" + std::to_string(fails) + " (" +
        std::to_string(fails_in_busy) + " within the busy period) |\n";
  md += "| same-work and faster-canary pairs failed | " + std::to_string(aa_false_fail) + "/" +
        std::to_string(aa) + " (" + std::to_string(aa_pass) + " passed) |\n";
  md += "| summaries contradicting their numbers | " + std::to_string(contradictions) + " |\n\n";
  md +=
      "| case | expected | verdict | decided | busy | causes | |\n| --- | --- | --- | ---: | ---: "
      "| --- | --- |\n";
  for (const RealOutcome& o : outcomes) {
    std::string expected(ExpectName(o.expect));
    if (!o.expected_cause.empty()) expected += " " + o.expected_cause;
    const std::string busy =
        o.busy_from_s ? Seconds(o.busy_from_s) + " - " + Seconds(o.busy_to_s) : "-";
    md += "| " + o.name + " | " + expected + " | " +
          std::string(analysis::VerdictName(o.report.verdict)) + " | " + Seconds(o.decided_s) +
          " | " + busy + " | " + Join(o.causes) + " | " + (o.ok ? "" : "✗") + " |\n";
  }
  return md;
}

}  // namespace gpucanary::eval::realdata
