#pragma once
// Test helper: an in-memory store::Appendable that keeps what is committed,
// following the Appender contract of store/appender.h (validation, per-series
// time order checked at Commit, exact repeats dropped, duplicates refused),
// with failures to inject. Thread-safe. Test code only.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "model/labels.h"
#include "remote/write_request.h"
#include "store/appender.h"

namespace gpucanary::remote::test {

class CaptureAppendable : public store::Appendable {
 public:
  std::unique_ptr<store::Appender> NewAppender() override {
    return std::make_unique<CaptureAppender>(*this);
  }

  // The next `n` Commits fail with `status` (nothing of them kept).
  void FailCommits(int n, Status status) {
    MutexLock lock(mu_);
    fail_commits_ = n;
    fail_status_ = std::move(status);
  }
  // Series beyond `n` are refused with kOutOfRange.
  void SetMaxSeries(std::size_t n) {
    MutexLock lock(mu_);
    max_series_ = n;
  }

  // The committed samples of the series with these labels (sorted), in order.
  std::vector<Sample> Samples(const model::Labels& labels) const {
    MutexLock lock(mu_);
    auto it = refs_.find(labels);
    return it == refs_.end() ? std::vector<Sample>() : series_[it->second].samples;
  }
  // Every series with at least one committed sample.
  std::map<model::Labels, std::vector<Sample>> All() const {
    MutexLock lock(mu_);
    std::map<model::Labels, std::vector<Sample>> out;
    for (const Series& s : series_) {
      if (!s.samples.empty()) out[s.labels] = s.samples;
    }
    return out;
  }
  std::size_t commits() const {
    MutexLock lock(mu_);
    return commits_;
  }
  std::size_t failed_commits() const {
    MutexLock lock(mu_);
    return failed_commits_;
  }

 private:
  struct Series {
    model::Labels labels;
    std::vector<Sample> samples;
  };
  struct Pending {
    store::SeriesRef ref;
    Sample sample;
  };

  class CaptureAppender : public store::Appender {
   public:
    explicit CaptureAppender(CaptureAppendable& owner) : owner_(owner) {}
    Result<store::SeriesRef> Series(const model::Labels& labels) override {
      return owner_.GetSeries(labels);
    }
    Status Append(store::SeriesRef ref, std::int64_t t_ms, double value) override {
      if (!owner_.Known(ref)) {
        return Status(StatusCode::kNotFound, "unknown series ref " + std::to_string(ref));
      }
      pending_.push_back({ref, {t_ms, value}});
      return Status::Ok();
    }
    Result<store::CommitResult> Commit() override {
      std::vector<Pending> batch;
      batch.swap(pending_);
      return owner_.Apply(batch);
    }
    void Rollback() override { pending_.clear(); }

   private:
    CaptureAppendable& owner_;
    std::vector<Pending> pending_;
  };

  Result<store::SeriesRef> GetSeries(const model::Labels& labels) {
    GC_RETURN_IF_ERROR(model::ValidateLabels(labels));
    MutexLock lock(mu_);
    auto it = refs_.find(labels);
    if (it != refs_.end()) return it->second;
    if (series_.size() >= max_series_) {
      return Error(StatusCode::kOutOfRange,
                   "series limit of " + std::to_string(max_series_) + " reached");
    }
    series_.push_back({labels, {}});
    refs_[labels] = series_.size() - 1;
    return series_.size() - 1;
  }

  bool Known(store::SeriesRef ref) const {
    MutexLock lock(mu_);
    return ref < series_.size();
  }

  Result<store::CommitResult> Apply(const std::vector<Pending>& batch) {
    MutexLock lock(mu_);
    if (fail_commits_ > 0) {
      --fail_commits_;
      ++failed_commits_;
      return Error(fail_status_);
    }
    ++commits_;
    store::CommitResult result;
    for (const Pending& p : batch) {
      std::vector<Sample>& samples = series_[p.ref].samples;
      if (!samples.empty() && p.sample.timestamp_ms <= samples.back().timestamp_ms) {
        const Sample& last = samples.back();
        if (p.sample.timestamp_ms < last.timestamp_ms) {
          ++result.out_of_order;
          if (result.first_error.ok()) {
            result.first_error = Status(StatusCode::kOutOfRange, "out of order sample");
          }
        } else if (std::bit_cast<std::uint64_t>(p.sample.value) !=
                   std::bit_cast<std::uint64_t>(last.value)) {
          ++result.duplicates;
          if (result.first_error.ok()) {
            result.first_error =
                Status(StatusCode::kInvalidArgument, "duplicate sample for timestamp");
          }
        }
        continue;
      }
      samples.push_back(p.sample);
      ++result.appended;
    }
    return result;
  }

  mutable Mutex mu_;
  std::vector<Series> series_ GUARDED_BY(mu_);  // index = ref
  std::map<model::Labels, store::SeriesRef> refs_ GUARDED_BY(mu_);
  std::size_t max_series_ GUARDED_BY(mu_) = static_cast<std::size_t>(-1);
  int fail_commits_ GUARDED_BY(mu_) = 0;
  Status fail_status_ GUARDED_BY(mu_);
  std::size_t commits_ GUARDED_BY(mu_) = 0;
  std::size_t failed_commits_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpucanary::remote::test
