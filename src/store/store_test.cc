#include "store/store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "model/labels.h"
#include "store/file_size_limit.h"
#include "store/segment.h"
#include "store/wal.h"

namespace gpucanary::store {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_store_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  StoreOptions Options() {
    StoreOptions o;
    o.sync_interval_ms = 0;
    o.log = [this](std::string_view line) { log_.emplace_back(line); };
    return o;
  }
  // Small WAL segments and checkpoints, so that a few hundred seconds of
  // 16 series write several of each.
  StoreOptions CheckpointingOptions() {
    StoreOptions o = Options();
    o.checkpoint_after_bytes = 32 << 10;
    o.wal_segment_bytes = 8 << 10;
    return o;
  }
  // 600 s of 16 series written with `o` (several checkpoints); the
  // checkpoint files left, oldest first.
  std::vector<fs::path> FillAndListCheckpoints(const StoreOptions& o) {
    {
      auto store = OpenStore(o);
      Fill(*store, 16, 0, 600);
    }
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "wal")) {
      if (e.path().filename().string().starts_with("checkpoint.")) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::unique_ptr<Store> OpenStore(StoreOptions o) {
    auto s = Store::Open(dir_, std::move(o));
    EXPECT_TRUE(s.has_value()) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }

  static model::Labels Gpu(const std::string& host, int gpu,
                           const std::string& name = "DCGM_FI_DEV_SM_CLOCK") {
    model::Labels l = {{"Hostname", host}, {"__name__", name}, {"gpu", std::to_string(gpu)}};
    model::SortLabels(l);
    return l;
  }
  static double Value(int series, int i) {
    // Six-decimal dcgm-style values, a different shape per series.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%f", 300 + series + ((i * 7919 + series * 31) % 1000) / 1000.0);
    return std::strtod(buf, nullptr);
  }
  // Writes `seconds` of 1 s samples for `series` series, one commit per second.
  static void Fill(Store& store, int series, int from_s, int seconds) {
    auto app = store.NewAppender();
    std::vector<SeriesRef> refs;
    for (int k = 0; k < series; ++k) {
      refs.push_back(*app->Series(Gpu("node-" + std::to_string(k / 8), k % 8)));
    }
    for (int i = from_s; i < from_s + seconds; ++i) {
      for (int k = 0; k < series; ++k) {
        ASSERT_TRUE(app->Append(refs[static_cast<std::size_t>(k)], i * 1000LL, Value(k, i)).ok());
      }
      auto r = app->Commit();
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      ASSERT_TRUE(r->first_error.ok()) << r->first_error.ToString();
    }
  }
  // Every sample Fill wrote, by series.
  static Result<std::vector<SeriesSamples>> SelectFilled(const Store& store) {
    return store.Select(
        {*model::Matcher::Make(model::Matcher::Type::kEqual, "__name__", "DCGM_FI_DEV_SM_CLOCK")},
        0, 1LL << 50);
  }
  // Fill's series number k of a series it wrote ("node-<k/8>", gpu k%8).
  static int SeriesNumber(const model::Labels& labels) {
    return std::stoi(std::string(model::LabelValue(labels, "Hostname")).substr(5)) * 8 +
           std::stoi(std::string(model::LabelValue(labels, "gpu")));
  }
  // Flips the bits of `mask` in the byte at `offset` of `file`.
  static void FlipByte(const fs::path& file, std::uint64_t offset, char mask) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ mask));
  }
  // Checks that every series holds exactly seconds [from_s, to_s).
  static void ExpectFilled(const Store& store, int series, int from_s, int to_s) {
    auto got = SelectFilled(store);
    ASSERT_TRUE(got.has_value()) << got.error().ToString();
    ASSERT_EQ(got->size(), static_cast<std::size_t>(series));
    for (const SeriesSamples& s : *got) {
      const int k = SeriesNumber(s.labels);
      ASSERT_EQ(s.samples.size(), static_cast<std::size_t>(to_s - from_s))
          << model::LabelsToString(s.labels);
      for (int i = from_s; i < to_s; ++i) {
        const Sample& smp = s.samples[static_cast<std::size_t>(i - from_s)];
        ASSERT_EQ(smp.t, i * 1000LL);
        ASSERT_EQ(std::bit_cast<std::uint64_t>(smp.v), std::bit_cast<std::uint64_t>(Value(k, i)));
      }
    }
  }

  fs::path dir_;
  std::vector<std::string> log_;
};

TEST_F(StoreTest, SamplesComeBackExactlyFromHeadChunksAndSealedSegments) {
  StoreOptions o = Options();
  o.segment_bytes = 4 << 10;  // several sealed segments
  auto store = OpenStore(o);
  Fill(*store, 16, 0, 1000);
  const StoreStats st = store->stats();
  EXPECT_GT(st.segments, 3U);
  EXPECT_EQ(st.samples_appended, 16000U);
  ExpectFilled(*store, 16, 0, 1000);
  // A window inside: exactly its samples.
  auto got = store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "3")},
                           100500, 200000);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 2U);  // node-0/3 and node-1/3
  EXPECT_EQ((*got)[0].samples.size(), 100U);
  EXPECT_EQ((*got)[0].samples.front().t, 101000);
}

