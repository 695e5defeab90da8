// Must NOT compile under clang: it writes a GUARDED_BY member without its lock.
// tests/compile_checks/CMakeLists.txt expects clang's thread-safety error here; the twin
// guarded_locked.cc, the same code with the lock, must compile, so the error is the lock's.
#include "core/mutex.h"

namespace gpucanary {

class Counter {
 public:
  void Increment() { ++count_; }  // the violation: mu_ is not held

 private:
  Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

void Use() {
  Counter c;
  c.Increment();
}

}  // namespace gpucanary
