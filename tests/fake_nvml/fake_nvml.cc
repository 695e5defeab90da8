// A fake libnvidia-ml.so.1 for tests and benchmarks: NVML's C entry points,
// answered from a scripted timeline (a JSON file named by
// GPUCANARY_FAKE_NVML_SCRIPT), so the real collector can be driven through
// throttling, PCIe down-training, Xid events, unsupported fields and a lost
// GPU on a machine without one. The script format and the control symbols
// are described in README.md next to this file.
//
// Built twice: a modern driver, and with FAKE_NVML_OLD_DRIVER an old one
// that exports only the v1 names, so the collector's fallbacks are tested.

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "nvml/nvml_abi.h"

#define FAKE_NVML_API __attribute__((visibility("default")))

// NVML's names and C integer types are kept, as in nvml_abi.h.
// NOLINTBEGIN(google-runtime-int, readability-identifier-naming)

using Json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

// Every key a device's "values" or a timeline "set" may name: a typo would
// otherwise read as "not supported" and pass for a deliberate gap.
constexpr std::array<std::string_view, 36> kValueKeys = {
    // Clocks, power, temperature.
    "sm_clock", "mem_clock", "clocks_event_reasons", "power_mw", "energy_mj", "power_limit_mw",
    "enforced_power_limit_mw", "gpu_temp", "memory_temp",
    // PCIe.
    "pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width", "pcie_replay", "pcie_tx_kbps",
    "pcie_rx_kbps",
    // Utilization and memory.
    "util_gpu", "util_memory", "mem_total_bytes", "mem_reserved_bytes", "mem_used_bytes",
    // ECC and row remapping.
    "ecc_sbe_volatile", "ecc_dbe_volatile", "ecc_sbe_aggregate", "ecc_dbe_aggregate",
    "remapped_correctable", "remapped_uncorrectable", "remap_pending", "remap_failure",
    // GPM metrics.
    "gpm_graphics_util", "gpm_sm_util", "gpm_sm_occupancy", "gpm_any_tensor_util",
    "gpm_dram_bw_util", "gpm_pcie_tx_mibps", "gpm_pcie_rx_mibps"};

#ifndef FAKE_NVML_OLD_DRIVER
struct GpmMetricKey {
  unsigned id;
  const char* key;
};
constexpr std::array<GpmMetricKey, 7> kGpmMetrics = {{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "gpm_graphics_util"},
    {NVML_GPM_METRIC_SM_UTIL, "gpm_sm_util"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, "gpm_sm_occupancy"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "gpm_any_tensor_util"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "gpm_dram_bw_util"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "gpm_pcie_tx_mibps"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "gpm_pcie_rx_mibps"},
}};
#endif

struct TimelineEntry {
  double t = 0;
  Json set = Json::object();  // keys to override; null removes one
  std::optional<bool> lost;
};

struct Xid {
  double t;
  unsigned long long xid;
};

}  // namespace

// The handle types nvml_abi.h leaves incomplete: a handle is the address of
// one of these, stable from init to the shutdown that drops the count to 0.
struct nvmlDevice_st {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  nvmlPciInfo_t pci{};
  bool gpm = false;
  bool xid_events = true;
  std::map<std::string, Json, std::less<>> values;
  std::vector<TimelineEntry> timeline;  // sorted by t
  std::size_t next_entry = 0;           // first entry not yet applied
  std::vector<Xid> xids;                // sorted by t
  bool lost = false;
  // Energy = energy_base + the integral of power_mw since energy_mj was last
  // set; energy_integral holds the part up to energy_last_t (mJ).
  unsigned long long energy_base = 0;
  double energy_integral = 0;
  double energy_last_t = 0;
};

struct nvmlEventSet_st {
  // Registered devices, each with the index of its first undelivered Xid.
  std::vector<std::pair<nvmlDevice_st*, std::size_t>> registrations;
};

struct nvmlGpmSample_st {
  nvmlDevice_st* device = nullptr;  // null until nvmlGpmSampleGet fills it
  double t = 0;
  std::map<unsigned, double> metrics;  // metric id -> value, for present keys only
};

