// Must NOT compile: it drops a Result<T> and a Status, both [[nodiscard]] (core/status.h),
// and the build turns the warning into an error (-Werror=unused-result). Its twin
// result_used.cc uses both, or discards them with (void), and must compile.
#include "core/status.h"

namespace gpucanary {

Result<int> Parse() { return 7; }
Status Flush() { return Status::Ok(); }

void Use() {
  Parse();  // the violation: the value and any error are lost
  Flush();
}

}  // namespace gpucanary
