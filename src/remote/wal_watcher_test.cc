#include "remote/wal_watcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/labels.h"
#include "store/segment.h"
#include "store/store.h"
#include "store/wal.h"

namespace gpucanary::remote {
namespace {

namespace fs = std::filesystem;

struct Got {
  std::string series;  // labels as text
  std::int64_t t;
  double v;
  WalPosition pos;
};

// Records what the watcher gives; stops after `budget` samples when set.
class Recorder : public WalWatcher::Handler {
 public:
  void Series(store::SeriesRef ref, const model::Labels& labels) override {
    labels_[ref] = model::LabelsToString(labels);
  }
  bool Sample(store::SeriesRef ref, std::int64_t t, std::uint64_t bits,
              const WalPosition& pos) override {
    if (budget_ == 0) return false;
    if (budget_ > 0) --budget_;
    auto it = labels_.find(ref);
    got.push_back({it == labels_.end() ? "?" : it->second, t, std::bit_cast<double>(bits), pos});
    return true;
  }
  void Lost(std::string_view what) override { lost.emplace_back(what); }

  void set_budget(int n) { budget_ = n; }
  std::vector<Got> got;
  std::vector<std::string> lost;

 private:
  std::map<store::SeriesRef, std::string> labels_;
  int budget_ = -1;
};

class WalWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_walwatch_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<store::Store> Open(std::function<std::uint32_t()> keep = {}) {
    store::StoreOptions o;
    o.sync_interval_ms = 0;
    o.checkpoint_after_bytes = 32 << 10;
    o.wal_segment_bytes = 8 << 10;
    o.wal_keep_from = std::move(keep);
    auto s = store::Store::Open(dir_, o);
    EXPECT_TRUE(s.has_value()) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }
  static std::string Name(int k) {
    model::Labels l = {{"__name__", "DCGM_FI_DEV_SM_CLOCK"}, {"gpu", std::to_string(k)}};
    return model::LabelsToString(l);
  }
  // `seconds` commits of `series` series from second `from`: value k*1000+i.
  static void Write(store::Store& s, int series, int from, int seconds) {
    auto app = s.NewAppender();
    std::vector<store::SeriesRef> refs;
    for (int k = 0; k < series; ++k) {
      model::Labels l = {{"__name__", "DCGM_FI_DEV_SM_CLOCK"}, {"gpu", std::to_string(k)}};
      refs.push_back(*app->Series(l));
    }
    for (int i = from; i < from + seconds; ++i) {
      for (int k = 0; k < series; ++k) {
        ASSERT_TRUE(
            app->Append(refs[static_cast<std::size_t>(k)], i * 1000LL, k * 1000.0 + i).ok());
      }
      ASSERT_TRUE(app->Commit().has_value());
    }
  }
  // Every (series, second) exactly once, each series in time order, places growing.
  static void ExpectExactly(const std::vector<Got>& got, int series, int from, int to) {
    ASSERT_EQ(got.size(), static_cast<std::size_t>(series * (to - from)));
    std::map<std::string, int> next;
    for (int k = 0; k < series; ++k) next[Name(k)] = from;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const Got& g = got[i];
      ASSERT_TRUE(next.contains(g.series)) << g.series;
      const int k = std::stoi(g.series.substr(g.series.find("gpu=\"") + 5));
      ASSERT_EQ(g.t, next[g.series] * 1000LL) << g.series;
      ASSERT_EQ(g.v, k * 1000.0 + next[g.series]);
      ++next[g.series];
      if (i > 0) {
        ASSERT_LT(got[i - 1].pos, g.pos);
      }
    }
  }

  fs::path dir_;
};

TEST_F(WalWatcherTest, ReadsEverySampleInCommitOrderAcrossSegmentsWhileTheStoreWrites) {
  std::atomic<std::uint32_t> keep{0};  // keep every segment: the watcher reads from the start
  auto s = Open([&keep] { return keep.load(); });
  WalWatcher w(dir_ / "wal");
  Recorder r;
  ASSERT_TRUE(w.Start({}, r).ok());
  for (int round = 0; round < 6; ++round) {
    Write(*s, 8, round * 50, 50);
    auto caught_up = w.Poll(r);
    ASSERT_TRUE(caught_up.has_value()) << caught_up.error().ToString();
    EXPECT_TRUE(*caught_up);
    EXPECT_EQ(w.BytesBehind(), 0U);
  }
  EXPECT_GT(store::NumberedFiles(dir_ / "wal", "").size(), 3U);  // read across segments
  ExpectExactly(r.got, 8, 0, 300);
  EXPECT_TRUE(r.lost.empty());
}

