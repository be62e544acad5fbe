#include "cli/verify.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "cli/compare.h"
#include "mysql/key_literal.h"
#include "mysql/server_probe.h"
#include "schema/text_value.h"
#include "sink/sqlite_sink.h"

namespace sluice::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Candidates beyond this many per table are counted but not re-checked one by one.
constexpr size_t kMaxCandidates = 100000;
// Keys per source query when re-reading candidates.
constexpr size_t kKeysPerQuery = 500;
// A replica checkpoint that has not moved for this long: no pipeline is running.
constexpr auto kIdleAfter = std::chrono::seconds(2);

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser: spreads hash bits before summing
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The ORDER BY that reads the source in the order the replica keeps its keys: SQLite compares
// the TEXT it stores (text, ENUM, SET, DECIMAL, TIME, UUID and INET values) by their UTF-8
// bytes, not under the source column's collation or type. Those key columns are ordered by
// the same bytes on the server (a sort there, as the index's order is not this one); integer,
// date and binary keys keep their index order, which both sides share. Without it a
// case-insensitive VARCHAR key cut the replica into other ranges than the source, and a large
// table was reported DIFFERENT when it was equal (more than kMaxCandidates rows seemed to move).
// Unsigned 64-bit keys (BIGINT UNSIGNED, BIT(64)) above 2^63-1 are TEXT in the replica (the
// sink's mapping), which SQLite sorts after every INTEGER and by its digits: `texts_above`
// holds the key columns that have such values (Verifier::Table asks the server), ordered so.
bool MayExceedInt64(const ColumnDesc& c) {
  return (c.type == SqlType::kBit && c.numeric_precision > 63) || (c.type == SqlType::kBigInt && c.is_unsigned);
}

constexpr const char* kInt64Max = "9223372036854775807";

std::string ReplicaKeyOrder(const TableSchema& t, const std::vector<bool>& texts_above) {
  std::string out;
  for (size_t k = 0; k < t.primary_key.size(); ++k) {
    const ColumnDesc& c = t.columns[t.primary_key[k]];
    const std::string q = QuoteIdentifier(c.name);
    if (k > 0) out += ", ";
    if (texts_above[k]) {
      out += fmt::format("{0} + 0 > {1}, IF({0} + 0 > {1}, CAST(CAST({0} + 0 AS CHAR) AS BINARY), NULL), {0}", q,
                         kInt64Max);
    } else if (HasCharset(c.type) && c.charset != "binary") {
      out += "CAST(CONVERT(" + q + " USING utf8mb4) AS BINARY)";
    } else if (c.type == SqlType::kDecimal || c.type == SqlType::kTime || IsFixedBinaryTextType(c.type)) {
      out += "CAST(CAST(" + SnapshotSelectExpr(c) + " AS CHAR) AS BINARY)";  // the text the sink stores
    } else {
      out += q;
    }
  }
  return out;
}

// The canonical text of a whole row, kinds included (Int(5) is not Text("5")).
std::string RowText(const Row& row) {
  std::string s;
  for (const Value& v : row) {
    s += v.DebugString();
    s.push_back('\x1f');
  }
  return s;
}

// The same identity as RowText (and Value ==, up to 0.0 == -0.0, which only costs a re-read),
// in raw bytes: this runs for every row of both sides.
uint64_t RowHash(const Row& row) {
  thread_local std::string buf;
  buf.clear();
  auto put = [](const void* p, size_t n) { buf.append(static_cast<const char*>(p), n); };
  for (const Value& v : row) {
    buf.push_back(static_cast<char>(v.kind));
    switch (v.kind) {
      case Value::Kind::kNull:
      case Value::Kind::kAbsent: break;
      case Value::Kind::kInt: put(&v.i, sizeof v.i); break;
      case Value::Kind::kUInt: put(&v.u, sizeof v.u); break;
      case Value::Kind::kFloat:
      case Value::Kind::kDouble: {
        double d = v.d != v.d ? std::numeric_limits<double>::quiet_NaN() : v.d;
        put(&d, sizeof d);
        break;
      }
      case Value::Kind::kText:
      case Value::Kind::kBytes: {
        uint64_t n = v.s.size();
        put(&n, sizeof n);
        buf += v.s;
        break;
      }
    }
  }
  return Mix(std::hash<std::string_view>{}(buf));
}

