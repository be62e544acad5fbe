#include "sink/jsonl_sink.h"

#include <functional>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <functional>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_file.h"
#include "sink/envelope.h"
#include "util/log.h"

namespace sluice {

namespace {

constexpr size_t kWriteThreshold = 1u << 20;
// Direct groups: O_DIRECT wants offsets, lengths and memory aligned to the logical block
// size (512 or 4096 bytes on the devices sluice meets: 4096 covers both); stages of 4 MiB,
// at most 4 of them (16 MiB beside the sink's other buffers; 8 MiB stages were no faster).
constexpr size_t kBlock = 4096;
constexpr size_t kStageBytes = size_t{4} << 20;
constexpr size_t kMaxStages = 4;
constexpr const char* kStateFormat = "sluice-jsonl-state";
constexpr int kStateVersion = 1;

Status IoError(std::string_view op, const std::string& path, int err) {
  return Status::Unavailable(fmt::format("{} {}: {}", op, path, OpenErrorText(err)));
}

bool IsDiskFull(int err) { return err == ENOSPC || err == EDQUOT; }

// A write-path error by what the caller does next: a full disk is transient (the caller
// retries the same transaction once space is freed); anything else (read-only file or file
// system, permission, I/O error) is definite and names the path.
Status WriteError(std::string_view op, const std::string& path, int err) {
  if (IsDiskFull(err)) {
    return Status::Unavailable(
        fmt::format("disk full: {} {}: {} (will retry once space is freed)", op, path, strerror(err)));
  }
  return Status::FailedPrecondition(
      fmt::format("cannot write the JSON lines output: {} {}: {}", op, path, strerror(err)));
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

std::string SchemasFile(const std::string& state_path, std::string_view ref) {
  return fmt::format("{}.schemas-{}", state_path, ref);
}

// The history a split checkpoint refers to, from its file beside the state file.
Result<std::shared_ptr<const SchemaHistoryText>> ReadSchemasFile(const std::string& state_path,
                                                                 const std::string& checkpoint) {
  const std::string_view ref = CheckpointSchemasRef(checkpoint);
  if (ref.empty()) return std::shared_ptr<const SchemaHistoryText>();
  const std::string path = SchemasFile(state_path, ref);
  ASSIGN_OR_RETURN(std::optional<std::string> json, ReadSmallFile(path));
  if (!json) {
    return Status::Corruption(fmt::format(
        "JSONL state file {}: its checkpoint refers to schema history {}, but {} does not exist",
        state_path, ref, path));
  }
  auto h = std::make_shared<SchemaHistoryText>();
  h->ref = std::string(ref);
  h->json = std::move(*json);
  return std::shared_ptr<const SchemaHistoryText>(std::move(h));
}

// History files of `state_path` other than `keep_ref`'s (left by a crash between writing a
// new history and the state file that refers to it).
void RemoveOtherSchemasFiles(const std::string& state_path, std::string_view keep_ref) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path state(state_path);
  const std::string prefix = state.filename().string() + ".schemas-";
  const fs::path dir = state.parent_path().empty() ? fs::path(".") : state.parent_path();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && name.substr(prefix.size()) != keep_ref) fs::remove(e.path(), ec);
  }
}

// An output shorter than its state file records: lines sluice confirmed are gone.
Status OutputShorter(const std::string& path, uint64_t size, const std::string& state_path, uint64_t recorded) {
  return Status::DataLoss(fmt::format(
      "jsonl sink: {} has {} bytes but its checkpoint {} records {}; the output was "
      "truncated or replaced. Remove both files to start over.",
      path, size, state_path, recorded));
}

// The output's length against the length its state file records, without opening it: a
// missing output counts as empty. Open refuses before it creates or changes anything.
Status CheckOutputLength(const std::string& path, const std::string& state_path, uint64_t recorded) {
  struct stat sb;
  uint64_t size = 0;
  if (::stat(path.c_str(), &sb) == 0) {
    size = static_cast<uint64_t>(sb.st_size);
  } else if (errno != ENOENT) {
    return IoError("stat", path, errno);
  }
  if (size < recorded) return OutputShorter(path, size, state_path, recorded);
  return Status::Ok();
}

}  // namespace

Result<std::optional<std::string>> ReadJsonlCheckpoint(const std::string& state_path) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadSmallFile(state_path));
  if (!text) return std::optional<std::string>();
  ASSIGN_OR_RETURN(State state, ParseState(state_path, *text));
  if (!state.checkpoint) return std::optional<std::string>();
  ASSIGN_OR_RETURN(auto history, ReadSchemasFile(state_path, *state.checkpoint));
  if (!history) return state.checkpoint;
  return std::optional<std::string>(JoinCheckpoint(*state.checkpoint, history->json));
}

Status CheckJsonlOutput(const std::string& path, const std::string& state_path) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadSmallFile(state_path));
  if (!text) return Status::Ok();
  ASSIGN_OR_RETURN(State state, ParseState(state_path, *text));
  if (state.checkpoint) RETURN_IF_ERROR(ReadSchemasFile(state_path, *state.checkpoint).status());
  if (!state.output_bytes) return Status::Ok();
  return CheckOutputLength(path, state_path, *state.output_bytes);
}

JsonlSink::Stored JsonlSink::ToStored(const std::string& text,
                                      const std::shared_ptr<const SchemaHistoryText>& schemas) {
  if (schemas) return Stored{text, schemas};
  SplitCheckpointText split = SplitCheckpoint(text);  // a whole checkpoint (SaveCheckpoint etc.)
  return Stored{std::move(split.split), std::move(split.schemas)};
}

