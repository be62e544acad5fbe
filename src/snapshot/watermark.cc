// Watermark consistency: the window's keys, the chunk filter, and the reader that brackets a
// read transaction with L and H and finds them in the binlog (watermark.h has the argument).
#include "snapshot/watermark.h"

#include <chrono>
#include <cstdlib>
#include <random>

#include "binlog/event_stream.h"
#include "mysql/replication.h"
#include "schema/text_value.h"
#include "mysql/server_probe.h"
#include "util/log.h"

namespace sluice {

namespace {

// The key of `row` as one string: the table, then each key column's canonical text, each
// ended by a NUL (texts of key columns hold no NUL that could fake a boundary: a binary key
// text is the same bytes on both sides, and the count of columns is fixed per table).
bool KeyString(const std::string& table, const TableSchema& schema, const Row& row, std::string* out) {
  out->assign(table);
  out->push_back('\0');
  for (size_t k : schema.primary_key) {
    if (k >= row.size() || row[k].is_absent()) return false;
    *out += row[k].ToText();
    out->push_back('\0');
  }
  return true;
}

bool AccessDenied(const Status& st) {
  const std::string& m = st.message();
  for (const char* code : {"[1142]", "[1044]", "[1045]", "[1227]", "[1370]", "[1036]", "[1290]"})
    if (m.find(code) != std::string::npos) return true;
  return false;
}

std::string NewToken() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  return fmt::format("{:016x}{:016x}", rng(), static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
}

}  // namespace

Status WindowKeys::Add(const RowChange& c) {
  if (!c.table) return Status::Ok();
  const TableSchema& s = *c.table;
  const std::string name = s.QualifiedName();
  tables_.insert(name);
  // The first change the stream applies to a dropped key must rebuild the whole row.
  for (size_t i = 0; i < c.after.size(); ++i)
    if (c.after[i].is_absent())
      return Status::FailedPrecondition(fmt::format(
          "snapshot.consistency = \"watermark\": a change to {} inside a watermark window at {}:{} lacks "
          "column {} (binlog_row_image is not FULL in the session that wrote it); a row dropped from the "
          "copy could not be rebuilt from it. Set binlog_row_image=FULL (globally, and in every session) "
          "or use consistency = \"exact\"",
          name, c.source.file, c.source.pos, s.columns[i].name));
  if (!s.has_primary_key()) return Status::Ok();
  std::string key;
  for (const Row* image : {&c.before, &c.after}) {
    if (image->empty()) continue;
    if (!KeyString(name, s, *image, &key))
      return Status::FailedPrecondition(fmt::format(
          "snapshot.consistency = \"watermark\": a change to {} at {}:{} lacks a primary-key column",
          name, c.source.file, c.source.pos));
    keys_.insert(key);
  }
  return Status::Ok();
}

bool WindowKeys::Contains(const TableSchema& schema, const Row& row) const {
  if (keys_.empty()) return false;
  const std::string name = schema.QualifiedName();
  if (!tables_.count(name)) return false;
  std::string key;
  return KeyString(name, schema, row, &key) && keys_.count(key) > 0;
}

size_t DropWindowRows(const WindowKeys& window, const TableSchema& schema, std::vector<Row>* rows) {
  if (window.keys() == 0 || !window.Touches(schema.QualifiedName())) return 0;
  const size_t before = rows->size();
  std::erase_if(*rows, [&](const Row& r) { return window.Contains(schema, r); });
  return before - rows->size();
}

Result<bool> WindowScan::Feed(const CommittedTransaction& txn) {
  bool low = false, high = false;
  for (const RowChange& c : txn.changes) {
    if (!c.table || c.table->QualifiedName() != signal_ || c.after.empty()) continue;
    for (size_t i = 0; i < c.table->columns.size() && i < c.after.size(); ++i) {
      if (c.table->columns[i].name != "token" || c.after[i].is_absent() || c.after[i].is_null()) continue;
      const std::string token = c.after[i].ToText();
      low = low || token == low_;
      high = high || token == high_;
    }
  }
  if (high && !low_end_ && !low)
    return Status::Internal(fmt::format("watermark: the high watermark {} came before the low one {}", high_, low_));
  if (low) {
    low_end_ = txn.end;
    if (!high) return false;
  }
  if (high) {
    high_end_ = txn.end;
    return true;
  }
  if (!low_end_) return false;  // before L: in the copy whatever its keys
  ++transactions_;
  for (const RowChange& c : txn.changes) {
    if (!c.table || c.table->QualifiedName() == signal_) continue;
    RETURN_IF_ERROR(keys_.Add(c));
  }
  return false;
}

Status CheckWatermarkSettings(const std::string& row_image, const std::optional<std::string>& order_commits) {
  if (row_image != "FULL")
    return Status::FailedPrecondition(fmt::format(
        "snapshot.consistency = \"watermark\" needs binlog_row_image=FULL (the server has {}): a row "
        "changed while a read transaction opened is left out of the copy and rebuilt from its next "
        "change in the binlog, which must carry the whole row. Set binlog_row_image=FULL or use "
        "consistency = \"exact\"",
        row_image.empty() ? "none" : row_image));
  if (order_commits && *order_commits != "1" && *order_commits != "ON")
    return Status::FailedPrecondition(fmt::format(
        "snapshot.consistency = \"watermark\" needs binlog_order_commits=ON (the server has {}): with it "
        "off, a transaction written to the binlog before the low watermark can commit after the read "
        "transaction opened, and be neither in the copy nor in the window. Set binlog_order_commits=ON "
        "or use consistency = \"exact\"",
        order_commits->empty() ? "none" : *order_commits));
  return Status::Ok();
}

Status WatermarkReader::Prepare() {
  std::lock_guard<std::mutex> lock(mu_);
  if (signal_) return Status::Ok();
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> c, Connection::Connect(conn_));
  ServerInfo version;
  ParseServerVersion(c->server_version(), &version);
  flavor_ = version.flavor;
  ASSIGN_OR_RETURN(QueryResult img, c->Query("SELECT @@global.binlog_row_image"));
  const std::string image = img.rows.empty() || !img.rows[0][0] ? "" : *img.rows[0][0];
  std::optional<std::string> order_commits;
  if (flavor_ != Flavor::kMariaDB) {
    ASSIGN_OR_RETURN(QueryResult oc, c->Query("SELECT @@global.binlog_order_commits"));
    order_commits = oc.rows.empty() || !oc.rows[0][0] ? "" : *oc.rows[0][0];
  }
  RETURN_IF_ERROR(CheckWatermarkSettings(image, order_commits));
  const TableName& t = options_.table;
  const std::string qualified = QuoteIdentifier(t.db) + "." + QuoteIdentifier(t.table);
  const std::string ddl = fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (id INT UNSIGNED NOT NULL PRIMARY KEY, token VARCHAR(64) NOT NULL, "
      "written_at DATETIME(6) NOT NULL) ENGINE=InnoDB",
      qualified);
  auto exists = c->Query(fmt::format(
      "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
      c->Quote(t.db), c->Quote(t.table)));
  RETURN_IF_ERROR(exists.status());
  if (exists->rows.empty() || exists->rows[0][0] != "1") {
    Status st = c->Execute("CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(t.db));
    if (st.ok()) st = c->Execute(ddl);
    if (!st.ok()) {
      if (AccessDenied(st))
        return Status::FailedPrecondition(fmt::format(
            "snapshot.consistency = \"watermark\": cannot create the signal table {} "
            "(snapshot.watermark_table): {}. Grant CREATE on `{}` to sluice's user "
            "(GRANT CREATE, INSERT, UPDATE ON `{}`.* TO ...), or create it yourself: {}; "
            "and grant INSERT, UPDATE on it",
            t.QualifiedName(), st.message(), t.db, t.db, ddl));
      return st.WithContext("creating the signal table " + t.QualifiedName());
    }
    LogInfo("snapshot: created the watermark signal table {}", t.QualifiedName());
  }
  ASSIGN_OR_RETURN(TableSchema s, LoadTableSchema(*c, t.db, t.table));
  bool has_token = false;
  for (const ColumnDesc& col : s.columns) has_token = has_token || col.name == "token";
  if (!has_token || s.primary_key.size() != 1)
    return Status::FailedPrecondition(fmt::format(
        "snapshot.watermark_table {} exists but is not a signal table (it needs a one-column primary "
        "key and a `token` column): drop it or name another table; sluice creates it as: {}",
        t.QualifiedName(), ddl));
  signal_ = std::make_shared<const TableSchema>(std::move(s));
  // A write now tells a missing privilege before any read starts.
  return WriteMark(*c, 0, "probe-" + NewToken());
}

Status WatermarkReader::WriteMark(Connection& side, uint32_t slot, const std::string& token) {
  const TableName& t = options_.table;
  Status st = side.Execute(fmt::format(
      "INSERT INTO {}.{} (id, token, written_at) VALUES ({}, {}, NOW(6)) "
      "ON DUPLICATE KEY UPDATE token = VALUES(token), written_at = VALUES(written_at)",
      QuoteIdentifier(t.db), QuoteIdentifier(t.table), slot, side.Quote(token)));
  if (st.ok() || !AccessDenied(st)) return st;
  return Status::FailedPrecondition(fmt::format(
      "snapshot.consistency = \"watermark\": cannot write the watermark signal table {} "
      "(snapshot.watermark_table): {}. Grant INSERT and UPDATE on it to sluice's user: "
      "GRANT INSERT, UPDATE ON `{}`.`{}` TO ...",
      t.QualifiedName(), st.message(), t.db, t.table));
}

Result<WatermarkedRead> WatermarkReader::Begin(uint32_t slot) {
  RETURN_IF_ERROR(Prepare());
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> side, Connection::Connect(conn_));
  ASSIGN_OR_RETURN(BinlogPosition p0, ReadBinlogPosition(*side));
  std::string gtid0;
  if (flavor_ == Flavor::kMariaDB) {
    ASSIGN_OR_RETURN(QueryResult g, side->Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})",
                                                            side->Quote(p0.file), p0.pos)));
    if (!g.rows.empty() && g.rows[0][0]) gtid0 = *g.rows[0][0];
  }
  const std::string low = "L-" + NewToken(), high = "H-" + NewToken();
  RETURN_IF_ERROR(WriteMark(*side, slot + 1, low));
  // Test hook (integration tests only): SLUICE_TEST_WATERMARK_WINDOW_SQL runs on the side
  // session inside every window, before and after the read view is made, so that a test can
  // change rows exactly where only the window's filtering keeps the copy exact.
  const char* hook = std::getenv("SLUICE_TEST_WATERMARK_WINDOW_SQL");
  if (hook != nullptr && *hook != '\0') RETURN_IF_ERROR(side->Execute(hook));
  SnapshotOptions so;
  so.method = SnapshotMethod::kNoPoint;
  ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snap, Snapshot::Begin(conn_, so));
  if (hook != nullptr && *hook != '\0') RETURN_IF_ERROR(side->Execute(hook));
  RETURN_IF_ERROR(WriteMark(*side, slot + 1, high));
  side.reset();

  // The window: a dump from P0 to H's transaction.
  std::lock_guard<std::mutex> lock(mu_);
  ReplicationOptions ro;
  ro.server_id = options_.server_id;
  ro.start = p0;
  ro.non_blocking = true;
  ro.heartbeat_period_s = 0;
  ro.replica_host = "sluice-watermark";
  ASSIGN_OR_RETURN(std::unique_ptr<ReplicationSession> session, ReplicationSession::Start(conn_, ro));
  binlog::EventStream stream;
  stream.SetPosition(p0.file, p0.pos);
  const std::string signal_name = options_.table.QualifiedName();
  TransactionAssembler assembler(
      session->flavor(),
      [&](const binlog::TableMap& m) -> Result<TableSchemaPtr> {
        const std::string name = m.db + "." + m.table;
        if (name == signal_name) return signal_;
        auto it = tables_.find(name);
        return it == tables_.end() ? TableSchemaPtr{} : it->second;
      },
      StreamPoint{p0, gtid0});
  WindowScan scan(signal_name, low, high);
  bool done = false;
  const auto feed = [&](const binlog::Event& ev) -> Status {
    auto t = assembler.Feed(ev);
    // Rows that do not fit the planned definition (a DDL since planning): a new transaction
    // checks the columns, and re-plans the table if they changed.
    if (!t.ok()) return Status::Unavailable(t.status().WithContext("watermark window from " + p0.ToString()).message());
    if (*t) {
      ASSIGN_OR_RETURN(done, scan.Feed(**t));
    }
    return Status::Ok();
  };
  while (!done) {
    ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, session->Fetch());
    if (bytes.empty())
      return Status::Internal(fmt::format("watermark: the binlog from {} ended before the {} watermark {} of {}",
                                          p0.ToString(), scan.found_low() ? "high" : "low",
                                          scan.found_low() ? high : low, signal_name));
    auto ev = stream.Next(bytes);
    if (!ev.ok()) return ev.status().WithContext("watermark window from " + p0.ToString());
    Status st = feed(*ev);
    while (st.ok() && !done && stream.HasPendingInner()) {
      auto inner = stream.NextInner();
      st = inner.ok() ? feed(*inner) : inner.status();
    }
    RETURN_IF_ERROR(st);
  }
  SnapshotPoint point;
  point.flavor = session->flavor();
  point.position = scan.low_end().position;
  point.gtid = scan.low_end().gtid;
  if (point.flavor != Flavor::kMariaDB) point.gtid.clear();  // no exact GTID set at L: by file/pos
  snap->SetPoint(point);
  LogInfo("snapshot: watermark read at {} (window {} .. {}: {} transaction(s), {} key(s) of {} table(s) "
          "changed, left to the stream)",
          point.position.ToString(), point.position.ToString(), scan.high_end().position.ToString(),
          scan.transactions(), scan.keys().keys(), scan.keys().tables());
  WatermarkedRead out;
  out.snapshot = std::move(snap);
  out.window = std::make_shared<const WindowKeys>(scan.keys());
  return out;
}

}  // namespace sluice
