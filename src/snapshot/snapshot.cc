// Consistent snapshot and the snapshot -> stream hand-off.
//
// Claim. Let P = point().position. For every selected table T, the rows ReadTable returns
// are exactly T's contents after applying, in binlog order, every transaction whose events
// lie before P, and no transaction whose events lie at or after P. Hence a consumer that
// loads the snapshot rows and then applies the binlog from P on (stream/ starts its dump at
// P, or at point().gtid) sees every committed change to T exactly once: no change is lost
// (each is either before P, so in the rows, or at/after P, so in the stream) and none is
// applied twice (it cannot be both).
//
// MariaDB (kSnapshotStatus). MariaDB's binlog group commit writes transactions to the binlog
// and commits them in the storage engine in the same order, and
// START TRANSACTION WITH CONSISTENT SNAPSHOT creates the InnoDB read view while holding
// LOCK_commit_ordered, the lock that orders those engine commits. Under that lock it also
// records the binlog file/offset just past the last transaction whose commit_ordered step
// has run, exposed in the session as Binlog_snapshot_file/Binlog_snapshot_position
// (MariaDB KB, "Enhancements for START TRANSACTION WITH CONSISTENT SNAPSHOT"; sql/log.cc
// binlog_snapshot_*). So: a transaction before that offset has committed in InnoDB before
// the read view was made, so it is visible; one at or after it commits later, so it is not.
// That is the claim with no lock at all. BINLOG_GTID_POS(file, pos) maps that offset to the
// GTID position (the last GTID per domain before it), so a GTID start resumes at the same
// place. @@gtid_binlog_pos would NOT do: read inside the transaction it reflects the binlog
// now, not the read view, and may already include transactions the snapshot cannot see.
// (Transactions on non-transactional engines such as MyISAM are outside this guarantee.)
//
// MySQL (kLockTables). MySQL has no binlog_snapshot status, so a side session takes
// LOCK TABLES T1 READ, ... on every selected table. LOCK TABLES ... READ waits until no
// transaction holds a write metadata lock on those tables, and a transaction keeps its
// metadata locks until its commit — binlog write and engine commit — is complete. While the
// lock is held no transaction can change the tables. So, with the lock held: (1) every
// transaction that changed a Ti is fully committed and written before the current binlog
// end P (read with SHOW BINARY LOG STATUS) and in @@gtid_executed; (2) the main session's
// START TRANSACTION WITH CONSISTENT SNAPSHOT, also opened under the lock, sees all of them;
// (3) no change to any Ti lies between P and the moment the read view was made. Then the
// lock is released; later changes come after P and are not in the read view. Transactions
// on tables that are not selected may interleave with these reads (P and gtid_executed may
// differ on them), but the stream filters those tables out, so the claim is unaffected.
// The lock is an RAII guard: every error path unlocks (and closing the side connection
// would release it anyway).
//
// The range reads keep the claim per chunk: every chunk is read in the same read view
// (one REPEATABLE READ transaction), one WHERE (key) > (last key) ORDER BY key query per
// range visits each primary key exactly once in key order (the comparison and the order
// use the same collation), and resuming after a stored last key in a NEW snapshot is the
// caller's business (sluice restarts a table's snapshot with a new point after a crash,
// unless it can prove otherwise).
#include "snapshot/snapshot.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "mysql/key_literal.h"
#include "mysql/server_probe.h"
#include "schema/text_value.h"

namespace sluice {

namespace {

std::string QualifiedTable(const TableSchema& s) {
  return QuoteIdentifier(s.db) + "." + QuoteIdentifier(s.table);
}

// Holds LOCK TABLES on a side connection; unlocks when destroyed.
class TableLockGuard {
 public:
  explicit TableLockGuard(Connection* conn) : conn_(conn) {}
  ~TableLockGuard() { (void)Release(); }
  Status Lock(const std::vector<TableName>& tables) {
    std::string sql = "LOCK TABLES ";
    for (size_t i = 0; i < tables.size(); ++i) {
      if (i > 0) sql += ", ";
      sql += QuoteIdentifier(tables[i].db) + "." + QuoteIdentifier(tables[i].table) + " READ";
    }
    RETURN_IF_ERROR(conn_->Execute(sql));
    locked_ = true;
    return Status::Ok();
  }
  Status Release() {
    if (!locked_) return Status::Ok();
    locked_ = false;
    return conn_->Execute("UNLOCK TABLES");
  }