std::string JsonlSink::SchemasPath(std::string_view ref) const { return SchemasFile(state_path_, ref); }

JsonlSink::JsonlSink(JsonlSinkOptions options)
    : options_(std::move(options)), serializer_(options_.records) {}

JsonlSink::~JsonlSink() {
  if (fd_ >= 0) {
    (void)Flush();
    StopDurabilityThread();
    if (!to_stdout_) ::close(fd_);
  }
  StopDurabilityThread();
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (plain_fd_ >= 0) ::close(plain_fd_);
}

void JsonlSink::StageFree::operator()(char* p) const { std::free(p); }

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
  if (state.checkpoint) {
    ASSIGN_OR_RETURN(auto history, ReadSchemasFile(sink->state_path_, *state.checkpoint));
    sink->stored_ = Stored{*state.checkpoint, std::move(history)};
  }
  // An output shorter than recorded is refused before anything is created or removed (the
  // output used to be created empty first, and stray history files removed).
  if (!sink->to_stdout_ && state.output_bytes)
    RETURN_IF_ERROR(CheckOutputLength(o.path, sink->state_path_, *state.output_bytes));
  RemoveOtherSchemasFiles(sink->state_path_, sink->stored_ && sink->stored_->schemas ? sink->stored_->schemas->ref : "");

  if (sink->to_stdout_) {
    sink->fd_ = STDOUT_FILENO;
    sink->applied_ = sink->stored_;
    return sink;
  }

  // O_APPEND: every write lands at the end, which is output_bytes_ after the fix-up below.
  // O_NOFOLLOW: a symbolic link there would have the rows appended to whatever file it names
  // (keeping that file's mode), where the lock and state files refuse one.
  sink->fd_ = ::open(o.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (sink->fd_ < 0 && errno == ELOOP)
    return Status::InvalidArgument(fmt::format("sink.path {} {}", o.path, OpenErrorText(ELOOP)));
  if (sink->fd_ < 0) return IoError("open", o.path, errno);
  struct stat sb;
  if (::fstat(sink->fd_, &sb) != 0) return IoError("stat", o.path, errno);
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  if (text && state.output_bytes) {
    const uint64_t recorded = *state.output_bytes;
    if (size < recorded) return OutputShorter(o.path, size, sink->state_path_, recorded);
    if (size > recorded) {
      // Lines written after the last checkpoint: they will be emitted again. Said, so that
      // anything else appended by hand is not cut silently (a new user's probe).
      LogWarning("{}: cutting the {} bytes after the last confirmed line (byte {}, recorded in {}): lines written "
                 "after the last checkpoint are written again; anything else appended to the file is dropped",
                 o.path, size - recorded, recorded, sink->state_path_);
      if (::ftruncate(sink->fd_, static_cast<off_t>(recorded)) != 0) {
        return IoError("truncate", o.path, errno);
      }
      if (::fsync(sink->fd_) != 0) return IoError("fsync", o.path, errno);
    }
    sink->output_bytes_ = recorded;
    sink->state_bytes_ = recorded;
    sink->committed_bytes_ = recorded;
  } else {
    // First use (or a state file from stdout mode): keep what is there, and record its
    // length before writing so that a crash before the first checkpoint cuts back to it.
    if (size > 0 && !text)
      LogWarning("{} already holds {} bytes and there is no state file ({}): this is a new pipeline, and its lines "
                 "(the snapshot first) are appended after them; remove the file to start a fresh one",
                 o.path, size, sink->state_path_);
    uint64_t kept = size;
    if (size >= 16) {
      // An SQLite replica at this path (sink.type changed from "sqlite" with the same path):
      // JSON lines appended to it leave a file that is neither (a new user's probe).
      char head[16] = {};
      const int rfd = ::open(o.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      const bool read = rfd >= 0 && ::pread(rfd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head);
      if (rfd >= 0) ::close(rfd);
      if (read && std::memcmp(head, "SQLite format 3", 16) == 0)
        return Status::InvalidArgument(fmt::format(
            "jsonl sink: {} is an SQLite database (a replica of sink.type = \"sqlite\"?): JSON lines are not "
            "appended to it; choose another sink.path",
            o.path));
    }
    if (size > 0) {
      // Its last line unfinished: sluice's first line goes on a line of its own.
      char last = '\n';
      const int rfd = ::open(o.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      const bool read = rfd >= 0 && ::pread(rfd, &last, 1, static_cast<off_t>(size - 1)) == 1;
      if (rfd >= 0) ::close(rfd);
      if (read && last != '\n') {
        if (::write(sink->fd_, "\n", 1) != 1) return IoError("write", o.path, errno);
        LogWarning("{} does not end with a newline: one is added after its last line, before sluice's lines",
                   o.path);
        ++kept;
      }
    }
    if (::fsync(sink->fd_) != 0) return IoError("fsync", o.path, errno);
    RETURN_IF_ERROR(SyncParentDirectory(o.path));
    sink->output_bytes_ = kept;
    RETURN_IF_ERROR(sink->WriteState());
  }
  sink->applied_ = sink->stored_;
  if (o.sync_every_txn && o.direct_min_bytes > 0) {
    // The open file again (not its path, which someone may have replaced since), once for
    // O_DIRECT and once read-write without O_APPEND. Without either, every group is written
    // through the page cache, as it was.
    const std::string self = fmt::format("/proc/self/fd/{}", sink->fd_);
    sink->plain_fd_ = ::open(self.c_str(), O_RDWR | O_CLOEXEC);
    if (sink->plain_fd_ >= 0) sink->direct_fd_ = ::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (sink->direct_fd_ < 0 && sink->plain_fd_ >= 0) {
      ::close(sink->plain_fd_);
      sink->plain_fd_ = -1;
    }
  }
  if (o.sync_every_txn) sink->durability_ = std::thread([s = sink.get()] { s->DurabilityLoop(); });
  return sink;
}

Result<std::optional<std::string>> JsonlSink::LoadCheckpoint() {
  RETURN_IF_ERROR(broken_);
  const std::optional<Stored>& cp = pending_ ? pending_ : applied_;
  if (!cp) return std::optional<std::string>();
  if (!cp->schemas) return std::optional<std::string>(cp->text);
  return std::optional<std::string>(JoinCheckpoint(cp->text, cp->schemas->json));
}

Status JsonlSink::PrepareTable(const TableSchema&) { return broken_; }

Status JsonlSink::Apply(const Transaction& txn) {
  return ApplyTransactions(&txn, 1);
}

Status JsonlSink::ApplyGroup(const std::vector<Transaction>& group) {
  return ApplyTransactions(group.data(), group.size());
}

Status JsonlSink::ApplyTransactions(const Transaction* txns, size_t count) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  const size_t mark = buffer_.size();
  std::optional<Stored> pending_before = pending_;
  const int64_t now = options_.now_ms();
  // Preformatted lines (snapshot chunks: MiBs each) are written from the transactions
  // themselves rather than copied into buffer_ first, when this call writes anyway.
  bool all_pre = true;
  size_t pre_bytes = 0;
  for (size_t k = 0; k < count; ++k) {
    all_pre = all_pre && txns[k].preformatted.has_value();
    if (txns[k].preformatted) pre_bytes += txns[k].preformatted->size();
  }
  const bool in_place = all_pre && (options_.sync_every_txn || buffer_.size() + pre_bytes >= kWriteThreshold);
  for (size_t k = 0; k < count; ++k) {
    if (in_place) {
      if (!txns[k].preformatted->empty()) extra_.push_back(*txns[k].preformatted);
    } else if (txns[k].preformatted) {
      buffer_.append(*txns[k].preformatted);
    } else {
      batch_.clear();
      Status st = serializer_.AppendTransaction(txns[k], now, &batch_);
      if (!st.ok()) {
        buffer_.resize(mark);  // nothing of a failed group is written
        pending_ = std::move(pending_before);
        return st;
      }
      AppendLines();
    }
    if (!txns[k].checkpoint.empty()) pending_ = ToStored(txns[k].checkpoint, txns[k].schemas);
  }
  if (!options_.sync_every_txn && buffer_.size() < kWriteThreshold) return Status::Ok();
  Status st = durability_.joinable() ? WriteAndHandOff()
              : options_.sync_every_txn ? Flush()
                                        : WriteBuffer(/*keep=*/false);
  extra_.clear();  // written, or dropped with this group's lines below
  if (!st.ok() && broken_.ok()) {
    // Transient (disk full): the output is back at its last good length and this group's
    // lines are dropped, so the caller can apply the same transactions again.
    buffer_.resize(mark);
    pending_ = std::move(pending_before);
  }
  return st;
}

namespace {

constexpr size_t kKeepBatchBytes = 4u << 20;

class JsonlPreformatter : public Preformatter {
 public:
  JsonlPreformatter(const RecordOptions& records, std::function<int64_t()> now_ms)
      : serializer_(records),
        now_ms_(std::move(now_ms)),
        plain_(!records.schemas && !records.tombstones && !records.transaction_metadata &&
               !records.split_key_changes) {}
  Status Format(Transaction& txn) override {
    const int64_t now = now_ms_();
    if (plain_) {
      // Without keys, tombstones, transaction records, split updates or Connect schemas a
      // transaction's lines are its envelopes, one a line, in change order: written straight
      // into the text (no key, no record list, no copy out of a batch). Any error takes the
      // general way below, for its exact message.
      std::string out;
      bool ok = true;
      for (const RowChange& c : txn.changes) {
        if (c.table == nullptr || !AppendEnvelope(c, now, &out).ok()) {
          ok = false;
          break;
        }
        out.push_back('\n');
      }
      if (ok) {
        txn.preformatted = std::move(out);
        return Status::Ok();
      }
    }
    batch_.clear();
    RETURN_IF_ERROR(serializer_.AppendTransaction(txn, now, &batch_));
    std::string out;
    out.reserve(batch_.buffer.size() + batch_.records.size());
    for (const Record& r : batch_.records) {
      if (!r.has_value) continue;  // as AppendLines
      out.append(batch_.value(r));
      out.push_back('\n');
    }
    txn.preformatted = std::move(out);
    // A part of a large transaction leaves tens of MiB of capacity behind; the memory cap
    // (streamer.h max_buffered_bytes) does not count it, so give it back.
    if (batch_.buffer.capacity() > kKeepBatchBytes) batch_ = RecordBatch();
    return Status::Ok();
  }
  std::unique_ptr<ReadTextFormatter> NewReadTextFormatter(const TableSchemaPtr& table) override {
    // With Connect schemas every value is wrapped: Rows and the general way.
    if (serializer_.options().schemas || table == nullptr) return nullptr;
    class Lines : public ReadTextFormatter {
     public:
      Lines(const TableSchemaPtr& table, const std::function<int64_t()>& now_ms) : writer_(table), now_ms_(now_ms) {}
      void Begin(const SourceInfo& source) override { writer_.Begin(source, now_ms_()); }
      Status Append(const std::vector<std::optional<std::string_view>>& cells, std::string* out) override {
        return writer_.Append(cells, out);
      }

     private:
      ReadLineWriter writer_;
      std::function<int64_t()> now_ms_;
    };
    return std::make_unique<Lines>(table, now_ms_);
  }
  Status FormatReads(const TableSchemaPtr& table, std::vector<Row>& rows, const SourceInfo& source,
                     Transaction& txn) override {
    // With Connect schemas every value is wrapped: the general way.
    if (serializer_.options().schemas) return Preformatter::FormatReads(table, rows, source, txn);
    std::string out;
    RETURN_IF_ERROR(AppendReadLines(table, rows, source, now_ms_(), &out));
    txn.changes.clear();
    txn.preformatted = std::move(out);
    return Status::Ok();
  }
  std::optional<size_t> FormatRowsEvent(const binlog::RowsEvent& event, const binlog::TableMap& map,
                                        const binlog::RowPlans& plans, const TableSchemaPtr& table,
                                        const SourceInfo& source, std::string* out) override {
    // Only where Format writes the envelopes alone (see plain_).
    if (!plain_) return std::nullopt;
    return AppendRowsEventLines(event, map, plans, table, source, now_ms_(), &rows_cache_, out);
  }

 private:
  RowsEventLinesCache rows_cache_;
  RecordSerializer serializer_;
  std::function<int64_t()> now_ms_;
  const bool plain_;  // every change one record: its envelope (see Format)
  RecordBatch batch_;
};

}  // namespace

std::unique_ptr<Preformatter> JsonlSink::NewPreformatter() const {
  return std::make_unique<JsonlPreformatter>(options_.records, options_.now_ms);
}

Status JsonlSink::ApplyPart(const Transaction& part) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  parts_open_ = true;
  if (part.preformatted) {
    buffer_.append(*part.preformatted);
  } else {
    batch_.clear();
    RETURN_IF_ERROR(serializer_.AppendTransaction(part, options_.now_ms(), &batch_));
    AppendLines();
  }
  if (buffer_.size() < kWriteThreshold) return Status::Ok();
  // A full disk cuts the parts back (Undo); the caller aborts them and starts the transaction
  // again. Any other failure has marked the sink broken.
  return WriteBuffer(/*keep=*/false);
}