namespace {

struct State {
  std::mutex mu;
  std::condition_variable cv;  // Xid waiters; woken by set_time, shutdown, free
  int init_count = 0;
  unsigned long long calls = 0;
  unsigned long long gpm_violations = 0;
  bool manual_time = false;
  double manual_now = 0;
  Clock::time_point epoch{};  // the init that raised the count from 0
  std::string driver_version;
  std::vector<std::unique_ptr<nvmlDevice_st>> devices;
  // Live event sets and GPM samples, for validating what callers pass back.
  // Kept bit-inverted so they are no pointers to LeakSanitizer: a set or
  // sample the caller never frees is then reported as the leak it is.
  std::set<std::uintptr_t> event_sets;
  std::set<std::uintptr_t> gpm_samples;
};

// A static object rather than a leaked one: its destructor runs at dlclose,
// so a test that closes the library leaves nothing for LeakSanitizer.
State& St() {
  static State state;
  return state;
}

template <typename T>
std::uintptr_t Hidden(const T* p) {
  return ~reinterpret_cast<std::uintptr_t>(p);
}

double Now(const State& s) {
  if (s.manual_time) return s.manual_now;
  return std::chrono::duration<double>(Clock::now() - s.epoch).count();
}

bool Known(const State& s, const nvmlDevice_st* dev) {
  return dev != nullptr && std::any_of(s.devices.begin(), s.devices.end(),
                                       [dev](const auto& d) { return d.get() == dev; });
}

const Json* Find(const nvmlDevice_st& dev, std::string_view key) {
  auto it = dev.values.find(key);
  return it == dev.values.end() ? nullptr : &it->second;
}

// Values are validated at load: non-negative numbers or booleans.
unsigned long long AsU64(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer()) return v.get<unsigned long long>();
  const double d = std::round(v.get<double>());
  if (d >= 18446744073709551616.0) return std::numeric_limits<unsigned long long>::max();
  return static_cast<unsigned long long>(d);
}

double AsDouble(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return v.get<double>();
}

template <typename T>
T Clamp(unsigned long long v) {
  constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<T>::max());
  return static_cast<T>(std::min(v, kMax));
}

// Reads one key into *out; an absent key is how a script says "unsupported".
template <typename T>
nvmlReturn_t Read(const nvmlDevice_st& dev, std::string_view key, T* out) {
  const Json* v = Find(dev, key);
  if (v == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *out = Clamp<T>(AsU64(*v));
  return NVML_SUCCESS;
}

void IntegrateEnergy(nvmlDevice_st& dev, double t) {
  if (const Json* p = Find(dev, "power_mw"); p != nullptr && t > dev.energy_last_t) {
    dev.energy_integral += AsDouble(*p) * (t - dev.energy_last_t);  // mW * s = mJ
  }
  dev.energy_last_t = std::max(dev.energy_last_t, t);
}

void Apply(nvmlDevice_st& dev, const TimelineEntry& e) {
  if (e.set.contains("power_mw") || e.set.contains("energy_mj")) IntegrateEnergy(dev, e.t);
  for (const auto& [key, v] : e.set.items()) {
    if (v.is_null()) {
      dev.values.erase(key);
    } else {
      dev.values[key] = v;
    }
  }
  if (auto it = e.set.find("energy_mj"); it != e.set.end() && !it->is_null()) {
    dev.energy_base = AsU64(*it);
    dev.energy_integral = 0;
    dev.energy_last_t = e.t;
  }
  if (e.lost) dev.lost = *e.lost;
}

// Applies every due timeline entry, at its own t (so the energy integral does
// not depend on how often the caller polls).
void Advance(State& s, double now) {
  for (auto& dev : s.devices) {
    while (dev->next_entry < dev->timeline.size() && dev->timeline[dev->next_entry].t <= now) {
      Apply(*dev, dev->timeline[dev->next_entry++]);
    }
  }
}

// One entry point's call: holds the lock for the whole call, counts it, and
// brings the devices up to "now".
struct Call {
  Call() : s(St()), lock(s.mu) {
    ++s.calls;
    if (s.init_count > 0) {
      now = Now(s);
      Advance(s, now);
    }
  }
  State& s;
  std::unique_lock<std::mutex> lock;
  double now = 0;
};

// What every device call checks first.
nvmlReturn_t CheckDevice(const Call& c, const nvmlDevice_st* dev, const void* out) {
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!Known(c.s, dev) || out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (dev->lost) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

template <typename T>
nvmlReturn_t GetValue(nvmlDevice_t dev, std::string_view key, T* out) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, out); r != NVML_SUCCESS) return r;
  return Read(*dev, key, out);
}

