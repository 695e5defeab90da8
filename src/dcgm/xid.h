#pragma once
// XID catalog: what the NVIDIA driver's Xid error codes mean, what NVIDIA says
// to do about each, and whether a canary regression could have caused it.
//
// An XID reaches gpucanary as DCGM field 230 (DCGM_FI_DEV_XID_ERRORS: the code of
// the *last* XID, kept forever), as dcgm-exporter's DCGM_EXP_XID_ERRORS_COUNT{xid}
// windowed count, or as an NVML event.
//
// Sources (see shared/reference/dcgm-telemetry.md section 4):
//  - mnemonic, immediate action, fatal flag: NVIDIA NVSentinel
//    xiderrorsmapping.csv, which encodes the "Resolution Bucket (Immediate
//    Action)" column of NVIDIA's Xid catalog
//    (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html);
//  - err_msg: the text dcgm-exporter attaches as the err_msg label
//    (internal/pkg/collector/xid_errors.go);
//  - severity and likely_source: gpucanary's own reading (derived, not NVIDIA's).
//
// The catalog holds the XIDs common on data-center GPUs, not all ~170.
// All functions are thread-safe; the table is static and lives forever.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gpucanary::dcgm {

// NVSentinel's action codes (actionmapping.ini). kFollowRelatedXid is ours for
// Xid 154, whose mapping row says to follow the guidance of another Xid.
enum class XidAction : std::uint8_t {
  kIgnore,              // IGNORE
  kRestartApp,          // RESTART_APP
  kResetGpu,            // RESET_GPU
  kRestartBareMetal,    // RESTART_BM: reboot the node
  kRestartVm,           // RESTART_VM
  kCheckMechanicals,    // CHECK_MECHANICALS
  kCheckThermals,       // CHECK_THERMALS
  kUpdateSwFw,          // UPDATE_SWFW
  kCheckUvm,            // CHECK_UVM
  kReportIssue,         // UNEXPECTED_ERR_REPORT_ISSUE
  kWorkflowXid13And31,  // WORKFLOW_XID_13_31
  kWorkflowXid45,       // WORKFLOW_XID_45
  kWorkflowXid48,       // WORKFLOW_XID_48
  kWorkflowNvlink,      // WORKFLOW_NVLINK_ERR
  kWorkflowNvlink5,     // WORKFLOW_NVLINK5_ERR
  kFollowRelatedXid,    // FOLLOW_RELATED_XID (gpucanary's token)
};

// How far the blast reaches, derived from the action alone (SeverityOf).
enum class XidSeverity : std::uint8_t {
  kInfo,      // nothing to do
  kApp,       // the application (or its input) is affected; restart or investigate it
  kGpuReset,  // the GPU needs a reset (or a GPU-level workflow)
  kNode,      // the node (or VM, or its hardware) needs attention
};

// Where the cause most likely lies when the XID shows up during a release.
enum class XidSource : std::uint8_t {
  kSoftware,        // the application: suspect the release under test
  kHardware,        // memory, NVLink, PCIe, the board
  kDriverFirmware,  // driver, GSP/PMU firmware
};

struct XidInfo {
  std::uint32_t code;
  std::string_view mnemonic;  // NVIDIA's name, e.g. ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
  std::string_view err_msg;   // dcgm-exporter's err_msg label text
  XidAction action;           // NVIDIA's immediate action
  bool fatal;
  XidSource likely_source;
  std::string_view meaning;  // short, for people

  XidSeverity severity() const;
};

// The catalog, ascending by code.
std::span<const XidInfo> AllXids();

// The entry for `code`, or nullptr when the catalog does not hold it.
const XidInfo* FindXid(std::uint32_t code);

// Like FindXid, but an unknown code is a kNotFound error whose message says the
// code is not in gpucanary's catalog and points at NVIDIA's Xid catalog.
Result<const XidInfo*> LookupXid(std::uint32_t code);

// info / app / gpu_reset / node: IGNORE and FOLLOW_RELATED_XID are info;
// RESTART_APP, CHECK_UVM and the Xid 13/31/45 workflows are app; RESET_GPU,
// UNEXPECTED_ERR_REPORT_ISSUE and the Xid 48 / NVLink workflows are gpu_reset;
// RESTART_BM, RESTART_VM, CHECK_MECHANICALS, CHECK_THERMALS, UPDATE_SWFW are node.
XidSeverity SeverityOf(XidAction action);

std::string_view XidActionName(XidAction action);        // "RESTART_BM"
std::string_view XidActionText(XidAction action);        // "reboot the node"
std::string_view XidSeverityName(XidSeverity severity);  // "gpu_reset"
std::string_view XidSourceName(XidSource source);        // "driver_firmware"
std::string_view XidSourceText(XidSource source);        // "driver or firmware"

// Parses an XID code as written in logs and labels: decimal digits only, at most
// 2^32 - 1. Returns kInvalidArgument naming what was wrong otherwise.
Result<std::uint32_t> ParseXidCode(std::string_view text);

// One line for a person, e.g.
//   "XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS): GPU has fallen off the
//    bus — fatal; action: reboot the node (RESTART_BM); points at hardware"
// For a code not in the catalog:
//   "XID 999: not in gpucanary's catalog; see NVIDIA's Xid catalog"
// Code 0 is not an XID: dcgm-exporter prints it (err_msg "No Error") before the
// first one, and the line says so.
std::string DescribeXid(std::uint32_t code);

}  // namespace gpucanary::dcgm