void JsonlSink::AbortParts() {
  if (fd_ < 0 || to_stdout_ || !broken_.ok()) return;
  buffer_.clear();
  parts_open_ = false;
  if (output_bytes_ != committed_bytes_) {
    if (Status w = WaitWritten(); !w.ok()) {
      broken_ = Status::FailedPrecondition(fmt::format(
          "{} (taking back a large transaction's lines: the next run cuts {} back to the last recorded checkpoint)",
          w.message(), options_.path));
      return;
    }
    tail_known_ = false;
    if (::ftruncate(fd_, static_cast<off_t>(committed_bytes_)) != 0) {
      broken_ = Status::FailedPrecondition(fmt::format("jsonl sink: cutting {} back to {} bytes failed: {}",
                                                       options_.path, committed_bytes_, strerror(errno)));
      return;
    }
    output_bytes_ = committed_bytes_;
  }
}

void JsonlSink::AppendLines() {
  for (const Record& r : batch_.records) {
    if (!r.has_value) continue;  // tombstones have no line
    buffer_.append(batch_.value(r));
    buffer_.push_back('\n');
  }
}

// Records made by `append` (into batch_) as one write with the checkpoint; on a write error
// the buffer and the pending checkpoint are as before, so the same call can be retried.
Status JsonlSink::WriteRecordsWithCheckpoint(const std::function<Status()>& append,
                                             const std::string& checkpoint) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  const size_t mark = buffer_.size();
  batch_.clear();
  RETURN_IF_ERROR(append());
  AppendLines();
  std::optional<Stored> pending_before = pending_;
  if (!checkpoint.empty()) pending_ = ToStored(checkpoint, nullptr);
  Status st = Flush();
  if (!st.ok() && broken_.ok()) {
    buffer_.resize(mark);
    pending_ = std::move(pending_before);
  }
  return st;
}