 private:
  Connection* conn_;
  bool locked_ = false;
};

Status SetUpSession(Connection& c) {
  for (const char* sql : {
           "SET time_zone = '+00:00'",
           "SET NAMES utf8mb4",
           "SET SESSION sql_mode = ''",
           "SET SESSION net_write_timeout = 3600, net_read_timeout = 3600",
           // An idle worker (waiting for the sink, or for the others during setup) must not
           // be reaped by the server.
           "SET SESSION wait_timeout = 86400",
           "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
       })
    RETURN_IF_ERROR(c.Execute(sql));
  return Status::Ok();
}

// The GTID position at `point` without reading the binlog, when the binlog still ends there:
// @@global.gtid_binlog_pos is the position at the binlog's end. MariaDB allocates a
// transaction's GTID (updating gtid_binlog_pos) and writes its events under one lock,
// LOCK_log (sql/log.cc, MYSQL_BIN_LOG::write_gtid_event), and SHOW MASTER STATUS reads the
// end under that lock too. So if the end is `point` both before and after the variable is
// read, no GTID was added in between and the variable holds exactly the GTIDs before
// `point`. nullopt when the binlog moved (or the status cannot be read): the caller asks
// BINLOG_GTID_POS, which reads the binlog file up to `point`.
Result<std::optional<std::string>> GtidIfBinlogEndsAt(Connection& c, const BinlogPosition& point) {
  const auto ends_at_point = [&]() -> Result<bool> {
    Result<BinlogPosition> end = ReadBinlogPosition(c);
    if (!end.ok()) {
      if (end.status().code() == StatusCode::kUnavailable) return end.status();
      return false;  // e.g. no BINLOG MONITOR privilege: the general way still works
    }
    return *end == point;
  };
  ASSIGN_OR_RETURN(bool before, ends_at_point());
  if (!before) return std::optional<std::string>();
  ASSIGN_OR_RETURN(QueryResult g, c.Query("SELECT @@global.gtid_binlog_pos"));
  ASSIGN_OR_RETURN(bool after, ends_at_point());
  if (!after || g.rows.empty() || !g.rows[0][0]) return std::optional<std::string>();
  return std::optional<std::string>(*g.rows[0][0]);
}

}  // namespace

Result<Row> RowFromTextCells(const TableSchema& schema, const TextRow& cells) {
  if (cells.size() != schema.columns.size())
    return Status::Internal(fmt::format("{}: got {} cells for {} columns", schema.QualifiedName(),
                                        cells.size(), schema.columns.size()));
  Row row;
  row.reserve(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    std::optional<std::string_view> cell;
    if (cells[i]) cell = std::string_view(*cells[i]);
    Result<Value> v = ValueFromText(schema.columns[i], cell);
    if (!v.ok()) return v.status().WithContext(schema.QualifiedName());
    row.push_back(std::move(v).value());
  }
  return row;
}

Result<std::unique_ptr<Snapshot>> Snapshot::Begin(const ConnectOptions& conn_options,
                                                  const SnapshotOptions& options) {
  return BeginKnowing(conn_options, options, nullptr);
}

Result<std::unique_ptr<Snapshot>> Snapshot::BeginKnowing(const ConnectOptions& conn_options,
                                                         const SnapshotOptions& options,
                                                         const SnapshotPoint* known) {
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, Connection::Connect(conn_options));
  std::unique_ptr<Snapshot> snap(new Snapshot(std::move(conn)));
  Connection& c = *snap->conn_;
  ServerInfo version;
  ParseServerVersion(c.server_version(), &version);
  snap->point_.flavor = version.flavor;
  RETURN_IF_ERROR(SetUpSession(c));