nvmlReturn_t CopyString(const std::string& value, char* buf, unsigned int length) {
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t GetDeviceString(nvmlDevice_t dev, std::string nvmlDevice_st::*field, char* buf,
                             unsigned int length) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, buf); r != NVML_SUCCESS) return r;
  return CopyString(dev->*field, buf, length);
}

// ---- The script ----

struct Script {
  bool driver_loaded = true;
  std::string driver_version = "550.90.12";
  std::vector<std::unique_ptr<nvmlDevice_st>> devices;
};

[[noreturn]] void Bad(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

// Rejects keys the format does not know; keys starting with '_' are comments.
void CheckKeys(const Json& obj, const std::string& where,
               std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) Bad(where, "must be an object");
  for (const auto& [key, v] : obj.items()) {
    if (key.starts_with('_')) continue;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      Bad(where, "unknown key \"" + key + "\"");
    }
  }
}

void CheckValues(const Json& obj, const std::string& where, bool allow_null) {
  if (!obj.is_object()) Bad(where, "must be an object");
  for (const auto& [key, v] : obj.items()) {
    if (std::find(kValueKeys.begin(), kValueKeys.end(), key) == kValueKeys.end()) {
      Bad(where, "unknown value key \"" + key + "\"");
    }
    const bool ok = v.is_boolean() || v.is_number_unsigned() ||
                    (v.is_number_float() && v.get<double>() >= 0) || (allow_null && v.is_null());
    if (!ok) {
      Bad(where + "." + key, allow_null ? "must be a non-negative number, a boolean or null"
                                        : "must be a non-negative number or a boolean");
    }
  }
}

template <typename T>
T Get(const Json& obj, const char* key, const std::string& where, T fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    Bad(where + "." + key, "has the wrong type");
  }
}

void ParsePci(const std::string& bus_id, const std::string& where, nvmlPciInfo_t* pci) {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  char tail = 0;
  // NOLINTNEXTLINE(cert-err34-c): the count checks that every field parsed.
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4 ||
      bus_id.size() >= sizeof(pci->busId)) {
    Bad(where, "\"" + bus_id + "\" is no PCI bus id like 00000000:19:00.0");
  }
  pci->domain = domain;
  pci->bus = bus;
  pci->device = device;
  std::memcpy(pci->busId, bus_id.c_str(), bus_id.size() + 1);
  // NVML's legacy form, "%04X:%02X:%02X.0", which fits its 16 bytes.
  std::array<char, 64> legacy{};
  std::snprintf(legacy.data(), legacy.size(), "%04X:%02X:%02X.%X", domain & 0xFFFFU, bus & 0xFFU,
                device & 0x1FU, function & 0x7U);
  std::memcpy(pci->busIdLegacy, legacy.data(), sizeof(pci->busIdLegacy) - 1);
}

std::unique_ptr<nvmlDevice_st> ParseDevice(const Json& d, unsigned index) {
  const std::string where = "devices[" + std::to_string(index) + "]";
  CheckKeys(d, where,
            {"name", "uuid", "pci_bus_id", "pci_device_id", "pci_subsystem_id", "gpm", "xid_events",
             "values", "timeline"});
  auto dev = std::make_unique<nvmlDevice_st>();
  dev->index = index;
  dev->name = Get<std::string>(d, "name", where, "NVIDIA Fake GPU");
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "GPU-00000000-0000-4000-8000-%012x", index);
  dev->uuid = Get<std::string>(d, "uuid", where, buf.data());
  std::snprintf(buf.data(), buf.size(), "00000000:%02X:00.0", (index + 1) & 0xFFU);
  ParsePci(Get<std::string>(d, "pci_bus_id", where, buf.data()), where + ".pci_bus_id", &dev->pci);
  dev->pci.pciDeviceId = Get<unsigned>(d, "pci_device_id", where, 0);
  dev->pci.pciSubSystemId = Get<unsigned>(d, "pci_subsystem_id", where, 0);
  dev->gpm = Get<bool>(d, "gpm", where, false);
  dev->xid_events = Get<bool>(d, "xid_events", where, true);

  if (auto it = d.find("values"); it != d.end()) {
    CheckValues(*it, where + ".values", false);
    for (const auto& [key, v] : it->items()) dev->values[key] = v;
  }
  if (const Json* e = Find(*dev, "energy_mj"); e != nullptr) dev->energy_base = AsU64(*e);

  if (auto it = d.find("timeline"); it != d.end()) {
    if (!it->is_array()) Bad(where + ".timeline", "must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const Json& j = (*it)[i];
      const std::string at = where + ".timeline[" + std::to_string(i) + "]";
      CheckKeys(j, at, {"t", "set", "xid", "lost"});
      auto t = j.find("t");
      if (t == j.end() || !t->is_number()) Bad(at, "needs a number \"t\" (seconds since init)");
      TimelineEntry entry;
      entry.t = t->get<double>();
      if (auto set = j.find("set"); set != j.end()) {
        CheckValues(*set, at + ".set", true);
        entry.set = *set;
      }
      if (auto lost = j.find("lost"); lost != j.end()) entry.lost = Get<bool>(j, "lost", at, true);
      if (auto xid = j.find("xid"); xid != j.end()) {
        if (!xid->is_number_unsigned()) Bad(at + ".xid", "must be a non-negative integer");
        dev->xids.push_back({entry.t, xid->get<unsigned long long>()});
      }
      dev->timeline.push_back(std::move(entry));
    }
    // Stable: entries with the same t apply in file order.
    std::stable_sort(dev->timeline.begin(), dev->timeline.end(),
                     [](const auto& a, const auto& b) { return a.t < b.t; });
    std::stable_sort(dev->xids.begin(), dev->xids.end(),
                     [](const auto& a, const auto& b) { return a.t < b.t; });
  }
  return dev;
}

