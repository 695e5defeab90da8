#pragma once
// Mutexes that clang's thread-safety analysis can see: Mutex and SharedMutex wrap the standard
// ones and are capabilities, MutexLock / ReaderMutexLock / WriterMutexLock hold them for a
// scope, and CondVar waits on a Mutex. They add no behaviour of their own: each call is the
// matching std::mutex / std::shared_mutex / std::condition_variable call.
//
// Thread-safe (they are the synchronisation). Not copyable or movable.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "core/thread_annotations.h"

namespace gpucanary {

class CondVar;

// An exclusive lock (std::mutex). Prefer MutexLock to calling Lock/Unlock by hand.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the lock is held where it cannot see it (a lambda that a template runs
  // under the caller's lock); checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A reader/writer lock (std::shared_mutex).
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }
  // Tell the analysis the lock is held (exclusively / shared) where it cannot see it, e.g. in
  // a lambda that a template runs under the caller's lock; they check nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex from construction to the end of the scope (std::unique_lock): Unlock lets it
// go for a stretch that must not hold it (a slow call, a callback) and Lock takes it back.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // REQUIRES: held (the first call, or after Lock).
  void Unlock() RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  // REQUIRES: not held (after Unlock).
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// Holds a SharedMutex exclusively for the scope (std::unique_lock<std::shared_mutex>).
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterMutexLock() RELEASE() { mu_.Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared for the scope (std::shared_lock<std::shared_mutex>).
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderMutexLock() RELEASE() { mu_.UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable (std::condition_variable) waited on with a held Mutex. Each wait
// releases the mutex while blocked and holds it again on return, as std::condition_variable
// does with a std::unique_lock. A predicate runs with the mutex held: annotate the lambda
// REQUIRES(mu_) so that the analysis checks its body.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

  void Wait(Mutex& mu) REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.lock);
  }
  template <class Predicate>
  void Wait(Mutex& mu, Predicate pred) REQUIRES(mu) {
    Adopted lock(mu);
    cv_.wait(lock.lock, std::move(pred));
  }
  // Returns std::cv_status::timeout when the time ran out.
  template <class Rep, class Period>
  std::cv_status WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout)
      REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_for(lock.lock, timeout);
  }
  // Returns pred() at the end: false when the time ran out with pred() still false.
  template <class Rep, class Period, class Predicate>
  bool WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout, Predicate pred)
      REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_for(lock.lock, timeout, std::move(pred));
  }
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline,
                 Predicate pred) REQUIRES(mu) {
    Adopted lock(mu);
    return cv_.wait_until(lock.lock, deadline, std::move(pred));
  }

 private:
  // Lends the already-held std::mutex to a std::unique_lock for one wait and gives it back
  // still locked, so that the caller's MutexLock stays the owner.
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    Adopted(const Adopted&) = delete;
    Adopted& operator=(const Adopted&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace gpucanary
