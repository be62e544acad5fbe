#include "util/status.h"

#include <cerrno>
#include <cstring>

namespace sluice {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kNotFound: return "NotFound";
  }
  return "Unknown";
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", StatusCodeName(rep_->code), rep_->message);
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(rep_->code, fmt::format("{}: {}", prefix, rep_->message));
}

std::string OpenErrorText(int err) {
  if (err == ELOOP) return "is a symbolic link (not followed: sluice writes only a file of its own there)";
  return std::strerror(err);
}

}  // namespace sluice
