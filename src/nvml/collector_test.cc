// The NVML collector against the fake libnvidia-ml.so.1 the test suite builds
// (tests/fake_nvml): loaded through the real dlopen path, driven by a
// scripted timeline on a manual clock. Covers the units and names of every
// field, throttling, PCIe down-training, Xid events, unsupported fields, a
// lost GPU, GPM's 100 ms minimum and an old driver's entry points.

#include "nvml/collector.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "dcgm/readings.h"
#include "expfmt/reader.h"
#include "nvml/library.h"
#include "nvml/sampler.h"

namespace gpucanary::nvml {
namespace {

namespace fs = std::filesystem;
using dcgm::ExporterField;
using Json = nlohmann::json;

const std::string kModern = std::string(GPUCANARY_FAKE_NVML_DIR) + "/modern/libnvidia-ml.so.1";
const std::string kOld = std::string(GPUCANARY_FAKE_NVML_DIR) + "/old/libnvidia-ml.so.1";

// A healthy H200 under load, as the fake's script describes it (units are
// NVML's: mW, bytes, percent, KB/s, MiB/s).
Json H200(int index) {
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-1c5d6a3e-0000-4000-8000-%012d", index);
  char bus[32];
  std::snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x19 + index);
  return Json{{"name", "NVIDIA H200"},
              {"uuid", uuid},
              {"pci_bus_id", bus},
              {"gpm", true},
              {"xid_events", true},
              {"values",
               {{"sm_clock", 1980},
                {"mem_clock", 3201},
                {"clocks_event_reasons", 0},
                {"power_mw", 650250},
                {"energy_mj", 123456789},
                {"power_limit_mw", 700000},
                {"enforced_power_limit_mw", 700000},
                {"gpu_temp", 61},
                {"memory_temp", 55},
                {"pcie_gen", 5},
                {"pcie_width", 16},
                {"pcie_max_gen", 5},
                {"pcie_max_width", 16},
                {"pcie_replay", 3},
                {"pcie_tx_kbps", 1000},
                {"pcie_rx_kbps", 2000},
                {"util_gpu", 100},
                {"util_memory", 62},
                {"mem_total_bytes", 143771ULL << 20},
                {"mem_reserved_bytes", 700ULL << 20},
                {"mem_used_bytes", 120000ULL << 20},
                {"ecc_sbe_volatile", 2},
                {"ecc_dbe_volatile", 0},
                {"remapped_correctable", 1},
                {"remapped_uncorrectable", 0},
                {"remap_pending", 0},
                {"remap_failure", 0},
                {"gpm_graphics_util", 97.5},
                {"gpm_sm_util", 88.25},
                {"gpm_sm_occupancy", 31.5},
                {"gpm_any_tensor_util", 42.0},
                {"gpm_dram_bw_util", 64.5},
                {"gpm_pcie_tx_mibps", 10.0},
                {"gpm_pcie_rx_mibps", 20.0}}},
              {"timeline", Json::array()}};
}

class FakeNvml {
 public:
  // Writes `script` where the fake reads it from. Call before Library::Open.
  explicit FakeNvml(const Json& script) {
    path_ = fs::temp_directory_path() /
            ("gpucanary-fake-nvml-" + std::to_string(getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".json");
    std::ofstream(path_) << script.dump(2);
    setenv("GPUCANARY_FAKE_NVML_SCRIPT", path_.c_str(), 1);
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
    fs::remove(path_);
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  // The fake's control symbols, from the same loaded copy the collector uses.
  void Attach(const std::string& library) {
    handle_ = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    set_time_ = reinterpret_cast<void (*)(double)>(dlsym(handle_, "fake_nvml_set_time"));
    violations_ = reinterpret_cast<unsigned long long (*)()>(  // NOLINT(google-runtime-int)
        dlsym(handle_, "fake_nvml_gpm_violations"));
    init_count_ = reinterpret_cast<int (*)()>(dlsym(handle_, "fake_nvml_init_count"));
    ASSERT_NE(set_time_, nullptr);
    ASSERT_NE(violations_, nullptr);
    ASSERT_NE(init_count_, nullptr);
  }
  void SetTime(double seconds) { set_time_(seconds); }
  unsigned long long GpmViolations() { return violations_(); }  // NOLINT(google-runtime-int)
  int InitCount() { return init_count_(); }

 private:
  fs::path path_;
  void* handle_ = nullptr;
  void (*set_time_)(double) = nullptr;
  unsigned long long (*violations_)() = nullptr;  // NOLINT(google-runtime-int)
  int (*init_count_)() = nullptr;
};

struct Opened {
  std::unique_ptr<Library> library;
  std::unique_ptr<Collector> collector;
  std::vector<std::string> log;
  Mutex log_mu;
};

// Opens `library` on `fake`'s script at fake time 0 and starts a collector.
void Open(FakeNvml& fake, const std::string& library, Opened& o, bool xid_events = true) {
  auto lib = Library::Open(library);
  ASSERT_TRUE(lib.has_value()) << lib.error().message();
  o.library = std::move(*lib);
  fake.Attach(library);
  fake.SetTime(0);
  CollectorOptions options;
  options.hostname = "gpu-node-7";
  options.xid_events = xid_events;
  options.event_wait_ms = 20;
  options.log = [&o](std::string_view line) {
    const MutexLock lock(o.log_mu);
    o.log.emplace_back(line);
  };
  auto c = Collector::Start(*o.library, options);
  ASSERT_TRUE(c.has_value()) << c.error().message();
  o.collector = std::move(*c);
}

std::optional<double> Get(const Snapshot& s, std::size_t gpu, ExporterField f) {
  return s.readings.at(gpu).Get(f);
}

bool WaitUntil(const std::function<bool()>& done) {
  for (int i = 0; i < 400; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(NvmlLibraryTest, AbsentLibraryIsAClearError) {
  auto lib = Library::Open("/nonexistent/dir/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().code(), StatusCode::kNotFound);
  EXPECT_NE(lib.error().message().find("NVML is not available"), std::string::npos)
      << lib.error().message();
  EXPECT_NE(lib.error().message().find("/nonexistent/dir/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(lib.error().message().find("NVIDIA driver"), std::string::npos);
}

TEST(NvmlLibraryTest, ALibraryThatIsNotNvmlIsRefused) {
  auto lib = Library::Open("libz.so.1");
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(lib.error().message().find("lacks nvmlInit_v2"), std::string::npos)
      << lib.error().message();
}

TEST(NvmlLibraryTest, DriverNotLoadedSaysSo) {
  FakeNvml fake(Json{{"driver_loaded", false}, {"devices", Json::array()}});
  auto lib = Library::Open(kModern);
  ASSERT_FALSE(lib.has_value());
  EXPECT_EQ(lib.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.error().message().find("Driver Not Loaded (9)"), std::string::npos)
      << lib.error().message();
  EXPECT_NE(lib.error().message().find("kernel driver is not loaded"), std::string::npos);
}

TEST(NvmlLibraryTest, ShutsNvmlDownWhenClosed) {
  FakeNvml fake(Json{{"driver_version", "550.90.12"}, {"devices", Json::array({H200(0)})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  EXPECT_EQ(fake.InitCount(), 1);
  o.collector.reset();
  o.library.reset();
  EXPECT_EQ(fake.InitCount(), 0);
}

TEST(NvmlCollectorTest, EveryFieldInDcgmExporterUnits) {
  FakeNvml fake(
      Json{{"driver_version", "550.90.12"}, {"devices", Json::array({H200(0), H200(1)})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  ASSERT_EQ(o.collector->gpu_count(), 2U);
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  fake.SetTime(1.0);
  o.collector->Sample(1'001'000, s);

  ASSERT_EQ(s.gpus.size(), 2U);
  EXPECT_EQ(s.time_ms, 1'001'000);
  EXPECT_EQ(s.gpus[1].index, 1);
  EXPECT_EQ(s.gpus[1].uuid, "GPU-1c5d6a3e-0000-4000-8000-000000000001");
  EXPECT_EQ(s.gpus[1].pci_bus_id, "00000000:1A:00.0");
  EXPECT_EQ(s.gpus[1].model_name, "NVIDIA H200");
  EXPECT_EQ(s.gpus[1].hostname, "gpu-node-7");
  EXPECT_EQ(s.gpus[1].driver_version, "550.90.12");

  EXPECT_EQ(Get(s, 0, ExporterField::kSmClock), 1980);
  EXPECT_EQ(Get(s, 0, ExporterField::kMemClock), 3201);
  EXPECT_EQ(Get(s, 0, ExporterField::kClockEventReasons), 0);
  EXPECT_EQ(Get(s, 0, ExporterField::kGpuTemp), 61);
  EXPECT_EQ(Get(s, 0, ExporterField::kMemoryTemp), 55);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPowerUsage), 650.25);  // mW -> W
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPowerMgmtLimit), 700.0);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kEnforcedPowerLimit), 700.0);
  EXPECT_GE(*Get(s, 0, ExporterField::kTotalEnergy), 123456789.0);  // mJ, counting up
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieLinkGen), 5);
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieLinkWidth), 16);
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieMaxLinkGen), 5);
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieMaxLinkWidth), 16);
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieReplayCounter), 3);
  EXPECT_EQ(Get(s, 0, ExporterField::kGpuUtil), 100);
  EXPECT_EQ(Get(s, 0, ExporterField::kMemCopyUtil), 62);
  // MiB, free + used + reserved = total (NVML's v2 `used` includes reserved).
  EXPECT_EQ(Get(s, 0, ExporterField::kFbUsed), 120000);
  EXPECT_EQ(Get(s, 0, ExporterField::kFbReserved), 700);
  EXPECT_EQ(Get(s, 0, ExporterField::kFbFree), 143771 - 120000 - 700);
  EXPECT_EQ(Get(s, 0, ExporterField::kEccSbeVolTotal), 2);
  EXPECT_EQ(Get(s, 0, ExporterField::kEccDbeVolTotal), 0);
  EXPECT_EQ(Get(s, 0, ExporterField::kCorrectableRemappedRows), 1);
  EXPECT_EQ(Get(s, 0, ExporterField::kUncorrectableRemappedRows), 0);
  EXPECT_EQ(Get(s, 0, ExporterField::kRowRemapFailure), 0);
  // GPM: percent -> ratio, MiB/s -> bytes/s (and it wins over the 20 ms
  // PCIe throughput sample).
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kGrEngineActive), 0.975);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kSmActive), 0.8825);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kSmOccupancy), 0.315);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kTensorActive), 0.42);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kDramActive), 0.645);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPcieTxBytes), 10.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPcieRxBytes), 20.0 * 1024 * 1024);
  // No Xid yet: absent, not 0 (dcgm-exporter 4.5+ prints nothing until one).
  EXPECT_FALSE(Get(s, 0, ExporterField::kXidErrors).has_value());
  EXPECT_EQ(fake.GpmViolations(), 0U);
  const std::vector<GpuStatus> status = o.collector->Status();
  EXPECT_TRUE(status[0].gpm);
  EXPECT_TRUE(status[0].xid_events);
  EXPECT_FALSE(status[0].lost);
  EXPECT_EQ(status[0].errors, 0U);
}

