// HandoffRule: the snapshot -> stream hand-off for tables copied by key ranges, each range
// (or part of a range, after a retry or a resume) read in its own transaction at its own
// binlog point.
//
// The rule. A row change for key k at binlog position e is applied only if e lies at or
// after the point of the piece of the copy that holds k. Why that is exact: the piece holding
// k was read in a consistent snapshot at point P(k), so the copy of k holds exactly the
// changes to k from transactions before P(k) and none from those at or after it (see the
// proof at the top of snapshot/snapshot.cc). Applying every change to k at or after P(k) and
// none before delivers each change to k exactly once, in source order, starting from the
// copied state: no gap, no duplicate, no step back in time. A primary-key change is judged as
// a delete of the old key and an insert of the new one, each by its own piece: an update
// whose two keys get different verdicts becomes the half that applies (an insert of the new
// row, or a delete of the old one).
//
// Keys are never compared here: which piece holds a key is asked of the server (the
// `locate` callback, mysql/key_literal.h LocateKey), and only for events between the
// table's earliest and latest points; before the earliest every key is in the copy (drop),
// from the latest on none is (apply). Once the stream has passed a table's latest point the
// table needs no more checks.
//
// Pieces come from the checkpoint (checkpoint.h HandoffPieces): in key order, each holding the
// keys up to `end` inclusive (the last one unbounded, `end` empty).
// Errors: the locate callback's; kFailedPrecondition when a change lacks a key column.
// Thread safety: one thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/position.h"
#include "pipeline/change.h"
#include "util/status.h"

namespace sluice {

struct KeyPointPiece {
  std::vector<std::string> end;  // canonical key texts; empty: no upper bound (last piece)
  BinlogPosition point;
};

class HandoffRule {
 public:
  using Locate = std::function<Result<size_t>(const TableSchema& table,
                                              const std::vector<std::string>& key,
                                              const std::vector<std::vector<std::string>>& ends)>;

  // `by_table`: "db.table" -> pieces; tables with no pieces (or one point) are not judged.
  HandoffRule(const std::map<std::string, std::vector<KeyPointPiece>>& by_table, Locate locate);

  // Removes (or narrows, for key-changing updates) the changes the copy already holds.
  // `at`: judge every change as made there, not at its own event (an XA transaction's rows,
  // committed at its XA COMMIT).
  Status Filter(std::vector<RowChange>* changes, const BinlogPosition* at = nullptr);

  // Whether a change to a key at `event` is applied, given the index of the piece holding it.
  // Exposed for tests.
  enum class Verdict { kApply, kDrop, kAskServer };
  Verdict Quick(const std::string& table, const BinlogPosition& event) const;

  bool empty() const { return tables_.empty(); }

 private:
  struct Table {
    std::vector<KeyPointPiece> pieces;
    std::vector<std::vector<std::string>> ends;
    BinlogPosition earliest, latest;
  };
  Result<bool> Applies(const Table& t, const TableSchema& schema, const Row& row,
                       const BinlogPosition& event);

  std::map<std::string, Table> tables_;
  Locate locate_;
};

}  // namespace sluice
