// Streamer: reads the binlog as a replica from a checkpoint and applies whole source
// transactions to a sink, each with the checkpoint that follows it.
//
// Threads (a pipeline joined by queues bounded in bytes, so a slow sink slows the socket
// instead of growing memory): a reader thread fetches raw events from the
// ReplicationSession; the calling thread decodes (EventStream) and assembles whole
// transactions (TransactionAssembler); a sink writer thread applies them (the only thread
// that touches the Sink). Group commit: the writer applies the transactions that are ready
// together, one sink transaction (Sink::ApplyGroup) with the checkpoint of the last one,
// within group_max_bytes / group_max_ms; when the stream is idle a single transaction is
// committed at once. A group holds whole source transactions only (a transaction larger
// than the memory cap is applied in parts inside one open sink transaction, which only the
// group holding its end commits). All threads are owned by
// Run(); checkpoint() and the counters may be read from another thread only after Run.
// Errors, by what Run does next:
//   - source, transient (kUnavailable: lost connection, server restart): reconnect from the
//     last checkpoint the sink committed, with capped backoff (reconnect_backoff.h: it grows
//     until a sink commit moves the resume position), each attempt logged with its reason;
//     give up after reconnect_give_up_seconds without a connection (0: never).
//   - sink, transient (kUnavailable from a Sink call: busy/locked, disk full): wait and call
//     the sink again with the SAME transaction, in place (no reconnect), until it succeeds
//     or *stop is set.
//   - definite, from either side (corrupt event, purged binlog, schema mismatch, read-only or
//     unwritable sink): Run returns that Status. A purged or reset binlog ([1236], kDataLoss)
//     met after the stream moved on from where its dump started is asked for once more from
//     the last committed checkpoint, so that the error names that position.
// Resume position: checkpoint() is always the state the sink last committed; it never moves
// past a transaction before sink.Apply/ResetTable/SaveCheckpoint for it succeeded.
// Stopping: when *stop becomes true, Run saves the checkpoint of the last applied
// transaction and returns OK within about one heartbeat period; caught_up() then tells a
// stream with a target that stopped there from one that was stopped before it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "pipeline/bounded_queue.h"
#include "sink/sink.h"
#include "util/status.h"

namespace sluice {

struct StreamerOptions {
  ConnectOptions connection;
  uint32_t replica_server_id = 0;
  double heartbeat_seconds = 1;
  TableFilter filter;
  // Stop once everything up to `target` (the server's binlog position when the run began)
  // is applied. Empty target: stream until *stop.
  BinlogPosition target;
  const std::atomic<bool>* stop = nullptr;
  size_t queue_max_events = 20000;
  size_t queue_max_bytes = 64u << 20;
  // May a dump start from the checkpoint's GTID position (cli: stream/resume.h decides)? It
  // does only while the checkpoint has no file/position on this server (after a server
  // change): file/position is exact, a GTID is not once seq_nos go out of order. A dump by
  // GTID skips, in each domain, what the position already holds, wherever it lies in the
  // file, so the positions it passes are not yet a place to resume from: the checkpoints it
  // commits keep stream_start empty until a transaction of every domain of the start
  // position has been read (MySQL: one transaction), and from then on (reconnects too) the
  // stream resumes by file/position.
  bool resume_by_gtid = false;
  // Give up reconnecting after this long without a successful connection; 0: keep trying.
  uint32_t reconnect_give_up_seconds = 0;
  // Reconnect backoff: 250 ms, doubling up to this while no sink commit moves the resume
  // position (stream/reconnect_backoff.h).
  uint32_t reconnect_max_backoff_ms = 10000;
  // Group commit: transactions ready behind the first one go into the same sink transaction
  // until this many bytes (estimated in-memory size of their changes) or this many ms have
  // gone into the group. Also the bound of the queue between decoding and the sink writer.
  size_t group_max_bytes = 32u << 20;
  uint32_t group_max_ms = 200;
  // Online re-reads (snapshot/reread.h): copies the tables `ckpt` marks unfinished
  // (snapshot_done false) into the sink and updates `ckpt`, returning early (OK) once *stop
  // is set. The stream asks for one when a DDL leaves a table's rows as the sink cannot
  // reproduce them (a rewriting ALTER, a table renamed or created into the patterns): it
  // stores the mark with the DDL's position and runs the copy on a thread of its own beside
  // the stream, its sink calls going through the sink writer (docs/design.md, "Online
  // re-reads"). Null: such DDL stops the run instead.
  std::function<Status(Checkpoint& ckpt, Sink& sink, const std::atomic<bool>* stop)> reread;
  // Tables to re-read on request (`sluice resnapshot` while a run streams): asked about once
  // a second between source transactions; a non-empty answer is marked like a DDL's re-read.
  std::function<std::vector<std::string>()> poll_rereads;
  // Memory cap of buffered change data (issue 8): a source transaction whose decoded changes
  // pass max_buffered_bytes / 8 is handed to the sink in parts of that size inside one open
  // sink transaction (Sink::SupportsParts; committed whole with its checkpoint, or not at
  // all), so that at most about three parts (decoding, queued, applying) and the binlog
  // event queue (limited to max_buffered_bytes / 4) are held at once. Sinks with a
  // Preformatter (JSON lines) hold a part in two more places (queued for formatting, being
  // formatted: values and text at once), so their parts and queues are max_buffered_bytes / 16,
  // and a formatted part is counted by its text (its values are freed). 0: no cap. Sinks that
  // cannot apply parts (Kafka, NATS, JSON lines with transaction metadata or to stdout) and
  // XA transactions (held until XA COMMIT) still take whole transactions.
  size_t max_buffered_bytes = 256u << 20;
  // Progress callback for logging: called on the sink writer thread after each applied group,
  // and with rows = 0 while the writer waits for work or applies a large transaction's parts
  // (so that a progress line still comes when nothing is committed for a while).
  std::function<void(const Checkpoint&, size_t rows)> on_applied;
};

struct CopyCall;  // streamer.cc

class Streamer {
 public:
  explicit Streamer(StreamerOptions options) : options_(std::move(options)) {}

