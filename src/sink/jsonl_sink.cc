#include "sink/jsonl_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_file.h"

namespace sluice {

namespace {

constexpr size_t kWriteThreshold = 1u << 20;
constexpr const char* kStateFormat = "sluice-jsonl-state";
constexpr int kStateVersion = 1;

Status IoError(std::string_view op, const std::string& path, int err) {
  return Status::Unavailable(fmt::format("{} {}: {}", op, path, strerror(err)));
}

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct State {
  std::optional<uint64_t> output_bytes;
  std::optional<std::string> checkpoint;
};

Result<State> ParseState(const std::string& path, const std::string& text) {
  using Json = nlohmann::json;
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](std::string_view why) {
    return Status::Corruption(fmt::format("JSONL state file {}: {}", path, why));
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  auto format = doc.find("format");
  if (format == doc.end() || *format != kStateFormat) return bad("not a sluice JSONL state file");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer()) return bad("no version");
  if (version->get<int64_t>() != kStateVersion) {
    return Status::FailedPrecondition(fmt::format(
        "JSONL state file {}: version {} is not supported", path, version->get<int64_t>()));
  }
  State st;
  auto bytes = doc.find("output_bytes");
  if (bytes == doc.end()) return bad("output_bytes missing");
  if (bytes->is_number_unsigned()) {
    st.output_bytes = bytes->get<uint64_t>();
  } else if (!bytes->is_null()) {
    return bad("output_bytes is not an unsigned integer or null");
  }
  auto cp = doc.find("checkpoint");
  if (cp == doc.end()) return bad("checkpoint missing");
  if (cp->is_string()) {
    st.checkpoint = cp->get<std::string>();
  } else if (!cp->is_null()) {
    return bad("checkpoint is not a string or null");
  }
  return st;
}

}  // namespace

JsonlSink::JsonlSink(JsonlSinkOptions options)
    : options_(std::move(options)), serializer_(options_.records) {}

JsonlSink::~JsonlSink() {
  if (fd_ >= 0) {
    (void)Flush();
    if (!to_stdout_) ::close(fd_);
  }
}

Result<std::unique_ptr<JsonlSink>> JsonlSink::Open(JsonlSinkOptions options) {
  if (options.path.empty()) return Status::InvalidArgument("jsonl sink: output path is empty");
  std::unique_ptr<JsonlSink> sink(new JsonlSink(std::move(options)));
  JsonlSinkOptions& o = sink->options_;
  if (!o.now_ms) o.now_ms = SystemNowMs;
  sink->to_stdout_ = o.path == "-";
  if (sink->to_stdout_ && o.checkpoint_path.empty()) {
    return Status::InvalidArgument(
        "jsonl sink: writing to stdout (\"-\") needs an explicit checkpoint path");
  }
  sink->state_path_ = o.checkpoint_path.empty() ? o.path + ".checkpoint" : o.checkpoint_path;

  State state;
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadSmallFile(sink->state_path_));
  if (text) {
    ASSIGN_OR_RETURN(state, ParseState(sink->state_path_, *text));
  }
  sink->stored_ = state.checkpoint;

  if (sink->to_stdout_) {
    sink->fd_ = STDOUT_FILENO;
    return sink;
  }

  // O_APPEND: every write lands at the end, which is output_bytes_ after the fix-up below.
  sink->fd_ = ::open(o.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (sink->fd_ < 0) return IoError("open", o.path, errno);
  struct stat sb;
  if (::fstat(sink->fd_, &sb) != 0) return IoError("stat", o.path, errno);
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  if (text && state.output_bytes) {
    const uint64_t recorded = *state.output_bytes;
    if (size < recorded) {
      return Status::DataLoss(fmt::format(
          "jsonl sink: {} has {} bytes but its checkpoint {} records {}; the output was "
          "truncated or replaced. Remove both files to start over.",
          o.path, size, sink->state_path_, recorded));
    }
    if (size > recorded) {
      // Lines written after the last checkpoint: they will be emitted again.
      if (::ftruncate(sink->fd_, static_cast<off_t>(recorded)) != 0) {
        return IoError("truncate", o.path, errno);
      }
      if (::fsync(sink->fd_) != 0) return IoError("fsync", o.path, errno);
    }
    sink->output_bytes_ = recorded;
  } else {
    // First use (or a state file from stdout mode): keep what is there, and record its
    // length before writing so that a crash before the first checkpoint cuts back to it.
    if (::fsync(sink->fd_) != 0) return IoError("fsync", o.path, errno);
    RETURN_IF_ERROR(SyncParentDirectory(o.path));
    sink->output_bytes_ = size;
    RETURN_IF_ERROR(sink->WriteState());
  }
  return sink;
}

