// Must compile: the twin of result_ignored.cc, with every Result and Status used or
// discarded on purpose, so that its refusal is the unused result's, not a broken include.
#include "core/status.h"

namespace gpucanary {

Result<int> Parse() { return 7; }
Status Flush() { return Status::Ok(); }

int Use() {
  Result<int> value = Parse();
  (void)Flush();  // discarded on purpose: the check needs a deliberate drop to compile
  return value.value_or(0);
}

}  // namespace gpucanary
