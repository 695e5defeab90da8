#include "daemon/remote_write_guard.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "net/http_message.h"
#include "remote/receiver.h"
#include "remote/test_util.h"
#include "remote/write_request.h"

namespace gpucanary::daemon {
namespace {

constexpr std::int64_t kNow = 1'764'000'000'000;

model::Labels Series(const std::string& instance, int i) {
  return {{"__name__", "queue_depth"}, {"instance", instance}, {"shard", std::to_string(i)}};
}

class RemoteWriteGuardTest : public ::testing::Test {
 protected:
  RemoteWriteGuard::Reserved reserved_ =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"node-1:9400"});
  remote::test::CaptureAppendable store_;
  ManualClock clock_{kNow};

  // One series per call through `tenant`'s view; the Series() result.
  Result<store::SeriesRef> Write(RemoteWriteGuard& guard, const std::string& tenant,
                                 const model::Labels& labels) {
    auto app = guard.For(tenant).NewAppender();
    auto ref = app->Series(labels);
    if (ref) {
      EXPECT_TRUE(app->Append(*ref, clock_.NowMs(), 1).ok());
      EXPECT_TRUE(app->Commit().has_value());
    }
    return ref;
  }
};

TEST_F(RemoteWriteGuardTest, AScrapedInstanceIsRefusedWhateverTheTenant) {
  RemoteWriteGuard guard(
      store_, [this] { return reserved_; }, clock_);
  for (const std::string tenant : {"anonymous", "ci"}) {
    auto ref = Write(guard, tenant, Series("node-1:9400", 0));
    ASSERT_FALSE(ref.has_value());
    EXPECT_EQ(ref.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(ref.error().message().find("a target this daemon scrapes itself"), std::string::npos);
  }
  EXPECT_TRUE(Write(guard, "ci", Series("agent-1:9100", 0)).has_value());
  EXPECT_TRUE(store_.All().size() == 1);
}

// One tenant at its limit gets kOutOfRange for a new series (nothing made in
// the store), keeps writing the series it has, and leaves the others' room
// alone; a series it stops writing stops counting after idle_ms.
TEST_F(RemoteWriteGuardTest, EachTenantHasItsOwnSeriesLimit) {
  RemoteWriteGuard guard(
      store_, [this] { return reserved_; }, clock_,
      TenantLimits{.max_series_per_tenant = 3, .idle_ms = 60'000});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Write(guard, "a", Series("agent-a", i)).has_value());
  auto over = Write(guard, "a", Series("agent-a", 3));
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(over.error().message(),
            "tenant 'a' already writes 3 series (remote_write.max_series_per_tenant): a new one "
            "waits until one of them has not been written for 60 s");
  EXPECT_EQ(store_.All().size(), 3U);  // the refused series was never made
  EXPECT_TRUE(Write(guard, "a", Series("agent-a", 1)).has_value());  // its own: still fine
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Write(guard, "b", Series("agent-b", i)).has_value());
  EXPECT_EQ(guard.SeriesOf("a"), 3U);
  EXPECT_EQ(guard.SeriesOf("b"), 3U);
  EXPECT_EQ(guard.SeriesOf("nobody"), 0U);
  // Series 0 and 2 idle past a minute (1 was written again 30 s in).
  clock_.Advance(30'000);
  EXPECT_TRUE(Write(guard, "a", Series("agent-a", 1)).has_value());
  clock_.Advance(31'000);
  EXPECT_TRUE(Write(guard, "a", Series("agent-a", 3)).has_value());
  EXPECT_TRUE(Write(guard, "a", Series("agent-a", 4)).has_value());
  EXPECT_EQ(guard.SeriesOf("a"), 3U);  // 1, 3 and 4
  EXPECT_FALSE(Write(guard, "a", Series("agent-a", 5)).has_value());
}

// Through the receiver: the series over the limit is refused alone, as the
// store's own series limit refuses one (400 naming timeseries[i]), and the
// request's other series are kept.
TEST_F(RemoteWriteGuardTest, TheReceiverAnswers400NamingTheSeriesOverTheLimit) {
  RemoteWriteGuard guard(
      store_, [this] { return reserved_; }, clock_, TenantLimits{.max_series_per_tenant = 2});
  remote::Receiver receiver(guard.For("anonymous"), clock_);
  remote::WriteRequest w;
  for (int i = 0; i < 3; ++i) w.timeseries.push_back({Series("agent", i), {{kNow, 1.0}}, 0, 0});
  net::HttpRequest r;
  r.method = "POST";
  r.target = r.path = "/api/v1/write";
  r.headers = {{"content-encoding", "snappy"}, {"content-type", "application/x-protobuf"}};
  r.body = remote::EncodeWriteRequest(w);
  const net::HttpResponse answer = receiver.Handle(r, guard.For("ci"));
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("timeseries[2]: tenant 'ci' already writes 2 series"),
            std::string::npos)
      << answer.body;
  EXPECT_EQ(store_.All().size(), 2U);
  EXPECT_EQ(guard.SeriesOf("ci"), 2U);
  EXPECT_EQ(guard.SeriesOf("anonymous"), 0U);
}

}  // namespace
}  // namespace gpucanary::daemon
