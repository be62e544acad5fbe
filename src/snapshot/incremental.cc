// Incremental reads: backfill, compound-watermark paging, lookback (incremental.h).
//
// Why paging by (cursor, pk...) is exact for the rows it can see. Inside one read view the
// rows of the table are a fixed set; ordering them by (cursor, pk...) is a total order (the
// primary key is unique), and the query sequence
//   (cursor, pk) > w0 AND (cursor, pk) <= H ORDER BY cursor, pk LIMIT n,
//   (cursor, pk) > w1 AND ... (w1 = the last row of the previous page), ...
// visits every row between the stored watermark w0 and H exactly once, however many rows
// share one cursor value. The watermark is stored with the rows of each page in one sink
// transaction, so a run killed at any point resumes after the last page the sink holds.
// H is captured in the same read view before the first page, so a run never reads past it
// even though later pages of a long run would see nothing newer anyway; it bounds the run and
// is kept in the checkpoint for the next run's log.
//
// What this cannot see (docs/incremental.md): deleted rows; updates that do not advance the
// cursor; and a transaction that commits after a run read past its cursor value (it was
// invisible to that run's read view, and the next run starts after the watermark). The last
// one is what `lookback` is for: rows whose cursor lies within `lookback` seconds before the
// watermark are read again each run.
//
// The backfill. The first run captures H = max (cursor, pk...) and sets the watermark W to H,
// or to H's cursor value alone when that value may still be committing (CursorSettled); it
// then copies, in primary-key order, the rows at or below W ((cursor, pk...) <= H, or cursor
// < H's cursor). Paging reads the rows above W. Every row version is thus given by one of the
// two, never both (an `append` consumer relies on that), also when the backfill spans several
// runs (max_rows) or resumes after a crash: a chunk read in a later read view sees rows
// changed since H with cursors above W, which it skips and paging reads (if the update
// advanced the cursor, as everything here assumes). Nothing copied yet when a run starts:
// H and W are captured again.
#include "snapshot/incremental.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>

#include "mysql/key_literal.h"
#include "schema/text_value.h"
#include "util/utf8.h"
#include "snapshot/snapshot.h"
#include "util/hash.h"
#include "util/log.h"

