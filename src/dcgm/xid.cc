#include "dcgm/xid.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <system_error>

namespace gpucanary::dcgm {
namespace {

using A = XidAction;
using S = XidSource;

// Mnemonic, action and fatal flag: NVSentinel xiderrorsmapping.csv @ 6f8b0fcfa8e5.
// err_msg: dcgm-exporter xid_errors.go. likely_source: the reference's derived
// note (13, 31, 43, 45, 69 software; ECC, NVLink, 79, GSP hardware or
// driver/firmware), extended by gpucanary to the rest from each XID's meaning.
constexpr XidInfo kXids[] = {
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", A::kRestartApp, false,
     S::kSoftware, "a channel stopped making progress (idle timeout)"},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
     "Graphics Engine Exception", A::kRestartApp, false, S::kSoftware,
     "compute/graphics engine exception, usually an application fault (out-of-bounds access, "
     "illegal instruction); repeats on the same GPC/TPC/SM point at hardware"},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", A::kRestartApp, false,
     S::kSoftware, "MMU fault: an illegal address, usually from the application"},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", A::kRestartApp,
     false, S::kDriverFirmware,
     "corrupted push buffer: driver fault, or corruption on PCIe or in memory"},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", A::kIgnore, false,
     S::kSoftware, "the application hit a software fault; its channel was reset, the GPU is fine"},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
     "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda",
     A::kWorkflowXid45, false, S::kSoftware,
     "channels torn down after an earlier error or a killed application; read the XID before it"},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", A::kResetGpu, true,
     S::kDriverFirmware, "the GPU stopped responding to the driver (GPU timeout)"},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", A::kWorkflowXid48, true,
     S::kHardware, "uncorrectable DRAM/SRAM ECC error; usually followed by XID 63/64 or 94/95"},
    {61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning", A::kReportIssue, true,
     S::kDriverFirmware, "PMU firmware hit a breakpoint or assertion"},
    {62, "PMU_HALT_ERROR", "Internal micro-controller halt", A::kResetGpu, true, S::kDriverFirmware,
     "PMU firmware halted (may not reach DCGM field 230)"},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "ECC page retirement or row remapping recording event",
     A::kIgnore, false, S::kHardware,
     "a page retirement or row remap was recorded; it takes effect at the next GPU reset"},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "ECC page retirement or row remapper recording failure",
     A::kResetGpu, true, S::kHardware, "recording a page retirement or row remap failed"},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", A::kRestartApp, false, S::kSoftware,
     "video decoder (NVDEC0) exception"},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", A::kRestartApp, false,
     S::kSoftware, "the application sent the graphics/compute engine an invalid class method"},
    {74, "NVLINK_ERROR", "NVLINK Error", A::kWorkflowNvlink, true, S::kHardware,
     "NVLink fault; fatal NVSwitch SXids also surface as XID 74"},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
     A::kRestartBareMetal, true, S::kHardware,
     "the GPU is gone from PCIe; NVML returns GPU_IS_LOST and its series vanish or freeze"},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", A::kIgnore, false,
     S::kHardware, "many corrected single-bit ECC errors in a short time"},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained ECC error", A::kRestartApp, false,
     S::kHardware, "uncorrectable ECC error contained to the application that touched it"},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained ECC error", A::kResetGpu, true,
     S::kHardware, "uncorrectable ECC error that affects every application on the GPU"},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", A::kResetGpu, true,
     S::kDriverFirmware, "a context switch did not finish in time"},
    {119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", A::kResetGpu, true, S::kDriverFirmware,
     "the GSP firmware stopped answering the driver"},
    {120, "GSP_ERROR", "GSP Error", A::kResetGpu, true, S::kDriverFirmware,
     "the GSP firmware reported an error"},
    {136, "ALI_TRAINING_FAIL", "ALI Training Fail", A::kResetGpu, true, S::kHardware,
     "NVLink link training (ALI) failed"},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Unrecovered ECC Error", A::kResetGpu, true,
     S::kHardware, "an uncorrectable ECC error escaped containment"},
    {143, "GPU_INIT_ERROR", "GPU Initialization Failure", A::kResetGpu, true, S::kDriverFirmware,
     "the GPU failed to initialise"},
    {144, "NVLINK_SAW_ERROR", "NVLINK: Saw Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) SAW unit error"},
    {145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) RLW unit error"},
    {146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) TLW unit error"},
    {147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) TREX unit error"},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", A::kWorkflowNvlink5, true,
     S::kHardware, "NVLink5 (Blackwell) NVLPW control error"},
    {149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) NETIR unit error"},
    {150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", A::kWorkflowNvlink5, true, S::kHardware,
     "NVLink5 (Blackwell) MSE unit error"},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", A::kFollowRelatedXid, false,
     S::kDriverFirmware,
     "the driver changed the GPU's recovery action; read it (NVML field 230, DCGM 1523) and "
     "follow the XID that caused it"},
    {155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", A::kResetGpu, true, S::kHardware,
     "NVLink error defined by NVLink software"},
    {156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", A::kResetGpu, true,
     S::kHardware, "a GPU resource was retired"},
    {158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", A::kResetGpu, true, S::kDriverFirmware,
     "a fatal timeout inside the GPU"},
    {160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", A::kRestartBareMetal, true,
     S::kHardware, "a channel was retired"},
};

