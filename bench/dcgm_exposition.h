#pragma once
// Builds a dcgm-exporter-style exposition for benchmarks: `gpus` GPUs on nodes
// of 8, the fields of the default counters CSV plus throttle reasons and PCIe
// link fields, with the exporter's exact label order, HELP/TYPE lines, family
// order by field id, and 6-decimal doubles.

#include <cstdio>
#include <string>

namespace gpucanary::bench {

inline std::string MakeDcgmExposition(int gpus) {
  struct Field {
    const char* name;
    const char* type;
    const char* help;
    bool is_double;
    double base;
  };
  static constexpr Field kFields[] = {
      {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", false, 1980},
      {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", false, 2619},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons.", false, 0},
      {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", false, 45},
      {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", false, 61},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", true, 612.25},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
       "Total energy consumption since boot (in mJ).", false, 2.3e11},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", false, 0},
      {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", false, 100},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", false, 63},
      {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", false, 0},
      {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", false, 0},
      {"DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe link generation.", false, 5},
      {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe link width.", false, 16},
      {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", false, 4012},
      {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", false, 77219},
      {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", false, 328},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
       "Number of remapped rows for uncorrectable errors", false, 0},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
       "Number of remapped rows for correctable errors", false, 0},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", false, 0},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
       "Total number of NVLink bandwidth counters for all lanes.", false, 0},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
       true, 0.912345},
      {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
       true, 0.853211},
      {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.",
       true, 0.231234},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
       "Ratio of cycles the tensor (HMMA) pipe is active.", true, 0.354321},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
       "Ratio of cycles the device memory interface is active sending or receiving data.", true,
       0.612345},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
       "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       false, 123456789},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
       "The rate of data received over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       false, 987654321},
  };
  std::string out;
  char buf[512];
  for (const Field& f : kFields) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += f.help;
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += f.type;
    out += '\n';
    for (int g = 0; g < gpus; ++g) {
      const int node = g / 8;
      const int idx = g % 8;
      std::snprintf(
          buf, sizeof buf,
          "%s{gpu=\"%d\",UUID=\"GPU-%08x-69c4-b61d-e0bc-%012x\",pci_bus_id=\"00000000:%02X:00.0\","
          "device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-%d\","
          "DCGM_FI_DRIVER_VERSION=\"580.105.08\"} ",
          f.name, idx, static_cast<unsigned>(node * 8 + idx) * 2654435761u,
          static_cast<unsigned>(g), 0x53 + idx * 0x11, idx, node);
      out += buf;
      const double v = f.base * (1.0 + 0.001 * (g % 13));
      if (f.is_double) {
        std::snprintf(buf, sizeof buf, "%f\n", v);
      } else {
        std::snprintf(buf, sizeof buf, "%lld\n", static_cast<long long>(v));
      }
      out += buf;
    }
  }
  return out;
}

}  // namespace gpucanary::bench