namespace sluice {

namespace {

bool Stopping(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsCursorType(const ColumnDesc& c) {
  return c.type == SqlType::kDateTime || c.type == SqlType::kTimestamp;
}

std::string QualifiedTable(const TableSchema& s) {
  return QuoteIdentifier(s.db) + "." + QuoteIdentifier(s.table);
}

// Every DATETIME/TIMESTAMP column, with whether it could be the cursor.
std::string Candidates(const TableSchema& schema) {
  std::string out;
  for (const ColumnDesc& c : schema.columns) {
    if (!IsCursorType(c)) continue;
    out += fmt::format("{}{} ({}{})", out.empty() ? "" : ", ", QuoteIdentifier(c.name),
                       c.column_type.empty() ? c.data_type : c.column_type,
                       c.nullable ? " NULL: not usable, a NULL cursor is never read" : " NOT NULL");
  }
  return out.empty() ? "none (the table has no DATETIME or TIMESTAMP column)" : out;
}

constexpr const char* kUsualNames[] = {"updated_at",  "modified_at", "last_modified_at",
                                       "last_modified", "updated",   "modified",
                                       "update_time", "last_update", "changed_at",
                                       "updated_on",  "modified_on"};

// A schema whose "primary key" is the given column order, so that KeyTuple builds the
// literal tuple of a watermark.
TableSchema OrderSchema(const TableSchema& schema, std::vector<size_t> order) {
  TableSchema s = schema;
  s.primary_key = std::move(order);
  return s;
}

std::vector<std::string> QuotedColumns(const TableSchema& schema, const std::vector<size_t>& cols) {
  std::vector<std::string> out;
  for (size_t i : cols) out.push_back(QuoteIdentifier(schema.columns[i].name));
  return out;
}

std::string SelectList(const TableSchema& schema) {
  std::string list;
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    if (i > 0) list += ", ";
    list += SnapshotSelectExpr(schema.columns[i]);
  }
  return list;
}

Result<KeyTexts> KeyOf(const TableSchema& schema, const Row& row, const std::vector<size_t>& cols) {
  KeyTexts key;
  for (size_t i : cols) {
    if (row[i].is_null())
      return Status::Corruption(fmt::format("{}: column {} is NULL in a row read in key order",
                                            schema.QualifiedName(), schema.columns[i].name));
    key.push_back(row[i].ToText());
  }
  return key;
}

// "(2024-01-02 03:04:05, 0x00ff)": key `k` of columns `cols` of `schema` for a log line, as
// `sluice verify` names keys: binary values in hex, other text through PrintableText (a NUL
// would cut the line, other bytes would make a JSON log invalid).
std::string KeyText(const TableSchema& schema, const std::vector<size_t>& cols, const KeyTexts& k) {
  std::string out = "(";
  for (size_t i = 0; i < k.size(); ++i) {
    out += i ? ", " : "";
    auto v = i < cols.size() ? ValueFromText(schema.columns[cols[i]], k[i]) : Result<Value>(Value::Text(k[i]));
    if (v.ok() && v->kind == Value::Kind::kBytes) {
      out += "0x";
      for (unsigned char c : v->s) out += fmt::format("{:02x}", c);
    } else {
      out += PrintableText(k[i]);
    }
  }
  return out + ")";
}

// Reads pages of `base` in the order of `order_schema`'s key after `after` (empty: from the
// first row), at most `*budget` rows in all, handing each page to `on_page`.
using PageCallback = std::function<Status(std::vector<Row> rows, const KeyTexts& last)>;
Status ReadPages(Connection& conn, const TableSchema& schema, const TableSchema& order_schema,
                 PageQuery base, KeyTexts after, uint32_t fetch_rows, uint64_t* budget,
                 const std::atomic<bool>* stop, const PageCallback& on_page) {
  while (!Stopping(stop)) {
    const uint64_t limit = std::min<uint64_t>(fetch_rows, *budget);
    if (limit == 0) return Status::Ok();
    PageQuery q = base;
    q.limit = limit;
    if (!after.empty()) {
      ASSIGN_OR_RETURN(q.after, KeyTuple(conn, order_schema, after, /*standalone=*/false));
      ASSIGN_OR_RETURN(q.after_first,
                       KeyLiteral(conn, order_schema.columns[order_schema.primary_key[0]], after[0]));
      q.cursor_floor.clear();  // only the first page of a lookback needs it
    }
    ASSIGN_OR_RETURN(QueryResult r, conn.Query(BuildPageSql(q)));
    if (r.rows.empty()) return Status::Ok();
    std::vector<Row> rows;
    rows.reserve(r.rows.size());
    for (const TextRow& cells : r.rows) {
      ASSIGN_OR_RETURN(Row row, RowFromTextCells(schema, cells));
      rows.push_back(std::move(row));
    }
    ASSIGN_OR_RETURN(KeyTexts last, KeyOf(schema, rows.back(), order_schema.primary_key));
    const size_t n = rows.size();
    *budget -= n;
    RETURN_IF_ERROR(on_page(std::move(rows), last));
    if (n < limit) return Status::Ok();
    after = std::move(last);
  }
  return Status::Ok();
}

}  // namespace

const char* TableModeName(TableMode m) {
  switch (m) {
    case TableMode::kCdc: return "cdc";
    case TableMode::kIncremental: return "incremental";
    case TableMode::kFull: return "full";
    case TableMode::kSnapshotOnly: return "snapshot_only";
  }
  return "?";
}

const char* WritePolicyName(WritePolicy p) {
  return p == WritePolicy::kAppend ? "append" : "upsert";
}

Result<size_t> ChooseCursor(const TableSchema& schema, const std::string& configured,
                            const std::string& config_key) {
  if (!configured.empty()) {
    // Column names are case-insensitive in MySQL and MariaDB.
    int i = -1;
    for (size_t k = 0; k < schema.columns.size() && i < 0; ++k)
      if (Lower(schema.columns[k].name) == Lower(configured)) i = static_cast<int>(k);
    if (i < 0)
      return Status::InvalidArgument(fmt::format(
          "{}.cursor: table {} has no column {}; candidates: {}", config_key,
          schema.QualifiedName(), QuoteIdentifier(configured), Candidates(schema)));
    const ColumnDesc& c = schema.columns[static_cast<size_t>(i)];
    if (!IsCursorType(c) || c.nullable)
      return Status::InvalidArgument(fmt::format(
          "{}.cursor: column {} of {} is {}{}: a cursor must be a NOT NULL DATETIME or TIMESTAMP "
          "column; candidates: {}",
          config_key, QuoteIdentifier(c.name), schema.QualifiedName(),
          c.column_type.empty() ? c.data_type : c.column_type, c.nullable ? " NULL" : "",
          Candidates(schema)));
    return static_cast<size_t>(i);
  }
  for (const char* name : kUsualNames)
    for (size_t i = 0; i < schema.columns.size(); ++i) {
      const ColumnDesc& c = schema.columns[i];
      if (Lower(c.name) == name && IsCursorType(c) && !c.nullable) return i;
    }
  std::string usual;
  for (const char* name : kUsualNames) usual += (usual.empty() ? "" : ", ") + std::string(name);
  return Status::InvalidArgument(fmt::format(
      "{}: mode \"incremental\" needs a cursor column, and none of the usual names ({}) is a NOT "
      "NULL DATETIME or TIMESTAMP column of {}; candidates: {}; name one with {}.cursor, or use "
      "mode = \"full\"",
      schema.QualifiedName(), usual, schema.QualifiedName(), Candidates(schema), config_key));
}

Status CheckCursorTimeZone(Connection& conn, const ColumnDesc& cursor, const IncrementalTableOptions& opt) {
  if (opt.cursor_time_zone.empty()) return Status::Ok();
  const std::string key = opt.config_key + ".cursor_time_zone";
  if (cursor.type == SqlType::kTimestamp)
    return Status::InvalidArgument(fmt::format(
        "{}: the cursor {} is a TIMESTAMP, whose values the server stores in UTC whatever zone wrote them; "
        "the setting applies to DATETIME cursors only: remove it",
        key, QuoteIdentifier(cursor.name)));
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("SELECT CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', {}) IS NOT NULL",
                                                         conn.Quote(opt.cursor_time_zone))));
  if (r.rows.empty() || !r.rows[0][0] || *r.rows[0][0] != "1")
    return Status::InvalidArgument(fmt::format(
        "{}: the server does not know the time zone '{}' (CONVERT_TZ returned NULL): use an offset such as "
        "\"+00:00\", or load the server's time zone tables (mariadb-tzinfo-to-sql) to use a name",
        key, opt.cursor_time_zone));
  return Status::Ok();
}