std::string ReadFile(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) throw std::runtime_error(std::strerror(errno));
  std::string text;
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) text.append(buf.data(), n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) throw std::runtime_error(std::strerror(err));
  return text;
}

// Loads the script, or prints one line saying what is wrong and returns
// nothing.
std::optional<Script> LoadScript() {
  const char* path = std::getenv("GPUCANARY_FAKE_NVML_SCRIPT");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr, "fake_nvml: GPUCANARY_FAKE_NVML_SCRIPT is not set: no script to play\n");
    return std::nullopt;
  }
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: cannot read script %s: %s\n", path, e.what());
    return std::nullopt;
  }
  Json doc;
  try {
    doc = Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::exception& e) {
    std::fprintf(stderr, "fake_nvml: script %s is no valid JSON: %s\n", path, e.what());
    return std::nullopt;
  }
  try {
    Script script;
    CheckKeys(doc, "the script", {"driver_loaded", "driver_version", "devices"});
    script.driver_loaded = Get<bool>(doc, "driver_loaded", "the script", true);
    script.driver_version = Get<std::string>(doc, "driver_version", "the script", "550.90.12");
    if (auto it = doc.find("devices"); it != doc.end()) {
      if (!it->is_array()) Bad("devices", "must be an array");
      for (std::size_t i = 0; i < it->size(); ++i) {
        script.devices.push_back(ParseDevice((*it)[i], static_cast<unsigned>(i)));
      }
    }
    return script;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_nvml: script %s: %s\n", path, e.what());
    return std::nullopt;
  }
}

// ---- Entry points shared by both drivers (exported under their names below) ----

nvmlReturn_t Init() {
  Call c;
  if (c.s.init_count > 0) {
    ++c.s.init_count;
    return NVML_SUCCESS;
  }
  std::optional<Script> script = LoadScript();
  if (!script) return NVML_ERROR_UNKNOWN;
  if (!script->driver_loaded) return NVML_ERROR_DRIVER_NOT_LOADED;
  c.s.driver_version = std::move(script->driver_version);
  c.s.devices = std::move(script->devices);
  c.s.epoch = Clock::now();
  c.s.init_count = 1;
  Advance(c.s, Now(c.s));
  return NVML_SUCCESS;
}

nvmlReturn_t GetCount(unsigned int* count) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(c.s.devices.size());
  return NVML_SUCCESS;
}

nvmlReturn_t GetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= c.s.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (c.s.devices[index]->lost) return NVML_ERROR_GPU_IS_LOST;
  *device = c.s.devices[index].get();
  return NVML_SUCCESS;
}

nvmlReturn_t GetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t* pci) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, pci); r != NVML_SUCCESS) return r;
  *pci = dev->pci;
  return NVML_SUCCESS;
}

nvmlReturn_t GetClocksEventReasons(nvmlDevice_t dev, unsigned long long* reasons) {
  return GetValue(dev, "clocks_event_reasons", reasons);
}

bool KnownSet(const State& s, const nvmlEventSet_st* set) {
  return set != nullptr && s.event_sets.contains(Hidden(set));
}

