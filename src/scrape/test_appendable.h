#pragma once
// Test code only: a small thread-safe store::Appendable that keeps every
// committed sample per series, with the real store's commit rules (an older
// timestamp is out of order, the same timestamp with another value a
// duplicate, an exact repeat dropped), and a way to wait for commits
// instead of sleeping.

#include <bit>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "model/labels.h"
#include "store/appender.h"

namespace gpucanary::scrape::test {

struct Sample {
  std::int64_t t_ms;
  double value;
};

class CapturingAppendable final : public store::Appendable {
 public:
  std::unique_ptr<store::Appender> NewAppender() override {
    return std::make_unique<CapturingAppender>(*this);
  }

  // Committed samples of the series written as LabelsToString gives it
  // ("up{instance=\"127.0.0.1:9100\",job=\"a\"}"); empty when unknown.
  std::vector<Sample> Samples(const std::string& series) const {
    MutexLock lock(mu_);
    auto it = by_text_.find(series);
    return it == by_text_.end() ? std::vector<Sample>() : samples_[it->second];
  }

  // Every series (as text) with its committed samples.
  std::map<std::string, std::vector<Sample>> All() const {
    MutexLock lock(mu_);
    std::map<std::string, std::vector<Sample>> out;
    for (const auto& [text, ref] : by_text_) out[text] = samples_[ref];
    return out;
  }

  std::uint64_t commits() const {
    MutexLock lock(mu_);
    return commits_;
  }
  // While set, every Commit fails as a full disk does (kIoError), keeping
  // nothing of its batch.
  void FailCommits(bool fail) {
    MutexLock lock(mu_);
    fail_commits_ = fail;
  }
  std::uint64_t rejected() const {
    MutexLock lock(mu_);
    return rejected_;
  }

  // Waits until `done()` holds, checking after every commit, for at most
  // `timeout`. `done` runs without the lock held (it may call Samples()).
  bool WaitFor(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(mu_);
    while (true) {
      const std::uint64_t seen = commits_;
      lock.Unlock();
      if (done()) return true;
      lock.Lock();
      if (!committed_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) { return commits_ != seen; })) {
        lock.Unlock();
        return done();
      }
    }
  }

 private:
  class CapturingAppender final : public store::Appender {
   public:
    explicit CapturingAppender(CapturingAppendable& owner) : owner_(owner) {}
    Result<store::SeriesRef> Series(const model::Labels& labels) override {
      GC_RETURN_IF_ERROR(model::ValidateLabels(labels));
      MutexLock lock(owner_.mu_);
      const std::string text = model::LabelsToString(labels);
      auto [it, inserted] = owner_.by_text_.emplace(text, owner_.samples_.size());
      if (inserted) owner_.samples_.emplace_back();
      return it->second;
    }
    Status Append(store::SeriesRef ref, std::int64_t t_ms, double value) override {
      pending_.push_back({ref, t_ms, value});
      return Status::Ok();
    }
    Result<store::CommitResult> Commit() override {
      store::CommitResult r;
      {
        MutexLock lock(owner_.mu_);
        if (owner_.fail_commits_) {
          pending_.clear();
          return Error(StatusCode::kIoError, "data/wal/00000001: write: No space left on device");
        }
        for (const auto& [ref, t, v] : pending_) {
          std::vector<Sample>& s = owner_.samples_[ref];
          if (!s.empty() && t < s.back().t_ms) {
            ++r.out_of_order;
          } else if (!s.empty() && t == s.back().t_ms) {
            if (std::bit_cast<std::uint64_t>(v) != std::bit_cast<std::uint64_t>(s.back().value)) {
              ++r.duplicates;
            }
          } else {
            s.push_back({t, v});
            ++r.appended;
          }
        }
        owner_.rejected_ += r.out_of_order + r.duplicates;
        ++owner_.commits_;
      }
      pending_.clear();
      owner_.committed_.NotifyAll();
      return r;
    }
    void Rollback() override { pending_.clear(); }

   private:
    CapturingAppendable& owner_;
    std::vector<std::tuple<store::SeriesRef, std::int64_t, double>> pending_;
  };

  mutable Mutex mu_;
  bool fail_commits_ GUARDED_BY(mu_) = false;
  CondVar committed_;
  std::map<std::string, store::SeriesRef> by_text_ GUARDED_BY(mu_);
  std::vector<std::vector<Sample>> samples_ GUARDED_BY(mu_);
  std::uint64_t commits_ GUARDED_BY(mu_) = 0;
  std::uint64_t rejected_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpucanary::scrape::test