std::vector<size_t> WatermarkColumns(const TableSchema& schema, size_t cursor) {
  std::vector<size_t> cols{cursor};
  for (size_t k : schema.primary_key)
    if (k != cursor) cols.push_back(k);
  return cols;
}

std::string BuildPageSql(const PageQuery& q) {
  std::string cols, order;
  for (size_t i = 0; i < q.order.size(); ++i) {
    cols += (i ? ", " : "") + q.order[i];
    order += (i ? ", " : "") + q.order[i];
  }
  if (q.order.size() > 1) cols = "(" + cols + ")";
  std::vector<std::string> where;
  if (!q.after.empty()) where.push_back(cols + " > " + q.after);
  if (!q.upper.empty()) where.push_back(cols + " <= " + q.upper);
  if (q.order.size() > 1 && !q.after.empty() && !q.after_first.empty())
    where.push_back(q.order[0] + " >= " + q.after_first);
  if (q.order.size() > 1 && !q.upper.empty() && !q.upper_first.empty())
    where.push_back(q.order[0] + " <= " + q.upper_first);
  if (!q.cursor_floor.empty() && !q.order.empty()) where.push_back(q.order[0] + " >= " + q.cursor_floor);
  if (!q.cursor_below.empty() && !q.order.empty()) where.push_back(q.order[0] + " < " + q.cursor_below);
  if (!q.bound.empty()) where.push_back(q.bound);
  std::string sql = "SELECT " + q.select_list + " FROM " + q.table;
  for (size_t i = 0; i < where.size(); ++i) sql += (i ? " AND " : " WHERE ") + where[i];
  sql += " ORDER BY " + order;
  if (q.limit > 0) sql += fmt::format(" LIMIT {}", q.limit);
  return sql;
}

std::string LookbackFloor(std::string_view quoted_cursor_text, uint32_t seconds) {
  return fmt::format("CAST({} AS DATETIME(6)) - INTERVAL {} SECOND", quoted_cursor_text, seconds);
}

Result<IndexAdvice> AdviseIndex(Connection& conn, const TableSchema& schema, size_t cursor) {
  IndexAdvice advice;
  const std::vector<size_t> wm = WatermarkColumns(schema, cursor);
  ASSIGN_OR_RETURN(QueryResult idx,
                   conn.Query(fmt::format("SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM "
                                          "information_schema.STATISTICS WHERE TABLE_SCHEMA = {} AND "
                                          "TABLE_NAME = {} ORDER BY INDEX_NAME, SEQ_IN_INDEX",
                                          conn.Quote(schema.db), conn.Quote(schema.table))));
  std::map<std::string, std::vector<std::string>> indexes;
  for (const TextRow& row : idx.rows)
    if (row.size() >= 3 && row[0] && row[2]) indexes[*row[0]].push_back(Lower(*row[2]));
  // InnoDB appends the primary key to every secondary index, so an index on (cursor) alone,
  // or on the cursor then a prefix of the key, orders rows by (cursor, pk...).
  for (const auto& [name, cols] : indexes) {
    bool fits = !cols.empty();
    for (size_t j = 0; fits && j < cols.size(); ++j)
      fits = j < wm.size() && cols[j] == Lower(schema.columns[wm[j]].name);
    if (fits) {
      advice.has_index = true;
      advice.index_name = name;
      break;
    }
  }
  std::string list;
  for (const std::string& c : QuotedColumns(schema, wm)) list += (list.empty() ? "" : ", ") + c;
  advice.create_index =
      fmt::format("CREATE INDEX {} ON {} ({})",
                  QuoteIdentifier("sluice_" + schema.columns[cursor].name + "_pk"), QualifiedTable(schema), list);
  PageQuery q;
  q.table = QualifiedTable(schema);
  q.select_list = SelectList(schema);
  q.order = QuotedColumns(schema, wm);
  // A page after the first: a lower bound on the cursor (here below every value), which the
  // server can plan as a range of the index. Without a WHERE, MariaDB plans even a LIMIT 100
  // of a 20,000-row table as a full scan and a filesort, whatever index there is.
  q.cursor_floor = "'1000-01-01 00:00:00'";
  q.limit = 1000;
  ASSIGN_OR_RETURN(QueryResult ex, conn.Query("EXPLAIN " + BuildPageSql(q)));
  for (const TextRow& row : ex.rows) {
    auto cell = [&](const char* name) -> std::string {
      int i = ex.ColumnIndex(name);
      return i >= 0 && static_cast<size_t>(i) < row.size() && row[i] ? *row[i] : "NULL";
    };
    if (advice.explain.empty())
      advice.plan_uses_index = advice.has_index && Lower(cell("key")) == Lower(advice.index_name) &&
                               cell("type") != "ALL" && cell("Extra").find("filesort") == std::string::npos;
    advice.explain += fmt::format("{}type={} key={} rows={} Extra={}", advice.explain.empty() ? "" : "; ",
                                  cell("type"), cell("key"), cell("rows"), cell("Extra"));
  }
  return advice;
}

