// Watermark consistency (snapshot.consistency = "watermark"), for a source where a read
// transaction's own binlog point cannot be learnt: MySQL without the LOCK TABLES privilege.
// DBLog's low/high watermarks, adapted to a consistent-snapshot read transaction.
//
// How a read transaction gets its point (WatermarkReader::Begin):
//   1. P0 = the binlog end now (SHOW MASTER/BINARY LOG STATUS), on a side session.
//   2. The side session writes the low watermark L: one autocommit upsert of a row of the
//      signal table (`snapshot.watermark_table`, default `sluice`.`watermarks`) carrying a
//      token unique to this read.
//   3. The worker's session opens START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY: the
//      read view R is made here, once, and every range the transaction reads is read in it.
//   4. The side session writes the high watermark H, likewise.
//   5. A binlog dump (its own replica id, `snapshot.watermark_server_id`, non-blocking) from P0
//      finds L's and H's transactions by their tokens and collects the window: the primary
//      keys (both images) of every row of a captured table changed by a transaction between
//      L and H. The read's point is the end of L's transaction (file/pos, and on MariaDB its
//      GTID position).
// DBLog brackets each chunk's read; here only the moment R is made needs bracketing, because
// every later read of the transaction sees R: the window lasts a few milliseconds, not a
// chunk's read.
//
// Why that is exact (extends the proof in snapshot.cc and pipeline/handoff_rule.h). Binlog
// order is engine commit order (MariaDB always; MySQL with binlog_order_commits=ON, the
// default), and L committed before R was made, H after. So every transaction before L is
// visible in R, every one after H is not, and only those inside the window (between L and H)
// may go either way. Key k of a read row:
//   - no window transaction changed k: the copy of k is k's state after every transaction
//     before L, which is also its state at H. The read's point is L: the stream applies every
//     change to k from L on, none of which is in the copy.
//   - a window transaction changed k: the row is DROPPED from the copy (DropWindowRows), and
//     the stream applies every change to k from L on, the window's included. The first of
//     those lies in the window and carries the whole row (binlog_row_image FULL: checked
//     for every window row), so the sink gets k's full state from the stream: an insert, an
//     update applied as an upsert of the after image (SQL sinks, SQLite), or a delete of a row
//     it does not have (nothing). JSON lines, Kafka and NATS get no `r` record for k, and
//     k's history starts at that change.
// Keys are matched as canonical texts (Value::ToText), which the one value converter makes
// equal for the snapshot and the binlog: a row the window touched has its stored key text in
// the image of the first window change after R (or of the last one before R), so it is found;
// a text match never drops a key the window did not change. A table without a primary key
// cannot be filtered: a worker whose window changed such a table reads it in a new
// transaction instead (a new window).
// Resume and retries store L's as the points, so they work as under "exact". The signal
// table is excluded from the stream and the snapshot (cli/config.cc).
//
// Privileges: CREATE on the signal table's database (only when the table is missing),
// INSERT and UPDATE on the table, REPLICATION SLAVE and REPLICATION CLIENT (as the stream).
// Errors: kFailedPrecondition naming the privilege, the table and the fix; the same when
// binlog_row_image is not FULL or a window row lacks columns; kUnavailable for connection
// errors (the worker retries in a new transaction); kInternal when the dump ends without
// L's or H's event.
// Thread safety: WindowKeys and WindowScan are single-threaded values. WatermarkReader::Begin
// may be called from several worker threads at once (the dumps take turns on a mutex, since
// they share one replica id).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "pipeline/change.h"
#include "snapshot/snapshot.h"
#include "stream/transaction_assembler.h"
#include "util/status.h"

namespace sluice {

// The primary keys changed inside one watermark window, per table ("db.table").
class WindowKeys {
 public:
  // Adds the keys of both images of `c` (tables without a primary key: the table alone).
  // kFailedPrecondition when an after image lacks columns (binlog_row_image not FULL), or a
  // key column is absent.
  Status Add(const RowChange& c);
  // Whether `row` (a whole row of `schema`, as the snapshot reads it) has a key changed in
  // the window.
  bool Contains(const TableSchema& schema, const Row& row) const;
  // Whether any row of the table was changed in the window.
  bool Touches(const std::string& qualified_table) const { return tables_.count(qualified_table) > 0; }
  size_t keys() const { return keys_.size(); }
  size_t tables() const { return tables_.size(); }