  SnapshotMethod method = options.method;
  if (method == SnapshotMethod::kAuto)
    method = version.flavor == Flavor::kMariaDB ? SnapshotMethod::kSnapshotStatus
                                                : SnapshotMethod::kLockTables;
  if (method == SnapshotMethod::kSnapshotStatus && version.flavor != Flavor::kMariaDB)
    return Status::InvalidArgument("the snapshot-status method needs MariaDB");

  const char* kStart = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";
  if (method == SnapshotMethod::kNoPoint) {
    RETURN_IF_ERROR(c.Execute(kStart));
    return snap;
  }
  if (method == SnapshotMethod::kSnapshotStatus) {
    RETURN_IF_ERROR(snap->StartWithStatus(known));
    return snap;
  }

  // kLockTables.
  if (options.lock_tables.empty())
    return Status::InvalidArgument("the lock-tables snapshot method needs the list of tables");
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> side, Connection::Connect(conn_options));
  TableLockGuard lock(side.get());
  RETURN_IF_ERROR(lock.Lock(options.lock_tables));
  ASSIGN_OR_RETURN(snap->point_.position, ReadBinlogPosition(*side));
  ASSIGN_OR_RETURN(QueryResult g,
                   side->Query(version.flavor == Flavor::kMariaDB ? "SELECT @@global.gtid_binlog_pos"
                                                                  : "SELECT @@global.gtid_executed"));
  if (!g.rows.empty() && g.rows[0][0]) {
    snap->point_.gtid = *g.rows[0][0];
    std::erase(snap->point_.gtid, '\n');
  }
  RETURN_IF_ERROR(c.Execute(kStart));
  RETURN_IF_ERROR(lock.Release());
  return snap;
}

Status Snapshot::StartWithStatus(const SnapshotPoint* known) {
  Connection& c = *conn_;
  renewable_ = true;
  RETURN_IF_ERROR(c.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
  ASSIGN_OR_RETURN(QueryResult st, c.Query("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'"));
  std::string file, pos_text;
  for (const TextRow& row : st.rows) {
    if (row.size() < 2 || !row[0]) continue;
    if (*row[0] == "Binlog_snapshot_file") file = row[1].value_or("");
    if (*row[0] == "Binlog_snapshot_position") pos_text = row[1].value_or("");
  }
  uint64_t pos = 0;
  auto [p, ec] = std::from_chars(pos_text.data(), pos_text.data() + pos_text.size(), pos);
  if (file.empty() || ec != std::errc() || p != pos_text.data() + pos_text.size())
    return Status::FailedPrecondition(
        "the server reports no Binlog_snapshot_file/position: is binary logging on "
        "(log_bin)?");
  point_.position = {file, pos};
  // The GTID position is a function of the binlog offset, and BINLOG_GTID_POS reads the
  // binlog file from its start up to it (14-15 % of the server's CPU for a 2 M-row snapshot
  // whose binlog file was 773 MB, once per read transaction: BENCHMARKS.md): a point
  // another transaction of this snapshot already mapped is not mapped again, and a point
  // at the binlog's end is read from @@global.gtid_binlog_pos.
  if (known != nullptr && !known->gtid.empty() && known->position == point_.position) {
    point_.gtid = known->gtid;
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(std::optional<std::string> quiet, GtidIfBinlogEndsAt(c, point_.position));
  if (quiet) {
    point_.gtid = std::move(*quiet);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(QueryResult g, c.Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})",
                                                      c.Quote(file), pos)));
  if (g.rows.empty() || !g.rows[0][0])
    return Status::FailedPrecondition(fmt::format(
        "BINLOG_GTID_POS({}, {}) returned NULL: the snapshot point is not a GTID position",
        file, pos));
  point_.gtid = *g.rows[0][0];
  return Status::Ok();
}

