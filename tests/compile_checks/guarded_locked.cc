// Must compile: guarded_unlocked.cc with the lock held (the control of that check).
#include "core/mutex.h"

namespace gpucanary {

class Counter {
 public:
  void Increment() {
    MutexLock lock(mu_);
    ++count_;
  }

 private:
  Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

void Use() {
  Counter c;
  c.Increment();
}

}  // namespace gpucanary