// Hands out the earliest due, undelivered Xid of the set's devices.
bool TakeDueXid(nvmlEventSet_st* set, double now, nvmlEventData_t* data) {
  std::pair<nvmlDevice_st*, std::size_t>* best = nullptr;
  for (auto& reg : set->registrations) {
    const auto& xids = reg.first->xids;
    if (reg.second >= xids.size() || xids[reg.second].t > now) continue;
    if (best == nullptr || xids[reg.second].t < best->first->xids[best->second].t) best = &reg;
  }
  if (best == nullptr) return false;
  data->device = best->first;
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = best->first->xids[best->second].xid;
  data->gpuInstanceId = 0xFFFFFFFFU;
  data->computeInstanceId = 0xFFFFFFFFU;
  ++best->second;
  return true;
}

std::optional<double> NextXidTime(const nvmlEventSet_st* set) {
  std::optional<double> next;
  for (const auto& [dev, cursor] : set->registrations) {
    if (cursor < dev->xids.size() && (!next || dev->xids[cursor].t < *next)) {
      next = dev->xids[cursor].t;
    }
  }
  return next;
}

nvmlReturn_t EventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!KnownSet(c.s, set) || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  bool waited_manual = false;
  while (true) {
    if (TakeDueXid(set, c.now, data)) return NVML_SUCCESS;
    if (c.s.manual_time) {
      // Manual time moves only when the test says so: wait a moment for
      // that, then report the timeout without spending the caller's.
      if (waited_manual || timeout_ms == 0) return NVML_ERROR_TIMEOUT;
      c.s.cv.wait_for(c.lock, std::chrono::milliseconds(std::min(timeout_ms, 5U)));
      waited_manual = true;
    } else {
      if (Clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
      Clock::time_point wake = deadline;
      // (An Xid far beyond the deadline cannot wake us; skipping it also
      // keeps a huge t from overflowing the time_point.)
      std::optional<double> next = NextXidTime(set);
      if (next && *next < c.now + timeout_ms / 1000.0 + 1.0) {
        wake = std::min(wake, c.s.epoch + std::chrono::ceil<Clock::duration>(
                                              std::chrono::duration<double>(*next)));
      }
      c.s.cv.wait_until(c.lock, wake);
    }
    // The lock was released while waiting: anything may have changed.
    if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (!KnownSet(c.s, set)) return NVML_ERROR_INVALID_ARGUMENT;
    c.now = Now(c.s);
    Advance(c.s, c.now);
  }
}

// Total, reserved and used-by-processes bytes, or nullopt if any is absent.
struct MemoryValues {
  unsigned long long total = 0;
  unsigned long long reserved = 0;
  unsigned long long used = 0;  // includes reserved, as NVML reports it
};

std::optional<MemoryValues> ReadMemory(const nvmlDevice_st& dev) {
  MemoryValues m;
  unsigned long long processes = 0;
  if (Read(dev, "mem_total_bytes", &m.total) != NVML_SUCCESS ||
      Read(dev, "mem_reserved_bytes", &m.reserved) != NVML_SUCCESS ||
      Read(dev, "mem_used_bytes", &processes) != NVML_SUCCESS) {
    return std::nullopt;
  }
  m.used = processes + m.reserved;
  return m;
}

}  // namespace

// ---- Exported entry points ----

extern "C" {

#ifdef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlInit() { return Init(); }
#else
FAKE_NVML_API nvmlReturn_t nvmlInit_v2() { return Init(); }
#endif

FAKE_NVML_API nvmlReturn_t nvmlShutdown() {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--c.s.init_count == 0) {
    // Handles die with the devices; sets and samples live on (the caller
    // frees them) but forget the devices they referred to.
    for (std::uintptr_t hidden : c.s.event_sets) {
      reinterpret_cast<nvmlEventSet_st*>(~hidden)->registrations.clear();
    }
    for (std::uintptr_t hidden : c.s.gpm_samples) {
      reinterpret_cast<nvmlGpmSample_st*>(~hidden)->device = nullptr;
    }
    c.s.devices.clear();
    c.s.cv.notify_all();
  }
  return NVML_SUCCESS;
}

FAKE_NVML_API const char* nvmlErrorString(nvmlReturn_t result) {
  Call c;
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return CopyString(c.s.driver_version, version, length);
}

