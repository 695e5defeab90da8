// Starting a real Daemon (HTTP on 127.0.0.1:0) on a data directory that needs
// recovering: /-/healthy answers while the store recovers, /-/ready only once
// Start is done. The probes run inside the daemon's own log callback, at the
// moment the store reports cutting a torn WAL tail, so they happen during
// recovery by construction, without sleeps or timing.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "daemon/daemon.h"
#include "net/http_client.h"
#include "store/store.h"

namespace gpucanary::daemon {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kNowMs = 1764680000000;

int StatusOf(const std::string& url) {
  auto r = net::Fetch(url);
  EXPECT_TRUE(r.has_value()) << url << ": " << r.error().message();
  return r ? r->status : 0;
}

class DaemonStartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gc_daemon_startup_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A store with series and samples, closed with half a record of garbage at
  // the end of its last WAL segment: reopening it cuts that tail, and says so.
  void WriteStoreWithTornWal() {
    {
      auto store = store::Store::Open(dir_, store::StoreOptions{});
      ASSERT_TRUE(store.has_value()) << store.error().message();
      auto app = (*store)->NewAppender();
      for (int k = 0; k < 100; ++k) {
        model::Labels l = {{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", std::to_string(k)}};
        model::SortLabels(l);
        auto ref = app->Series(l);
        ASSERT_TRUE(ref.has_value());
        ASSERT_TRUE(app->Append(*ref, kNowMs, 60 + k).ok());
      }
      ASSERT_TRUE(app->Commit().has_value());
    }
    fs::path last;
    for (const auto& e : fs::directory_iterator(dir_ / "wal")) {
      const std::string name = e.path().filename().string();
      if (name.find("checkpoint") == std::string::npos && e.path() > last) last = e.path();
    }
    ASSERT_FALSE(last.empty());
    std::ofstream out(last, std::ios::app | std::ios::binary);
    out << std::string("\x40\x00\x00\x00\x02garbage", 12);
  }

  fs::path dir_;
};

TEST_F(DaemonStartupTest, HealthyWhileTheStoreRecoversReadyOnlyAfter) {
  WriteStoreWithTornWal();
  ServeConfig config;
  config.listen_port = 0;
  config.data_dir = dir_.string();
  std::string url;
  int healthy = 0;
  int ready = 0;
  int query = 0;
  DaemonOptions options;
  options.empty_metadata = true;  // the store was written without a daemon: no meta.sqlite
  // Called on the thread running Daemon::Start, in the order it goes.
  options.log = [&](std::string_view line) {
    constexpr std::string_view kListening = "serve: answering /-/healthy on ";
    if (line.starts_with(kListening)) {
      const std::string_view rest = line.substr(kListening.size());
      url = "http://" + std::string(rest.substr(0, rest.find(' ')));
    } else if (line.find("torn tail") != std::string_view::npos && !url.empty()) {
      healthy = StatusOf(url + "/-/healthy");
      ready = StatusOf(url + "/-/ready");
      query = StatusOf(url + "/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP");
    }
  };
  ManualClock clock(kNowMs);
  auto daemon = Daemon::Start(config, clock, options);
  ASSERT_TRUE(daemon.has_value()) << daemon.error().message();
  ASSERT_FALSE(url.empty()) << "no listening line before recovery";
  EXPECT_EQ(url, "http://127.0.0.1:" + std::to_string((*daemon)->port()));
  // During recovery: alive, not ready, no API yet.
  EXPECT_EQ(healthy, 200);
  EXPECT_EQ(ready, 503);
  EXPECT_EQ(query, 503);
  // After Start: ready, and the recovered series are there.
  EXPECT_EQ(StatusOf(url + "/-/ready"), 200);
  EXPECT_EQ(StatusOf(url + "/-/healthy"), 200);
  auto r = net::Fetch(
      url + "/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP&time=" + std::to_string(kNowMs / 1000));
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["data"]["result"].size(), 100U) << r->body;
}

}  // namespace
}  // namespace gpucanary::daemon
