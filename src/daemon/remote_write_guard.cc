#include "daemon/remote_write_guard.h"

#include <algorithm>
#include <utility>

namespace gpucanary::daemon {

// One tenant: the series it wrote, with when it last wrote each.
class RemoteWriteGuard::Tenant : public store::Appendable {
 public:
  Tenant(RemoteWriteGuard& guard, std::string name) : guard_(guard), name_(std::move(name)) {}

  std::unique_ptr<store::Appender> NewAppender() override;

  // Whether the series with this label hash may be written now: one it
  // already counts, or a new one below the limit (after letting go of idle
  // ones, at most once a second, as that walks every series). Asked before
  // the store makes the series, so a refused one leaves nothing behind.
  bool Admit(std::uint64_t hash, std::int64_t now_ms) {
    const TenantLimits& limits = guard_.limits_;
    MutexLock lock(mu_);
    if (auto it = last_.find(hash); it != last_.end()) {
      it->second = now_ms;
      return true;
    }
    if (limits.max_series_per_tenant > 0 && last_.size() >= limits.max_series_per_tenant &&
        now_ms - last_prune_ms_ >= 1000) {
      last_prune_ms_ = now_ms;
      std::erase_if(last_, [&](const auto& e) { return now_ms - e.second > limits.idle_ms; });
    }
    if (limits.max_series_per_tenant > 0 && last_.size() >= limits.max_series_per_tenant) {
      return false;
    }
    last_.emplace(hash, now_ms);
    return true;
  }

  std::size_t size() const {
    MutexLock lock(mu_);
    return last_.size();
  }
  const std::string& name() const { return name_; }
  RemoteWriteGuard& guard() { return guard_; }

 private:
  RemoteWriteGuard& guard_;
  const std::string name_;
  mutable Mutex mu_;
  std::unordered_map<std::uint64_t, std::int64_t> last_ GUARDED_BY(mu_);  // by LabelsHash
  std::int64_t last_prune_ms_ GUARDED_BY(mu_) = 0;
};

namespace {

class GuardedAppender : public store::Appender {
 public:
  GuardedAppender(std::unique_ptr<store::Appender> inner, RemoteWriteGuard::Reserved reserved,
                  RemoteWriteGuard::Tenant& tenant, std::int64_t now_ms, const TenantLimits& limits)
      : inner_(std::move(inner)),
        reserved_(std::move(reserved)),
        tenant_(tenant),
        now_ms_(now_ms),
        max_series_(limits.max_series_per_tenant),
        idle_ms_(limits.idle_ms) {}

  Result<store::SeriesRef> Series(const model::Labels& labels) override {
    const std::string_view instance = model::LabelValue(labels, "instance");
    if (!instance.empty() && reserved_ != nullptr &&
        std::binary_search(reserved_->begin(), reserved_->end(), instance)) {
      return Error(StatusCode::kInvalidArgument,
                   "instance '" + std::string(instance) +
                       "' is a target this daemon scrapes itself: its series come from the "
                       "scrape, not from remote_write");
    }
    if (!tenant_.Admit(model::LabelsHash(labels), now_ms_)) {
      return Error(StatusCode::kOutOfRange,
                   "tenant '" + tenant_.name() + "' already writes " + std::to_string(max_series_) +
                       " series (remote_write.max_series_per_tenant): a new one waits until "
                       "one of them has not been written for " +
                       std::to_string(idle_ms_ / 1000) + " s");
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
  RemoteWriteGuard::Reserved reserved_;
  RemoteWriteGuard::Tenant& tenant_;
  const std::int64_t now_ms_;
  const std::size_t max_series_;
  const std::int64_t idle_ms_;
};

}  // namespace

std::unique_ptr<store::Appender> RemoteWriteGuard::Tenant::NewAppender() {
  return std::make_unique<GuardedAppender>(guard_.inner_.NewAppender(),
                                           guard_.reserved_ ? guard_.reserved_() : nullptr, *this,
                                           guard_.clock_.NowMs(), guard_.limits_);
}

RemoteWriteGuard::RemoteWriteGuard(store::Appendable& inner, std::function<Reserved()> reserved,
                                   const Clock& clock, TenantLimits limits)
    : inner_(inner), reserved_(std::move(reserved)), clock_(clock), limits_(limits) {}

RemoteWriteGuard::~RemoteWriteGuard() = default;

store::Appendable& RemoteWriteGuard::For(const std::string& tenant) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    it = tenants_.emplace(tenant, std::make_unique<Tenant>(*this, tenant)).first;
  }
  return *it->second;
}

std::size_t RemoteWriteGuard::SeriesOf(const std::string& tenant) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second->size();
}

}  // namespace gpucanary::daemon
