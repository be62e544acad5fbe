// Online re-reads: copying single tables again from the source at a new point while the
// stream's position stays where it is (a DDL that rewrote a table's rows, a table renamed or
// created into the captured patterns, a table added to source.tables, `sluice resnapshot`).
//
// A table to re-read is marked in the checkpoint (`tables[name]` with `reread` set and
// nothing copied, `snapshot_done` false) in the same sink transaction as the position it is
// decided at, so a crash before or during the copy repeats or continues it. RunRereads copies
// every table the checkpoint has not finished with the snapshot coordinator (coordinator.h):
// the sink table is replaced by an empty one of the new definition, the copy is read in
// ranges each at its own point, and its definition enters the schema history at the copy's
// point. The hand-off is the snapshot's: row events of the table before its copy's points are
// dropped (copied_at, pipeline/handoff_rule.h), later ones applied; DDL on it before the
// copy's point is already in the copied definition and skipped.
//
// A marked table that no longer exists at the source (dropped or renamed away while the
// stream was catching up) is not copied: it is recorded as gone from the server's current
// position on (its events before that are dropped, its DDL before that skipped), and the
// sink table follows a DROP (the SQLite sink keeps it). A later table of that name is read
// from its CREATE as usual. A marked table that goes while its copy plans or reads it (a DROP
// or RENAME later in the binlog than its mark, run by the server meanwhile) is handled the
// same way once the server confirms it is gone (a NotFound is also what a table this user may
// not read gives), and the other tables' copy goes on; its sink table may by then have been
// replaced by an empty one, which is what the SQLite sink keeps.
// Errors: those of RunSnapshot; connection errors are kUnavailable (the caller retries).
// Thread safety: call from the one thread that owns `sink`.
#pragma once

#include "checkpoint/checkpoint.h"
#include "sink/sink.h"
#include "snapshot/coordinator.h"
#include "util/status.h"

namespace sluice {

// Copies every table `ckpt` marks unfinished into `sink` and sets ckpt.snapshot_done; OK with
// snapshot_done still false when *options.stop became true. Opens its own connections.
Status RunRereads(const SnapshotRunOptions& options, Checkpoint& ckpt, Sink& sink);

// After a copy of `names` failed with kNotFound: the unfinished ones the server says are gone
// (dropped or renamed away while they were planned or read) are recorded as a re-read's
// gone table is (not copied; their events and DDL before the server's position now skipped;
// their sink table follows a DROP) and removed from `names`; returns how many. 0: every table
// is there (the NotFound was something else, e.g. a privilege), the error stands.
Result<size_t> RecordTablesGoneDuringTheCopy(const SnapshotRunOptions& options, Connection& meta, Checkpoint& ckpt,
                                             Sink& sink, std::vector<TableName>* names);

// After a copy failed with kNotFound (`why`) and RecordTablesGoneDuringTheCopy found every
// table there: whether to plan again, after 200 ms (logged). A table dropped and created again
// while a pass planned it is missing only for a moment (a new user's probe: the run stopped
// with "GRANT SELECT ON ..." advice, and the next run recovered). At most 3 times per copy
// (`*tries` counts them); then the error stands (a table this user may not read is missing
// the same way).
bool TableBackAgain(const Status& why, int* tries);

// Marks `names` ("db.table") for an online re-read in `ckpt` (the caller stores it). A table
// read without the binlog (ckpt.incremental holds it: modes incremental, full, snapshot_only)
// is marked to start over at the next run instead (IncrementalProgress::restart).
void MarkForReread(Checkpoint& ckpt, const std::vector<std::string>& names);

}  // namespace sluice
