#pragma once
// What remote_write may not write: series of the targets the daemon scrapes
// itself. A series has one source; samples pushed between two scrapes of a
// scraped series would be judged as that target's own (issue 22: anyone who
// reaches /api/v1/write could otherwise change what a canary sees of a
// healthy node). The guard sits between the receiver and the store and
// refuses such a series as invalid labels (the receiver's 400, naming
// timeseries[i]); every other series passes through unchanged.
//
// Thread-safe: the reserved instances are read once per appender (one per
// remote_write request), through `reserved`.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/appender.h"

namespace gpucanary::daemon {

class RemoteWriteGuard : public store::Appendable {
 public:
  // `reserved`: the `instance` values of the daemon's own targets (and its
  // NVML node). `inner` must outlive the guard.
  RemoteWriteGuard(store::Appendable& inner, std::function<std::vector<std::string>()> reserved)
      : inner_(inner), reserved_(std::move(reserved)) {}

  std::unique_ptr<store::Appender> NewAppender() override;

 private:
  store::Appendable& inner_;
  std::function<std::vector<std::string>()> reserved_;
};

}  // namespace gpucanary::daemon