TEST_F(StoreTest, ReopenRecoversEverythingCommitted) {
  StoreOptions o = Options();
  o.segment_bytes = 32 << 10;
  {
    auto store = OpenStore(o);
    Fill(*store, 8, 0, 700);
  }
  auto store = OpenStore(o);
  ExpectFilled(*store, 8, 0, 700);
  // And keeps appending where it left off.
  Fill(*store, 8, 700, 100);
  ExpectFilled(*store, 8, 0, 800);
}

// Recovery meets series out of ref order: the active segment names the
// newest, hottest series first; the checkpoint and the WAL then bring every
// lower ref. Each must be found by its labels and matchers, and the head's
// index is built once per recovery, not once per series (issue 22: rebuilding
// it per series made restarts quadratic in the series count).
TEST_F(StoreTest, RecoveryOutOfRefOrderIndexesEverySeriesAndBuildsTheIndexOnce) {
  StoreOptions o = Options();
  o.max_chunk_samples = 4;     // four samples seal a chunk
  o.segment_span_ms = 10'000;  // chunks spanning 10 s seal the segment
  constexpr int kSeries = 64;  // A: 0-31 (before the checkpoint); B: 32-63; hot: 56-63
  auto seconds_of = [](int k) -> std::vector<int> {
    if (k < 32) return {0, 1, 2, 3, 4, 5, 6, 15, 16};
    if (k < 56) return {20};
    return {20, 21, 22, 23, 24};
  };
  {
    auto store = OpenStore(o);
    auto app = store->NewAppender();
    std::vector<SeriesRef> refs;
    auto commit = [&](int from, int to, int second) {
      for (int k = from; k < to; ++k) {
        ASSERT_TRUE(
            app->Append(refs[static_cast<std::size_t>(k)], second * 1000LL, Value(k, second)).ok());
      }
      ASSERT_TRUE(app->Commit()->first_error.ok());
    };
    auto create = [&](int from, int to) {
      for (int k = from; k < to; ++k) {
        refs.push_back(*app->Series(Gpu("node-" + std::to_string(k / 8), k % 8)));
      }
    };
    create(0, 32);
    for (int second : seconds_of(0)) commit(0, 32, second);
    ASSERT_EQ(store->stats().segments, 2U);  // sealed, with a checkpoint
    create(32, kSeries);
    commit(32, kSeries, 20);
    for (int second : {21, 22, 23, 24}) commit(56, kSeries, second);
  }
  for (int reopen = 0; reopen < 2; ++reopen) {
    auto store = OpenStore(o);
    const StoreStats st = store->stats();
    EXPECT_EQ(st.head_series, static_cast<std::size_t>(kSeries));
    EXPECT_EQ(st.head_index_builds, 1U);
    auto got = store->Select(
        {*model::Matcher::Make(model::Matcher::Type::kRegex, "__name__", "DCGM_.*")}, 0, 1LL << 50);
    ASSERT_TRUE(got.has_value()) << got.error().ToString();
    ASSERT_EQ(got->size(), static_cast<std::size_t>(kSeries));
    for (const SeriesSamples& s : *got) {
      const int k = std::stoi(std::string(model::LabelValue(s.labels, "Hostname")).substr(5)) * 8 +
                    std::stoi(std::string(model::LabelValue(s.labels, "gpu")));
      std::vector<std::int64_t> want;
      for (int second : seconds_of(k)) want.push_back(second * 1000LL);
      std::vector<std::int64_t> have;
      for (const Sample& smp : s.samples) have.push_back(smp.t);
      EXPECT_EQ(have, want) << model::LabelsToString(s.labels);
    }
    auto gpu3 = store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "3")}, 0,
                              1LL << 50);
    ASSERT_TRUE(gpu3.has_value());
    EXPECT_EQ(gpu3->size(), 8U);
    // Lookup by labels finds the recovered series instead of creating them again.
    auto app = store->NewAppender();
    for (int k = 0; k < kSeries; ++k) {
      ASSERT_TRUE(app->Series(Gpu("node-" + std::to_string(k / 8), k % 8)).has_value());
    }
    EXPECT_EQ(store->stats().head_series, static_cast<std::size_t>(kSeries));
  }
}

