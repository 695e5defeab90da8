#pragma once
// For tests: real write failures, no mock. While a FileSizeLimit lives,
// write(2) at or past `bytes` into any file of this process fails with EFBIG
// (RLIMIT_FSIZE, with SIGXFSZ ignored), as a full disk fails one; a write
// that crosses the limit writes what fits first. The limit and the signal's
// disposition are restored when it goes. Header-only; process-wide, so one
// at a time.

#include <sys/resource.h>

#include <csignal>

namespace gpucanary::store {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ok_ = ::getrlimit(RLIMIT_FSIZE, &saved_) == 0;
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved_;
    limited.rlim_cur = bytes;
    ok_ = ok_ && ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

  // Whether the limit is in force.
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool ok_ = false;
};

}  // namespace gpucanary::store
