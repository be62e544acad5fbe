// Sink: where change events go. A sink applies whole Transactions; where it can, it stores
// the transaction's checkpoint in the same atomic step, so that a crash never applies a
// transaction twice nor loses one (SQLite). Sinks that cannot (JSON lines to a file)
// store it right after a durable write and document their guarantee.
// Errors, by what the caller does next: a failed call changes nothing in the sink.
// kUnavailable is transient (busy/locked, disk full): the caller waits and calls again with
// the SAME transaction. Any other code is definite: the caller stops; the message names the
// path (or address) and the reason.
// Ownership: the caller owns the sink; one thread uses it at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/change.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

class Sink {
 public:
  virtual ~Sink() = default;
  // The checkpoint text stored by the last applied transaction, or nullopt for a new sink.
  virtual Result<std::optional<std::string>> LoadCheckpoint() = 0;
  // Makes the sink ready to receive rows of `table` (SQLite: CREATE TABLE IF NOT EXISTS).
  virtual Status PrepareTable(const TableSchema& table) = 0;
  // Applies every change of `txn` and records txn.checkpoint, atomically where possible.
  virtual Status Apply(const Transaction& txn) = 0;
  // Group commit: applies every transaction of `group`, in order, as ONE sink transaction
  // recording the last non-empty checkpoint among them, atomically where possible (never
  // a part of the group). Same errors as Apply. The default applies them one by one (each
  // atomic on its own), which is correct but pays one commit per transaction.
  virtual Status ApplyGroup(const std::vector<Transaction>& group) {
    for (const Transaction& t : group) RETURN_IF_ERROR(Apply(t));
    return Status::Ok();
  }
  // Removes every row of `table` and records `checkpoint`, atomically where possible. Used
  // before copying a table without a primary key again after an interrupted snapshot.
  // Sinks that cannot take rows back (JSON lines) only record the checkpoint.
  virtual Status ResetTable(const TableSchema& table, const std::string& checkpoint) = 0;
  // Records a checkpoint with no data (e.g. after transactions of filtered-out tables).
  virtual Status SaveCheckpoint(const std::string& checkpoint) = 0;
  // Flushes buffered output to durable storage.
  virtual Status Flush() = 0;
};

}  // namespace sluice