Result<std::unique_ptr<Snapshot>> Snapshot::Renew(std::unique_ptr<Snapshot> done) {
  if (!done->renewable_)
    return Status::InvalidArgument("only a MariaDB snapshot-status read transaction can be renewed");
  RETURN_IF_ERROR(done->Finish());
  std::unique_ptr<Snapshot> next(new Snapshot(std::move(done->conn_)));
  next->point_.flavor = done->point_.flavor;
  RETURN_IF_ERROR(next->StartWithStatus(&done->point_));
  return next;
}

Result<std::vector<std::unique_ptr<Snapshot>>> Snapshot::BeginMany(
    const ConnectOptions& conn_options, size_t n, const SnapshotOptions& options,
    double* lock_held_ms) {
  if (lock_held_ms != nullptr) *lock_held_ms = 0;
  std::vector<std::unique_ptr<Snapshot>> out;
  if (n == 0) return out;
  ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> first, Begin(conn_options, options));
  const Flavor flavor = first->point_.flavor;
  SnapshotMethod method = options.method;
  if (method == SnapshotMethod::kAuto)
    method = flavor == Flavor::kMariaDB ? SnapshotMethod::kSnapshotStatus
                                        : SnapshotMethod::kLockTables;
  if (method == SnapshotMethod::kSnapshotStatus || n == 1) {
    // Each read transaction learns its own exact point; no lock.
    out.push_back(std::move(first));
    while (out.size() < n) {
      ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> s, BeginKnowing(conn_options, options, &out.back()->point_));
      out.push_back(std::move(s));
    }
    return out;
  }
  // kLockTables: all transactions open under one lock, so they share one point. The first
  // snapshot above took (and released) its own lock; take it again for all of them.
  first.reset();
  std::vector<std::unique_ptr<Connection>> conns;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<Connection> c, Connection::Connect(conn_options));
    RETURN_IF_ERROR(SetUpSession(*c));
    conns.push_back(std::move(c));
  }
  if (options.lock_tables.empty())
    return Status::InvalidArgument("the lock-tables snapshot method needs the list of tables");
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> side, Connection::Connect(conn_options));
  SnapshotPoint point;
  point.flavor = flavor;
  auto locked_at = std::chrono::steady_clock::now();
  {
    TableLockGuard lock(side.get());
    RETURN_IF_ERROR(lock.Lock(options.lock_tables));
    locked_at = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(point.position, ReadBinlogPosition(*side));
    ASSIGN_OR_RETURN(QueryResult g, side->Query(flavor == Flavor::kMariaDB
                                                    ? "SELECT @@global.gtid_binlog_pos"
                                                    : "SELECT @@global.gtid_executed"));
    if (!g.rows.empty() && g.rows[0][0]) {
      point.gtid = *g.rows[0][0];
      std::erase(point.gtid, '\n');
    }
    for (auto& c : conns)
      RETURN_IF_ERROR(c->Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"));
    RETURN_IF_ERROR(lock.Release());
  }
  if (lock_held_ms != nullptr)
    *lock_held_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              locked_at).count();
  for (auto& c : conns) {
    std::unique_ptr<Snapshot> s(new Snapshot(std::move(c)));
    s->point_ = point;
    out.push_back(std::move(s));
  }
  return out;
}

Snapshot::~Snapshot() {
  if (!finished_) (void)conn_->Execute("ROLLBACK");
}

Status Snapshot::Finish() {
  if (finished_) return Status::Ok();
  finished_ = true;
  return conn_->Execute("COMMIT");
}