struct Checksum {
  uint64_t rows = 0;
  uint64_t sum = 0;  // order-independent: the two sides may return rows in different orders
  void Add(const Row& r) {
    ++rows;
    sum += RowHash(r);
  }
  friend bool operator==(const Checksum&, const Checksum&) = default;
};

Row KeyOf(const Row& row, const TableSchema& t) {
  Row key;
  for (size_t i : t.primary_key) key.push_back(row[i]);
  return key;
}

// "id=42" / "a=1, b=x" / "k=0x0102": how a person names the row.
std::string KeyName(const Row& key, const TableSchema& t) {
  std::string out;
  for (size_t j = 0; j < key.size(); ++j) {
    if (!out.empty()) out += ", ";
    std::string v;
    if (key[j].is_null()) {
      v = "NULL";
    } else if (key[j].kind == Value::Kind::kBytes) {
      v = "0x";
      for (unsigned char c : key[j].s) v += fmt::format("{:02x}", c);
    } else {
      // A value of another kind than the column's own (the replica's TEXT '3000' in an
      // integer key, a REAL) is shown with its kind, so that it is not taken for one.
      const ColumnDesc& col = t.columns[t.primary_key[j]];
      auto own = ValueFromText(col, key[j].ToText());
      v = PrintableText(own.ok() && *own == key[j] ? key[j].ToText() : key[j].DebugString());
    }
    out += t.columns[t.primary_key[j]].name + "=" + v;
  }
  return out;
}

// "" when equal, else what differs.
std::string RowDifference(const std::optional<Row>& src, const std::optional<Row>& rep,
                          const TableSchema& t) {
  if (!src && !rep) return "";
  if (!rep) return "missing in the replica";
  if (!src) return "extra in the replica (not in the source)";
  return PrintableText(ColumnDifferences(*src, *rep, t, 80));
}

