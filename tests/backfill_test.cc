// gpucanary backfill: runs the real binary on a generated recording, then reads
// the data directory back through the store's own query API.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/matcher.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
namespace st = gpucanary::store;
using ::testing::HasSubstr;

constexpr std::int64_t kT0 = 1'700'000'000'000;  // ms
constexpr int kSeconds = 600;                    // > 240: several sealed chunks per series
constexpr int kGpus = 4;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An OpenMetrics recording: one gauge family, kGpus series at 1 s, with an
// escaped label value so the label text and the stored label differ.
std::string Recording() {
  std::string om = "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n";
  for (int g = 0; g < kGpus; ++g) {
    for (int s = 0; s < kSeconds; ++s) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",Hostname=\"h\\\"1\"} %d.5 %lld.000\n", g,
                    100 + g * 10 + s % 7, static_cast<long long>((kT0 + s * 1000LL) / 1000));
      om += line;
    }
  }
  return om + "# EOF\n";
}

class BackfillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-backfill-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult Run(const std::string& args) {
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    const std::string cmd = std::string(GPUCANARY_BIN) + " " + args + " </dev/null >" +
                            out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  fs::path dir_;
};

TEST_F(BackfillTest, AppendsEverySampleAndReadsBack) {
  std::ofstream(dir_ / "rec.om") << Recording();
  const fs::path data = dir_ / "data";
  RunResult r = Run("backfill --data " + data.string() + " " + (dir_ / "rec.om").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rec.om: 2400 samples, 4 series, 0 rejected, 0 bad lines"));
  EXPECT_EQ(r.err, "");

  st::StoreOptions options;
  options.retention_ms = 0;
  auto store = st::Store::Open(data, options);
  ASSERT_TRUE(store) << store.error().message();
  auto got =
      (*store)->Select({*gpucanary::model::Matcher::Make(gpucanary::model::Matcher::Type::kEqual,
                                                         "__name__", "DCGM_FI_DEV_POWER_USAGE")},
                       0, INT64_MAX);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), static_cast<std::size_t>(kGpus));
  for (int g = 0; g < kGpus; ++g) {
    const st::SeriesSamples& s = (*got)[static_cast<std::size_t>(g)];
    EXPECT_EQ(gpucanary::model::LabelValue(s.labels, "gpu"), std::to_string(g));
    EXPECT_EQ(gpucanary::model::LabelValue(s.labels, "Hostname"), "h\"1");
    ASSERT_EQ(s.samples.size(), static_cast<std::size_t>(kSeconds));
    for (std::size_t k = 0; k < s.samples.size(); ++k) {
      const int i = static_cast<int>(k);
      EXPECT_EQ(s.samples[k].t, kT0 + i * 1000LL);
      EXPECT_EQ(s.samples[k].v, 100 + g * 10 + i % 7 + 0.5);
    }
  }
  // Sealed on exit: every sample is in a chunk segment, none left open.
  EXPECT_GT((*store)->stats().segment_bytes, 0u);
}

TEST_F(BackfillTest, ReportsBadLinesAndRejectedSamples) {
  // Line 3 is malformed; line 4 goes back in time (the reader's validator
  // catches that within a file, with its position).
  std::ofstream(dir_ / "bad.prom") << "up{job=\"a\"} 1 2000\n"
                                      "up{job=\"a\"} 1 3000\n"
                                      "up{job=\"a\" 1 4000\n"
                                      "up{job=\"a\"} 0 1000\n";
  const fs::path data = dir_ / "data";
  RunResult r = Run("backfill --data " + data.string() + " " + (dir_ / "bad.prom").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("bad.prom:3:"));
  EXPECT_THAT(r.err, HasSubstr("bad.prom:4:1: timestamp 1000 ms of series 'up' is older"));
  EXPECT_THAT(r.out, HasSubstr("bad.prom: 2 samples, 1 series, 0 rejected, 2 bad lines"));
}

TEST_F(BackfillTest, StoreRejectsOlderSamplesFromALaterFile) {
  std::ofstream(dir_ / "new.prom") << "up{job=\"a\"} 1 5000\n";
  std::ofstream(dir_ / "old.prom") << "up{job=\"a\"} 1 4000\nup{job=\"a\"} 1 6000\nnots 1\n";
  const fs::path data = dir_ / "data";
  RunResult r = Run("backfill --data " + data.string() + " " + (dir_ / "new.prom").string() + " " +
                    (dir_ / "old.prom").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.out, HasSubstr("new.prom: 1 samples, 1 series, 0 rejected"));
  EXPECT_THAT(r.out, HasSubstr("old.prom: 1 samples, 1 series, 2 rejected"));
  EXPECT_THAT(r.err, HasSubstr("old.prom: nots: sample without a timestamp"));
}

TEST_F(BackfillTest, MissingFileIsBadInput) {
  RunResult r =
      Run("backfill --data " + (dir_ / "data").string() + " " + (dir_ / "nope.om").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("nope.om"));
}

}  // namespace
