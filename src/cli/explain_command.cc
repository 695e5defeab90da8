// gpucanary explain-throttle MASK / explain-xid CODE: the DCGM vocabulary for a
// person at a terminal. One line of text (or a JSON object with --output json)
// saying what a clock-event bitmask or an XID code means; exit 0, or 3 with a
// message on stderr when the argument is malformed. An XID that is well formed
// but not in the catalog is an answer, not an error: exit 0.

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "dcgm/throttle.h"
#include "dcgm/xid.h"

namespace gpucanary::cli {
namespace {

struct ExplainArgs {
  std::string value;
  std::string output = "text";
};

nlohmann::json ThrottleJson(std::uint64_t mask) {
  const dcgm::DecodedClockEvents decoded = dcgm::DecodeThrottleReasons(mask);
  nlohmann::json reasons = nlohmann::json::array();
  for (const dcgm::ClockEventReason* r : decoded.reasons) {
    reasons.push_back({{"bit", dcgm::FormatMaskHex(r->bit)},
                       {"name", r->name},
                       {"exporter_name", r->exporter_name},
                       {"dcgm_macro", r->dcgm_macro},
                       {"nvml_macro", r->nvml_macro},
                       {"nvidia_smi", r->nvidia_smi},
                       {"impact", dcgm::ClockEventImpactName(r->impact)},
                       {"meaning", r->meaning}});
  }
  nlohmann::json unknown = nlohmann::json::array();
  for (std::uint64_t bit : decoded.unknown_bits) unknown.push_back(dcgm::FormatMaskHex(bit));
  return {{"mask", mask},
          {"mask_hex", dcgm::FormatMaskHex(mask)},
          {"harmful", decoded.any_harmful()},
          {"reasons", reasons},
          {"unknown_bits", unknown},
          {"summary", dcgm::DescribeThrottleReasons(mask)}};
}

void RunExplainThrottle(const ExplainArgs& args, CommandContext& ctx) {
  const Result<std::uint64_t> mask = dcgm::ParseBitmask(args.value);
  if (!mask) {
    ctx.err << "gpucanary explain-throttle: " << mask.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  if (args.output == "json") {
    ctx.out << ThrottleJson(*mask).dump(2) << "\n";
  } else {
    ctx.out << dcgm::DescribeThrottleReasons(*mask) << "\n";
  }
  ctx.exit_code = kExitOk;
}

nlohmann::json XidJson(std::uint32_t code) {
  nlohmann::json j = {{"xid", code}};
  const dcgm::XidInfo* info = dcgm::FindXid(code);
  j["known"] = info != nullptr;
  if (info != nullptr) {
    j["mnemonic"] = info->mnemonic;
    j["err_msg"] = info->err_msg;
    j["action"] = dcgm::XidActionName(info->action);
    j["action_text"] = dcgm::XidActionText(info->action);
    j["fatal"] = info->fatal;
    j["severity"] = dcgm::XidSeverityName(info->severity());
    j["likely_source"] = dcgm::XidSourceName(info->likely_source);
    j["meaning"] = info->meaning;
  }
  j["summary"] = dcgm::DescribeXid(code);
  return j;
}

void RunExplainXid(const ExplainArgs& args, CommandContext& ctx) {
  const Result<std::uint32_t> code = dcgm::ParseXidCode(args.value);
  if (!code) {
    ctx.err << "gpucanary explain-xid: " << code.error().message() << "\n";
    ctx.exit_code = kExitBadInput;
    return;
  }
  if (args.output == "json") {
    ctx.out << XidJson(*code).dump(2) << "\n";
  } else {
    ctx.out << dcgm::DescribeXid(*code) << "\n";
  }
  ctx.exit_code = kExitOk;
}

void AddOutputOption(CLI::App* cmd, ExplainArgs& args) {
  cmd->add_option("--output,-o", args.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
}

}  // namespace

void RegisterExplainCommands(CLI::App& app, CommandContext& ctx) {
  auto throttle_args = std::make_shared<ExplainArgs>();
  CLI::App* throttle = app.add_subcommand(
      "explain-throttle",
      "Explain a clock-event (throttle) bitmask, DCGM field 112, e.g. 0xA8 or 168");
  throttle->add_option("MASK", throttle_args->value, "The bitmask: hex with 0x, or decimal")
      ->required();
  AddOutputOption(throttle, *throttle_args);
  throttle->callback([throttle_args, &ctx] { RunExplainThrottle(*throttle_args, ctx); });

  auto xid_args = std::make_shared<ExplainArgs>();
  CLI::App* xid = app.add_subcommand(
      "explain-xid", "Explain an NVIDIA Xid code: meaning, immediate action, likely source");
  xid->add_option("CODE", xid_args->value, "The Xid code, decimal, e.g. 79")->required();
  AddOutputOption(xid, *xid_args);
  xid->callback([xid_args, &ctx] { RunExplainXid(*xid_args, ctx); });
}

}  // namespace gpucanary::cli