#ifdef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return GetCount(count); }
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return GetHandleByIndex(index, device);
}
#else
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) { return GetCount(count); }
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return GetHandleByIndex(index, device);
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char* name, unsigned int length) {
  return GetDeviceString(dev, &nvmlDevice_st::name, name, length);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char* uuid, unsigned int length) {
  return GetDeviceString(dev, &nvmlDevice_st::uuid, uuid, length);
}

#ifdef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t* pci) {
  return GetPciInfo(dev, pci);
}
#else
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t* pci) {
  return GetPciInfo(dev, pci);
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int* clock) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, clock); r != NVML_SUCCESS) return r;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:  // no separate graphics clock in the script
    case NVML_CLOCK_SM:
      return Read(*dev, "sm_clock", clock);
    case NVML_CLOCK_MEM:
      return Read(*dev, "mem_clock", clock);
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

#ifdef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev,
                                                                     unsigned long long* reasons) {
  return GetClocksEventReasons(dev, reasons);
}
#else
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev,
                                                                  unsigned long long* reasons) {
  return GetClocksEventReasons(dev, reasons);
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int* power) {
  return GetValue(dev, "power_mw", power);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev,
                                                               unsigned long long* energy) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, energy); r != NVML_SUCCESS) return r;
  if (Find(*dev, "energy_mj") == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  double integral = dev->energy_integral;
  if (const Json* p = Find(*dev, "power_mw"); p != nullptr && c.now > dev->energy_last_t) {
    integral += AsDouble(*p) * (c.now - dev->energy_last_t);
  }
  // Unsigned arithmetic: a script may start near 2^64 to test the wrap.
  *energy = dev->energy_base + static_cast<unsigned long long>(std::llround(integral));
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev,
                                                             unsigned int* limit) {
  return GetValue(dev, "power_limit_mw", limit);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int* limit) {
  return GetValue(dev, "enforced_power_limit_mw", limit);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor,
                                                    unsigned int* temp) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, temp); r != NVML_SUCCESS) return r;
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return Read(*dev, "gpu_temp", temp);
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t dev, nvmlTemperature_t* temp) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, temp); r != NVML_SUCCESS) return r;
  if (temp->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temp->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return Read(*dev, "gpu_temp", &temp->temperature);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count,
                                                    nvmlFieldValue_t* values) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!Known(c.s, dev) || count < 0 || (count > 0 && values == nullptr)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (dev->lost) return NVML_ERROR_GPU_IS_LOST;
  const long long stamp = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = stamp;
    f.latencyUsec = 0;
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.ullVal = 0;
    f.nvmlReturn = f.fieldId == NVML_FI_DEV_MEMORY_TEMP ? Read(*dev, "memory_temp", &f.value.uiVal)
                                                        : NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev,
                                                               unsigned int* gen) {
  return GetValue(dev, "pcie_gen", gen);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int* width) {
  return GetValue(dev, "pcie_width", width);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int* gen) {
  return GetValue(dev, "pcie_max_gen", gen);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int* width) {
  return GetValue(dev, "pcie_max_width", width);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned int* value) {
  return GetValue(dev, "pcie_replay", value);
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t dev, int counter,
                                                       unsigned int* value) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, value); r != NVML_SUCCESS) return r;
  switch (counter) {
    case NVML_PCIE_UTIL_TX_BYTES:
      return Read(*dev, "pcie_tx_kbps", value);
    case NVML_PCIE_UTIL_RX_BYTES:
      return Read(*dev, "pcie_rx_kbps", value);
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev,
                                                         nvmlUtilization_t* util) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, util); r != NVML_SUCCESS) return r;
  nvmlUtilization_t u{};
  if (Read(*dev, "util_gpu", &u.gpu) != NVML_SUCCESS ||
      Read(*dev, "util_memory", &u.memory) != NVML_SUCCESS) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *util = u;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t* memory) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, memory); r != NVML_SUCCESS) return r;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  std::optional<MemoryValues> m = ReadMemory(*dev);
  if (!m) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = m->total;
  memory->reserved = m->reserved;
  memory->used = m->used;
  memory->free = m->total > m->used ? m->total - m->used : 0;
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* memory) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, memory); r != NVML_SUCCESS) return r;
  std::optional<MemoryValues> m = ReadMemory(*dev);
  if (!m) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = m->total;
  memory->used = m->used;
  memory->free = m->total > m->used ? m->total - m->used : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type,
                                                       int counter_type,
                                                       unsigned long long* count) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, count); r != NVML_SUCCESS) return r;
  const bool corrected = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
  const bool volatile_counter = counter_type == NVML_VOLATILE_ECC;
  if ((!corrected && error_type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
      (!volatile_counter && counter_type != NVML_AGGREGATE_ECC)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const char* key = corrected ? (volatile_counter ? "ecc_sbe_volatile" : "ecc_sbe_aggregate")
                              : (volatile_counter ? "ecc_dbe_volatile" : "ecc_dbe_aggregate");
  return Read(*dev, key, count);
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int* corr_rows,
                                                     unsigned int* unc_rows,
                                                     unsigned int* is_pending,
                                                     unsigned int* failure_occurred) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, corr_rows); r != NVML_SUCCESS) return r;
  if (unc_rows == nullptr || is_pending == nullptr || failure_occurred == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::array<unsigned int, 4> v{};
  if (Read(*dev, "remapped_correctable", &v[0]) != NVML_SUCCESS ||
      Read(*dev, "remapped_uncorrectable", &v[1]) != NVML_SUCCESS ||
      Read(*dev, "remap_pending", &v[2]) != NVML_SUCCESS ||
      Read(*dev, "remap_failure", &v[3]) != NVML_SUCCESS) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *corr_rows = v[0];
  *unc_rows = v[1];
  *is_pending = v[2];
  *failure_occurred = v[3];
  return NVML_SUCCESS;
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* created = new nvmlEventSet_st();
  c.s.event_sets.insert(Hidden(created));
  *set = created;
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev,
                                                    unsigned long long event_types,
                                                    nvmlEventSet_t set) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, set); r != NVML_SUCCESS) return r;
  if (!KnownSet(c.s, set)) return NVML_ERROR_INVALID_ARGUMENT;
  if ((event_types & nvmlEventTypeXidCriticalError) == 0 || !dev->xid_events) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  auto& regs = set->registrations;
  if (std::none_of(regs.begin(), regs.end(), [dev](const auto& r) { return r.first == dev; })) {
    // Like NVML, only events from now on: skip the Xids before registration.
    auto first = std::lower_bound(dev->xids.begin(), dev->xids.end(), c.now,
                                  [](const Xid& x, double t) { return x.t < t; });
    regs.emplace_back(dev, static_cast<std::size_t>(first - dev->xids.begin()));
    c.s.cv.notify_all();
  }
  return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                            unsigned int timeout_ms) {
  return EventSetWait(set, data, timeout_ms);
}
#else
FAKE_NVML_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeout_ms) {
  return EventSetWait(set, data, timeout_ms);
}
#endif