Status JsonlSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  return WriteRecordsWithCheckpoint(
      [&] { return serializer_.AppendTruncate(table, options_.now_ms(), &batch_); }, checkpoint);
}

Status JsonlSink::TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) {
  return WriteRecordsWithCheckpoint(
      [&] { return serializer_.AppendTruncate(table, options_.now_ms(), &batch_, &at); }, checkpoint);
}

Status JsonlSink::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  return WriteRecordsWithCheckpoint(
      [&]() -> Status {
        for (const SchemaChange& c : changes) RETURN_IF_ERROR(serializer_.AppendDdl(c, options_.now_ms(), &batch_));
        return Status::Ok();
      },
      checkpoint);
}

Status JsonlSink::SaveCheckpoint(const std::string& checkpoint) {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::FailedPrecondition("jsonl sink: closed");
  std::optional<Stored> pending_before = pending_;
  pending_ = ToStored(checkpoint, nullptr);
  if (!options_.sync_every_txn) return Status::Ok();
  Status st = Flush();
  if (!st.ok() && broken_.ok()) pending_ = std::move(pending_before);
  return st;
}

Status JsonlSink::WriteBuffer(bool keep) {
  // Everything written past committed_bytes_ must be in buffer_ until a call ends there, so
  // that a failed write can be undone (cut back) and done again.
  const bool undoable = to_stdout_ || output_bytes_ == committed_bytes_;
  if (direct_fd_ >= 0 && (!buffer_.empty() || !extra_.empty())) {
    // O_APPEND writes land at the file's end: only once every direct group is in the file,
    // and the last block is read back for the next direct group.
    if (Status w = WaitWritten(); !w.ok()) {
      if (w.code() != StatusCode::kUnavailable) broken_ = w;
      return w;
    }
    tail_known_ = false;
    // Every stage is free now: a stream of small groups after a snapshot does not keep them.
    std::lock_guard<std::mutex> lock(mu_);
    stages_made_ -= free_stages_.size();
    free_stages_.clear();
  }
  Status st;
  const auto write_all = [&](std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        st = WriteError("write", to_stdout_ ? std::string("stdout") : options_.path, errno);
        return;
      }
      done += static_cast<size_t>(n);
      output_bytes_ += static_cast<uint64_t>(n);
    }
  };
  if (extra_.empty()) {
    write_all(buffer_);
  } else {
    // A group's transactions written from their own text (in place) are a few KiB each: one
    // writev for up to kMaxIov of them, not a write() each (a syscall per transaction was
    // a tenth of the writer's CPU).
    constexpr size_t kMaxIov = 512;
    std::vector<iovec> iov;
    iov.reserve(std::min(extra_.size() + 1, kMaxIov));
    auto add = [&](std::string_view b) {
      if (!b.empty()) iov.push_back(iovec{const_cast<char*>(b.data()), b.size()});
    };
    auto flush = [&] {
      size_t k = 0;
      while (k < iov.size() && st.ok()) {
        ssize_t n = ::writev(fd_, iov.data() + k, static_cast<int>(std::min(iov.size() - k, kMaxIov)));
        if (n < 0) {
          if (errno == EINTR) continue;
          st = WriteError("write", to_stdout_ ? std::string("stdout") : options_.path, errno);
          return;
        }
        output_bytes_ += static_cast<uint64_t>(n);
        size_t left = static_cast<size_t>(n);
        while (k < iov.size() && left >= iov[k].iov_len) left -= iov[k++].iov_len;
        if (left > 0) {  // a short write inside iov[k]
          iov[k].iov_base = static_cast<char*>(iov[k].iov_base) + left;
          iov[k].iov_len -= left;
        }
      }
      iov.clear();
    };
    add(buffer_);
    for (std::string_view e : extra_) {
      add(e);
      if (iov.size() == kMaxIov) flush();
    }
    flush();
  }
  if (st.ok()) {
    if (!keep) {  // else Flush() clears them once the state file records them
      buffer_.clear();
      extra_.clear();
    }
    return Status::Ok();
  }
  return Undo(st, undoable);
}

