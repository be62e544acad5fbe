// Status and Result<T>: the error type of every sluice module.
//
// A Status is OK or carries a code and a message. OK costs one null pointer (as in
// LevelDB's Status), so the success path does not allocate. Errors are built only
// through the named factories below. Codes are sorted by what the caller does next:
//   kCorruption      bad bytes; the message names the file/offset or table/column. Stop.
//   kUnavailable     network or server went away; reconnect from the last checkpoint.
//   kDataLoss        the position we need was purged from the server. Stop.
//   kNotSupported    a format or feature sluice does not handle. Stop.
//   kInvalidArgument bad config, flag or user input. Stop.
//   kFailedPrecondition the environment is wrong (binlog_format, privileges, state version).
//   kInternal        a bug in sluice.
//   kCancelled       the run was asked to stop (SIGINT/SIGTERM).
// Result<T> holds either a T or a non-OK Status. Both are [[nodiscard]].
// Thread safety: values; no shared state.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace sluice {

enum class StatusCode : int {
  kOk = 0,
  kCorruption,
  kUnavailable,
  kDataLoss,
  kNotSupported,
  kInvalidArgument,
  kFailedPrecondition,
  kInternal,
  kCancelled,
  kNotFound,
};

std::string_view StatusCodeName(StatusCode code);

// strerror(err) for a failed open() of a file sluice creates or appends to, which is opened
// with O_NOFOLLOW: ELOOP then means the file is a symbolic link, and says so, where strerror
// says "Too many levels of symbolic links".
std::string OpenErrorText(int err);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(const Status& other)
      : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status Corruption(std::string msg) { return Status(StatusCode::kCorruption, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(StatusCode::kUnavailable, std::move(msg)); }
  static Status DataLoss(std::string msg) { return Status(StatusCode::kDataLoss, std::move(msg)); }
  static Status NotSupported(std::string msg) { return Status(StatusCode::kNotSupported, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, std::move(msg));
  }
  static Status FailedPrecondition(std::string msg) {
    return Status(StatusCode::kFailedPrecondition, std::move(msg));
  }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
  static Status Cancelled(std::string msg) { return Status(StatusCode::kCancelled, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "Corruption: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithContext(std::string_view prefix) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  Status(StatusCode code, std::string msg)
      : rep_(std::make_unique<Rep>(Rep{code, std::move(msg)})) {}
  std::unique_ptr<Rep> rep_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    if (std::get<1>(v_).ok()) v_ = Status::Internal("Result built from an OK Status");
  }

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sluice

#define SLUICE_CONCAT_INNER(a, b) a##b
#define SLUICE_CONCAT(a, b) SLUICE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::sluice::Status _st = (expr);             \
    if (!_st.ok()) return _st;                 \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F());` declares x from a Result or returns its Status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(SLUICE_CONCAT(_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
