#include "daemon/remote_write_guard.h"

#include <algorithm>
#include <utility>

namespace gpucanary::daemon {
namespace {

class GuardedAppender : public store::Appender {
 public:
  GuardedAppender(std::unique_ptr<store::Appender> inner, std::vector<std::string> reserved)
      : inner_(std::move(inner)), reserved_(std::move(reserved)) {
    std::sort(reserved_.begin(), reserved_.end());
  }

  Result<store::SeriesRef> Series(const model::Labels& labels) override {
    const std::string_view instance = model::LabelValue(labels, "instance");
    if (!instance.empty() && std::binary_search(reserved_.begin(), reserved_.end(), instance)) {
      return Error(StatusCode::kInvalidArgument,
                   "instance '" + std::string(instance) +
                       "' is a target this daemon scrapes itself: its series come from the "
                       "scrape, not from remote_write");
    }
    return inner_->Series(labels);
  }
  Status Append(store::SeriesRef ref, std::int64_t t_ms, double value) override {
    return inner_->Append(ref, t_ms, value);
  }
  Result<store::CommitResult> Commit() override { return inner_->Commit(); }
  void Rollback() override { inner_->Rollback(); }

 private:
  std::unique_ptr<store::Appender> inner_;
  std::vector<std::string> reserved_;
};

}  // namespace

std::unique_ptr<store::Appender> RemoteWriteGuard::NewAppender() {
  return std::make_unique<GuardedAppender>(inner_.NewAppender(),
                                           reserved_ ? reserved_() : std::vector<std::string>{});
}

}  // namespace gpucanary::daemon