Status JsonlSink::Undo(Status error, bool undoable) {
  // broken_ is never transient: a kUnavailable kept there refused every later call with an error
  // the caller retries, forever (a new user's probe: a large transaction on a full disk).
  const auto stop = [&](std::string_view why) {
    broken_ = error.code() == StatusCode::kUnavailable
                  ? Status::FailedPrecondition(fmt::format("{} ({})", error.message(), why))
                  : error;
    return broken_;
  };
  if (to_stdout_) return stop("lines handed to standard output cannot be taken back");
  if (error.code() != StatusCode::kUnavailable) return stop("");
  // Lines of transactions without a checkpoint are out and this call cannot take them back;
  // the parts of a large transaction can: the caller aborts it and starts it again.
  if (!undoable && !parts_open_)
    return stop(fmt::format("lines written before it cannot be taken back in this run; the next run cuts {} back "
                            "to the last recorded checkpoint and writes them again",
                            options_.path));
  tail_known_ = false;
  if (::ftruncate(fd_, static_cast<off_t>(committed_bytes_)) != 0) {
    return stop(fmt::format("and cutting {} back to {} bytes failed: {}", options_.path, committed_bytes_,
                            strerror(errno)));
  }
  output_bytes_ = committed_bytes_;
  return error;
}

Status JsonlSink::WriteState() {
  RETURN_IF_ERROR(WriteStateFile(output_bytes_, pending_ ? pending_ : stored_));
  committed_bytes_ = output_bytes_;
  parts_open_ = false;
  if (pending_) applied_ = std::move(pending_);
  pending_.reset();
  return Status::Ok();
}

Status JsonlSink::WriteStateFile(uint64_t bytes, const std::optional<Stored>& next) {
  nlohmann::json doc;
  doc["format"] = kStateFormat;
  doc["version"] = kStateVersion;
  doc["output_bytes"] = to_stdout_ ? nlohmann::json(nullptr) : nlohmann::json(bytes);
  doc["checkpoint"] = next ? nlohmann::json(next->text) : nlohmann::json(nullptr);
  const bool new_history = next && next->schemas &&
                           !(stored_ && stored_->schemas &&
                             (stored_->schemas == next->schemas || stored_->schemas->ref == next->schemas->ref));
  if (new_history) {
    // Before the state file that refers to it; an orphan left by a crash is removed by Open.
    Status hst = WriteFileAtomic(SchemasPath(next->schemas->ref), next->schemas->json);
    if (!hst.ok()) {
      const bool full = hst.message().find(strerror(ENOSPC)) != std::string::npos ||
                        hst.message().find(strerror(EDQUOT)) != std::string::npos;
      if (full)
        return Status::Unavailable(fmt::format("disk full: schema history file: {} (will retry once space is freed)",
                                               hst.message()));
      return Status::FailedPrecondition(fmt::format("cannot write the JSON lines schema history file: {}", hst.message()));
    }
  }
  const std::string old_history =
      stored_ && stored_->schemas && (!next || !next->schemas || next->schemas->ref != stored_->schemas->ref)
          ? SchemasPath(stored_->schemas->ref)
          : "";
  Status st =
      WriteFileAtomic(state_path_, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!st.ok()) {
    // The state file holds the old or the new contents, whole; find out which.
    auto text = ReadSmallFile(state_path_);
    std::optional<State> now;
    if (text.ok() && *text) {
      auto parsed = ParseState(state_path_, **text);
      if (parsed.ok()) now = *parsed;
    }
    const bool is_new = now && now->output_bytes == (to_stdout_ ? std::nullopt
                                                                : std::optional<uint64_t>(bytes)) &&
                        now->checkpoint == (next ? std::optional<std::string>(next->text) : std::nullopt);
    if (!is_new) {
      const bool full = st.message().find(strerror(ENOSPC)) != std::string::npos ||
                        st.message().find(strerror(EDQUOT)) != std::string::npos;
      const bool old_intact = now && now->output_bytes == (to_stdout_ ? std::nullopt
                                                                       : std::optional<uint64_t>(state_bytes_));
      if (full && old_intact) {
        return Status::Unavailable(fmt::format("disk full: state file {}: {} (will retry once space is freed)",
                                               state_path_, st.message()));
      }
      return Status::FailedPrecondition(
          fmt::format("cannot write the JSON lines state file {}: {}", state_path_, st.message()));
    }
  }
  state_bytes_ = bytes;
  stored_ = next;
  if (!old_history.empty()) ::unlink(old_history.c_str());  // no state file refers to it now
  return Status::Ok();
}