Status Snapshot::ReadTable(const TableSchema& schema,
                           const std::optional<std::vector<std::string>>& start_after_key,
                           size_t chunk_rows, const ChunkCallback& on_chunk) {
  if (!schema.has_primary_key()) {
    if (start_after_key && !start_after_key->empty())
      return Status::InvalidArgument(schema.QualifiedName() +
                                     " has no primary key, so a read cannot resume after a key");
    return ReadRange(schema, {}, {}, {}, chunk_rows, on_chunk);
  }
  if (start_after_key && start_after_key->size() != schema.primary_key.size())
    return Status::InvalidArgument(fmt::format(
        "resume key for {} has {} values, the primary key has {} columns",
        schema.QualifiedName(), start_after_key->size(), schema.primary_key.size()));
  return ReadRange(schema, start_after_key.value_or(std::vector<std::string>{}), {}, {},
                   chunk_rows, on_chunk);
}

Status Snapshot::ReadRange(const TableSchema& schema, const std::vector<std::string>& after_key,
                           const std::vector<std::string>& lower,
                           const std::vector<std::string>& upper, size_t fetch_rows,
                           const ChunkCallback& on_chunk) {
  std::vector<Row> rows;
  rows.reserve(std::min<size_t>(fetch_rows, 65536));
  return ReadRangeCells(
      schema, after_key, lower, upper, fetch_rows,
      [&](const std::vector<TextCellView>& cells) -> Status {
        Row& row = rows.emplace_back();
        row.reserve(cells.size());
        for (size_t i = 0; i < cells.size(); ++i) {
          Result<Value> v = ValueFromText(schema.columns[i], cells[i]);
          if (!v.ok()) return v.status().WithContext(schema.QualifiedName());
          row.push_back(std::move(v).value());
        }
        return Status::Ok();
      },
      [&](size_t, const std::vector<std::string>& last_key) -> Status {
        std::vector<Row> out;
        out.swap(rows);
        rows.reserve(std::min<size_t>(fetch_rows, 65536));
        return on_chunk(std::move(out), last_key);
      });
}