 private:
  std::set<std::string> tables_;
  std::set<std::string> keys_;  // table '\0' key text '\0' key text ...
};

// Drops from `rows` (whole rows of `schema`) those whose key the window changed; returns
// how many it dropped. The others keep their order.
size_t DropWindowRows(const WindowKeys& window, const TableSchema& schema, std::vector<Row>* rows);

// Follows the transactions of a binlog dump from before L to H (pure: fed decoded
// transactions). `signal` is the signal table; the token is in its `token` column.
class WindowScan {
 public:
  WindowScan(std::string signal_table, std::string low_token, std::string high_token)
      : signal_(std::move(signal_table)), low_(std::move(low_token)), high_(std::move(high_token)) {}
  // Feeds one committed transaction; returns true once H's transaction has been fed.
  // kInternal when H comes before L.
  Result<bool> Feed(const CommittedTransaction& txn);
  bool found_low() const { return low_end_.has_value(); }
  // The end of L's transaction: the read's point.
  const StreamPoint& low_end() const { return *low_end_; }
  const StreamPoint& high_end() const { return high_end_; }
  const WindowKeys& keys() const { return keys_; }
  size_t transactions() const { return transactions_; }

 private:
  std::string signal_, low_, high_;
  std::optional<StreamPoint> low_end_;
  StreamPoint high_end_;
  WindowKeys keys_;
  size_t transactions_ = 0;  // in the window
};

// The server settings watermark consistency needs, judged from their values (pure):
// `row_image` is @@global.binlog_row_image; `order_commits` is MySQL's
// @@global.binlog_order_commits (nullopt where the server has none: MariaDB commits in binlog
// order within a group commit). FULL images: a row left out of a read is rebuilt from its next
// change. Commits in binlog order (MySQL: binlog_order_commits=ON, its default): a
// transaction written to the binlog before L is committed in InnoDB before L's commit
// returns, so the read view opened after it sees it, and one written after H is not seen by
// it (MySQL manual, binlog_order_commits: "transactions may be committed in parallel ... in
// a different order than written to the binary log"). kFailedPrecondition naming the
// setting otherwise.
Status CheckWatermarkSettings(const std::string& row_image, const std::optional<std::string>& order_commits);

struct WatermarkOptions {
  TableName table{"sluice", "watermarks"};  // the signal table
  uint32_t server_id = 0;                   // replica id of the window's binlog dump
};

// A read transaction with its point, and the keys to drop from what it reads.
struct WatermarkedRead {
  std::unique_ptr<Snapshot> snapshot;  // point() is L's end
  std::shared_ptr<const WindowKeys> window;
};

class WatermarkReader {
 public:
  // `tables`: the captured tables' definitions, by "db.table" (the window's rows of other
  // tables are not decoded).
  WatermarkReader(ConnectOptions conn, WatermarkOptions options, std::map<std::string, TableSchemaPtr> tables)
      : conn_(std::move(conn)), options_(std::move(options)), tables_(std::move(tables)) {}

  // Checks the server's settings (CheckWatermarkSettings), creates the signal table when it is missing and loads its
  // definition. Called once before Begin (Begin calls it when it was not).
  Status Prepare();
  // Opens one watermarked read transaction (steps 1-5 above); `slot` tells the signal row
  // apart per worker.
  Result<WatermarkedRead> Begin(uint32_t slot);

 private:
  Status WriteMark(Connection& side, uint32_t slot, const std::string& token);

  ConnectOptions conn_;
  WatermarkOptions options_;
  std::map<std::string, TableSchemaPtr> tables_;
  std::mutex mu_;  // Prepare once; the dumps one at a time (one replica id)
  TableSchemaPtr signal_;
  Flavor flavor_ = Flavor::kUnknown;
};

}  // namespace sluice