TEST_F(StoreTest, CheckpointsKeepTheWalSegmentsAReaderNeedsUpToTheirByteLimit) {
  std::atomic<std::uint32_t> keep{UINT32_MAX};
  StoreOptions o = CheckpointingOptions();
  o.wal_keep_from = [&keep] { return keep.load(); };
  o.wal_keep_max_bytes = 1 << 20;
  auto segments = [this] { return NumberedFiles(dir_ / "wal", ""); };
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  Fill(*store, 16, 0, 100);
  ASSERT_FALSE(segments().empty());
  // A reader needs the oldest segment there is: no later checkpoint deletes it.
  const std::uint32_t first = segments().front();
  keep = first;
  Fill(*store, 16, 100, 500);
  std::vector<std::uint32_t> now = segments();
  ASSERT_GT(now.size(), 10U);
  EXPECT_EQ(now.front(), first);
  for (std::size_t i = 1; i < now.size(); ++i) EXPECT_EQ(now[i], now[i - 1] + 1);
  // The reader moves on: the next checkpoint deletes what it no longer needs.
  const std::uint32_t later = now[now.size() / 2];
  keep = later;
  ASSERT_TRUE(store->Checkpoint().ok());
  EXPECT_EQ(segments().front(), later);
  // Past the byte limit the oldest kept segments go, and the log says so.
  keep = later;
  store.reset();
  o.wal_keep_max_bytes = 4 << 10;  // half a segment
  store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  Fill(*store, 16, 600, 50);
  ASSERT_TRUE(store->Checkpoint().ok());
  EXPECT_GT(segments().front(), later);
  EXPECT_TRUE(std::any_of(log_.begin(), log_.end(), [](const std::string& l) {
    return l.find("deleted before a remote_write reader had read it") != std::string::npos;
  }));
  // Nothing committed was lost to the store itself.
  store.reset();
  store = OpenStore(Options());
  ExpectFilled(*store, 16, 0, 650);
}

TEST_F(StoreTest, KillNineLosesNothingCommitted) {
  StoreOptions o = Options();
  o.segment_bytes = 32 << 10;
  o.checkpoint_after_bytes = 64 << 10;
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto store = Store::Open(dir_, o);
    if (!store) ::_exit(2);
    Fill(**store, 8, 0, 900);
    ::_exit(::testing::Test::HasFailure() ? 3 : 0);  // no destructors: like kill -9
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  auto store = OpenStore(o);
  ExpectFilled(*store, 8, 0, 900);
}

TEST_F(StoreTest, TornWalTailIsCutWithALogLine) {
  StoreOptions o = Options();
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto store = Store::Open(dir_, o);
    if (!store) ::_exit(2);
    Fill(**store, 4, 0, 50);
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  // The last WAL segment: half a record of garbage at its end.
  fs::path last;
  for (const auto& e : fs::directory_iterator(dir_ / "wal")) {
    const std::string name = e.path().filename().string();
    if (name.find("checkpoint") == std::string::npos && e.path() > last) last = e.path();
  }
  ASSERT_FALSE(last.empty());
  {
    std::ofstream out(last, std::ios::app | std::ios::binary);
    out << std::string("\x40\x00\x00\x00\x02garbage", 12);
  }
  auto store = OpenStore(o);
  ExpectFilled(*store, 4, 0, 50);
  bool cut = false;
  for (const std::string& line : log_) cut = cut || line.find("torn tail") != std::string::npos;
  EXPECT_TRUE(cut);
}

TEST_F(StoreTest, CorruptActiveSegmentTailIsCut) {
  StoreOptions o = Options();
  o.max_chunk_samples = 10;
  {
    auto store = OpenStore(o);
    Fill(*store, 4, 0, 100);
  }
  fs::path seg = dir_ / "chunks" / "00000001";
  ASSERT_TRUE(fs::exists(seg));
  const auto size = fs::file_size(seg);
  fs::resize_file(seg, size - 3);  // tear the last chunk record
  auto store = OpenStore(o);
  // Whatever was torn from the segment is still in the checkpoint or WAL.
  ExpectFilled(*store, 4, 0, 100);
  bool cut = false;
  for (const std::string& line : log_)
    cut = cut || line.find("chunks/00000001: cut") != std::string::npos;
  EXPECT_TRUE(cut);
}

TEST_F(StoreTest, OutOfOrderAndDuplicatesAreRejectedOneByOne) {
  auto store = OpenStore(Options());
  auto app = store->NewAppender();
  const SeriesRef a = *app->Series(Gpu("n", 0));
  const SeriesRef b = *app->Series(Gpu("n", 1));
  ASSERT_TRUE(app->Append(a, 2000, 1).ok());
  ASSERT_TRUE(app->Append(b, 2000, 1).ok());
  ASSERT_TRUE(app->Commit()->first_error.ok());
  ASSERT_TRUE(app->Append(a, 1000, 5).ok());  // older
  ASSERT_TRUE(app->Append(a, 2000, 1).ok());  // exact repeat: dropped silently
  ASSERT_TRUE(app->Append(b, 2000, 2).ok());  // same time, other value
  ASSERT_TRUE(app->Append(b, 3000, 3).ok());  // fine
  auto r = app->Commit();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->appended, 1U);
  EXPECT_EQ(r->out_of_order, 1U);
  EXPECT_EQ(r->duplicates, 1U);
  EXPECT_EQ(r->first_error.code(), StatusCode::kOutOfRange);
  EXPECT_NE(r->first_error.message().find("out of order sample"), std::string::npos);
  EXPECT_EQ(app->Append(12345, 1, 1).code(), StatusCode::kNotFound);
  auto got =
      store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "1")}, 0, 10000);
  ASSERT_EQ(got->size(), 1U);
  ASSERT_EQ((*got)[0].samples.size(), 2U);
  EXPECT_EQ((*got)[0].samples[1].v, 3);
}