namespace {

struct TableRun {
  const IncrementalTableOptions& opt;
  TableSchemaPtr schema;
  size_t cursor = 0;
  IncrementalProgress* progress = nullptr;
};

SourceInfo MakeSource(const IncrementalRunOptions& options, bool backfill) {
  SourceInfo src;
  src.flavor = options.flavor;
  src.server_id = options.source_server_id;
  src.timestamp = static_cast<uint32_t>(std::time(nullptr));
  src.snapshot = backfill;
  return src;
}

Status ApplyPage(Sink& sink, const TableSchemaPtr& schema, std::vector<Row> rows, Op op,
                 const SourceInfo& src, const Checkpoint& ckpt) {
  Transaction txn;
  txn.is_snapshot = op == Op::kRead;
  txn.changes.reserve(rows.size());
  for (Row& r : rows) txn.changes.push_back(ReadChange(op, schema, std::move(r), src));
  txn.checkpoint = ckpt.ToJson();
  return sink.Apply(txn);
}

// The server's clock in the time the cursor's values are written in: UTC for TIMESTAMP
// (compared in the UTC session); for DATETIME the zone `zone` names (cursor_time_zone), or
// the server's global time_zone. A DATETIME written in a zone behind the server's looked
// older than it was, and the newest values were taken before they settled (a new user's
// probe: an update committed 0.5 s after another was lost).
std::string CursorClock(Connection& conn, const ColumnDesc& cursor, const std::string& zone) {
  if (cursor.type == SqlType::kTimestamp) return "UTC_TIMESTAMP(6)";
  return fmt::format("CONVERT_TZ(UTC_TIMESTAMP(6), '+00:00', {})", zone.empty() ? "@@global.time_zone" : conn.Quote(zone));
}

// Whether rows with cursor value `text` can no longer be committing, as far as the server's
// clock tells: the value is more than a second older than now (CursorClock).
Result<bool> CursorSettled(Connection& conn, const ColumnDesc& cursor, const std::string& zone, const std::string& text) {
  const std::string now = CursorClock(conn, cursor, zone);
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("SELECT CAST({} AS DATETIME(6)) < {} - INTERVAL 1 SECOND",
                                                         conn.Quote(text), now)));
  return !r.rows.empty() && r.rows[0][0] && *r.rows[0][0] == "1";
}

// The server's clock as a value of `cursor`'s type, `offset_seconds` from now (CursorClock),
// cut to the column's fractional digits: the cursor text rows are compared with.
Result<std::string> ClockCursorText(Connection& conn, const ColumnDesc& cursor, const std::string& zone,
                                    int offset_seconds) {
  const std::string now = CursorClock(conn, cursor, zone);
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("SELECT CAST({} + INTERVAL {} SECOND AS DATETIME({}))", now,
                                                         offset_seconds, std::min<uint32_t>(cursor.fsp, 6))));
  if (r.rows.empty() || r.rows[0].empty() || !r.rows[0][0])
    return Status::Internal("the server's clock could not be read (SELECT UTC_TIMESTAMP returned no value)");
  return *r.rows[0][0];
}

// Whether cursor text `a` is after `b` (both of `cursor`'s type), as the server compares them.
Result<bool> CursorAfter(Connection& conn, const std::string& a, const std::string& b) {
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("SELECT CAST({} AS DATETIME(6)) > CAST({} AS DATETIME(6))",
                                                         conn.Quote(a), conn.Quote(b))));
  return !r.rows.empty() && r.rows[0][0] && *r.rows[0][0] == "1";
}

// The max (cursor, pk...) of the read view, or empty for an empty table.
Result<KeyTexts> CaptureHigh(Connection& conn, const TableSchema& schema, const std::vector<size_t>& wm) {
  std::string desc;
  for (const std::string& c : QuotedColumns(schema, wm)) desc += (desc.empty() ? "" : ", ") + c + " DESC";
  ASSIGN_OR_RETURN(QueryResult r, conn.Query(fmt::format("SELECT {} FROM {} ORDER BY {} LIMIT 1",
                                                         SelectList(schema), QualifiedTable(schema), desc)));
  if (r.rows.empty()) return KeyTexts{};
  ASSIGN_OR_RETURN(Row row, RowFromTextCells(schema, r.rows[0]));
  return KeyOf(schema, row, wm);
}

