// JsonlSink: change events as JSON lines (one envelope per line, see envelope.h) to a file
// or to stdout.
//
// File mode (path != "-"): exactly-once. The state file (default "<path>.checkpoint")
// holds the last checkpoint together with the byte length of the output at that moment,
// and is replaced atomically (checkpoint_file.h) only after the output is fsynced. Open()
// truncates an output file that is longer than the recorded length (a crash after a write,
// before its checkpoint), so a restart from the checkpoint re-emits exactly the missing
// transactions. A new sink records the output's current length before writing anything,
// so existing content is kept and only sluice's own unconfirmed lines are ever cut.
// An output shorter than the recorded length is kDataLoss (someone truncated or replaced it).
//
// Stdout mode (path == "-"): at-least-once. Lines are written to file descriptor 1 and the
// checkpoint is saved after each write to `checkpoint_path`, which must be given; a crash
// between the two makes a restart emit the last transaction(s) again. The process should
// ignore SIGPIPE so that a closed reader gives an error instead of killing it.
//
// Durability policy: with sync_every_txn (default), file mode, Apply()/ApplyGroup() write
// the lines and return; a durability thread of the sink then fdatasyncs the output and
// replaces the state file with the newest written group's end and checkpoint (one fdatasync
// and one state file for every group written meanwhile), so the writer never waits on a
// disk flush (issue 8: three fsyncs per commit on the writer made the live lag seconds).
// The state file never records more than the thread made durable before writing it, so the
// exactly-once argument above holds unchanged; LoadCheckpoint gives the last applied
// checkpoint (the resume point of this process), the state file the last durable one.
// A group of direct_min_bytes or more (snapshot chunks, a large catch-up group) is copied into
// the sink's own aligned buffers and written by that thread with O_DIRECT, in order, before
// any hand-off after it is synced; its lines are then in the file shortly after the call
// returns rather than at once, and still before their checkpoint is recorded.
// SaveCheckpoint, ResetTable, ApplySchemaChanges, Flush and Close wait until every group
// handed to the thread is recorded, then write, fsync and save their own checkpoint before
// returning, as do all calls to stdout. Without sync_every_txn, lines are buffered (written
// out past 1 MiB) and the checkpoint is saved only by Flush()/Close(); the guarantee is
// unchanged, only more may be re-emitted after a crash.
// An Apply() with an empty txn.checkpoint writes its lines but leaves the stored checkpoint
// as it was.
// Errors while writing, by what the caller does next: a full disk (ENOSPC, EDQUOT) is
// kUnavailable and transient: the output is cut back to the end of the last complete call
// and the failed call's lines are dropped, so the caller applies the same transaction again
// once space is freed (file mode, when nothing unconfirmed was written out before); the
// durability thread retries a state file it could not write every 200 ms, and until it has,
// calls return its kUnavailable without writing. Any other write error (read-only file or
// file system, permission, EIO, a failed fdatasync; stdout: any error) is
// kFailedPrecondition naming the path, and the sink refuses further calls with that error.
//
// State file format (a JSON object; keys written in sorted order): {"checkpoint":
// "<checkpoint text>"|null,"format":"sluice-jsonl-state","output_bytes":N|null,"version":1}
// (output_bytes is null in stdout mode). Another version is kFailedPrecondition.
// A checkpoint in split form (checkpoint.h: "schemas_ref" instead of the schema history)
// has its history in "<state file>.schemas-<ref>", written (tmp + fsync + rename) before the
// first state file that refers to it and removed once a state file refers to another, so
// the state file is rewritten without the history at every commit; a missing history file
// is kCorruption naming it. ReadJsonlCheckpoint reads the whole checkpoint without a sink.
// Ownership/thread safety: one thread at a time (besides the sink's own durability thread);
// the destructor flushes (ignoring errors).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "sink/record.h"
#include "sink/sink.h"