// The head marks "no sample yet" with the minimum timestamp, so a sample at
// that timestamp cannot be told from it: it is refused as out of bounds, not
// reported as a duplicate of a sample that never was (nor, with the
// sentinel's value bits, dropped silently as an exact repeat).
TEST_F(StoreTest, ASampleAtTheMinimumTimestampIsOutOfBoundsNotADuplicate) {
  auto store = OpenStore(Options());
  auto app = store->NewAppender();
  const SeriesRef a = *app->Series(Gpu("n", 0));
  const SeriesRef b = *app->Series(Gpu("n", 1));
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  ASSERT_TRUE(app->Append(a, kMin, 1).ok());
  ASSERT_TRUE(app->Append(b, kMin, 0).ok());
  auto r = app->Commit();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->appended, 0U);
  EXPECT_EQ(r->duplicates, 0U);
  EXPECT_EQ(r->out_of_order, 2U);
  EXPECT_EQ(r->first_error.code(), StatusCode::kOutOfRange);
  EXPECT_NE(r->first_error.message().find("out of bounds"), std::string::npos)
      << r->first_error.message();
  EXPECT_EQ(store->stats().samples_rejected, 2U);
  // The series are still empty: their first real samples go in.
  ASSERT_TRUE(app->Append(a, kMin + 1, 1).ok());
  ASSERT_TRUE(app->Append(b, 1000, 0).ok());
  r = app->Commit();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->appended, 2U);
  EXPECT_TRUE(r->first_error.ok()) << r->first_error.message();
}

// on_checkpoint runs once per installed checkpoint, whether asked for or
// due by WAL size (opening a store installs one too), and not otherwise.
TEST_F(StoreTest, OnCheckpointIsCalledForEachInstalledCheckpoint) {
  StoreOptions o = CheckpointingOptions();
  int checkpoints = 0;
  o.on_checkpoint = [&] { ++checkpoints; };
  auto store = OpenStore(o);
  const int at_open = checkpoints;
  auto app = store->NewAppender();
  const SeriesRef a = *app->Series(Gpu("n", 0));
  ASSERT_TRUE(app->Append(a, 1000, 1).ok());
  ASSERT_TRUE(app->Commit().has_value());
  EXPECT_EQ(checkpoints, at_open);
  ASSERT_TRUE(store->Checkpoint().ok());
  EXPECT_EQ(checkpoints, at_open + 1);
  // Due by size: these options checkpoint after 32 KiB of WAL.
  int commits = 0;
  for (; commits < 4000 && checkpoints < at_open + 2; ++commits) {
    ASSERT_TRUE(app->Append(a, 2000 + commits * 1000, commits).ok());
    ASSERT_TRUE(app->Commit().has_value());
  }
  EXPECT_EQ(checkpoints, at_open + 2);
  EXPECT_GT(commits, 100);  // not at once: only once 32 KiB were written
}

TEST_F(StoreTest, TheSeriesLimitIsAnOption) {
  StoreOptions o = Options();
  o.max_series = 2;
  auto store = OpenStore(o);
  auto app = store->NewAppender();
  ASSERT_TRUE(app->Series(Gpu("n", 0)).has_value());
  ASSERT_TRUE(app->Series(Gpu("n", 1)).has_value());
  ASSERT_TRUE(app->Series(Gpu("n", 0)).has_value());  // not new
  const Result<SeriesRef> third = app->Series(Gpu("n", 2));
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(third.error().message(), "series limit reached (2)");
}

TEST_F(StoreTest, RollbackDropsTheBatch) {
  auto store = OpenStore(Options());
  auto app = store->NewAppender();
  const SeriesRef a = *app->Series(Gpu("n", 0));
  ASSERT_TRUE(app->Append(a, 1000, 1).ok());
  app->Rollback();
  ASSERT_TRUE(app->Commit()->first_error.ok());
  EXPECT_TRUE(
      store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "0")}, 0, 1e9)
          ->empty());
}

TEST_F(StoreTest, BadLabelsAreRefusedWithTheirName) {
  auto store = OpenStore(Options());
  auto app = store->NewAppender();
  model::Labels dup = {{"__name__", "x"}, {"gpu", "1"}, {"gpu", "2"}};
  EXPECT_EQ(app->Series(dup).error().message(), "label 2 'gpu': duplicate name");
  model::Labels empty = {{"__name__", "x"}, {"gpu", ""}};
  EXPECT_EQ(app->Series(empty).error().message(), "label 1 'gpu': empty value");
  model::Labels no_name = {{"gpu", "1"}};
  EXPECT_EQ(app->Series(no_name).error().message(), "no __name__ label");
}