FAKE_NVML_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!KnownSet(c.s, set)) return NVML_ERROR_INVALID_ARGUMENT;
  c.s.event_sets.erase(Hidden(set));
  delete set;
  c.s.cv.notify_all();  // a waiter on this set returns instead of touching it
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_NVML_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t* support) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, support); r != NVML_SUCCESS) return r;
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  support->isSupportedDevice = dev->gpm ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* created = new nvmlGpmSample_st();
  c.s.gpm_samples.insert(Hidden(created));
  *sample = created;
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr || !c.s.gpm_samples.contains(Hidden(sample))) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  c.s.gpm_samples.erase(Hidden(sample));
  delete sample;
  return NVML_SUCCESS;
}

FAKE_NVML_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t dev, nvmlGpmSample_t sample) {
  Call c;
  if (nvmlReturn_t r = CheckDevice(c, dev, sample); r != NVML_SUCCESS) return r;
  if (!c.s.gpm_samples.contains(Hidden(sample))) return NVML_ERROR_INVALID_ARGUMENT;
  if (!dev->gpm) return NVML_ERROR_NOT_SUPPORTED;
  sample->device = dev;
  sample->t = c.now;
  sample->metrics.clear();
  for (const GpmMetricKey& m : kGpmMetrics) {
    if (const Json* v = Find(*dev, m.key); v != nullptr) sample->metrics[m.id] = AsDouble(*v);
  }
  return NVML_SUCCESS;
}