TEST_F(WalWatcherTest, AStoppedReadResumesAtTheSampleItStoppedAt) {
  auto s = Open([] { return 0U; });
  WalWatcher w(dir_ / "wal");
  Recorder r;
  ASSERT_TRUE(w.Start({}, r).ok());
  Write(*s, 8, 0, 200);
  int polls = 0;
  for (;;) {
    r.set_budget(13);  // not a multiple of a record's 8 samples
    auto caught_up = w.Poll(r);
    ASSERT_TRUE(caught_up.has_value());
    ++polls;
    if (*caught_up) break;
  }
  EXPECT_GT(polls, 100);
  ExpectExactly(r.got, 8, 0, 200);
}

TEST_F(WalWatcherTest, StartingAtAPlaceGivesTheSamplesFromThereWithTheLabelsOfEarlierSeries) {
  auto s = Open([] { return 0U; });
  Write(*s, 8, 0, 100);
  WalWatcher first(dir_ / "wal");
  Recorder all;
  ASSERT_TRUE(first.Start({}, all).ok());
  ASSERT_TRUE(first.Poll(all).has_value());
  ASSERT_EQ(all.got.size(), 800U);
  const WalPosition middle = all.got[403].pos;  // inside a record
  WalWatcher second(dir_ / "wal");
  Recorder rest;
  ASSERT_TRUE(second.Start(middle, rest).ok());
  ASSERT_TRUE(second.Poll(rest).has_value());
  ASSERT_EQ(rest.got.size(), 800U - 403U);
  for (std::size_t i = 0; i < rest.got.size(); ++i) {
    EXPECT_EQ(rest.got[i].pos, all.got[403 + i].pos);
    EXPECT_EQ(rest.got[i].series, all.got[403 + i].series);  // labels from series records before
    EXPECT_EQ(rest.got[i].t, all.got[403 + i].t);
  }
}

TEST_F(WalWatcherTest, LabelsComeFromTheCheckpointWhenTheSegmentsThatNamedThemAreGone) {
  auto s = Open();  // nothing kept: checkpoints delete old segments
  Write(*s, 8, 0, 300);
  const WalPosition end = WalWatcher::End(dir_ / "wal");
  WalWatcher w(dir_ / "wal");
  Recorder r;
  ASSERT_TRUE(w.Start(end, r).ok());
  Write(*s, 8, 300, 20);
  ASSERT_TRUE(w.Poll(r).has_value());
  ExpectExactly(r.got, 8, 300, 320);
}

TEST_F(WalWatcherTest, SegmentsDeletedBeforeTheyWereReadAreReportedLost) {
  auto s = Open();
  Write(*s, 8, 0, 10);
  WalWatcher w(dir_ / "wal");
  Recorder r;
  ASSERT_TRUE(w.Start({}, r).ok());
  ASSERT_TRUE(w.Poll(r).has_value());
  const std::size_t before = r.got.size();
  // The watcher stays on its segment while the store writes and deletes many.
  Write(*s, 8, 10, 3000);
  auto caught_up = w.Poll(r);
  ASSERT_TRUE(caught_up.has_value());
  ASSERT_FALSE(r.lost.empty());
  EXPECT_NE(r.lost.front().find("were deleted before they were read"), std::string::npos)
      << r.lost.front();
  EXPECT_GT(r.got.size(), before);
  EXPECT_LT(r.got.size(), 8U * 3010U);
}

TEST_F(WalWatcherTest, ATornTailOfAFinishedSegmentIsReportedAndReadingGoesOn) {
  std::uint32_t segment = 0;
  {
    auto s = Open([] { return 0U; });
    Write(*s, 4, 0, 5);
    segment = WalWatcher::End(dir_ / "wal").segment;
  }
  // A record cut short, as a crash mid-write leaves it.
  const fs::path path = dir_ / "wal" / store::SegmentFileName(segment);
  {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    const char torn[] = {'\x40', '\x00', '\x00', '\x00', '\x02', 'x'};
    out.write(torn, sizeof torn);
  }
  WalWatcher w(dir_ / "wal");
  Recorder r;
  ASSERT_TRUE(w.Start({}, r).ok());
  ASSERT_TRUE(w.Poll(r).has_value());
  EXPECT_EQ(r.got.size(), 20U);
  EXPECT_TRUE(r.lost.empty());       // the segment is the newest: the writer may not be done
  auto s = Open([] { return 0U; });  // recovery cuts the tail and starts a new segment
  Write(*s, 4, 5, 5);
  ASSERT_TRUE(w.Poll(r).has_value());
  ExpectExactly(r.got, 4, 0, 10);
  ASSERT_EQ(r.lost.size(), 1U);
  EXPECT_NE(r.lost[0].find("are not a whole record"), std::string::npos) << r.lost[0];
}

}  // namespace
}  // namespace gpucanary::remote