constexpr bool XidsAreOrdered() {
  for (std::size_t i = 1; i < std::size(kXids); ++i) {
    if (kXids[i - 1].code >= kXids[i].code) return false;
  }
  return true;
}
static_assert(XidsAreOrdered(), "kXids: codes strictly ascending");

std::string NotInCatalog(std::uint32_t code) {
  return "XID " + std::to_string(code) + ": not in gpucanary's catalog; see NVIDIA's Xid catalog";
}

}  // namespace

XidSeverity XidInfo::severity() const { return SeverityOf(action); }

std::span<const XidInfo> AllXids() { return kXids; }

const XidInfo* FindXid(std::uint32_t code) {
  const auto* it = std::lower_bound(
      std::begin(kXids), std::end(kXids), code,
      [](const XidInfo& info, std::uint32_t wanted) { return info.code < wanted; });
  if (it == std::end(kXids) || it->code != code) return nullptr;
  return it;
}

Result<const XidInfo*> LookupXid(std::uint32_t code) {
  const XidInfo* info = FindXid(code);
  if (info == nullptr) return Error(StatusCode::kNotFound, NotInCatalog(code));
  return info;
}

XidSeverity SeverityOf(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
    case XidAction::kFollowRelatedXid:
      return XidSeverity::kInfo;
    case XidAction::kRestartApp:
    case XidAction::kCheckUvm:
    case XidAction::kWorkflowXid13And31:
    case XidAction::kWorkflowXid45:
      return XidSeverity::kApp;
    case XidAction::kResetGpu:
    case XidAction::kReportIssue:
    case XidAction::kWorkflowXid48:
    case XidAction::kWorkflowNvlink:
    case XidAction::kWorkflowNvlink5:
      return XidSeverity::kGpuReset;
    case XidAction::kRestartBareMetal:
    case XidAction::kRestartVm:
    case XidAction::kCheckMechanicals:
    case XidAction::kCheckThermals:
    case XidAction::kUpdateSwFw:
      return XidSeverity::kNode;
  }
  return XidSeverity::kNode;
}

std::string_view XidActionName(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
      return "IGNORE";
    case XidAction::kRestartApp:
      return "RESTART_APP";
    case XidAction::kResetGpu:
      return "RESET_GPU";
    case XidAction::kRestartBareMetal:
      return "RESTART_BM";
    case XidAction::kRestartVm:
      return "RESTART_VM";
    case XidAction::kCheckMechanicals:
      return "CHECK_MECHANICALS";
    case XidAction::kCheckThermals:
      return "CHECK_THERMALS";
    case XidAction::kUpdateSwFw:
      return "UPDATE_SWFW";
    case XidAction::kCheckUvm:
      return "CHECK_UVM";
    case XidAction::kReportIssue:
      return "UNEXPECTED_ERR_REPORT_ISSUE";
    case XidAction::kWorkflowXid13And31:
      return "WORKFLOW_XID_13_31";
    case XidAction::kWorkflowXid45:
      return "WORKFLOW_XID_45";
    case XidAction::kWorkflowXid48:
      return "WORKFLOW_XID_48";
    case XidAction::kWorkflowNvlink:
      return "WORKFLOW_NVLINK_ERR";
    case XidAction::kWorkflowNvlink5:
      return "WORKFLOW_NVLINK5_ERR";
    case XidAction::kFollowRelatedXid:
      return "FOLLOW_RELATED_XID";
  }
  return "UNKNOWN";
}