  // Streams from `start` (its stream_start/gtid; snapshot fields are carried along into
  // every checkpoint written) into `sink`. Returns OK when stopped or caught up.
  Status Run(const Checkpoint& start, Sink& sink);
  // After Run returned OK: true when it stopped because everything up to options.target was
  // in the sink, false when *stop ended it first (and always without a target). A stop that
  // comes once the target is reached (while the threads wind down) leaves it true.
  bool caught_up() const { return caught_up_; }

  // The checkpoint as of the last applied transaction.
  const Checkpoint& checkpoint() const { return checkpoint_; }
  // Transactions and row changes applied to the sink by Run so far.
  uint64_t applied_transactions() const { return applied_transactions_; }
  uint64_t applied_rows() const { return applied_rows_; }
  uint64_t applied_groups() const { return applied_groups_; }
  // Source commit time (seconds since the epoch) of the last applied transaction; 0 before.
  uint32_t last_source_timestamp() const { return last_source_ts_; }

 private:
  // What the decoding thread hands to the sink writer: a whole source transaction (changes
  // may be empty: a position-only advance), a TRUNCATE of `reset`, or the schema changes of
  // one DDL statement; `after` is the state
  // once it is applied.
  struct SinkItem {
    Transaction txn;
    TableSchemaPtr reset;
    SourceInfo reset_at;  // the TRUNCATE's event
    std::vector<SchemaChange> schema_changes;  // one DDL statement's, applied on their own
    // The state once it is applied, as far as it moves while streaming (the snapshot part of
    // the checkpoint does not): copying a whole Checkpoint per transaction cost more than
    // decoding it.
    BinlogPosition stream_start;
    PositionWitness witness;  // of stream_start
    std::string gtid;
    std::shared_ptr<const SchemaHistory> schemas;
    // Online re-reads beside the stream (checkpoint.h): tables marked at this item, and the
    // others_at/rereading state once it is applied.
    struct Mark {
      std::string table;  // "db.table"
      std::string db;     // its database part ("" when unknown: "a.b.c" may split either way)
    };
    std::vector<Mark> marks;
    BinlogPosition others_at;
    std::vector<std::string> rereading;
    std::map<std::string, BinlogPosition> replayed;
    // A sink call of the copy running beside the stream (streamer.cc CopyCall); nothing else
    // of the item is used.
    std::shared_ptr<CopyCall> copy;
    // Large transactions: `txn` holds changes of a source transaction that goes on
    // (Sink::ApplyPart; the state fields unused), or the parts sent of one that rolled back
    // are taken back (abort_parts; the state is the one after the rollback).
    bool part = false;
    bool abort_parts = false;
  };
  // `again`: OK and Run should call it again (a copy beside the stream ended: its table's
  // binlog since the mark is replayed; or a DDL on a table being copied: blocking_reread_).
  // `connected_at`: when its replication session started (unset when it did not connect).
  Status RunOnce(Sink& sink, std::optional<std::chrono::steady_clock::time_point>* connected_at, bool* again);
  // The sink writer thread's loop: applies items in groups until the queue is closed and
  // drained (OK) or a sink call fails definitely.
  Status WriteGroups(Sink& sink, BoundedQueue<SinkItem>& queue);
  // Runs `call` (a sink operation) until it succeeds, retrying kUnavailable in place with
  // backoff; returns a definite error with `what` as context, or kCancelled on *stop.
  Status CallSink(const char* what, const std::function<Status()>& call);

  friend class StreamerTestPeer;  // group_commit_test.cc drives WriteGroups directly

  StreamerOptions options_;
  Checkpoint checkpoint_;
  bool reconnecting_ = false;  // set after the first connection of Run
  // The sink call under way on the writer thread: since when (steady ms; 0: none) and what,
  // for the watchdog that says so when the sink does not answer (RunOnce).
  std::atomic<int64_t> sink_busy_since_ms_{0};
  std::atomic<const char*> sink_busy_what_{""};
  struct SinkBusy;
  // A reconnect reached another server (a failover behind the same address) and PlanResume
  // said to continue there by GTID.
  bool by_gtid_after_switch_ = false;
  // The next copy runs with the stream stopped (a DDL on the table being copied was met).
  bool blocking_reread_ = false;
  bool caught_up_ = false;  // see caught_up()
  std::atomic<uint64_t> applied_transactions_{0};
  std::atomic<uint64_t> applied_rows_{0};
  std::atomic<uint64_t> applied_groups_{0};
  std::atomic<uint32_t> last_source_ts_{0};
};

}  // namespace sluice