// Computed from the two samples alone, as NVML does on the host: the
// device's state now (lost or not) does not matter.
FAKE_NVML_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  Call c;
  if (c.s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (get == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const nvmlGpmSample_st* s1 = get->sample1;
  const nvmlGpmSample_st* s2 = get->sample2;
  if (s1 == nullptr || s2 == nullptr || !c.s.gpm_samples.contains(Hidden(s1)) ||
      !c.s.gpm_samples.contains(Hidden(s2)) || s1->device == nullptr || s1->device != s2->device ||
      get->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // NVML needs the samples at least 100 ms apart; counted so a test can
  // check that the collector never asks too early.
  if (s2->t - s1->t < 0.1) {
    ++c.s.gpm_violations;
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    nvmlGpmMetric_t& m = get->metrics[i];
    m.metricInfo = {nullptr, nullptr, nullptr};
    auto it = s2->metrics.find(m.metricId);
    if (it == s2->metrics.end()) {
      m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      m.value = 0;
    } else {
      m.nvmlReturn = NVML_SUCCESS;
      m.value = it->second;
    }
  }
  return NVML_SUCCESS;
}
#endif

// ---- Control symbols for tests and benchmarks (dlsym on the same handle) ----

FAKE_NVML_API void fake_nvml_set_time(double seconds) {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  s.manual_time = true;
  s.manual_now = seconds;
  s.cv.notify_all();  // a waiter re-checks for Xids due at the new time
}

FAKE_NVML_API unsigned long long fake_nvml_calls() {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.calls;
}

FAKE_NVML_API unsigned long long fake_nvml_gpm_violations() {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.gpm_violations;
}

FAKE_NVML_API int fake_nvml_init_count() {
  State& s = St();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.init_count;
}

}  // extern "C"

// Each export has exactly the type nvml_abi.h gives the collector.
#ifdef FAKE_NVML_OLD_DRIVER
static_assert(std::is_same_v<decltype(&nvmlInit), nvmlInit_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCount), nvmlDeviceGetCount_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetHandleByIndex), nvmlDeviceGetHandleByIndex_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPciInfo_v2), nvmlDeviceGetPciInfo_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetCurrentClocksThrottleReasons), nvmlDeviceGetUll_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetWait), nvmlEventSetWait_fn>);
#else
static_assert(std::is_same_v<decltype(&nvmlInit_v2), nvmlInit_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCount_v2), nvmlDeviceGetCount_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetHandleByIndex_v2), nvmlDeviceGetHandleByIndex_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPciInfo_v3), nvmlDeviceGetPciInfo_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetCurrentClocksEventReasons), nvmlDeviceGetUll_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetWait_v2), nvmlEventSetWait_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTemperatureV), nvmlDeviceGetTemperatureV_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetFieldValues), nvmlDeviceGetFieldValues_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo_v2), nvmlDeviceGetMemoryInfo_v2_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetRemappedRows), nvmlDeviceGetRemappedRows_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpmQueryDeviceSupport), nvmlGpmQueryDeviceSupport_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpmSampleAlloc), nvmlGpmSampleAlloc_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpmSampleFree), nvmlGpmSampleFree_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpmSampleGet), nvmlGpmSampleGet_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpmMetricsGet), nvmlGpmMetricsGet_fn>);
#endif
static_assert(std::is_same_v<decltype(&nvmlShutdown), nvmlShutdown_fn>);
static_assert(std::is_same_v<decltype(&nvmlErrorString), nvmlErrorString_fn>);
static_assert(std::is_same_v<decltype(&nvmlSystemGetDriverVersion), nvmlSystemGetDriverVersion_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetName), nvmlDeviceGetString_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetUUID), nvmlDeviceGetString_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetClockInfo), nvmlDeviceGetClockInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerUsage), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTotalEnergyConsumption), nvmlDeviceGetUll_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerManagementLimit), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetEnforcedPowerLimit), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTemperature), nvmlDeviceGetTemperature_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCurrPcieLinkGeneration), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCurrPcieLinkWidth), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMaxPcieLinkGeneration), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMaxPcieLinkWidth), nvmlDeviceGetUint_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPcieReplayCounter), nvmlDeviceGetUint_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetPcieThroughput), nvmlDeviceGetPcieThroughput_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetUtilizationRates), nvmlDeviceGetUtilizationRates_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo), nvmlDeviceGetMemoryInfo_fn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetTotalEccErrors), nvmlDeviceGetTotalEccErrors_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetCreate), nvmlEventSetCreate_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceRegisterEvents), nvmlDeviceRegisterEvents_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetFree), nvmlEventSetFree_fn>);

// NOLINTEND(google-runtime-int, readability-identifier-naming)
