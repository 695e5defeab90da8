#include "vocab/vocab.h"

#include <ostream>

namespace gpucanary::vocab {

std::ostream& operator<<(std::ostream& out, CauseKind value) { return out << Name(value); }
std::ostream& operator<<(std::ostream& out, Scope value) { return out << Name(value); }
std::ostream& operator<<(std::ostream& out, Verdict value) { return out << Name(value); }
std::ostream& operator<<(std::ostream& out, CanaryState value) { return out << Name(value); }

}  // namespace gpucanary::vocab