TEST_F(StoreTest, MatchersSelectLikePromQL) {
  auto store = OpenStore(Options());
  Fill(*store, 16, 0, 5);  // node-0 and node-1, gpus 0-7
  auto count = [&](const std::string& selector) -> int {
    auto m = model::ParseSelector(selector);
    EXPECT_TRUE(m.has_value()) << selector << ": " << m.error().ToString();
    if (!m) return -1;
    auto got = store->Select(*m, 0, 1e9);
    return got ? static_cast<int>(got->size()) : -1;
  };
  EXPECT_EQ(count("DCGM_FI_DEV_SM_CLOCK"), 16);
  EXPECT_EQ(count(R"(DCGM_FI_DEV_SM_CLOCK{Hostname="node-1"})"), 8);
  EXPECT_EQ(count(R"({Hostname="node-1", gpu=~"[0-3]"})"), 4);
  EXPECT_EQ(count(R"(DCGM_FI_DEV_SM_CLOCK{Hostname!="node-1", gpu!~"[0-3]"})"), 4);
  EXPECT_EQ(count(R"({__name__=~"DCGM_.*", gpu="7"})"), 2);
  EXPECT_EQ(count(R"({__name__=~"DCGM_.*", pod=""})"), 16);  // absent label is ""
  EXPECT_EQ(count(R"({__name__=~"DCGM_.*", pod!=""})"), 0);
  EXPECT_EQ(count(R"({gpu=~"1|2", Hostname='node-0'})"), 2);
  EXPECT_EQ(count("nothing_here"), 0);
}

TEST(ExactAlternationTest, MatchesExactlyTheValuesMetacharactersIncluded) {
  const std::string regex = model::ExactAlternation({"node-1", "gpu.a", "x|y", "(z)"});
  EXPECT_EQ(regex, R"(node-1|gpu\.a|x\|y|\(z\))");
  auto m = model::Matcher::Make(model::Matcher::Type::kRegex, "Hostname", regex);
  ASSERT_TRUE(m.has_value());
  for (const char* yes : {"node-1", "gpu.a", "x|y", "(z)"}) EXPECT_TRUE(m->Matches(yes)) << yes;
  for (const char* no : {"node-10", "gpuXa", "x", "y", "z", ""}) EXPECT_FALSE(m->Matches(no)) << no;
  EXPECT_EQ(model::ExactAlternation({}), "");
}

TEST_F(StoreTest, SelectorErrorsSayWhere) {
  EXPECT_EQ(model::ParseSelector(R"(up{job="x")").error().message(), "1:11: expected ',' or '}'");
  EXPECT_EQ(model::ParseSelector(R"(up{job~"x"})").error().message(),
            "1:7: expected '=', '!=', '=~' or '!~'");
  EXPECT_EQ(model::ParseSelector(R"({job="", gpu!~"1"})").error().message(),
            "vector selector must contain at least one non-empty matcher");
  EXPECT_NE(model::ParseSelector(R"({job=~"(("})").error().message().find("1:7: bad regex"),
            std::string::npos);
  EXPECT_EQ(model::ParseSelector(R"(up{job="\q"})").error().message(),
            "1:9: unknown escape sequence '\\q'");
}

TEST_F(StoreTest, StaleMarkersAndNaNsKeepTheirBits) {
  auto store = OpenStore(Options());
  auto app = store->NewAppender();
  const SeriesRef a = *app->Series(Gpu("n", 0));
  const double values[] = {1.5, StaleNaN(), std::nan(""), 2.5};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(app->Append(a, 1000 * i, values[i]).ok());
  ASSERT_TRUE(app->Commit()->first_error.ok());
  store.reset();
  store = OpenStore(Options());
  auto got =
      store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "0")}, 0, 1e9);
  ASSERT_EQ((*got)[0].samples.size(), 4U);
  EXPECT_TRUE(IsStaleNaN((*got)[0].samples[1].v));
  EXPECT_TRUE(std::isnan((*got)[0].samples[2].v));
  EXPECT_FALSE(IsStaleNaN((*got)[0].samples[2].v));
}

TEST_F(StoreTest, RetentionDropsOldSegmentsByAgeAndBySize) {
  StoreOptions o = Options();
  o.segment_bytes = 2 << 10;
  o.retention_ms = 300 * 1000;
  auto store = OpenStore(o);
  Fill(*store, 8, 0, 1200);
  const StoreStats before = store->stats();
  ASSERT_GT(before.segments, 4U);
  ASSERT_TRUE(store->ApplyRetention(1200 * 1000).ok());
  const StoreStats after = store->stats();
  EXPECT_LT(after.segments, before.segments);
  EXPECT_GE(after.min_time, (1200 - 300 - 600) * 1000);  // whole segments go
  // Everything newer than the cut is still there, in order.
  auto got = store->Select({*model::Matcher::Make(model::Matcher::Type::kEqual, "gpu", "0")}, 0,
                           1LL << 50);
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ((*got)[0].samples.back().t, 1199000);
  EXPECT_LE((*got)[0].samples.front().t, 900 * 1000);

  store.reset();
  o.retention_ms = 0;
  o.retention_bytes = 6 << 10;
  store = OpenStore(o);
  ASSERT_TRUE(store->ApplyRetention(1200 * 1000).ok());
  EXPECT_LE(store->stats().segment_bytes, (6u << 10) + (2u << 10));
}