namespace sluice {

struct JsonlSinkOptions {
  std::string path;             // output file, or "-" for stdout
  std::string checkpoint_path;  // default "<path>.checkpoint"; required when path == "-"
  bool sync_every_txn = true;
  // Clock for the envelope's ts_ms (ms since the epoch); default: the system clock.
  std::function<int64_t()> now_ms;
  // Record options (record.h). The defaults write the envelope alone, one per line; with
  // transaction_metadata the BEGIN/END records are lines too; tombstones have no line.
  RecordOptions records;
  // Tests: called on the durability thread before each fdatasync of the output.
  std::function<void()> before_durable_sync;
  // A group of at least this many bytes (file mode, sync_every_txn) is copied into the sink's
  // own aligned buffers and written by the durability thread around the page cache
  // (O_DIRECT, whole 4 KiB blocks; the last partial block through the page cache), so the
  // writer goes on while the disk writes, and neither pays the kernel's copy into the page
  // cache (BENCHMARKS.md, issue 9). 0: never. Where O_DIRECT is refused (a file system
  // without it) the same bytes are written through the page cache.
  size_t direct_min_bytes = size_t{4} << 20;
  // Tests: called on the durability thread before each write of a direct group's buffer; a
  // nonzero errno fails that write as the kernel would have.
  std::function<int()> before_direct_write;
};

// The whole checkpoint recorded in the state file `state_path` (joined with its schema history
// file), or nullopt when the file does not exist or records none. Errors as Open's.
Result<std::optional<std::string>> ReadJsonlCheckpoint(const std::string& state_path);
// What Open would refuse, found without writing anything (`sluice check`): an unreadable
// state file or schema history file (kCorruption), or an output shorter than the length the
// state file records (Open's kDataLoss, same text). OK when there is no state file yet.
Status CheckJsonlOutput(const std::string& path, const std::string& state_path);

class JsonlSink : public Sink {
 public:
  // Errors: kInvalidArgument (empty path, stdout without checkpoint_path), kUnavailable
  // (I/O), kCorruption (unreadable state file), kDataLoss (output shorter than recorded, a
  // missing one counting as empty). A refused open creates, changes and removes nothing.
  [[nodiscard]] static Result<std::unique_ptr<JsonlSink>> Open(JsonlSinkOptions options);
  ~JsonlSink() override;

  // Formats a transaction's lines exactly as Apply would (its own RecordSerializer and the
  // same clock); Apply, ApplyGroup and ApplyPart then write them as they are. Used by the
  // snapshot's workers and the stream's formatting thread.
  std::unique_ptr<Preformatter> NewPreformatter() const override;
  Result<std::optional<std::string>> LoadCheckpoint() override;
  Status PrepareTable(const TableSchema& table) override;  // nothing to do
  Status Apply(const Transaction& txn) override;
  // The lines of every transaction, then one write; the durability thread records the last
  // checkpoint once the output is durable (sync_every_txn; else as Apply).
  Status ApplyGroup(const std::vector<Transaction>& group) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  // Parts of a large source transaction: their lines are written out past the recorded
  // length (no state file update), so a crash or AbortParts cuts them off again; the
  // ApplyGroup that ends the transaction records them. Not with transaction metadata (its
  // BEGIN/END records and counters describe whole transactions), nor to stdout (lines handed
  // on cannot be taken back). A full disk while parts are out cuts them back and is
  // kUnavailable (the caller aborts the transaction and applies it again once space is freed);
  // any other failed write marks the sink broken (the next run cuts the output back).
  bool CheckpointsEachTransaction() const override { return false; }  // a group's last only
  bool KeepsRecordsPastTheCheckpoint() const override { return to_stdout_; }
  bool SupportsParts() const override { return !options_.records.transaction_metadata && !to_stdout_; }
  Status ApplyPart(const Transaction& part) override;
  void AbortParts() override;
  // Lines already written cannot be taken back: writes a truncate record,
  // {"before":null,"after":null,"op":"t","ts_ms":...,"source":{"connector":"sluice","db","table"}},
  // so a consumer can empty its copy, and records the checkpoint.
  // One schema-change line per change (record.h AppendDdl), in order with the rows, then
  // the checkpoint, as ResetTable does.
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status TruncateTable(const TableSchema& table, const SourceInfo& at, const std::string& checkpoint) override;
  Status Flush() override;
  // Flushes and closes the output; later calls fail.
  [[nodiscard]] Status Close();

  const std::string& checkpoint_path() const { return state_path_; }

 private:
  explicit JsonlSink(JsonlSinkOptions options);
  // Writes buffer_ out; keeps it (keep) until Flush() has recorded it in the state file.
  Status WriteBuffer(bool keep);
  Status WriteState();  // output_bytes_ with the pending (else stored) checkpoint; writer thread
  // Stdout a pipe: waits until the reader has taken every byte written (bounded when closing).
  Status WaitStdoutRead(bool closing);
  // The durability thread (sync_every_txn, file mode): see jsonl_sink.cc.
  Status WriteAndHandOff();  // writes buffer_, hands its end and checkpoint to the thread
  Status WaitDurable();      // until every hand-off is in the state file (or its error)
  void StopDurabilityThread();
  void DurabilityLoop();
  Status ApplyTransactions(const Transaction* txns, size_t count);
  void AppendLines();  // the values of batch_ as lines into buffer_
  Status WriteRecordsWithCheckpoint(const std::function<Status()>& append, const std::string& checkpoint);
  // After a failed write/fsync/state write: a transient `error` with `undoable` output is
  // cut back to state_bytes_ and returned; otherwise the sink is marked broken.
  Status Undo(Status error, bool undoable);
  // Direct groups (direct_min_bytes; see jsonl_sink.cc).
  Status StageDirect(uint64_t bytes);  // buffer_ and extra_ into jobs_ for the thread
  Status WaitWritten();                // until jobs_ is written (or the thread's error)
  struct Stage;
  struct DirectJob;
  Status WriteJob(const DirectJob& job);  // durability thread