Status BindValue(sqlite3_stmt* s, int index, const Value& v) {
  int rc = SQLITE_OK;
  switch (v.kind) {
    case Value::Kind::kNull:
    case Value::Kind::kAbsent: rc = sqlite3_bind_null(s, index); break;
    case Value::Kind::kInt: rc = sqlite3_bind_int64(s, index, v.i); break;
    case Value::Kind::kUInt:
      if (v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        rc = sqlite3_bind_int64(s, index, static_cast<int64_t>(v.u));
      } else {
        std::string text = std::to_string(v.u);  // as the sink stores it
        rc = sqlite3_bind_text64(s, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      break;
    case Value::Kind::kFloat:
    case Value::Kind::kDouble: rc = sqlite3_bind_double(s, index, v.d); break;
    case Value::Kind::kText:
      rc = sqlite3_bind_text64(s, index, v.s.data(), v.s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case Value::Kind::kBytes: rc = sqlite3_bind_blob64(s, index, v.s.data(), v.s.size(), SQLITE_TRANSIENT); break;
  }
  if (rc != SQLITE_OK) return Status::Internal(fmt::format("sqlite bind: {}", sqlite3_errstr(rc)));
  return Status::Ok();
}

using StmtPtr = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

// The replica, read-only. One table prepared at a time.
class Replica {
 public:
  static Result<std::unique_ptr<Replica>> Open(const std::string& path) {
    Result<sqlite3*> db = OpenSqliteReader(path);
    if (!db.ok()) return Status::InvalidArgument(db.status().message());
    return std::unique_ptr<Replica>(new Replica(*db, path));
  }
  ~Replica() { sqlite3_close_v2(db_); }  // v2: also when a statement outlives it

  Result<StmtPtr> Prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      return Status::InvalidArgument(fmt::format("replica {}: {}: {}", path_, sql, sqlite3_errmsg(db_)));
    return StmtPtr(s, sqlite3_finalize);
  }

  // The stored checkpoint, if any (no table yet: none).
  std::optional<Checkpoint> LoadCheckpoint() {
    auto text = sluice::ReadSqliteCheckpoint(db_);
    if (!text.ok() || !*text) return std::nullopt;
    auto c = Checkpoint::FromJson(**text);
    if (!c.ok()) return std::nullopt;
    return std::move(c).value();
  }

  // Sets up `t`; a non-empty result is a table-level problem (no table, missing columns).
  Result<std::string> Use(const TableSchema& t) {
    table_ = &t;
    name_ = SqliteTableName(t);
    std::vector<std::string> cols;
    {
      ASSIGN_OR_RETURN(StmtPtr info, Prepare("SELECT name FROM pragma_table_info(?)"));
      sqlite3_bind_text(info.get(), 1, name_.c_str(), -1, SQLITE_TRANSIENT);
      while (sqlite3_step(info.get()) == SQLITE_ROW)
        cols.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 0)));
    }
    if (cols.empty()) return fmt::format("the replica has no table {}", SqliteQuote(name_));
    std::string missing;
    for (const auto& c : t.columns)
      if (std::find(cols.begin(), cols.end(), c.name) == cols.end())
        missing += (missing.empty() ? "" : ", ") + c.name;
    if (!missing.empty()) return fmt::format("replica table {} has no column {}", SqliteQuote(name_), missing);
    select_.clear();
    for (const auto& c : t.columns) select_ += (select_.empty() ? "" : ", ") + SqliteQuote(c.name);
    key_cols_.clear();
    key_marks_.clear();
    for (size_t j = 0; j < t.primary_key.size(); ++j) {
      key_cols_ += (j ? ", " : "") + SqliteQuote(t.columns[t.primary_key[j]].name);
      key_marks_ += j ? ", ?" : "?";
    }
    if (t.primary_key.size() > 1) {
      key_cols_ = "(" + key_cols_ + ")";
      key_marks_ = "(" + key_marks_ + ")";
    }
    point_.reset();
    return std::string();
  }

  // Rows with key > lower (if any) and <= upper (if any); every row without bounds.
  Status ReadRange(const std::optional<Row>& lower, const std::optional<Row>& upper,
                   const std::function<void(Row)>& on_row) {
    std::string sql = "SELECT " + select_ + " FROM " + SqliteQuote(name_);
    if (lower || upper) sql += " WHERE ";
    if (lower) sql += key_cols_ + " > " + key_marks_;
    if (lower && upper) sql += " AND ";
    if (upper) sql += key_cols_ + " <= " + key_marks_;
    ASSIGN_OR_RETURN(StmtPtr s, Prepare(sql));
    int index = 1;
    for (const auto* bound : {&lower, &upper})
      if (*bound)
        for (const Value& v : **bound) RETURN_IF_ERROR(BindValue(s.get(), index++, v));
    return Step(s.get(), on_row);
  }

  // The replica's row with `key` (IS: a NULL in a key, which SQLite allows outside INTEGER
  // PRIMARY KEY, is found too) and how many rows hold it (more than one: the replica is not
  // the source's table whatever their values).
  Result<std::optional<Row>> ReadKey(const Row& key, size_t* count) {
    if (!point_) {
      ASSIGN_OR_RETURN(StmtPtr s, Prepare("SELECT " + select_ + " FROM " + SqliteQuote(name_) + " WHERE " +
                                          key_cols_ + " IS " + key_marks_));
      point_.emplace(std::move(s));
    }
    sqlite3_stmt* s = point_->get();
    sqlite3_reset(s);
    for (size_t j = 0; j < key.size(); ++j) RETURN_IF_ERROR(BindValue(s, static_cast<int>(j) + 1, key[j]));
    std::optional<Row> found;
    *count = 0;
    RETURN_IF_ERROR(Step(s, [&](Row r) {
      ++*count;
      found = std::move(r);
    }));
    return found;
  }

 private:
  Replica(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  std::string ErrorText(const char* what) {
    return fmt::format("replica {}: {} {}: {}", path_, what, name_, sqlite3_errmsg(db_));
  }
  Status Step(sqlite3_stmt* s, const std::function<void(Row)>& on_row) {
    int rc;
    const size_t n = table_->columns.size();
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Row row;
      row.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        ASSIGN_OR_RETURN(Value v, ReplicaValue(s, static_cast<int>(i), table_->columns[i]));
        row.push_back(std::move(v));
      }
      on_row(std::move(row));
    }
    if (rc != SQLITE_DONE) return Status::Unavailable(ErrorText("reading"));
    return Status::Ok();
  }

  sqlite3* db_;
  std::string path_;
  const TableSchema* table_ = nullptr;
  std::string name_, select_, key_cols_, key_marks_;
  std::optional<StmtPtr> point_;
};