TEST_F(StoreTest, IdleSeriesLeaveMemoryAndComeBackAsNew) {
  StoreOptions o = Options();
  o.idle_series_ms = 60 * 1000;
  o.segment_bytes = 2 << 10;
  o.max_chunk_samples = 20;
  auto store = OpenStore(o);
  Fill(*store, 8, 0, 300);
  // The 8 series stop (their pods went away); another one goes on.
  ASSERT_TRUE(store->ApplyRetention(400 * 1000).ok());  // seals their open chunks
  auto app = store->NewAppender();
  const SeriesRef other = *app->Series(Gpu("node-9", 0, "DCGM_FI_DEV_POWER_USAGE"));
  for (int i = 300; i < 1500; ++i) {
    ASSERT_TRUE(app->Append(other, i * 1000LL, Value(99, i)).ok());
    ASSERT_TRUE(app->Commit()->first_error.ok());
  }
  ASSERT_TRUE(store->ApplyRetention(1500 * 1000).ok());
  EXPECT_EQ(store->stats().head_series, 1U);
  ExpectFilled(*store, 8, 0, 300);  // their data stays on disk
  store.reset();
  store = OpenStore(o);
  EXPECT_EQ(store->stats().head_series, 1U);
  Fill(*store, 8, 300, 20);  // new refs for the same labels
  ExpectFilled(*store, 8, 0, 320);
}

TEST_F(StoreTest, ASecondProcessCannotOpenTheSameDirectory) {
  auto store = OpenStore(Options());
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto other = Store::Open(dir_, StoreOptions{});
    ::_exit(!other && other.error().code() == StatusCode::kUnavailable ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(StoreTest, CheckpointsBoundTheWal) {
  const StoreOptions o = CheckpointingOptions();
  auto store = OpenStore(o);
  Fill(*store, 16, 0, 600);
  EXPECT_LT(store->stats().wal_bytes, 128U << 10);
  store.reset();
  store = OpenStore(o);
  ExpectFilled(*store, 16, 0, 600);
}

TEST_F(StoreTest, CorruptSegmentIndexIsRebuiltFromTheSegment) {
  StoreOptions o = Options();
  o.max_chunk_samples = 10;
  o.segment_bytes = 2 << 10;  // several sealed segments, each with an index
  {
    auto store = OpenStore(o);
    Fill(*store, 4, 0, 300);
  }
  const fs::path idx = dir_ / "chunks" / "00000001.idx";
  ASSERT_TRUE(fs::exists(idx));
  const auto size = fs::file_size(idx);
  {
    std::fstream f(idx, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f << "garbage";
  }
  auto store = OpenStore(o);
  ExpectFilled(*store, 4, 0, 300);
  bool rebuilt = false;
  for (const std::string& line : log_) {
    rebuilt = rebuilt || (line.find("00000001.idx") != std::string::npos &&
                          line.find("rebuilding it from the segment") != std::string::npos);
  }
  EXPECT_TRUE(rebuilt);
  // The rebuilt index is whole again: the next open reads it silently.
  store.reset();
  log_.clear();
  store = OpenStore(o);
  ExpectFilled(*store, 4, 0, 300);
  for (const std::string& line : log_)
    EXPECT_EQ(line.find("rebuilding"), std::string::npos) << line;
}

// Issue 22: a checkpoint with flipped bytes kept the store from starting. The
// previous checkpoint and the WAL after it are kept until the next one, so
// recovery falls back to them and loses nothing; only when that WAL is gone
// too does it refuse, saying so.
TEST_F(StoreTest, ADamagedCheckpointFallsBackToThePreviousOneAndItsWal) {
  const StoreOptions o = CheckpointingOptions();
  const std::vector<fs::path> checkpoints = FillAndListCheckpoints(o);
  ASSERT_EQ(checkpoints.size(), 2U);  // the newest and the one before it
  const fs::path newest = checkpoints.back();
  {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newest) / 2));
    f << "garbage";
  }
  log_.clear();
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    ExpectFilled(*store, 16, 0, 600);
  }
  bool said = false;
  for (const std::string& line : log_) {
    said = said || line.find(newest.string() + ": damaged checkpoint (bad crc); set aside as") !=
                       std::string::npos;
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(fs::exists(newest.string() + ".damaged"));
}

TEST_F(StoreTest, ADamagedCheckpointWithoutItsWalIsAClearErrorNotACrash) {
  const StoreOptions o = CheckpointingOptions();
  const std::vector<fs::path> checkpoints = FillAndListCheckpoints(o);
  ASSERT_FALSE(checkpoints.empty());
  // Both damaged: the older one's WAL is long gone.
  for (const fs::path& c : checkpoints) {
    std::fstream f(c, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(c) / 2));
    f << "garbage";
  }
  auto store = Store::Open(dir_, o);
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code(), StatusCode::kParseError);
  EXPECT_NE(store.error().message().find(checkpoints.front().string() +
                                         ": damaged checkpoint (bad crc), and the WAL it "
                                         "covers is gone"),
            std::string::npos)
      << store.error().message();
  // The newest was set aside on the way (checkpoint.N.damaged); the older
  // one, moved aside too, lets the store open without what only they held.
  EXPECT_TRUE(fs::exists(checkpoints.back().string() + ".damaged"));
  fs::rename(checkpoints.front(), dir_ / checkpoints.front().filename());
  store = Store::Open(dir_, o);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
}