Status RunTable(const IncrementalRunOptions& options, TableRun& t, Checkpoint& ckpt, Sink& sink) {
  const TableSchema& schema = *t.schema;
  IncrementalProgress& p = *t.progress;
  const IncrementalTableOptions& opt = t.opt;
  const std::string name = schema.QualifiedName();
  const bool incremental = opt.mode == TableMode::kIncremental;
  uint64_t budget = opt.max_rows > 0 ? opt.max_rows : std::numeric_limits<uint64_t>::max();

  if (opt.mode == TableMode::kSnapshotOnly && p.backfill_done) {
    LogInfo("{}: {}: copied by an earlier run ({} rows); nothing to read", TableModeName(opt.mode), name,
            p.backfill_rows);
    return Status::Ok();
  }
  if (opt.mode == TableMode::kFull && p.backfill_done) {
    // A new copy. With upsert the destination mirrors the source, deletes included, so the
    // sink table is emptied first (in the same step as the checkpoint saying so).
    p.backfill_done = false;
    p.backfill_last_key.clear();
    p.backfill_rows = 0;
    if (opt.write == WritePolicy::kUpsert) RETURN_IF_ERROR(sink.ResetTable(schema, ckpt.ToJson()));
    else RETURN_IF_ERROR(sink.SaveCheckpoint(ckpt.ToJson()));
  }

  SnapshotOptions so;
  so.method = SnapshotMethod::kNoPoint;
  ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snap, Snapshot::Begin(options.connection, so));
  Connection& conn = snap->connection();
  const std::vector<size_t> wm = incremental ? WatermarkColumns(schema, t.cursor) : std::vector<size_t>{};
  // A one-element watermark of a wider (cursor, pk...) is the cursor value alone (its rows are
  // left for the next run); when the cursor is the whole primary key, one element is the full
  // watermark, and a unique cursor value has no other rows to wait for.
  auto cursor_alone = [&](const KeyTexts& w) { return w.size() == 1 && wm.size() > 1; };
  const TableSchema wm_schema = OrderSchema(schema, wm);
  const auto started = std::chrono::steady_clock::now();
  uint64_t read = 0;

  if (!p.backfill_done) {
    const ColumnDesc* cursor_col = incremental ? &schema.columns[t.cursor] : nullptr;
    if (incremental && p.backfill_rows == 0 && p.backfill_last_key.empty()) {
      // Nothing copied yet (a first run, or one killed before its first chunk): the
      // backfill's high watermark H, in the read view of its first chunk. The backfill copies
      // the rows up to the watermark it sets here and paging reads the rows after it, so no
      // row version is given by both. H's cursor value may still be committing (a later
      // commit with that value and a lower key would fall behind H): unless it has settled,
      // the watermark is that value alone and the backfill copies only the rows below it.
      ASSIGN_OR_RETURN(p.run_high, CaptureHigh(conn, schema, wm));
      p.watermark = p.run_high;
      bool settled = true;
      if (!p.run_high.empty()) {
        ASSIGN_OR_RETURN(settled, CursorSettled(conn, *cursor_col, opt.cursor_time_zone, p.run_high[0]));
        // Rows from a second before the server's clock on (they may still be committing, and
        // a value in the future must not carry the watermark past rows written meanwhile) are
        // left to paging: the watermark is that point in time alone.
        if (!settled) {
          ASSIGN_OR_RETURN(std::string settle, ClockCursorText(conn, *cursor_col, opt.cursor_time_zone, -1));
          p.watermark = KeyTexts{settle};
        }
      }
      RETURN_IF_ERROR(sink.SaveCheckpoint(ckpt.ToJson()));
      LogInfo("incremental: {}: backfill up to high watermark {}{}", name,
              p.run_high.empty() ? "(empty table)" : KeyText(schema, wm, p.run_high),
              settled ? std::string()
                      : fmt::format("; rows with cursor values from {} on are left for the next run (they may "
                                    "still be committing)",
                                    p.watermark[0]));
    } else if (p.backfill_rows > 0 || !p.backfill_last_key.empty()) {
      if (incremental && p.watermark.empty() && !p.run_high.empty())
        p.watermark = KeyTexts{p.run_high[0]};  // a checkpoint of a version that set it at the end
      LogInfo("{}: {}: resuming the copy after key {} ({} rows copied)", TableModeName(opt.mode), name,
              KeyText(schema, schema.primary_key, p.backfill_last_key), p.backfill_rows);
    }
    PageQuery base;
    base.table = QualifiedTable(schema);
    base.select_list = SelectList(schema);
    base.order = QuotedColumns(schema, schema.primary_key);
    if (incremental && !p.watermark.empty()) {
      // A chunk read in a later read view (a resumed or max_rows-bounded backfill) also sees
      // rows changed since H: those are above the watermark and left to paging.
      std::string cols;
      for (const std::string& c : QuotedColumns(schema, wm)) cols += (cols.empty() ? "" : ", ") + c;
      if (cursor_alone(p.watermark)) {
        ASSIGN_OR_RETURN(std::string below, KeyLiteral(conn, *cursor_col, p.watermark[0]));
        base.bound = QuoteIdentifier(cursor_col->name) + " < " + below;
      } else {
        ASSIGN_OR_RETURN(std::string upper, KeyTuple(conn, wm_schema, p.watermark, /*standalone=*/false));
        base.bound = (wm.size() > 1 ? "(" + cols + ")" : cols) + " <= " + upper;
      }
    }
    const SourceInfo src = MakeSource(options, /*backfill=*/true);
    RETURN_IF_ERROR(ReadPages(conn, schema, schema, base, p.backfill_last_key, options.fetch_rows, &budget,
                              options.stop, [&](std::vector<Row> rows, const KeyTexts& last) -> Status {
                                const IncrementalProgress before = p;
                                const size_t n = rows.size();
                                p.backfill_last_key = last;
                                p.backfill_rows += n;
                                Status st = ApplyPage(sink, t.schema, std::move(rows), Op::kRead, src, ckpt);
                                if (!st.ok()) p = before;
                                read += n;
                                return st;
                              }));
    if (Stopping(options.stop)) return snap->Finish();
    if (budget == 0) {
      LogInfo("{}: {}: max_rows ({}) reached during the copy after key {}; the next run continues",
              TableModeName(opt.mode), name, opt.max_rows, KeyText(schema, schema.primary_key, p.backfill_last_key));
      return snap->Finish();
    }
    p.backfill_done = true;  // the watermark is the one set when the backfill began
    ++p.runs;
    RETURN_IF_ERROR(sink.SaveCheckpoint(ckpt.ToJson()));
    LogInfo("{}: {}: copied, {} rows in this run ({} in all) in {:.2f} s", TableModeName(opt.mode), name, read,
            p.backfill_rows, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return snap->Finish();
  }

  // A paging run.
  ASSIGN_OR_RETURN(KeyTexts high, CaptureHigh(conn, schema, wm));
  const ColumnDesc& cursor_col = schema.columns[t.cursor];
  // Rows whose cursor is not a second older than the server's clock are left for a later run:
  // they may still be committing (a later commit with that value and a lower key would fall
  // behind the watermark), and a value in the future must never carry the watermark past the
  // rows written until then (a new user's probe: one row dated 2030 hid every later change).
  // A run whose newest value had not settled used to take it anyway when the next run saw the
  // same newest row; a transaction still committing with that value defeated that.
  bool hold_back = false;
  std::string settle;  // hold_back: the server's clock a second ago, in the cursor's type
  uint64_t future = 0;  // rows more than a second ahead of the server's clock, read again
  std::string future_from;  // the server's clock a second ahead, when the newest row is beyond it
  std::string ahead_of_clock;  // the server's clock a second ahead
  if (!high.empty() || !p.watermark.empty()) {
    ASSIGN_OR_RETURN(ahead_of_clock, ClockCursorText(conn, cursor_col, opt.cursor_time_zone, 1));
  }
  if (!high.empty()) {
    ASSIGN_OR_RETURN(bool settled, CursorSettled(conn, cursor_col, opt.cursor_time_zone, high[0]));
    hold_back = !settled;
    if (hold_back) {
      ASSIGN_OR_RETURN(settle, ClockCursorText(conn, cursor_col, opt.cursor_time_zone, -1));
      ASSIGN_OR_RETURN(bool ahead, CursorAfter(conn, high[0], ahead_of_clock));
      if (ahead) future_from = ahead_of_clock;
    }
  }
  if (!p.watermark.empty()) {
    ASSIGN_OR_RETURN(bool wm_ahead, CursorAfter(conn, p.watermark[0], ahead_of_clock));
    if (wm_ahead)
      LogWarning("incremental: {}: the watermark {} is ahead of the server's clock ({}): rows with earlier cursor "
                 "values are not read; `sluice resnapshot --config FILE {}` reads the table again",
                 name, KeyText(schema, wm, p.watermark), ahead_of_clock, name);
  }
  p.run_high = high;
  const Op op = opt.write == WritePolicy::kAppend ? Op::kCreate : Op::kRead;
  const SourceInfo src = MakeSource(options, /*backfill=*/false);
  PageQuery base;
  base.table = QualifiedTable(schema);
  base.select_list = SelectList(schema);
  base.order = QuotedColumns(schema, wm);
  uint64_t reread = 0;
  if (opt.lookback_seconds > 0 && !p.watermark.empty()) {
    // Late commits: rows within the lookback window at or before the watermark, read again
    // without moving it.
    PageQuery lb = base;
    lb.cursor_floor = LookbackFloor(conn.Quote(p.watermark[0]), opt.lookback_seconds);
    if (cursor_alone(p.watermark)) {
      ASSIGN_OR_RETURN(lb.cursor_below, KeyLiteral(conn, cursor_col, p.watermark[0]));
    } else {
      ASSIGN_OR_RETURN(lb.upper, KeyTuple(conn, wm_schema, p.watermark, /*standalone=*/false));
      ASSIGN_OR_RETURN(lb.upper_first, KeyLiteral(conn, cursor_col, p.watermark[0]));
    }
    // Not out of max_rows: a window holding max_rows rows or more would use all of every
    // run's budget, and the watermark would never move again (a new user's probe).
    uint64_t unbounded = std::numeric_limits<uint64_t>::max();
    RETURN_IF_ERROR(ReadPages(conn, schema, wm_schema, lb, {}, options.fetch_rows, &unbounded, options.stop,
                              [&](std::vector<Row> rows, const KeyTexts&) -> Status {
                                reread += rows.size();
                                return ApplyPage(sink, t.schema, std::move(rows), op, src, ckpt);
                              }));
    if (Stopping(options.stop)) return snap->Finish();
  }
  if (!high.empty()) {
    if (hold_back) {
      ASSIGN_OR_RETURN(base.cursor_below, KeyLiteral(conn, cursor_col, settle));
    } else {
      ASSIGN_OR_RETURN(base.upper, KeyTuple(conn, wm_schema, high, /*standalone=*/false));
      ASSIGN_OR_RETURN(base.upper_first, KeyLiteral(conn, cursor_col, high[0]));
    }
    KeyTexts after = p.watermark;
    if (cursor_alone(after)) {  // cursor >= the backfill's H cursor, any key
      ASSIGN_OR_RETURN(base.cursor_floor, KeyLiteral(conn, cursor_col, after[0]));
      after.clear();
    }
    RETURN_IF_ERROR(ReadPages(conn, schema, wm_schema, base, after, options.fetch_rows, &budget,
                              options.stop, [&](std::vector<Row> rows, const KeyTexts& last) -> Status {
                                const IncrementalProgress before = p;
                                const size_t n = rows.size();
                                p.watermark = last;
                                Status st = ApplyPage(sink, t.schema, std::move(rows), op, src, ckpt);
                                if (!st.ok()) p = before;
                                read += n;
                                return st;
                              }));
  }
  if (!future_from.empty() && !Stopping(options.stop)) {
    // Rows dated ahead of the clock (a wrong clock or time zone where they were written):
    // delivered by every run until the clock passes them, the watermark left where it is.
    PageQuery fut = base;
    fut.upper.clear();
    fut.cursor_below.clear();
    ASSIGN_OR_RETURN(fut.cursor_floor, KeyLiteral(conn, cursor_col, future_from));
    uint64_t unbounded = std::numeric_limits<uint64_t>::max();
    RETURN_IF_ERROR(ReadPages(conn, schema, wm_schema, fut, {}, options.fetch_rows, &unbounded, options.stop,
                              [&](std::vector<Row> rows, const KeyTexts&) -> Status {
                                future += rows.size();
                                return ApplyPage(sink, t.schema, std::move(rows), op, src, ckpt);
                              }));
    LogWarning("incremental: {}: {} row(s) have cursor values ahead of the server's clock (from {} to {}): they are "
               "delivered by every run until the clock passes them, and the watermark does not move past the "
               "clock (check the clock and time zone of what writes {})",
               name, future, future_from, high[0], QuoteIdentifier(cursor_col.name));
  }
  if (Stopping(options.stop)) return snap->Finish();
  ++p.runs;
  RETURN_IF_ERROR(sink.SaveCheckpoint(ckpt.ToJson()));
  LogInfo("incremental: {}: {} new or changed rows{} in {:.2f} s, watermark {}{}", name, read,
          opt.lookback_seconds > 0 ? fmt::format(" (and {} read again in the {} s lookback)", reread, opt.lookback_seconds)
                                   : std::string(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
          p.watermark.empty() ? "(none)" : KeyText(schema, wm, p.watermark),
          budget == 0 ? fmt::format("; max_rows ({}) reached, the next run continues", opt.max_rows)
          : hold_back ? fmt::format("; rows with cursor values from {} on are left for the next run (they may "
                                    "still be committing)",
                                    settle)
                      : std::string());
  return snap->Finish();
}

// A fingerprint of what the reads and the sink table depend on: every column's name, type
// and collation, a generated column's kind and expression (a new expression changes every
// row's value and no cursor: a new user's probe kept the old values for good), the primary
// key and the cursor (FNV-1a, 64 bits, in hex). Columns that are not generated add nothing
// more, so that the fingerprints stored before the expression was part of it still match.
std::string IncrementalDefinition(const TableSchema& schema, const std::string& cursor) {
  std::string text;
  for (const ColumnDesc& c : schema.columns) {
    text += c.name + '\0' + c.column_type + '\0' + c.collation + '\0' + (c.nullable ? "1" : "0");
    if (c.generated != GeneratedKind::kNone)
      text += std::string(c.generated == GeneratedKind::kStored ? "\0stored\0" : "\0virtual\0") + c.generation_expression;
    text += '\n';
  }
  for (size_t k : schema.primary_key) text += std::to_string(k) + ',';
  text += '\n' + cursor;
  return fmt::format("{:016x}", Fnv1a64(text));
}

}  // namespace