  JsonlSinkOptions options_;
  bool to_stdout_ = false;
  bool closing_ = false;  // Close's Flush: WaitStdoutRead gives up after 5 s
  std::string state_path_;
  int fd_ = -1;
  uint64_t output_bytes_ = 0;           // bytes of the output written (and, if synced, durable)
  uint64_t state_bytes_ = 0;            // output length recorded in the state file
  // Output length at the end of the last complete call (group, checkpoint): what a failed
  // write or AbortParts cuts back to. Equals state_bytes_ except while the durability thread
  // has not recorded the newest group yet.
  uint64_t committed_bytes_ = 0;
  // Parts of a large transaction were applied since the last complete call: a full disk cuts
  // them back with the failed write (the caller aborts the transaction and starts it again).
  bool parts_open_ = false;
  // A checkpoint as the state file records it: the text (split form when `schemas` is set)
  // and the history it refers to.
  struct Stored {
    std::string text;
    std::shared_ptr<const SchemaHistoryText> schemas;
  };
  static Stored ToStored(const std::string& text, const std::shared_ptr<const SchemaHistoryText>& schemas);
  std::string SchemasPath(std::string_view ref) const;
  // Replaces the state file with {bytes, next}; then stored_/state_bytes_ are that pair. Run by
  // one thread at a time: the durability thread while syncing_, else the writer.
  Status WriteStateFile(uint64_t bytes, const std::optional<Stored>& next);

  std::optional<Stored> stored_;   // checkpoint in the state file
  std::optional<Stored> pending_;  // checkpoint to store at the next flush
  std::optional<Stored> applied_;  // checkpoint of the last complete call (LoadCheckpoint)
  std::string buffer_;                  // lines not yet written
  // Preformatted lines to write after buffer_, from where the caller holds them (set only
  // during an Apply call that writes before it returns).
  std::vector<std::string_view> extra_;
  RecordSerializer serializer_;
  RecordBatch batch_;                   // records of the call being applied
  Status broken_;                       // first I/O error; every later call returns it

  // Durability thread. mu_ guards handed_, waiting_, syncing_, stopping_ and async_error_; while
  // syncing_ the thread owns stored_, state_bytes_, synced_bytes_ and the state file.
  struct HandOff {
    uint64_t bytes = 0;
    std::optional<Stored> checkpoint;
    uint64_t jobs = 0;  // direct jobs queued before it: written before it is synced
  };
  std::thread durability_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<HandOff> handed_;  // newest group in the file and not yet being recorded
  std::deque<HandOff> waiting_;    // later ones whose direct jobs are not all written yet
  bool syncing_ = false;
  bool stopping_ = false;
  Status async_error_;             // the thread's last failure (kUnavailable: retried)
  uint64_t synced_bytes_ = 0;      // output length the thread last fdatasync'ed

  // Direct groups. A Stage is an aligned buffer of kStageBytes; a DirectJob is one to write at
  // `offset` (a multiple of the block size): `whole` bytes around the page cache, then `tail`
  // (< one block) through it. The writer fills stages and queues jobs in file order; the
  // thread writes them in that order, before it syncs any hand-off made after them
  // (HandOff::jobs). mu_ guards jobs_, writing_, job_failed_, free_stages_, stages_made_, jobs_queued_ and
  // jobs_done_; the front job is the thread's while writing_ (and stays queued until written).
  struct StageFree {
    void operator()(char* p) const;
  };
  struct Stage {
    std::unique_ptr<char, StageFree> data;
  };
  struct DirectJob {
    uint64_t offset = 0;
    size_t whole = 0;
    size_t tail = 0;
    Stage stage;
    uint64_t seq = 0;  // 1 for the first job queued, and so on (jobs_queued_ when queued)
  };
  int direct_fd_ = -1;  // the output again with O_DIRECT (-1: direct groups off)
  int plain_fd_ = -1;   // the output again, read-write, without O_APPEND: tails and heads
  bool direct_refused_ = false;  // O_DIRECT failed with EINVAL: the thread writes through the cache
  // The output's last partial block (output_bytes_ % block bytes), when the last write was a
  // direct group's; otherwise read back from the file.
  std::string tail_;
  bool tail_known_ = false;
  std::deque<DirectJob> jobs_;
  bool writing_ = false;
  bool job_failed_ = false;  // the front job's last write failed (async_error_ is its error)
  std::vector<Stage> free_stages_;
  size_t stages_made_ = 0;
  uint64_t jobs_queued_ = 0;
  uint64_t jobs_done_ = 0;
};

}  // namespace sluice
