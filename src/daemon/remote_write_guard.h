#pragma once
// What remote_write may write, between the receiver and the store.
//
// Not the series of the targets the daemon scrapes itself. A series has one
// source; samples pushed between two scrapes of a scraped series would be
// judged as that target's own (issue 22: anyone who reaches /api/v1/write
// could otherwise change what a canary sees of a healthy node). Such a
// series is refused as invalid labels (the receiver's 400, naming
// timeseries[i]).
//
// Not more than max_series_per_tenant series per tenant: the token a writer
// presents names its tenant ("anonymous" without auth). One writer gone wrong
// (a label with a request id, a relabeling mistake) would otherwise fill the
// store's series limit (storage.max_series) and leave no room for the series
// the daemon scrapes, which its canaries judge. A series counts against a
// tenant from its first write until it has not written it for idle_ms (the
// store's own idle time); one over the limit is refused as the store refuses
// one over its own (the receiver's 400 "series limit", naming timeseries[i]).
// Grafana Mimir's per-tenant limit is the same idea
// (max_global_series_per_user, default 150,000, the default here too).
//
// Every other series passes through unchanged.
//
// Thread-safe: the reserved instances are read once per appender (one per
// remote_write request), through `reserved`, as a shared snapshot (no copy);
// each tenant's series are counted under its own lock.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "store/appender.h"

namespace gpucanary::daemon {

struct TenantLimits {
  std::size_t max_series_per_tenant = 150'000;  // 0: no limit
  std::int64_t idle_ms = 3600LL * 1000;         // a series unwritten this long stops counting
};

class RemoteWriteGuard {
 public:
  // The `instance` values of the daemon's own targets (and its NVML node),
  // sorted; null: none.
  using Reserved = std::shared_ptr<const std::vector<std::string>>;
  // `inner` and `clock` must outlive the guard.
  RemoteWriteGuard(store::Appendable& inner, std::function<Reserved()> reserved, const Clock& clock,
                   TenantLimits limits = {});
  ~RemoteWriteGuard();
  RemoteWriteGuard(const RemoteWriteGuard&) = delete;
  RemoteWriteGuard& operator=(const RemoteWriteGuard&) = delete;

  // What one tenant's request writes through (valid while the guard lives).
  store::Appendable& For(const std::string& tenant);

  // Series counted against `tenant` now (0 for one never seen).
  std::size_t SeriesOf(const std::string& tenant) const;

  class Tenant;

 private:
  store::Appendable& inner_;
  const std::function<Reserved()> reserved_;
  const Clock& clock_;
  const TenantLimits limits_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Tenant>, std::less<>> tenants_ GUARDED_BY(mu_);
};

}  // namespace gpucanary::daemon