std::string_view XidActionText(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
      return "none needed";
    case XidAction::kRestartApp:
      return "restart the application";
    case XidAction::kResetGpu:
      return "reset the GPU";
    case XidAction::kRestartBareMetal:
      return "reboot the node";
    case XidAction::kRestartVm:
      return "restart the VM";
    case XidAction::kCheckMechanicals:
      return "check the board's power and mechanics";
    case XidAction::kCheckThermals:
      return "check cooling";
    case XidAction::kUpdateSwFw:
      return "update driver/firmware";
    case XidAction::kCheckUvm:
      return "check the unified-memory (UVM) setup";
    case XidAction::kReportIssue:
      return "collect a bug report for NVIDIA";
    case XidAction::kWorkflowXid13And31:
      return "follow NVIDIA's Xid 13/31 workflow";
    case XidAction::kWorkflowXid45:
      return "look at the XID that came before it";
    case XidAction::kWorkflowXid48:
      return "follow NVIDIA's Xid 48 (ECC) workflow";
    case XidAction::kWorkflowNvlink:
      return "follow NVIDIA's NVLink workflow";
    case XidAction::kWorkflowNvlink5:
      return "follow NVIDIA's NVLink5 workflow";
    case XidAction::kFollowRelatedXid:
      return "follow the action of the related XID";
  }
  return "unknown";
}

std::string_view XidSeverityName(XidSeverity severity) {
  switch (severity) {
    case XidSeverity::kInfo:
      return "info";
    case XidSeverity::kApp:
      return "app";
    case XidSeverity::kGpuReset:
      return "gpu_reset";
    case XidSeverity::kNode:
      return "node";
  }
  return "unknown";
}

std::string_view XidSourceName(XidSource source) {
  switch (source) {
    case XidSource::kSoftware:
      return "software";
    case XidSource::kHardware:
      return "hardware";
    case XidSource::kDriverFirmware:
      return "driver_firmware";
  }
  return "unknown";
}

std::string_view XidSourceText(XidSource source) {
  switch (source) {
    case XidSource::kSoftware:
      return "software";
    case XidSource::kHardware:
      return "hardware";
    case XidSource::kDriverFirmware:
      return "driver or firmware";
  }
  return "unknown";
}

Result<std::uint32_t> ParseXidCode(std::string_view text) {
  const auto invalid = [text](std::string_view why) {
    return Error(StatusCode::kInvalidArgument,
                 "not an XID code: '" + std::string(text) + "': " + std::string(why));
  };
  if (text.empty()) return Error(StatusCode::kInvalidArgument, "empty XID code: expected e.g. 79");
  if (text.front() == '-') return invalid("negative; XID codes are unsigned");
  std::uint32_t code = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, code, 10);
  if (ec == std::errc::invalid_argument || ptr != end) {
    return invalid("expected decimal digits, e.g. 79");
  }
  if (ec == std::errc::result_out_of_range) return invalid("does not fit in 32 bits");
  return code;
}

std::string DescribeXid(std::uint32_t code) {
  if (code == 0) {
    return "XID 0: no XID (dcgm-exporter prints 0 with err_msg \"No Error\" before the first XID)";
  }
  const XidInfo* info = FindXid(code);
  if (info == nullptr) return NotInCatalog(code);
  std::string line = "XID " + std::to_string(code) + " (" + std::string(info->mnemonic) +
                     "): " + std::string(info->err_msg) + " \u2014 " +
                     (info->fatal ? "fatal" : "not fatal") + "; action: ";
  line += XidActionText(info->action);
  line += " (";
  line += XidActionName(info->action);
  line += "); points at ";
  line += XidSourceText(info->likely_source);
  return line;
}

}  // namespace gpucanary::dcgm