// Issue 22: one flipped byte in a chunk segment cut the segment there, and
// every chunk after it was lost (54% of one in the report). Now only the
// damaged record's chunk goes; a checkpoint has dropped the WAL that held
// them, so nothing else could bring them back.
TEST_F(StoreTest, AFlippedByteInAChunkSegmentLosesOneChunkNotTheRest) {
  StoreOptions o = CheckpointingOptions();
  o.max_chunk_samples = 16;
  constexpr int kSeries = 16;
  constexpr int kSeconds = 480;
  {
    auto store = OpenStore(o);
    Fill(*store, kSeries, 0, kSeconds);
  }
  const fs::path segment = dir_ / "chunks" / "00000001";
  ASSERT_TRUE(fs::exists(segment));
  const auto size = fs::file_size(segment);
  ASSERT_GT(size, 4096U);
  FlipByte(segment, size / 3, 0x10);
  log_.clear();
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  auto got = SelectFilled(*store);
  ASSERT_TRUE(got.has_value());
  std::size_t kept = 0;
  for (const SeriesSamples& series : *got) kept += series.samples.size();
  const std::size_t written = std::size_t{kSeries} * kSeconds;
  // At most one chunk (16 samples) lost, not everything after the flip.
  EXPECT_GE(kept, written - o.max_chunk_samples) << "kept " << kept << " of " << written;
  EXPECT_LT(kept, written);  // the flip did land on a chunk
  bool said = false;
  for (const std::string& line : log_) {
    said = said || (line.find("damaged bytes from offset") != std::string::npos &&
                    line.find("the records after them are kept") != std::string::npos);
  }
  EXPECT_TRUE(said);
}

