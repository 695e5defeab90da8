#pragma once
// The part of NVML's C ABI that gpucanary calls, declared here because the
// NVML header ships only with NVIDIA's development packages and gpucanary
// builds without them: the library is opened at run time (nvml/library.h).
//
// Every type, constant and struct layout below is NVML's own (nvml.h, API 12
// and 13; checked against NVIDIA/go-nvml gen/nvml/nvml.h and summarised in
// shared/reference/dcgm-telemetry.md §3). A layout that differs from the
// driver's corrupts memory, so each struct carries a static_assert of the
// size nvml.h gives it on x86-64 and aarch64 Linux. The fake library the
// tests build (tests/fake_nvml/) implements the same declarations.

#include <cstddef>
#include <cstdint>

// NVML's names and C integer types are kept exactly, so a reader can match
// each line with nvml.h.
// NOLINTBEGIN(google-runtime-int, readability-identifier-naming)
extern "C" {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;

// nvmlReturn_t values that matter (nvml.h nvmlReturn_enum).
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_NO_DATA = 21;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// Buffer sizes (nvml.h NVML_DEVICE_*_BUFFER_SIZE).
inline constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

// nvmlClockType_t.
inline constexpr int NVML_CLOCK_GRAPHICS = 0;
inline constexpr int NVML_CLOCK_SM = 1;
inline constexpr int NVML_CLOCK_MEM = 2;

// nvmlTemperatureSensors_t.
inline constexpr int NVML_TEMPERATURE_GPU = 0;

// nvmlPcieUtilCounter_t.
inline constexpr int NVML_PCIE_UTIL_TX_BYTES = 0;
inline constexpr int NVML_PCIE_UTIL_RX_BYTES = 1;

// nvmlMemoryErrorType_t and nvmlEccCounterType_t.
inline constexpr int NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;
inline constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
inline constexpr int NVML_VOLATILE_ECC = 0;
inline constexpr int NVML_AGGREGATE_ECC = 1;

// nvmlEventType bits.
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;

// nvmlFieldValue_t field ids and value types.
inline constexpr unsigned NVML_FI_DEV_MEMORY_TEMP = 82;
inline constexpr int NVML_VALUE_TYPE_DOUBLE = 0;
inline constexpr int NVML_VALUE_TYPE_UNSIGNED_INT = 1;
inline constexpr int NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
inline constexpr int NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
inline constexpr int NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
inline constexpr int NVML_VALUE_TYPE_SIGNED_INT = 5;
inline constexpr int NVML_VALUE_TYPE_UNSIGNED_SHORT = 6;

// GPM metric ids (nvmlGpmMetricId_t). Utilizations are percent 0-100;
// PCIe rates MiB/s.
inline constexpr unsigned NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
inline constexpr unsigned NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20;
inline constexpr unsigned NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21;
inline constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;
inline constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;
// nvmlGpmMetricsGet_t's array grew from 98 to 210 to 333 entries while its
// version stayed 1: the struct is declared with the largest size, and only
// ids below 98 are asked for, so any driver's copy fits inside it.
inline constexpr unsigned NVML_GPM_METRIC_MAX = 333;

struct nvmlPciInfo_t {  // nvmlPciInfo_st, as nvmlDeviceGetPciInfo_v2/_v3 fill it
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};
static_assert(sizeof(nvmlPciInfo_t) == 68);

struct nvmlUtilization_t {  // percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(nvmlUtilization_t) == 8);

struct nvmlMemory_t {  // bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_t) == 24);

struct nvmlMemory_v2_t {  // bytes; `used` includes `reserved`
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_v2_t) == 40);
// NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, the version on top.
inline constexpr unsigned nvmlMemory_v2 =
    static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2U << 24U);

struct nvmlTemperature_t {  // nvmlTemperature_v1_t, for nvmlDeviceGetTemperatureV
  unsigned int version;
  int sensorType;
  int temperature;
};
static_assert(sizeof(nvmlTemperature_t) == 12);
inline constexpr unsigned nvmlTemperature_v1 =
    static_cast<unsigned>(sizeof(nvmlTemperature_t)) | (1U << 24U);

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // CPU time of the update, µs since 1970
  long long latencyUsec;  // how long the update took
  int valueType;          // NVML_VALUE_TYPE_*
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;  // valid when nvmlReturn == NVML_SUCCESS
};
static_assert(sizeof(nvmlFieldValue_t) == 40);

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlEventData_t) == 32);

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetricInfo_t {
  char* shortName;
  char* longName;
  char* unit;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;    // in
  nvmlReturn_t nvmlReturn;  // out
  double value;             // out, valid when nvmlReturn == NVML_SUCCESS
  nvmlGpmMetricInfo_t metricInfo;
};
static_assert(sizeof(nvmlGpmMetric_t) == 40);

struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

// The entry points, as function-pointer types (the names of the symbols are
// in nvml/library.cc, with the older ones each falls back to).
using nvmlInit_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlSystemGetDriverVersion_fn = nvmlReturn_t (*)(char*, unsigned int);
using nvmlDeviceGetCount_fn = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_fn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetString_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetPciInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using nvmlDeviceGetUint_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetUll_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using nvmlDeviceGetClockInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetTemperature_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetTemperatureV_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperature_t*);
using nvmlDeviceGetFieldValues_fn = nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t*);
using nvmlDeviceGetPcieThroughput_fn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetMemoryInfo_v2_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using nvmlDeviceGetTotalEccErrors_fn = nvmlReturn_t (*)(nvmlDevice_t, int, int,
                                                        unsigned long long*);
using nvmlDeviceGetRemappedRows_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                      unsigned int*, unsigned int*);
using nvmlEventSetCreate_fn = nvmlReturn_t (*)(nvmlEventSet_t*);
using nvmlDeviceRegisterEvents_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long,
                                                     nvmlEventSet_t);
using nvmlEventSetWait_fn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using nvmlEventSetFree_fn = nvmlReturn_t (*)(nvmlEventSet_t);
using nvmlGpmQueryDeviceSupport_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*);
using nvmlGpmSampleAlloc_fn = nvmlReturn_t (*)(nvmlGpmSample_t*);
using nvmlGpmSampleFree_fn = nvmlReturn_t (*)(nvmlGpmSample_t);
using nvmlGpmSampleGet_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t);
using nvmlGpmMetricsGet_fn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t*);

}  // extern "C"
// NOLINTEND(google-runtime-int, readability-identifier-naming)
