#pragma once
// The one error model of gpucanary: Status for operations that return nothing,
// Result<T> (a [[nodiscard]] tl::expected<T, Status>) for those that return a value.
//
// Bad input is an expected error: it is returned, with where and why, never
// thrown. Exceptions do not cross component boundaries. A broken invariant is
// a bug and aborts through GC_CHECK with a message.

#include <cstdint>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace gpucanary {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed (flags, config)
  kParseError,          // input data does not follow its format; message has file:line:col
  kNotFound,            // a file, series or entity that was asked for does not exist
  kIoError,             // the OS refused a read or write
  kUnavailable,         // a peer or resource is temporarily unreachable: retry may help
  kOutOfRange,          // a value outside what the format or the store can represent
  kInternal,            // an invariant broke inside gpucanary
  kAlreadyExists,       // the thing to create exists (a release's canary)
  kFailedPrecondition,  // not in a state that allows it (stopping an ended canary)
};

std::string_view StatusCodeName(StatusCode code);

// Status is cheap to copy when ok (no allocation). Thread-compatible.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  // So that `return Error(...)` works in functions returning Status, as it
  // does in those returning Result<T>.
  Status(tl::unexpected<Status> error)  // NOLINT(google-explicit-constructor)
      : Status(std::move(error.value())) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "parse_error: file.om:3:7: expected '=' after label name"
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>", keeping the code.
  Status WithPrefix(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T> is tl::expected<T, Status> that refuses to be ignored: a call whose
// Result is dropped does not compile (-Werror=unused-result, set for all of
// our code). Where dropping it is right, write `(void)` and say why beside it.
// Everything tl::expected offers works on it; its monadic members (map,
// and_then) return the plain tl::expected, which converts back implicitly.
template <typename T>
class [[nodiscard]] Result : public tl::expected<T, Status> {
 public:
  using Base = tl::expected<T, Status>;
  using Base::Base;
  Result() = default;
  Result(const Base& other) : Base(other) {}        // NOLINT(google-explicit-constructor)
  Result(Base&& other) : Base(std::move(other)) {}  // NOLINT(google-explicit-constructor)
};

// Makes the error side of a Result: `return Error(StatusCode::kNotFound, "no such file");`
inline tl::unexpected<Status> Error(StatusCode code, std::string message) {
  return tl::unexpected<Status>(Status(code, std::move(message)));
}
inline tl::unexpected<Status> Error(Status status) {
  return tl::unexpected<Status>(std::move(status));
}

// The text of an errno value, thread-safe (unlike std::strerror).
std::string ErrnoMessage(int error_number);

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, std::string_view msg);

}  // namespace gpucanary

// GC_CHECK(cond) << nothing: invariants only, never input validation.
#define GC_CHECK(cond, msg)                                                \
  do {                                                                     \
    if (!(cond)) ::gpucanary::CheckFailed(__FILE__, __LINE__, #cond, msg); \
  } while (0)

// Propagates a non-ok Status from an expression returning Status, from a
// function returning Status or Result<T>.
#define GC_RETURN_IF_ERROR(expr)                                    \
  do {                                                              \
    ::gpucanary::Status _gc_st = (expr);                            \
    if (!_gc_st.ok()) return ::gpucanary::Error(std::move(_gc_st)); \
  } while (0)