Status JsonlSink::Flush() {
  RETURN_IF_ERROR(broken_);
  if (fd_ < 0) return Status::Ok();
  // The state file is written by one thread at a time: what was handed off is durable first.
  RETURN_IF_ERROR(WaitDurable());
  const bool undoable = to_stdout_ || output_bytes_ == committed_bytes_;
  const bool had_output = !buffer_.empty() || !extra_.empty();
  Status st = WriteBuffer(/*keep=*/true);
  if (!st.ok()) return st;  // WriteBuffer undid it or marked the sink broken
  if (!to_stdout_ && had_output && ::fsync(fd_) != 0) {
    // After a failed fsync the written pages may be gone: cut back and write them again.
    return Undo(WriteError("fsync", options_.path, errno), undoable);
  }
  // Stdout may be a pipe or terminal: nothing to fsync. Lines in a pipe are the reader's only
  // once it has read them: recorded as delivered while still in the pipe, they were lost with a
  // reader that died (a new user's probe: 245 of 300 changes, the next run exit 0).
  if (pending_ && to_stdout_) {
    st = WaitStdoutRead(closing_);
    if (!st.ok()) {
      if (closing_ && st.code() == StatusCode::kCancelled) {
        LogWarning("{}", st.message());
        return Status::Ok();
      }
      broken_ = st;
      return st;
    }
  }
  if (pending_) {
    st = WriteState();
    if (!st.ok()) return Undo(st, undoable);
  }
  buffer_.clear();
  extra_.clear();
  return Status::Ok();
}

Status JsonlSink::WaitStdoutRead(bool closing) {
  struct stat sb;
  if (::fstat(fd_, &sb) != 0 || !S_ISFIFO(sb.st_mode)) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  int wait_ms = 1;
  while (true) {
    int unread = 0;
    if (::ioctl(fd_, FIONREAD, &unread) != 0 || unread <= 0) return Status::Ok();
    // Events 0: poll reports only POLLERR, which a pipe's write end gets once no reader is left.
    struct pollfd p {fd_, 0, 0};
    if (::poll(&p, 1, wait_ms) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0) {
      return Status::FailedPrecondition(fmt::format(
          "the reader of standard output went away with {} bytes of lines unread; the checkpoint stays before "
          "them, so the next run writes them again",
          unread));
    }
    if (closing && std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) {
      return Status::Cancelled(fmt::format(
          "stopping: the reader of standard output has not read the last {} bytes of lines in 5 s; the checkpoint "
          "stays before them, so the next run writes them again",
          unread));
    }
    wait_ms = std::min(wait_ms * 2, 50);
  }
}

Status JsonlSink::Close() {
  if (fd_ < 0) return broken_;
  closing_ = true;
  Status st = Flush();
  StopDurabilityThread();
  if (!to_stdout_ && ::close(fd_) != 0 && st.ok()) st = IoError("close", options_.path, errno);
  fd_ = -1;
  for (int* fd : {&direct_fd_, &plain_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  return st;
}

// Durability off the writer's path (sync_every_txn, file mode). The writer writes a group's
// lines and hands {its end, its checkpoint} to this thread, which makes the output durable up
// to there (fdatasync: the data and the file size), then replaces the state file with that
// pair. The writer goes on appending meanwhile; the thread always takes the newest pair, so
// one fdatasync and one state file cover every group written while the last ones ran. The
// state file never records more than what was fdatasync'ed before it was written, so after
// a crash (or power loss) Open cuts the output back to whole groups the state file records,
// and the stream resumes right after them: every transaction once. Lines are in the file
// (readable) before they are durable, as they were before (write, then fsync, then state).
Status JsonlSink::WriteAndHandOff() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!async_error_.ok()) {
      // Definite (a failed fdatasync): stop; a transient one (disk full for the state file):
      // write nothing until the thread has recorded what was handed off.
      if (async_error_.code() != StatusCode::kUnavailable) broken_ = async_error_;
      return async_error_;
    }
  }
  uint64_t bytes = buffer_.size();
  for (std::string_view e : extra_) bytes += e.size();
  if (direct_fd_ >= 0 && pending_ && bytes >= options_.direct_min_bytes) {
    RETURN_IF_ERROR(StageDirect(bytes));
  } else {
    RETURN_IF_ERROR(WriteBuffer(/*keep=*/true));
  }
  buffer_.clear();
  extra_.clear();
  // Lines without a checkpoint (a transaction whose checkpoint comes later) stay unconfirmed:
  // a restart emits them again from the stored checkpoint, so they are cut back.
  if (!pending_) return Status::Ok();
  committed_bytes_ = output_bytes_;
  parts_open_ = false;
  applied_ = std::move(pending_);
  pending_.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    HandOff h{committed_bytes_, applied_, jobs_queued_};
    if (jobs_done_ >= jobs_queued_) {
      handed_ = std::move(h);
    } else {
      waiting_.push_back(std::move(h));  // synced once its groups' jobs are written
    }
  }
  cv_.notify_all();
  return Status::Ok();
}