Status RunIncremental(const IncrementalRunOptions& options, Connection& meta,
                      const std::vector<IncrementalTableOptions>& tables, Checkpoint& ckpt, Sink& sink) {
  // Check every table before reading any: a bad cursor is a config error, found at once.
  std::vector<TableRun> runs;
  for (const IncrementalTableOptions& opt : tables) {
    ASSIGN_OR_RETURN(TableSchema loaded, LoadTableSchema(meta, opt.name.db, opt.name.table));
    auto schema = std::make_shared<const TableSchema>(std::move(loaded));
    if (!schema->has_primary_key())
      return Status::InvalidArgument(fmt::format(
          "{}: mode \"{}\" needs a primary key (rows are read in key order and resumed after the last "
          "key copied); {} has none: add one, or use mode = \"cdc\"",
          opt.config_key, TableModeName(opt.mode), schema->QualifiedName()));
    TableRun run{opt, schema, 0, nullptr};
    if (opt.mode == TableMode::kIncremental) {
      ASSIGN_OR_RETURN(run.cursor, ChooseCursor(*schema, opt.cursor, opt.config_key));
      RETURN_IF_ERROR(CheckCursorTimeZone(meta, schema->columns[run.cursor], opt));
    }
    runs.push_back(std::move(run));
  }
  for (TableRun& t : runs) {
    const std::string name = t.schema->QualifiedName();
    IncrementalProgress& p = ckpt.incremental[name];
    const std::string definition = IncrementalDefinition(
        *t.schema, t.opt.mode == TableMode::kIncremental ? t.schema->columns[t.cursor].name : std::string());
    // Starting over: another mode; another definition (a column added, dropped, renamed or
    // retyped, another primary key or cursor: rows already copied may no longer be what the
    // source holds, and the sink table may no longer fit); or `sluice resnapshot`.
    std::string why;
    if (!p.mode.empty() && p.mode != TableModeName(t.opt.mode))
      why = fmt::format("mode changed from \"{}\" to \"{}\"", p.mode, TableModeName(t.opt.mode));
    else if (p.mode.empty() && options.were_cdc.count(name))
      // Streamed until now (a new user's probe: rows deleted at the source after the last
      // checkpoint stayed in the sink for good, as the first read in the new mode only upserts).
      why = fmt::format("mode changed from \"cdc\" to \"{}\"", TableModeName(t.opt.mode));
    else if (p.restart)
      why = "a re-read was requested (sluice resnapshot)";
    else if (!p.definition.empty() && p.definition != definition && p.mode != "snapshot_only")
      why = "its columns, their types, its primary key or its cursor changed since the last run";
    const bool left_alone = why.empty() && t.opt.mode == TableMode::kSnapshotOnly && p.backfill_done;
    p.mode = TableModeName(t.opt.mode);
    t.progress = &p;
    if (!why.empty()) {
      p = IncrementalProgress{};
      p.mode = TableModeName(t.opt.mode);
      p.definition = definition;
      // upsert: the sink table mirrors the source, so it is replaced by an empty one of the
      // current definition (with the checkpoint saying so, in one step). append: its rows
      // are a history and stay, unless the table no longer fits the definition.
      bool replace = t.opt.write == WritePolicy::kUpsert;
      if (!replace) {
        Status fits = sink.PrepareTable(*t.schema);
        if (!fits.ok() && fits.code() != StatusCode::kFailedPrecondition) return fits.WithContext(name);
        replace = !fits.ok();
        if (replace)
          LogWarning("{}: write \"append\": its sink table no longer fits the table ({}): it is replaced, and the "
                     "rows it held are dropped",
                     name, fits.message());
      }
      LogInfo("{}: {}: starting over{}", name, why, replace ? ", its sink table replaced" : "");
      if (replace) {
        const SchemaChange reset = ReplaceTableChange(t.schema, name + " read again from the start (" + why + ")",
                                                      MakeSource(options, /*backfill=*/true));
        Status st = sink.ApplySchemaChanges({reset}, ckpt.ToJson());
        if (!st.ok()) return st.WithContext(name);
      } else {
        RETURN_IF_ERROR(sink.SaveCheckpoint(ckpt.ToJson()));
      }
    } else if (!left_alone) {
      // A snapshot_only table already copied is not written again: its sink table is left as
      // it is, whatever the source table became.
      RETURN_IF_ERROR(sink.PrepareTable(*t.schema));
      p.definition = definition;
    }
    if (t.opt.mode == TableMode::kIncremental) {
      const ColumnDesc& c = t.schema->columns[t.cursor];
      LogInfo("incremental: {}: cursor {} ({}{}), write {}, lookback {} s{}; cannot see deletes, nor updates "
              "that do not advance {} (docs/incremental.md)",
              name, QuoteIdentifier(c.name), c.column_type.empty() ? c.data_type : c.column_type,
              c.type == SqlType::kTimestamp ? ", compared in UTC" : "", WritePolicyName(t.opt.write),
              t.opt.lookback_seconds,
              t.opt.max_rows > 0 ? fmt::format(", max_rows {}", t.opt.max_rows) : std::string(),
              QuoteIdentifier(c.name));
      if (p.runs == 0) {
        ASSIGN_OR_RETURN(IndexAdvice advice, AdviseIndex(meta, *t.schema, t.cursor));
        if (advice.plan_uses_index)
          LogInfo("incremental: {}: index {} serves the paging order (EXPLAIN: {})", name,
                  QuoteIdentifier(advice.index_name), advice.explain);
        else if (advice.has_index)
          LogWarning("incremental: {}: index {} begins with the cursor and the primary key, but the server "
                     "does not plan the paging query with it: it reads and sorts all matching rows (EXPLAIN: "
                     "{}); the optimizer may prefer that while the table is small",
                     name, QuoteIdentifier(advice.index_name), advice.explain);
        else
          LogWarning("incremental: {}: no index begins with the cursor and the primary key, so every paging "
                     "query reads and sorts all matching rows (EXPLAIN: {}); add one: {}",
                     name, advice.explain, advice.create_index);
      }
    }
    Status st = RunTable(options, t, ckpt, sink);
    if (!st.ok()) return st.WithContext(name);
    if (Stopping(options.stop)) return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace sluice
