// Streamer: reads the binlog as a replica from a checkpoint and applies whole source
// transactions to a sink, each with the checkpoint that follows it.
//
// Threads: a reader thread fetches raw events from the ReplicationSession into a
// BoundedQueue (count and bytes), so a slow sink slows the socket instead of growing
// memory; the calling thread decodes (EventStream), assembles transactions
// (TransactionAssembler) and applies them (Sink). Both threads are owned by Run().
// Errors: transient ones (kUnavailable: lost connection, server restart) make Run
// reconnect from the last applied checkpoint with backoff; definite ones (corrupt event,
// purged binlog, schema mismatch) end Run with that Status.
// Stopping: when *stop becomes true, Run saves the checkpoint of the last applied
// transaction and returns OK within about one heartbeat period.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
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
  // Give up reconnecting after this long without a successful connection.
  uint32_t reconnect_give_up_seconds = 300;
  // Progress callback for logging: called after each applied transaction with changes.
  std::function<void(const Checkpoint&, size_t rows)> on_applied;
};

class Streamer {
 public:
  explicit Streamer(StreamerOptions options) : options_(std::move(options)) {}

  // Streams from `start` (its stream_start/gtid; snapshot fields are carried along into
  // every checkpoint written) into `sink`. Returns OK when stopped or caught up.
  Status Run(const Checkpoint& start, Sink& sink);

  // The checkpoint as of the last applied transaction.
  const Checkpoint& checkpoint() const { return checkpoint_; }
  // Transactions and row changes applied to the sink by Run so far.
  uint64_t applied_transactions() const { return applied_transactions_; }
  uint64_t applied_rows() const { return applied_rows_; }

 private:
  Status RunOnce(Sink& sink, bool* made_progress);

  StreamerOptions options_;
  Checkpoint checkpoint_;
  bool reconnecting_ = false;  // set after the first connection of Run
  uint64_t applied_transactions_ = 0;
  uint64_t applied_rows_ = 0;
};

}  // namespace sluice