// A direct group: the lines (buffer_, then extra_) are copied into stages after the bytes of
// the output's last partial block, so that each stage starts on a block boundary; full stages
// and the last one are queued as jobs for the durability thread, which writes each stage's
// whole blocks with O_DIRECT and its last partial block (the new tail, kept in tail_ for the
// next direct group) through the page cache. The writer waits only for a free stage.
// Errors: a transient error of the thread (a full disk) while this group is staged is
// returned as it is, with nothing of the group left queued or in the file (the caller applies
// it again); a definite one marks the sink broken.
Status JsonlSink::StageDirect(uint64_t bytes) {
  const uint64_t start = output_bytes_ - output_bytes_ % kBlock;
  const size_t head = static_cast<size_t>(output_bytes_ - start);
  if (!tail_known_) {
    // The last write went through the page cache (it waited for the thread first): read the
    // partial block back.
    tail_.resize(head);
    size_t got = 0;
    while (got < head) {
      ssize_t n = ::pread(plain_fd_, tail_.data() + got, head - got, static_cast<off_t>(start + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return Status::Unavailable(fmt::format("read {} back at byte {}: {}", options_.path, start + got,
                                               n < 0 ? strerror(errno) : "the file is shorter than written"));
      }
      got += static_cast<size_t>(n);
    }
    tail_known_ = true;
  }
  bool queued_any = false;
  Stage cur;
  size_t fill = 0;
  uint64_t offset = start;
  const auto give_back = [&] {
    if (!cur.data) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_stages_.push_back(std::move(cur));
  };
  uint64_t first_seq = 0;  // jobs after it are this group's
  {
    std::lock_guard<std::mutex> lock(mu_);
    first_seq = jobs_queued_;
  }
  bool cut = false;  // this group's jobs were taken back: the output may be longer than written
  const auto take = [&]() -> Status {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_stages_.empty() || stages_made_ < kMaxStages || !async_error_.ok(); });
    if (!async_error_.ok()) {
      Status e = async_error_;
      if (e.code() != StatusCode::kUnavailable) {
        broken_ = e;
        return e;
      }
      if (queued_any) {
        // A full disk under a group larger than the stages: its jobs are taken back (once the
        // thread is between attempts, holding none), and the bytes written of them cut below,
        // so the caller applies the same group again, as after any transient failure.
        cv_.wait(lock, [&] { return !writing_; });
        const bool front_is_mine = !jobs_.empty() && jobs_.front().seq > first_seq;
        while (!jobs_.empty() && jobs_.back().seq > first_seq) {
          free_stages_.push_back(std::move(jobs_.back().stage));
          jobs_.pop_back();
        }
        jobs_queued_ = jobs_.empty() ? jobs_done_ : jobs_.back().seq;
        if (front_is_mine && job_failed_) {  // the failing job was this group's: gone with it
          job_failed_ = false;
          async_error_ = Status::Ok();
        }
        cut = true;
      }
      return e;
    }
    if (!free_stages_.empty()) {
      cur = std::move(free_stages_.back());
      free_stages_.pop_back();
      return Status::Ok();
    }
    ++stages_made_;
    lock.unlock();
    void* p = std::aligned_alloc(size_t{2} << 20, kStageBytes);
    if (p == nullptr) {
      std::lock_guard<std::mutex> relock(mu_);
      --stages_made_;
      broken_ = Status::FailedPrecondition(fmt::format("jsonl sink: no memory for a {} byte write buffer", kStageBytes));
      return broken_;
    }
    (void)::madvise(p, kStageBytes, MADV_HUGEPAGE);  // 4 faults, not 2048
    cur.data.reset(static_cast<char*>(p));
    return Status::Ok();
  };
  const auto queue = [&](size_t whole, size_t tail) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++jobs_queued_;
      jobs_.push_back(DirectJob{offset, whole, tail, std::move(cur), jobs_queued_});
    }
    cv_.notify_all();
    queued_any = true;
    offset += whole + tail;
    fill = 0;
  };
  const auto put = [&](std::string_view piece) -> Status {
    while (!piece.empty()) {
      if (!cur.data) RETURN_IF_ERROR(take());
      const size_t n = std::min(piece.size(), kStageBytes - fill);
      std::memcpy(cur.data.get() + fill, piece.data(), n);
      fill += n;
      piece.remove_prefix(n);
      if (fill == kStageBytes) queue(kStageBytes, 0);
    }
    return Status::Ok();
  };
  Status st = put(tail_);
  if (st.ok()) st = put(buffer_);
  for (size_t k = 0; k < extra_.size() && st.ok(); ++k) st = put(extra_[k]);
  if (!st.ok()) {
    give_back();
    // Bytes of this group in the file: its jobs ran in order, so everything before it is
    // written too, and no job left writes past output_bytes_.
    struct stat sb;
    if (cut && ::fstat(plain_fd_, &sb) == 0 && static_cast<uint64_t>(sb.st_size) > output_bytes_ &&
        ::ftruncate(plain_fd_, static_cast<off_t>(output_bytes_)) != 0) {
      broken_ = Status::FailedPrecondition(fmt::format("{} (and cutting {} back to {} bytes failed: {})", st.message(),
                                                       options_.path, output_bytes_, strerror(errno)));
      return broken_;
    }
    return st;
  }
  const size_t tail = fill % kBlock;
  tail_.assign(cur.data ? cur.data.get() + fill - tail : "", tail);
  if (fill > 0) queue(fill - tail, tail);
  give_back();
  output_bytes_ += bytes;
  return Status::Ok();
}