class Verifier {
 public:
  Verifier(const VerifyOptions& o, Connection& conn, Replica& replica, uint32_t server_id)
      : o_(o), conn_(conn), replica_(replica), server_id_(server_id) {}

  Result<VerifiedTable> Table(const TableSchema& t) {
    VerifiedTable out;
    out.table = t.QualifiedName();
    from_ = fmt::format("{}.{}", QuoteIdentifier(t.db), QuoteIdentifier(t.table));
    select_.clear();
    for (const auto& c : t.columns) select_ += (select_.empty() ? "" : ", ") + SnapshotSelectExpr(c);
    ASSIGN_OR_RETURN(out.problem, replica_.Use(t));
    if (!out.problem.empty()) {
      ASSIGN_OR_RETURN(QueryResult n, conn_.Query("SELECT COUNT(*) FROM " + from_));
      out.source_rows = n.rows.empty() || !n.rows[0][0] ? 0 : std::stoull(*n.rows[0][0]);
      return out;
    }
    if (t.has_primary_key()) {
      // (An index range scan for the first key column: nothing read when there are none.)
      texts_above_.assign(t.primary_key.size(), false);
      for (size_t k = 0; k < t.primary_key.size(); ++k) {
        const ColumnDesc& c = t.columns[t.primary_key[k]];
        if (!MayExceedInt64(c)) continue;
        ASSIGN_OR_RETURN(QueryResult above, conn_.Query(fmt::format("SELECT 1 FROM {} WHERE {} > {} LIMIT 1", from_,
                                                                    QuoteIdentifier(c.name), kInt64Max)));
        texts_above_[k] = !above.rows.empty();
      }
      RETURN_IF_ERROR(ByRanges(t, &out));
    } else {
      RETURN_IF_ERROR(WholeTable(t, &out));
    }
    return out;
  }

 private:
  struct Candidate {
    Row key;
    std::string what;
    uint64_t seen = 0;  // the order it was found in: the source's key order, range by range
  };

