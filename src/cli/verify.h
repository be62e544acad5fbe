// VerifyTables: `sluice verify`. Checks, without changing anything, that an SQLite replica
// holds what the source holds, table by table, and names each differing row by its key. It
// works while a pipeline streams into the replica.
//
// Per table with a primary key:
//   1. Row counts on both sides, counted while reading (informational: while streaming the
//      sides are read at slightly different moments).
//   2. Range checksums. The source is read once in key order (one statement, so one
//      consistent read) and cut into ranges of `chunk_rows` keys; right after a range is
//      read from the source, the replica's rows with keys in the same bounds are read. Each
//      side's range checksum (the replica side runs on a second thread while the source
//      streams on) is the count and the sum of 64-bit hashes of its rows' canonical
//      value texts: source rows through the snapshot converter (SnapshotSelectExpr +
//      ValueFromText), replica rows through ReplicaValue (cli/compare.h), the same canonical
//      Value form `sluice compare` uses, hashed in this process (the hashing is client-side:
//      no SQL on either side could produce the same canonical text for every type).
//   3. Narrowing down: the rows of a range whose checksums differ are matched by key, which
//      gives the candidate rows: missing in the replica, extra in the replica, or different
//      (the first differing column is named).
//   4. Settling: a streaming replica lags the source, and a row may change between the two
//      reads. Each candidate is re-read on both sides by key, up to `rounds` times: the
//      source rows first, then the source's binlog position, then (while the replica's
//      checkpoint moves) a wait until the replica's checkpoint has reached that position, then
//      the replica rows. Rows that match in any round are dropped; the rest are reported
//      once the same differences were seen in a round where the replica had caught up with
//      the source read, or after the last round. So only differences that persist are
//      reported.
// Tables without a primary key: counts and one checksum over the whole table, re-checked the
// same way; such rows cannot be named.
// Key order: ranges are bounded by the source's keys and read from SQLite with the same
// bounds, so both sides must order keys alike. SQLite compares the TEXT it stores by bytes;
// key columns the replica keeps as TEXT (text, ENUM, SET, DECIMAL, TIME, UUID, INET) are
// therefore read from the source ordered by their UTF-8 bytes (CAST(... AS BINARY)), not under
// their collation or type: the server sorts such a table for the read instead of following
// its index. Integer, date and binary keys keep their index order, which both sides share.
// Only SQLite holds tables: JSON lines, Kafka and NATS carry changes, not tables, and cannot
// be verified (the CLI says so).
// Errors: connection and SQLite errors (kUnavailable/kInvalidArgument as in compare.h).
// Thread safety: one call at a time per replica file; opens its own connections.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "util/status.h"

namespace sluice::cli {

struct VerifyOptions {
  ConnectOptions source;
  TableFilter filter;
  std::string sqlite_path;
  uint64_t chunk_rows = 10000;    // keys per checksummed range
  int rounds = 5;                 // re-reads of candidate rows before they are reported
  double settle_seconds = 10;     // the longest wait, per round, for the replica to catch up
  size_t max_reported = 100;      // differing rows listed per table (all are counted)
};

struct VerifiedTable {
  std::string table;  // "db.table"
  uint64_t source_rows = 0;
  uint64_t replica_rows = 0;
  uint64_t ranges = 0;            // ranges checksummed
  uint64_t differing_ranges = 0;  // ranges whose checksums differed in the first pass
  uint64_t candidates = 0;        // rows that differed in the first pass
  uint64_t differing = 0;         // rows that differ persistently (the verdict), unchecked included
  uint64_t unchecked = 0;         // of `differing`: past the candidate limit, not re-read
  std::vector<std::string> rows;  // up to max_reported: "id=42: column v: source ... replica ..."
  std::string problem;            // a table-level difference (no such table in the replica, ...)
  // Not verified: the run is copying the table (again), as the replica's checkpoint says: why.
  std::string copying;
  // Not verified: read without the binlog (mode incremental, full, snapshot_only), so the
  // replica holds it as of the last run, deleted rows included: why.
  std::string not_streamed;
  bool equal() const { return differing == 0 && problem.empty() && copying.empty() && not_streamed.empty(); }
};

Result<std::vector<VerifiedTable>> VerifyTables(const VerifyOptions& options);

}  // namespace sluice::cli