Result<std::optional<std::string>> JsonlSink::LoadCheckpoint() {
  RETURN_IF_ERROR(broken_);
  return pending_ ? pending_ : stored_;
}

Status JsonlSink::PrepareTable(const TableSchema&) { return broken_; }

Status JsonlSink::Apply(const Transaction& txn) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  batch_.clear();
  RETURN_IF_ERROR(serializer_.AppendTransaction(txn, options_.now_ms(), &batch_));
  AppendLines();
  if (!txn.checkpoint.empty()) pending_ = txn.checkpoint;
  if (options_.sync_every_txn) return Flush();
  if (buffer_.size() >= kWriteThreshold) {
    Status st = WriteBuffer();
    if (!st.ok()) broken_ = st;
    return st;
  }
  return Status::Ok();
}

void JsonlSink::AppendLines() {
  for (const Record& r : batch_.records) {
    if (!r.has_value) continue;  // tombstones have no line
    buffer_.append(batch_.value(r));
    buffer_.push_back('\n');
  }
}

Status JsonlSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  batch_.clear();
  RETURN_IF_ERROR(serializer_.AppendTruncate(table, options_.now_ms(), &batch_));
  AppendLines();
  if (!checkpoint.empty()) pending_ = checkpoint;
  return Flush();
}

Status JsonlSink::SaveCheckpoint(const std::string& checkpoint) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  pending_ = checkpoint;
  if (options_.sync_every_txn) return Flush();
  return Status::Ok();
}

Status JsonlSink::WriteBuffer() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("write", to_stdout_ ? std::string("stdout") : options_.path, errno);
    }
    done += static_cast<size_t>(n);
    output_bytes_ += static_cast<uint64_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

Status JsonlSink::WriteState() {
  nlohmann::json doc;
  doc["format"] = kStateFormat;
  doc["version"] = kStateVersion;
  doc["output_bytes"] = to_stdout_ ? nlohmann::json(nullptr) : nlohmann::json(output_bytes_);
  doc["checkpoint"] = pending_  ? nlohmann::json(*pending_)
                      : stored_ ? nlohmann::json(*stored_)
                                : nlohmann::json(nullptr);
  RETURN_IF_ERROR(WriteFileAtomic(
      state_path_, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  if (pending_) stored_ = std::move(pending_);
  pending_.reset();
  return Status::Ok();
}

Status JsonlSink::Flush() {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::Ok();
  Status st = WriteBuffer();
  if (st.ok() && !to_stdout_ && ::fsync(fd_) != 0) st = IoError("fsync", options_.path, errno);
  // Stdout may be a pipe or terminal: nothing to fsync; the write() itself hands it on.
  if (st.ok() && pending_) st = WriteState();
  if (!st.ok()) broken_ = st;
  return st;
}

Status JsonlSink::Close() {
  if (fd_ < 0) return broken_;
  Status st = Flush();
  if (!to_stdout_ && ::close(fd_) != 0 && st.ok()) st = IoError("close", options_.path, errno);
  fd_ = -1;
  return st;
}

}  // namespace sluice
