// Sink: where change events go. A sink applies whole Transactions; where it can, it stores
// the transaction's checkpoint in the same atomic step, so that a crash never applies a
// transaction twice nor loses one (SQLite). Sinks that cannot (JSON lines to a file)
// store it right after a durable write and document their guarantee.
// Ownership: the caller owns the sink; one thread uses it at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>

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