TEST(NvmlCollectorTest, ThrottlingAndPcieDownTrainingFollowTheTimeline) {
  Json gpu = H200(0);
  gpu["timeline"] =
      Json::array({Json{{"t", 2.0}, {"set", {{"clocks_event_reasons", 0x88}, {"sm_clock", 1050}}}},
                   Json{{"t", 3.0}, {"set", {{"pcie_width", 8}, {"pcie_gen", 4}}}},
                   Json{{"t", 5.0}, {"set", {{"clocks_event_reasons", 0}, {"sm_clock", 1980}}}}});
  FakeNvml fake(Json{{"devices", Json::array({gpu})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  std::vector<double> clocks;
  std::vector<double> reasons;
  std::vector<double> widths;
  for (int t = 0; t <= 6; ++t) {
    fake.SetTime(t + 0.5);
    o.collector->Sample(1'000'000 + t * 1000, s);
    clocks.push_back(*Get(s, 0, ExporterField::kSmClock));
    reasons.push_back(*Get(s, 0, ExporterField::kClockEventReasons));
    widths.push_back(*Get(s, 0, ExporterField::kPcieLinkWidth));
  }
  EXPECT_EQ(clocks, (std::vector<double>{1980, 1980, 1050, 1050, 1050, 1980, 1980}));
  EXPECT_EQ(reasons, (std::vector<double>{0, 0, 0x88, 0x88, 0x88, 0, 0}));
  EXPECT_EQ(widths, (std::vector<double>{16, 16, 16, 8, 8, 8, 8}));
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieLinkGen), 4);
  EXPECT_EQ(Get(s, 0, ExporterField::kPcieMaxLinkWidth), 16);  // the max stays
}

TEST(NvmlCollectorTest, XidEventsArriveOnTheirOwnThread) {
  Json gpu0 = H200(0);
  Json gpu1 = H200(1);
  gpu1["timeline"] = Json::array({Json{{"t", 1.0}, {"xid", 31}}, Json{{"t", 2.0}, {"xid", 13}}});
  FakeNvml fake(Json{{"devices", Json::array({gpu0, gpu1})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  EXPECT_FALSE(Get(s, 1, ExporterField::kXidErrors).has_value());
  fake.SetTime(1.5);
  ASSERT_TRUE(WaitUntil([&] { return o.collector->Status()[1].xids == 1; }));
  o.collector->Sample(1'001'000, s);
  EXPECT_EQ(Get(s, 1, ExporterField::kXidErrors), 31);
  EXPECT_FALSE(Get(s, 0, ExporterField::kXidErrors).has_value());  // only the GPU that had it
  fake.SetTime(2.5);
  ASSERT_TRUE(WaitUntil([&] { return o.collector->Status()[1].xids == 2; }));
  o.collector->Sample(1'002'000, s);
  EXPECT_EQ(Get(s, 1, ExporterField::kXidErrors), 13);  // the last Xid, as DCGM keeps it
  const MutexLock lock(o.log_mu);
  bool logged = false;
  for (const std::string& line : o.log) {
    logged = logged || line.find("Xid 31 (GPU memory page fault)") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

TEST(NvmlCollectorTest, UnsupportedFieldsAreAbsentNeverZero) {
  Json gpu = H200(0);
  for (const char* key : {"memory_temp", "energy_mj", "remapped_correctable", "pcie_replay",
                          "ecc_sbe_volatile", "ecc_dbe_volatile"}) {
    gpu["values"].erase(key);
  }
  gpu["gpm"] = false;  // e.g. an A100: no GPM
  gpu["xid_events"] = false;
  FakeNvml fake(Json{{"devices", Json::array({gpu})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  for (int t = 0; t < 3; ++t) {
    fake.SetTime(t);
    o.collector->Sample(1'000'000 + t * 1000, s);
  }
  for (ExporterField f :
       {ExporterField::kMemoryTemp, ExporterField::kTotalEnergy,
        ExporterField::kCorrectableRemappedRows, ExporterField::kUncorrectableRemappedRows,
        ExporterField::kRowRemapFailure, ExporterField::kPcieReplayCounter,
        ExporterField::kEccSbeVolTotal, ExporterField::kEccDbeVolTotal, ExporterField::kSmActive,
        ExporterField::kSmOccupancy, ExporterField::kTensorActive, ExporterField::kDramActive,
        ExporterField::kGrEngineActive}) {
    EXPECT_FALSE(Get(s, 0, f).has_value()) << static_cast<int>(f);
  }
  // Without GPM, PCIe traffic comes from NVML's throughput sample (KB/s).
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPcieTxBytes), 1000.0 * 1024);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPcieRxBytes), 2000.0 * 1024);
  EXPECT_EQ(Get(s, 0, ExporterField::kSmClock), 1980);  // the rest is there
  const GpuStatus status = o.collector->Status()[0];
  EXPECT_FALSE(status.gpm);
  EXPECT_FALSE(status.xid_events);
  EXPECT_EQ(status.errors, 0U);  // NOT_SUPPORTED is not an error

  std::string text;
  RenderSnapshot(s, {}, 0.001, text);
  EXPECT_EQ(text.find("DCGM_FI_DEV_MEMORY_TEMP"), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_PROF_SM_ACTIVE"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_SM_CLOCK{"), std::string::npos);
}

TEST(NvmlCollectorTest, ALostGpuIsReportedAndTheOthersAreStillRead) {
  Json gpu0 = H200(0);
  Json gpu1 = H200(1);
  gpu1["timeline"] = Json::array({Json{{"t", 2.0}, {"xid", 79}}, Json{{"t", 2.0}, {"lost", true}}});
  FakeNvml fake(Json{{"devices", Json::array({gpu0, gpu1})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  EXPECT_EQ(Get(s, 1, ExporterField::kSmClock), 1980);
  fake.SetTime(2.5);
  ASSERT_TRUE(WaitUntil([&] { return o.collector->Status()[1].xids == 1; }));
  o.collector->Sample(1'001'000, s);
  o.collector->Sample(1'002'000, s);

  EXPECT_EQ(Get(s, 0, ExporterField::kSmClock), 1980);
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPowerUsage), 650.25);
  EXPECT_FALSE(Get(s, 1, ExporterField::kSmClock).has_value());
  EXPECT_FALSE(Get(s, 1, ExporterField::kPowerUsage).has_value());
  EXPECT_FALSE(Get(s, 1, ExporterField::kSmActive).has_value());
  EXPECT_EQ(Get(s, 1, ExporterField::kXidErrors), 79);  // what it last said stays
  const std::vector<GpuStatus> status = o.collector->Status();
  EXPECT_FALSE(status[0].lost);
  ASSERT_TRUE(status[1].lost);
  EXPECT_NE(status[1].lost_reason.find("GPU is lost (15)"), std::string::npos)
      << status[1].lost_reason;
  EXPECT_EQ(status[1].errors, 0U);

  std::string text;
  RenderSnapshot(s, {}, 0.001, text);
  EXPECT_NE(text.find("gpucanary_nvml_gpu_lost{gpu=\"1\",UUID=\"GPU-1c5d6a3e-0000-4000-8000-"
                      "000000000001\",pci_bus_id=\"00000000:1A:00.0\",device=\"nvidia1\","
                      "modelName=\"NVIDIA H200\",Hostname=\"gpu-node-7\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpucanary_nvml_gpu_lost{gpu=\"0\""), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("err_code=\"79\",err_msg=\"GPU has fallen off the bus\"} 79"),
            std::string::npos)
      << text;
}

TEST(NvmlCollectorTest, AGpuLostBeforeStartIsListedNotFatal) {
  Json gpu1 = H200(1);
  gpu1["timeline"] = Json::array({Json{{"t", 0.0}, {"lost", true}}});
  FakeNvml fake(Json{{"devices", Json::array({H200(0), gpu1})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  ASSERT_EQ(s.gpus.size(), 2U);
  EXPECT_EQ(Get(s, 0, ExporterField::kSmClock), 1980);
  EXPECT_FALSE(Get(s, 1, ExporterField::kSmClock).has_value());
  EXPECT_TRUE(o.collector->Status()[1].lost);
}

TEST(NvmlCollectorTest, GpmSamplesAreNeverCloserThan100Ms) {
  Json gpu = H200(0);
  gpu["timeline"] = Json::array({Json{{"t", 0.3}, {"set", {{"gpm_sm_occupancy", 60.0}}}}});
  FakeNvml fake(Json{{"devices", Json::array({gpu})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  // Samples every 40 ms of fake and collector time.
  std::vector<std::optional<double>> occupancy;
  for (int i = 0; i <= 15; ++i) {
    fake.SetTime(i * 0.04);
    o.collector->Sample(1'000'000 + i * 40, s);
    occupancy.push_back(Get(s, 0, ExporterField::kSmOccupancy));
  }
  EXPECT_EQ(fake.GpmViolations(), 0U);
  EXPECT_FALSE(occupancy[0].has_value());  // one GPM sample is no window yet
  EXPECT_FALSE(occupancy[1].has_value());
  EXPECT_FALSE(occupancy[2].has_value());
  EXPECT_DOUBLE_EQ(occupancy[3].value_or(-1), 0.315);  // 120 ms: the first window
  EXPECT_DOUBLE_EQ(occupancy[4].value_or(-1), 0.315);  // 160 ms: the same window again
  EXPECT_DOUBLE_EQ(occupancy[15].value_or(-1), 0.60);
}

TEST(NvmlCollectorTest, AnOldDriverIsReadThroughItsOlderEntryPoints) {
  Json gpu = H200(0);
  gpu["name"] = "NVIDIA A100-SXM4-80GB";
  gpu["values"]["clocks_event_reasons"] = 4;
  FakeNvml fake(Json{{"driver_version", "470.57.02"}, {"devices", Json::array({gpu})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kOld, o));
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  fake.SetTime(1.0);
  o.collector->Sample(1'001'000, s);
  EXPECT_EQ(s.gpus[0].model_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.gpus[0].driver_version, "470.57.02");
  EXPECT_EQ(Get(s, 0, ExporterField::kClockEventReasons), 4);  // ...ThrottleReasons
  EXPECT_EQ(Get(s, 0, ExporterField::kGpuTemp), 61);           // nvmlDeviceGetTemperature
  EXPECT_EQ(Get(s, 0, ExporterField::kFbUsed), 120000 + 700);  // v1: used includes reserved
  EXPECT_FALSE(Get(s, 0, ExporterField::kFbReserved).has_value());
  EXPECT_FALSE(Get(s, 0, ExporterField::kMemoryTemp).has_value());  // no field values
  EXPECT_FALSE(Get(s, 0, ExporterField::kCorrectableRemappedRows).has_value());
  EXPECT_FALSE(Get(s, 0, ExporterField::kSmOccupancy).has_value());  // no GPM
  EXPECT_DOUBLE_EQ(*Get(s, 0, ExporterField::kPcieTxBytes), 1000.0 * 1024);
  EXPECT_FALSE(o.collector->Status()[0].gpm);
  const std::vector<std::string>& missing = o.library->missing();
  EXPECT_NE(std::find(missing.begin(), missing.end(), "nvmlGpmSampleGet"), missing.end());
}

TEST(NvmlCollectorTest, TheTextIsValidExpositionInDcgmExporterOrder) {
  FakeNvml fake(
      Json{{"driver_version", "550.90.12"}, {"devices", Json::array({H200(0), H200(1)})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  Snapshot s;
  o.collector->Sample(1'000'000, s);
  fake.SetTime(1.0);
  o.collector->Sample(1'001'000, s);
  std::string text;
  RenderSnapshot(s, {}, 0.000123, text);
  const expfmt::ReadReport report =
      expfmt::ReadBuffer(text, expfmt::Format::kPrometheusText, "nvml", {});
  EXPECT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]) << "\n" << text;
  EXPECT_GT(report.stats.samples, 60U);
  // Families in ascending DCGM field id, as dcgm-exporter prints them.
  const std::size_t sm = text.find("# TYPE DCGM_FI_DEV_SM_CLOCK gauge");
  const std::size_t power = text.find("# TYPE DCGM_FI_DEV_POWER_USAGE gauge");
  const std::size_t prof = text.find("# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge");
  ASSERT_NE(sm, std::string::npos);
  ASSERT_NE(power, std::string::npos);
  ASSERT_NE(prof, std::string::npos);
  EXPECT_LT(sm, power);
  EXPECT_LT(power, prof);
  EXPECT_NE(text.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1c5d6a3e-0000-4000-8000-"
                      "000000000000\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia0\","
                      "modelName=\"NVIDIA H200\",Hostname=\"gpu-node-7\","
                      "DCGM_FI_DRIVER_VERSION=\"550.90.12\"} 650.250000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpucanary_nvml_sample_duration_seconds{Hostname=\"gpu-node-7\"} 0.000123"),
            std::string::npos);
}

TEST(NvmlSamplerTest, SamplesOnTheIntervalGridAndRefusesUnder100Ms) {
  FakeNvml fake(Json{{"devices", Json::array({H200(0)})}});
  Opened o;
  ASSERT_NO_FATAL_FAILURE(Open(fake, kModern, o));
  ManualClock clock(1'000'050);
  {
    Sampler::Options options;
    options.interval_ms = 50;
    Sampler too_fast(*o.collector, clock, options);
    const Status s = too_fast.Start();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("at least 100 ms"), std::string::npos);
  }
  Mutex mu;
  std::vector<std::int64_t> times;
  Sampler::Options options;
  options.interval_ms = 1000;
  options.on_sample = [&](const Snapshot& s, std::string_view text, double) {
    const MutexLock lock(mu);
    times.push_back(s.time_ms);
    EXPECT_NE(text.find("DCGM_FI_DEV_SM_CLOCK"), std::string::npos);
  };
  Sampler sampler(*o.collector, clock, options);
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_NE(sampler.Latest().find("DCGM_FI_DEV_SM_CLOCK"), std::string::npos);  // at once
  for (int i = 1; i <= 3; ++i) {
    clock.Set(1'000'000 + i * 1000 + 10);
    ASSERT_TRUE(WaitUntil([&] { return sampler.samples() == static_cast<std::uint64_t>(i + 1); }))
        << "slot " << i << ": " << sampler.samples() << " samples";
  }
  sampler.Stop();
  const MutexLock lock(mu);
  EXPECT_EQ(times, (std::vector<std::int64_t>{1'000'050, 1'001'000, 1'002'000, 1'003'000}));
}

}  // namespace
}  // namespace gpucanary::nvml
