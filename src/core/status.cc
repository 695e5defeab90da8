#include "core/status.h"

#include <cstdio>
#include <cstdlib>
#include <system_error>

namespace gpucanary {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kParseError:
      return "parse_error";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kOutOfRange:
      return "out_of_range";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  std::string msg(prefix);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

std::string ErrnoMessage(int error_number) { return std::generic_category().message(error_number); }

void CheckFailed(const char* file, int line, const char* expr, std::string_view msg) {
  std::fprintf(stderr, "gpucanary: internal invariant failed at %s:%d: %s: %.*s\n", file, line,
               expr, static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace gpucanary
