// field_suite: the field suite (eval/field/README.md) against gpucanary's
// judge. Generates every case into a temporary folder (or --out DIR, kept),
// judges it as `gpucanary judge --baseline baseline.om --canary canary.om
// --release-start T` does, and prints the markdown report on stdout; one
// progress line per case on stderr.
//
//   build/release/eval/field/field_suite [--seed N] [--cases N] [--out DIR]
//       [--policy FILE] [--filter PREFIX] [--class NAME] [--jobs N] [--trace]
//
// --class NAME makes every case of that class (`--class aa --cases 1000`:
// the A/A false-fail rate).
// --trace prints each case's simulated fleet (10 s means, canary vs
// baseline) on stderr.
//
// Exit status: 0 when the suite ran (whatever the judge said), 3 on bad usage
// or a case that could not be generated or read.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/policy/policy.h"
#include "eval/field/field_case.h"
#include "eval/field/field_generator.h"
#include "eval/field/field_run.h"

namespace {

namespace field = gpucanary::eval::field;

int Usage(const char* why) {
  std::fprintf(stderr,
               "field_suite: %s\nusage: field_suite [--seed N] [--cases N] [--out DIR] "
               "[--policy FILE] [--filter PREFIX] [--class NAME] [--jobs N] [--trace]\n",
               why);
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  int cases = 56;
  int jobs = 1;
  bool trace = false;
  std::optional<field::CaseClass> only;
  std::string out_dir, policy_path, filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--seed" && (v = value())) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (arg == "--cases" && (v = value())) {
      cases = std::atoi(v);
    } else if (arg == "--jobs" && (v = value())) {
      jobs = std::max(1, std::atoi(v));
    } else if (arg == "--out" && (v = value())) {
      out_dir = v;
    } else if (arg == "--policy" && (v = value())) {
      policy_path = v;
    } else if (arg == "--filter" && (v = value())) {
      filter = v;
    } else if (arg == "--class" && (v = value())) {
      only = field::ParseClass(v);
      if (!only) return Usage(("no class '" + std::string(v) + "'").c_str());
    } else if (arg == "--trace") {
      trace = true;
    } else {
      return Usage(("unknown or incomplete argument '" + arg + "'").c_str());
    }
  }
  if (cases <= 0) return Usage("--cases must be positive");
  gpucanary::Result<gpucanary::analysis::Policy> policy = gpucanary::analysis::DefaultPolicy();
  if (!policy_path.empty()) policy = gpucanary::analysis::LoadPolicy(policy_path);
  if (!policy) {
    std::fprintf(stderr, "field_suite: %s\n", policy.error().message().c_str());
    return 3;
  }
  const bool keep = !out_dir.empty();
  const std::string root = keep ? out_dir
                                : (std::filesystem::temp_directory_path() /
                                   ("gpucanary-field-" + std::to_string(::getpid())))
                                      .string();

  std::vector<field::FieldCase> all = field::MakeSuite(seed, cases, only);
  std::vector<field::FieldCase> todo;
  for (field::FieldCase& c : all) {
    if (c.name.rfind(filter, 0) == 0) todo.push_back(std::move(c));
  }
  std::vector<std::optional<field::FieldOutcome>> results(todo.size());
  std::mutex mu;
  std::size_t next = 0;
  bool failed = false;
  auto worker = [&] {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= todo.size() || failed) return;
        i = next++;
      }
      const field::FieldCase& c = todo[i];
      const auto t0 = std::chrono::steady_clock::now();
      const std::string dir = root + "/" + c.name;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      gpucanary::Result<field::CaseFiles> files = field::GenerateCase(c, dir, trace);
      if (files && keep) {
        const gpucanary::Status st = field::WriteLabels(c, *files, dir);
        if (!st.ok()) files = gpucanary::Error(st);
      }
      gpucanary::Result<field::FieldOutcome> o =
          files ? field::JudgeCase(c, *files, *policy)
                : gpucanary::Result<field::FieldOutcome>(gpucanary::Error(files.error()));
      if (!keep) std::filesystem::remove_all(dir, ec);
      std::lock_guard<std::mutex> lock(mu);
      if (!o) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), o.error().message().c_str());
        failed = true;
        return;
      }
      o->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "%-26s %-9s %-13s %-7s %6.1fs  %s\n", c.name.c_str(),
                   std::string(field::ExpectName(c.expect)).c_str(),
                   std::string(gpucanary::analysis::VerdictName(o->verdict)).c_str(),
                   o->verdict_ok ? (o->cause_ok ? "ok" : "verdict") : "WRONG", o->seconds,
                   o->first_summary.c_str());
      if (trace) std::fprintf(stderr, "%s", o->files.trace.c_str());
      results[i] = std::move(*o);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(jobs));
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  if (failed) return 3;
  std::vector<field::FieldOutcome> outcomes;
  outcomes.reserve(results.size());
  for (auto& r : results) outcomes.push_back(std::move(*r));
  std::printf("%s", field::Markdown(outcomes, seed).c_str());
  return 0;
}