  Result<Row> SourceRow(const TableSchema& t, const std::vector<TextCellView>& cells) {
    Row row;
    row.reserve(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, ValueFromText(t.columns[i], cells[i]));
      row.push_back(std::move(v));
    }
    return row;
  }

  Status ByRanges(const TableSchema& t, VerifiedTable* out) {
    std::map<std::string, Candidate> candidates;
    uint64_t overflow = 0;
    // The replica side of a range (read, checksum, narrow down) runs on a second thread while
    // the source goes on streaming the next range; at most one range is in flight, so
    // `candidates` and `out` have one writer at a time.
    auto check = [&](std::vector<Row> chunk, std::optional<Row> lower, std::optional<Row> upper) -> Status {
      Checksum src, rep;
      for (const Row& r : chunk) src.Add(r);
      std::vector<Row> replica_rows;
      RETURN_IF_ERROR(replica_.ReadRange(lower, upper, [&](Row r) {
        rep.Add(r);
        replica_rows.push_back(std::move(r));
      }));
      ++out->ranges;
      out->source_rows += src.rows;
      out->replica_rows += rep.rows;
      if (src == rep) return Status::Ok();
      ++out->differing_ranges;
      // Narrow the range down to its rows, matched by key.
      std::map<std::string, const Row*> by_key;
      auto note = [&](const Row& key, std::string what) {
        ++out->candidates;
        if (candidates.size() >= kMaxCandidates) {
          ++overflow;
          return;
        }
        candidates.emplace(RowText(key), Candidate{key, std::move(what), out->candidates});
      };
      for (const Row& r : replica_rows)
        if (!by_key.emplace(RowText(KeyOf(r, t)), &r).second) note(KeyOf(r, t), "more than one row in the replica");
      for (const Row& s : chunk) {
        Row key = KeyOf(s, t);
        auto it = by_key.find(RowText(key));
        std::string what = RowDifference(s, it == by_key.end() ? std::nullopt : std::optional<Row>(*it->second), t);
        if (it != by_key.end()) by_key.erase(it);
        if (!what.empty()) note(key, std::move(what));
      }
      for (const auto& [k, r] : by_key) note(KeyOf(*r, t), RowDifference(std::nullopt, *r, t));
      return Status::Ok();
    };
    std::future<Status> in_flight;
    auto wait = [&]() -> Status {
      if (!in_flight.valid()) return Status::Ok();
      return in_flight.get();
    };
    std::vector<Row> chunk;
    std::optional<Row> lower;
    auto flush = [&](bool last) -> Status {
      RETURN_IF_ERROR(wait());
      std::optional<Row> upper;
      if (!last) upper = KeyOf(chunk.back(), t);
      in_flight = std::async(std::launch::async, check, std::move(chunk), lower, upper);
      chunk = {};
      lower = std::move(upper);
      return Status::Ok();
    };
    std::string sql = fmt::format("SELECT {} FROM {} ORDER BY {}", select_, from_, ReplicaKeyOrder(t, texts_above_));
    Status streamed = conn_.QueryStream(sql, [&](const std::vector<TextCellView>& cells) -> Status {
      ASSIGN_OR_RETURN(Row row, SourceRow(t, cells));
      // A full range is closed when the next key arrives, so the table's last range is a
      // full one too and reaches past the last source key (replica rows beyond it).
      if (chunk.size() >= o_.chunk_rows) RETURN_IF_ERROR(flush(false));
      chunk.push_back(std::move(row));
      return Status::Ok();
    }, nullptr);
    if (!streamed.ok()) {
      (void)wait();
      return streamed;
    }
    RETURN_IF_ERROR(flush(true));
    RETURN_IF_ERROR(wait());
    RETURN_IF_ERROR(Settle(t, &candidates));
    out->differing = candidates.size() + overflow;
    out->unchecked = overflow;
    std::vector<const Candidate*> listed;
    for (const auto& [k, c] : candidates) listed.push_back(&c);
    std::sort(listed.begin(), listed.end(), [](const Candidate* a, const Candidate* b) { return a->seen < b->seen; });
    for (const Candidate* c : listed) {
      if (out->rows.size() >= o_.max_reported) {
        out->rows.push_back(fmt::format("... and {} more rows that differ (not listed)", candidates.size() - o_.max_reported));
        break;
      }
      out->rows.push_back(KeyName(c->key, t) + ": " + c->what);
    }
    return Status::Ok();
  }

  // Re-reads the candidates on both sides until their differences are stable (module comment).
  Status Settle(const TableSchema& t, std::map<std::string, Candidate>* candidates) {
    std::map<std::string, std::string> previous;
    for (int round = 1; round <= o_.rounds && !candidates->empty(); ++round) {
      std::map<std::string, Row> src;
      std::vector<const Candidate*> list;
      for (const auto& [k, c] : *candidates) list.push_back(&c);
      // A key the source's columns cannot hold (a NULL, 'c' for ENUM('a','b'), text a latin1
      // column cannot store: replica rows only) is not looked up: no source row has it.
      std::vector<std::string> tuples;
      for (const Candidate* c : list) {
        std::vector<std::string> texts;
        bool null = false;
        for (const Value& v : c->key) {
          null |= v.is_null();
          texts.push_back(v.ToText());
        }
        auto tuple = null ? Result<std::string>(Status::InvalidArgument("NULL key")) : KeyTuple(conn_, t, texts, false);
        if (tuple.ok()) tuples.push_back(std::move(tuple).value());
      }
      auto lookup = [&](const std::string& in) -> Status {
        std::string sql = fmt::format("SELECT {} FROM {} WHERE {} IN ({})", select_, from_, KeyColumnsTuple(t), in);
        return conn_.QueryStream(sql, [&](const std::vector<TextCellView>& cells) -> Status {
          ASSIGN_OR_RETURN(Row row, SourceRow(t, cells));
          src.emplace(RowText(KeyOf(row, t)), std::move(row));
          return Status::Ok();
        }, nullptr);
      };
      for (size_t i = 0; i < tuples.size(); i += kKeysPerQuery) {
        std::string in;
        for (size_t j = i; j < tuples.size() && j < i + kKeysPerQuery; ++j) in += (in.empty() ? "" : ", ") + tuples[j];
        Status st = lookup(in);
        if (st.ok() || st.code() == StatusCode::kUnavailable) {
          RETURN_IF_ERROR(st);
          continue;
        }
        // The server refused a literal (e.g. 1267, a mix of collations for text the column's
        // character set cannot hold): one key at a time; a key it refuses is not in the source.
        for (size_t j = i; j < tuples.size() && j < i + kKeysPerQuery; ++j) {
          Status one = lookup(tuples[j]);
          if (one.code() == StatusCode::kUnavailable) return one;
        }
      }
      const bool caught_up = WaitForReplica();
      std::map<std::string, Candidate> still;
      std::map<std::string, std::string> now;
      for (const auto& [k, c] : *candidates) {
        size_t copies = 0;
        ASSIGN_OR_RETURN(std::optional<Row> rep, replica_.ReadKey(c.key, &copies));
        auto s = src.find(k);
        std::string what = copies > 1 ? fmt::format("{} rows in the replica", copies)
                                      : RowDifference(s == src.end() ? std::nullopt : std::optional<Row>(s->second), rep, t);
        if (what.empty()) continue;
        now[k] = what;
        still.emplace(k, Candidate{c.key, std::move(what), c.seen});
      }
      *candidates = std::move(still);
      if (caught_up && now == previous) break;  // the same differences with the replica caught up
      previous = std::move(now);
      if (round < o_.rounds) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return Status::Ok();
  }

  // Tables without a key: whole-table checksums, re-read until equal or the rounds run out.
  Status WholeTable(const TableSchema& t, VerifiedTable* out) {
    for (int round = 1; round <= std::max(1, o_.rounds); ++round) {
      Checksum src, rep;
      RETURN_IF_ERROR(conn_.QueryStream(fmt::format("SELECT {} FROM {}", select_, from_),
                                        [&](const std::vector<TextCellView>& cells) -> Status {
                                          ASSIGN_OR_RETURN(Row row, SourceRow(t, cells));
                                          src.Add(row);
                                          return Status::Ok();
                                        }, nullptr));
      (void)WaitForReplica();
      RETURN_IF_ERROR(replica_.ReadRange(std::nullopt, std::nullopt, [&](Row r) { rep.Add(r); }));
      out->ranges = 1;
      out->source_rows = src.rows;
      out->replica_rows = rep.rows;
      if (src == rep) {
        out->differing = 0;
        out->problem.clear();
        return Status::Ok();
      }
      out->differing_ranges = 1;
      out->problem = fmt::format("the table differs (source {} rows, replica {}); it has no primary key, so the "
                                 "differing rows cannot be named (`sluice compare` lists them)",
                                 src.rows, rep.rows);
      if (round < o_.rounds) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return Status::Ok();
  }

  // Waits (while the replica's checkpoint moves, up to settle_seconds) until the replica
  // has applied everything up to the source's current binlog position. True when it has.
  bool WaitForReplica() {
    auto pos = ReadBinlogPosition(conn_);
    if (!pos.ok()) return false;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(o_.settle_seconds));
    auto last_change = Clock::now();
    std::string last_seen;
    while (true) {
      auto ckpt = replica_.LoadCheckpoint();
      if (!ckpt) return false;
      // Positions of another server (after a failover) cannot be compared.
      if (ckpt->source.known() && ckpt->source.server_id != server_id_) return false;
      if (!ckpt->stream_start.empty() && ComparePositions(ckpt->stream_start, *pos) >= 0) return true;
      if (idle_) return false;
      std::string seen = ckpt->stream_start.ToString();
      if (seen != last_seen) {
        last_seen = seen;
        last_change = Clock::now();
      }
      if (Clock::now() - last_change > kIdleAfter) {
        idle_ = true;  // no pipeline is moving it: do not wait in later rounds
        return false;
      }
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  const VerifyOptions& o_;
  Connection& conn_;
  Replica& replica_;
  uint32_t server_id_;
  bool idle_ = false;
  std::string from_, select_;
  std::vector<bool> texts_above_;  // per key column: values above 2^63-1 (ReplicaKeyOrder)
};

}  // namespace

Result<std::vector<VerifiedTable>> VerifyTables(const VerifyOptions& options) {
  if (options.chunk_rows == 0) return Status::InvalidArgument("verify: chunk_rows must be at least 1");
  ASSIGN_OR_RETURN(auto conn, Connection::Connect(options.source));
  RETURN_IF_ERROR(conn->Execute("SET time_zone = '+00:00'"));
  ASSIGN_OR_RETURN(auto tables, ListTables(*conn, options.filter));
  ASSIGN_OR_RETURN(QueryResult id, conn->Query("SELECT @@server_id"));
  uint32_t server_id = id.rows.empty() || !id.rows[0][0] ? 0 : static_cast<uint32_t>(std::stoul(*id.rows[0][0]));
  ASSIGN_OR_RETURN(auto replica, Replica::Open(options.sqlite_path));
  Verifier verifier(options, *conn, *replica, server_id);
  // Tables the run is copying (again) have rows missing or old until their copy ends: said,
  // not compared (a new user's probe saw a table being re-read reported as 32800 rows
  // differing).
  const std::optional<Checkpoint> ckpt = replica->LoadCheckpoint();
  auto copying = [&](const std::string& name) -> std::string {
    if (!ckpt) return "";
    if (std::find(ckpt->rereading.begin(), ckpt->rereading.end(), name) != ckpt->rereading.end())
      return "being copied again (an online re-read is under way)";
    if (!ckpt->snapshot_done) {
      auto it = ckpt->tables.find(name);
      if (it == ckpt->tables.end() || !it->second.done) return "being copied (its snapshot or re-read is under way)";
    }
    return "";
  };
  std::vector<VerifiedTable> out;
  for (const auto& name : tables) {
    // A table read without the binlog differs from the source by design between runs (rows
    // changed since, rows deleted): verify's wait for the replica to catch up means nothing
    // for it. A new user's probe got "OK" from verify for such a table whose rows had been
    // changed and deleted in the replica by hand, every time.
    const IncrementalProgress* inc = nullptr;
    if (ckpt) {
      auto it = ckpt->incremental.find(name.QualifiedName());
      if (it != ckpt->incremental.end()) inc = &it->second;
    }
    if (inc) {
      VerifiedTable v;
      v.table = name.QualifiedName();
      v.not_streamed = fmt::format("read without the binlog (mode {}): not verified, as the replica holds it as of "
                                   "the last run and keeps deleted rows; `sluice compare` right after a run compares it",
                                   inc->mode.empty() ? "incremental" : inc->mode);
      out.push_back(std::move(v));
      continue;
    }
    if (std::string why = copying(name.QualifiedName()); !why.empty()) {
      VerifiedTable v;
      v.table = name.QualifiedName();
      v.copying = std::move(why);
      out.push_back(std::move(v));
      continue;
    }
    ASSIGN_OR_RETURN(TableSchema schema, LoadTableSchema(*conn, name.db, name.table));
    ASSIGN_OR_RETURN(VerifiedTable v, verifier.Table(schema));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace sluice::cli