// One job, on the durability thread: whole blocks with O_DIRECT (through the page cache once
// O_DIRECT was refused, and for what follows a short direct write), then the tail.
Status JsonlSink::WriteJob(const DirectJob& job) {
  if (options_.before_direct_write) {
    if (const int err = options_.before_direct_write(); err != 0) return WriteError("write", options_.path, err);
  }
  const char* p = job.stage.data.get();
  const size_t end = job.whole + job.tail;
  bool direct = !direct_refused_;
  size_t done = 0;
  while (done < end) {
    const bool around = direct && done < job.whole;
    const size_t upto = done < job.whole ? job.whole : end;
    const ssize_t n = ::pwrite(around ? direct_fd_ : plain_fd_, p + done, upto - done,
                               static_cast<off_t>(job.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && around) {
      LogInfo("{}: the file system refuses O_DIRECT writes; writing through the page cache", options_.path);
      direct_refused_ = true;
      direct = false;
      continue;
    }
    if (n < 0) return WriteError("write", options_.path, errno);
    if (n == 0) return WriteError("write", options_.path, EIO);
    done += static_cast<size_t>(n);
    if (around && done % kBlock != 0) direct = false;
  }
  return Status::Ok();
}

Status JsonlSink::WaitWritten() {
  if (!durability_.joinable()) return Status::Ok();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return (jobs_.empty() && !writing_) || !async_error_.ok(); });
  if (jobs_.empty() && !writing_) return Status::Ok();
  return async_error_;
}

Status JsonlSink::WaitDurable() {
  if (!durability_.joinable()) return Status::Ok();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return (!handed_ && !syncing_ && waiting_.empty() && jobs_.empty() && !writing_) || !async_error_.ok();
  });
  if (async_error_.ok()) return Status::Ok();
  if (async_error_.code() != StatusCode::kUnavailable) broken_ = async_error_;
  return async_error_;
}

void JsonlSink::StopDurabilityThread() {
  if (!durability_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  durability_.join();
}

void JsonlSink::DurabilityLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // After a transient failure the same pair is tried again every 200 ms (or sooner when a
    // newer one arrives).
    const bool retrying = !async_error_.ok();
    if (retrying) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    } else {
      cv_.wait(lock, [&] { return handed_.has_value() || !jobs_.empty() || stopping_; });
    }
    if (async_error_.code() != StatusCode::kUnavailable && !async_error_.ok()) return;  // definite
    if (!handed_ && !jobs_.empty()) {
      // The front job stays queued (and is the thread's) until it is written.
      DirectJob& job = jobs_.front();
      writing_ = true;
      lock.unlock();
      Status st = WriteJob(job);
      lock.lock();
      writing_ = false;
      if (st.ok()) {
        free_stages_.push_back(std::move(job.stage));
        jobs_.pop_front();
        ++jobs_done_;
        job_failed_ = false;
        async_error_ = Status::Ok();
        // Hand-offs whose groups are now in the file may be synced (the newest supersedes).
        while (!waiting_.empty() && waiting_.front().jobs <= jobs_done_) {
          handed_ = std::move(waiting_.front());
          waiting_.pop_front();
        }
      } else {
        job_failed_ = true;
        async_error_ = st;  // a full disk: the same job again in 200 ms
      }
      cv_.notify_all();
      if (stopping_ && !async_error_.ok()) return;
      continue;
    }
    if (!handed_) {
      if (stopping_) return;
      continue;
    }
    HandOff work = *handed_;
    handed_.reset();
    syncing_ = true;
    lock.unlock();
    // The state file and stored_/state_bytes_ are this thread's while syncing_ (the writer
    // touches them only after WaitDurable).
    Status st;
    if (work.bytes != synced_bytes_) {
      if (options_.before_durable_sync) options_.before_durable_sync();
      if (::fdatasync(fd_) != 0) {
        const int err = errno;
        // After a failed fdatasync the written pages may be lost without a trace: the lines
        // cannot be trusted, so stop; the next run cuts the output back to the state file.
        st = Status::FailedPrecondition(fmt::format(
            "cannot make the JSON lines output durable: fdatasync {}: {} (a rerun cuts it back to "
            "the last recorded checkpoint, {} bytes, and writes the rest again)",
            options_.path, strerror(err), state_bytes_));
      } else {
        synced_bytes_ = work.bytes;
      }
    }
    if (st.ok()) st = WriteStateFile(work.bytes, work.checkpoint);
    lock.lock();
    syncing_ = false;
    if (st.ok()) {
      if (!job_failed_) async_error_ = Status::Ok();  // else the job's error stands until it is written
    } else {
      async_error_ = st;
      if (!handed_) handed_ = std::move(work);  // try it again (a newer pair supersedes it)
    }
    cv_.notify_all();
    if (stopping_ && ((!handed_ && jobs_.empty()) || !async_error_.ok())) return;
  }
}

}  // namespace sluice
