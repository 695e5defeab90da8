#include "store/head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace gpucanary::store {
namespace {

// Series `ref` of a small fleet: 4 fields per GPU, 8 GPUs per host.
model::Labels SeriesLabels(SeriesRef ref) {
  const SeriesRef gpu = ref / 4;
  model::Labels l = {{"__name__", "field_" + std::to_string(ref % 4)},
                     {"gpu", std::to_string(gpu % 8)},
                     {"Hostname", "node-" + std::to_string(gpu / 8)}};
  model::SortLabels(l);
  return l;
}

model::Matcher Eq(const std::string& name, const std::string& value) {
  return *model::Matcher::Make(model::Matcher::Type::kEqual, name, value);
}
model::Matcher Re(const std::string& name, const std::string& value) {
  return *model::Matcher::Make(model::Matcher::Type::kRegex, name, value);
}

// The refs in `refs` whose labels `keep` accepts, sorted: what Match must say.
template <typename Keep>
std::vector<std::uint64_t> Expected(std::vector<SeriesRef> refs, Keep keep) {
  std::sort(refs.begin(), refs.end());
  std::vector<std::uint64_t> out;
  for (SeriesRef ref : refs) {
    if (keep(ref)) out.push_back(ref);
  }
  return out;
}

// Everything the index answers, checked against the labels of `refs`.
void ExpectIndexed(const Head& head, const std::vector<SeriesRef>& refs) {
  std::vector<SeriesRef> sorted = refs;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(head.SortedRefs(), sorted);
  for (SeriesRef ref : refs) {
    const model::Labels l = SeriesLabels(ref);
    EXPECT_EQ(head.Lookup(l, model::LabelsHash(l)), ref);
  }
  EXPECT_EQ(head.Match({Eq("__name__", "field_1")}),
            Expected(refs, [](SeriesRef r) { return r % 4 == 1; }));
  EXPECT_EQ(head.Match({Eq("__name__", "field_2"), Eq("gpu", "3")}),
            Expected(refs, [](SeriesRef r) { return r % 4 == 2 && (r / 4) % 8 == 3; }));
  // A regex unions postings lists, which needs each of them sorted.
  EXPECT_EQ(head.Match({Re("__name__", "field_[03]")}),
            Expected(refs, [](SeriesRef r) { return r % 4 == 0 || r % 4 == 3; }));
  // A matcher that matches the empty label reads every live ref.
  EXPECT_EQ(head.Match({Re("absent", "")}), sorted);
}

TEST(HeadTest, OutOfOrderCreateInsertsIntoTheIndexWithoutRebuildingIt) {
  Head head;
  const std::vector<SeriesRef> refs = {5, 2, 9, 1, 7, 40, 3, 33};
  for (SeriesRef ref : refs) head.Create(ref, SeriesLabels(ref));
  ExpectIndexed(head, refs);
  EXPECT_EQ(head.index_builds(), 0u);
  EXPECT_EQ(head.next_ref(), 41u);
}

TEST(HeadTest, BulkLoadInAnyOrderBuildsTheIndexOnce) {
  Head head;
  std::vector<SeriesRef> refs(2000);
  std::iota(refs.begin(), refs.end(), SeriesRef{1});
  std::mt19937_64 rng(7);
  std::shuffle(refs.begin(), refs.end(), rng);
  head.BeginBulkLoad();
  for (SeriesRef ref : refs) head.Create(ref, SeriesLabels(ref));
  // A ref seen again is the series already there.
  EXPECT_EQ(&head.Create(refs[10], SeriesLabels(refs[10])), head.Find(refs[10]));
  head.EndBulkLoad();
  EXPECT_EQ(head.index_builds(), 1u);
  EXPECT_EQ(head.live_series(), refs.size());
  ExpectIndexed(head, refs);
  // The store's next series joins the built index.
  const SeriesRef next = head.next_ref();
  EXPECT_EQ(next, 2001u);
  head.Create(next, SeriesLabels(next));
  refs.push_back(next);
  ExpectIndexed(head, refs);
  EXPECT_EQ(head.index_builds(), 1u);
}

TEST(HeadTest, DropIdleRebuildsOncePerCall) {
  Head head;
  std::vector<SeriesRef> kept;
  for (SeriesRef ref = 1; ref <= 100; ++ref) {
    HeadSeries& s = head.Create(ref, SeriesLabels(ref));
    s.last_t = ref % 2 == 0 ? 1'000 : 100'000;  // even refs idle at 100 s
    if (ref % 2 == 1) kept.push_back(ref);
  }
  EXPECT_EQ(head.DropIdle(100'000, 10'000), 50u);
  EXPECT_EQ(head.index_builds(), 1u);
  ExpectIndexed(head, kept);
  EXPECT_EQ(head.Find(2), nullptr);
}

}  // namespace
}  // namespace gpucanary::store