Status Snapshot::ReadRangeCells(const TableSchema& schema, const std::vector<std::string>& after_key,
                                const std::vector<std::string>& lower,
                                const std::vector<std::string>& upper, size_t fetch_rows,
                                const RowCellsCallback& on_row, const FetchCallback& on_fetch) {
  if (finished_) return Status::FailedPrecondition("the snapshot transaction has ended");
  if (fetch_rows == 0) return Status::InvalidArgument("fetch_rows must be > 0");
  if (schema.columns.empty())
    return Status::InvalidArgument(schema.QualifiedName() + " has no columns");
  std::string select_list;
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    if (i > 0) select_list += ", ";
    select_list += SnapshotSelectExpr(schema.columns[i]);
  }
  if (!schema.has_primary_key()) {
    if (!after_key.empty() || !lower.empty() || !upper.empty())
      return Status::InvalidArgument(schema.QualifiedName() +
                                     " has no primary key, so it cannot be read by key range");
    // One streamed pass, handed out every fetch_rows rows with an empty last key.
    static const std::vector<std::string> kNoKey;
    size_t n = 0;
    RETURN_IF_ERROR(conn_->QueryStream(
        "SELECT " + select_list + " FROM " + QualifiedTable(schema),
        [&](const std::vector<TextCellView>& cells) -> Status {
          if (cells.size() != schema.columns.size())
            return Status::Internal(fmt::format("{}: got {} cells for {} columns", schema.QualifiedName(),
                                                cells.size(), schema.columns.size()));
          RETURN_IF_ERROR(on_row(cells));
          if (++n < fetch_rows) return Status::Ok();
          n = 0;
          return on_fetch(fetch_rows, kNoKey);
        }));
    return n > 0 ? on_fetch(n, kNoKey) : Status::Ok();
  }

  const size_t nkey = schema.primary_key.size();
  const std::string key_cols = KeyColumnsTuple(schema);
  std::vector<std::string> after = after_key.empty() ? lower : after_key;
  std::string upper_cond;
  if (!upper.empty()) {
    ASSIGN_OR_RETURN(std::string u, KeyTuple(*conn_, schema, upper, /*standalone=*/false));
    upper_cond = key_cols + " <= " + u;
  }

  // One query per range, streamed (mysql_use_result), as mydumper reads its chunks: the
  // server walks the primary key once instead of starting a keyset query every fetch_rows
  // rows (200 queries of 10,000 rows cost the server 1.4x the CPU of 4 of 500,000:
  // BENCHMARKS.md). Cells are converted straight from the connector's row buffer, and every
  // fetch_rows rows are handed to the callback mid-result with their last key, so progress is
  // recorded at the same boundaries as before: a resume continues after the last key the sink
  // has, in a new transaction, whatever the server had still to send. The server waits on the
  // socket while the callback runs (net_write_timeout is an hour: SetUpSession).
  // FORCE INDEX keeps the read in key order without a sort even where the optimizer would
  // rather scan and sort a large range.
  std::string sql = "SELECT " + select_list + " FROM " + QualifiedTable(schema) + " FORCE INDEX (PRIMARY)";
  std::string where;
  if (!after.empty()) {
    ASSIGN_OR_RETURN(std::string lits, KeyTuple(*conn_, schema, after, /*standalone=*/false));
    where = key_cols + " > " + lits;
  }
  if (!upper_cond.empty()) where += (where.empty() ? "" : " AND ") + upper_cond;
  if (nkey > 1) {
    // MariaDB does not use row-value comparisons to bound an index range: alone they scan the
    // whole key for every range. The first key column's bounds, implied by them (a row
    // compares column by column, each under its own collation), give the range optimizer a
    // prefix to seek to and stop at; the row comparisons still decide.
    const ColumnDesc& first = schema.columns[schema.primary_key[0]];
    const std::string q = QuoteIdentifier(first.name);
    if (!after.empty()) {
      ASSIGN_OR_RETURN(std::string lo, KeyLiteral(*conn_, first, after[0]));
      where += " AND " + q + " >= " + lo;
    }
    if (!upper.empty()) {
      ASSIGN_OR_RETURN(std::string hi, KeyLiteral(*conn_, first, upper[0]));
      where += (where.empty() ? "" : " AND ") + q + " <= " + hi;
    }
  }
  if (!where.empty()) sql += " WHERE " + where;
  sql += " ORDER BY " + KeyColumnsList(schema);
  // The last row's key cells, kept (the connector's buffer moves on) until its fetch ends.
  std::vector<std::string> key_cells(nkey);
  std::vector<bool> key_null(nkey);
  size_t n = 0;
  const auto hand_over = [&]() -> Status {
    std::vector<std::string> last_key;
    last_key.reserve(nkey);
    for (size_t j = 0; j < nkey; ++j) {
      const ColumnDesc& col = schema.columns[schema.primary_key[j]];
      if (key_null[j])
        return Status::Corruption(fmt::format("{}: primary key column {} is NULL",
                                              schema.QualifiedName(), col.name));
      Result<Value> v = ValueFromText(col, std::string_view(key_cells[j]));
      if (!v.ok()) return v.status().WithContext(schema.QualifiedName());
      last_key.push_back(v->ToText());
    }
    const size_t rows = n;
    n = 0;
    return on_fetch(rows, last_key);
  };
  RETURN_IF_ERROR(conn_->QueryStream(sql, [&](const std::vector<TextCellView>& cells) -> Status {
    if (cells.size() != schema.columns.size())
      return Status::Internal(fmt::format("{}: got {} cells for {} columns",
                                          schema.QualifiedName(), cells.size(),
                                          schema.columns.size()));
    RETURN_IF_ERROR(on_row(cells));
    for (size_t j = 0; j < nkey; ++j) {
      const TextCellView& c = cells[schema.primary_key[j]];
      key_null[j] = !c.has_value();
      if (c) key_cells[j].assign(c->data(), c->size());
    }
    return ++n >= fetch_rows ? hand_over() : Status::Ok();
  }));
  return n == 0 ? Status::Ok() : hand_over();
}

}  // namespace sluice