// A sealed segment whose index is intact was read without checking its
// chunks' CRCs: a byte flipped on disk after sealing decoded to values
// nobody wrote. Now the first read of a segment checks every record once;
// the damaged chunk is left out (no data, never invented values), counted,
// and logged, and every other chunk is read as written.
TEST_F(StoreTest, ADamagedChunkInASealedSegmentIsLeftOutNotDecoded) {
  StoreOptions o = CheckpointingOptions();
  o.max_chunk_samples = 16;
  o.segment_bytes = 16 << 10;  // several sealed segments, each with its index
  constexpr int kSeries = 16;
  constexpr int kSeconds = 480;
  {
    auto store = OpenStore(o);
    Fill(*store, kSeries, 0, kSeconds);
  }
  const fs::path index_file = dir_ / "chunks" / "00000001.idx";
  ASSERT_TRUE(fs::exists(index_file));
  auto index = ReadSegmentIndex(index_file);
  ASSERT_TRUE(index.has_value()) << index.error().ToString();
  ASSERT_FALSE((*index)->chunks.empty());
  ASSERT_FALSE((*index)->chunks[0].empty());
  const ChunkLoc hit = (*index)->chunks[0][0];  // the first chunk of one series
  FlipByte(dir_ / "chunks" / "00000001", hit.offset + hit.length / 2, 0x08);
  log_.clear();
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  auto got = SelectFilled(*store);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  std::size_t kept = 0;
  std::size_t wrong = 0;
  for (const SeriesSamples& series : *got) {
    const int k = SeriesNumber(series.labels);
    for (const Sample& s : series.samples) {
      ++kept;
      if (s.v != Value(k, static_cast<int>(s.t / 1000))) ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0U);  // nothing invented
  const std::size_t written = std::size_t{kSeries} * kSeconds;
  EXPECT_EQ(kept, written - (hit.maxt - hit.mint) / 1000 - 1) << "one chunk lost, no more";
  EXPECT_EQ(store->stats().damaged_chunks_skipped, 1U);
  bool said = false;
  for (const std::string& line : log_) {
    said = said || line.find("the chunks there are left out of every answer") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST_F(StoreTest, LabelNamesAndValues) {
  auto store = OpenStore(Options());
  Fill(*store, 10, 0, 3);
  EXPECT_EQ(*store->LabelNames(0, 1e9), (std::vector<std::string>{"Hostname", "__name__", "gpu"}));
  EXPECT_EQ(*store->LabelValues("Hostname", 0, 1e9),
            (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_TRUE(store->LabelValues("Hostname", 5000, 1e9)->empty());
}

// ForEachSeries: each series once, though its data lies in sealed segments
// and the head; only series with data in the range; matchers honoured; the
// same series as SeriesIn (which it serves), without decoding a chunk.
TEST_F(StoreTest, ForEachSeriesVisitsEachSeriesOnceAcrossSegmentsAndTheHead) {
  StoreOptions o = Options();
  o.segment_bytes = 8 << 10;  // several sealed segments
  o.max_chunk_samples = 16;
  auto store = OpenStore(o);
  Fill(*store, 16, 0, 300);
  {  // a series of its own, only from 400 s
    auto app = store->NewAppender();
    auto ref = app->Series(Gpu("node-9", 0));
    ASSERT_TRUE(ref.has_value());
    ASSERT_TRUE(app->Append(*ref, 400'000, 1).ok());
    ASSERT_TRUE(app->Commit().has_value());
  }
  ASSERT_GT(store->stats().segment_bytes, 2U * o.segment_bytes);
  auto visit = [&](std::vector<model::Matcher> m, std::int64_t mint, std::int64_t maxt) {
    std::vector<model::Labels> seen;
    EXPECT_TRUE(
        store->ForEachSeries(m, mint, maxt, [&](const model::Labels& l) { seen.push_back(l); })
            .ok());
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  const std::vector<model::Labels> all = visit({}, 0, 1'000'000);
  ASSERT_EQ(all.size(), 17U);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all, *store->SeriesIn({}, 0, 1'000'000));
  // Early in the range only Fill's series; late only the lone one.
  EXPECT_EQ(visit({}, 0, 10'000).size(), 16U);
  EXPECT_EQ(visit({}, 350'000, 1'000'000), (std::vector<model::Labels>{Gpu("node-9", 0)}));
  const auto node1 = *model::Matcher::Make(model::Matcher::Type::kEqual, "Hostname", "node-1");
  const std::vector<model::Labels> one = visit({node1}, 0, 1'000'000);
  ASSERT_EQ(one.size(), 8U);
  for (const model::Labels& l : one) EXPECT_EQ(model::LabelValue(l, "Hostname"), "node-1");
  EXPECT_EQ(*store->LabelValues("Hostname", 0, 1'000'000),
            (std::vector<std::string>{"node-0", "node-1", "node-9"}));
}

// Issue 22's soak: a sealed segment's index stayed loaded after reads moved
// on, so the heap grew at every segment rotation. An index no read used for
// index_idle_ms is released (after reads and at retention); a later read
// loads it again and answers the same.
TEST_F(StoreTest, IndexesNoReadUsedLatelyAreReleased) {
  StoreOptions o = Options();
  o.segment_bytes = 8 << 10;  // several sealed segments
  o.max_chunk_samples = 16;
  o.retention_ms = 0;
  o.index_idle_ms = 50;
  auto store = OpenStore(o);
  Fill(*store, 16, 0, 600);
  const std::size_t sealed = store->stats().segments - 1;
  ASSERT_GE(sealed, 3U);
  auto all = SelectFilled(*store);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(store->stats().loaded_indexes, std::min<std::size_t>(sealed, 8));
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  ASSERT_TRUE(store->ApplyRetention(600'000).ok());
  EXPECT_EQ(store->stats().loaded_indexes, 0U);
  // Loaded again on the next read, and the same answer.
  auto again = SelectFilled(*store);
  ASSERT_TRUE(again.has_value());
  ASSERT_EQ(again->size(), all->size());
  for (std::size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*again)[i].samples.size(), (*all)[i].samples.size());
  }
  // With the default (5 minutes), retention keeps what was just read.
  o.index_idle_ms = StoreOptions{}.index_idle_ms;
  store.reset();
  store = OpenStore(o);
  ASSERT_TRUE(SelectFilled(*store).has_value());
  const std::size_t loaded = store->stats().loaded_indexes;
  EXPECT_GT(loaded, 0U);
  ASSERT_TRUE(store->ApplyRetention(600'000).ok());
  EXPECT_EQ(store->stats().loaded_indexes, loaded);
}

// Issue 22: a full disk lost telemetry in silence. Every commit that cannot
// write is counted (with its time and error) and logged, at most once a
// minute with how many more there were. The failing writes are real ones:
// RLIMIT_FSIZE makes write(2) fail with EFBIG, as ENOSPC would, without
// needing a disk to fill.
TEST(StoreWriteFailureTest, WritesThatFailAreCountedAndLoggedOnceAMinute) {
  const fs::path dir = fs::temp_directory_path() / ("gc_store_full_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<std::string> log;
  StoreOptions options;
  options.log = [&](std::string_view line) { log.emplace_back(line); };
  {
    auto store = Store::Open(dir, options);
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    auto app = (*store)->NewAppender();
    auto ref = app->Series({{"__name__", "up"}, {"job", "a"}});
    ASSERT_TRUE(ref.has_value());
    ASSERT_TRUE(app->Append(*ref, 1000, 1).ok());
    ASSERT_TRUE(app->Commit().has_value());
    EXPECT_EQ((*store)->write_failures().count, 0U);

    std::vector<bool> failed;
    {
      const FileSizeLimit limit(1);  // any write past the first byte of a file fails
      ASSERT_TRUE(limit.ok());
      for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(app->Append(*ref, 2000 + i * 1000, 2).ok());
        failed.push_back(!app->Commit().has_value());
      }
    }
    EXPECT_EQ(failed, (std::vector<bool>{true, true, true}));
    const WriteFailures w = (*store)->write_failures();
    EXPECT_EQ(w.count, 3U);
    EXPECT_GT(w.last_ms, 0);
    EXPECT_NE(w.last_error.find("File too large"), std::string::npos) << w.last_error;
  }
  std::size_t lines = 0;
  for (const std::string& line : log) {
    if (line.starts_with("store: a write failed and its batch was not kept: ")) ++lines;
  }
  EXPECT_EQ(lines, 1U);  // the other two within the minute: counted, not logged
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpucanary::store
