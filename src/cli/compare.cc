#include "cli/compare.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "schema/text_value.h"
#include "sink/postgres_sink.h"
#include "sink/sqlite_sink.h"

namespace sluice::cli {
namespace {

std::string KeyOf(const Row& row, const TableSchema& t) {
  std::string key;
  if (t.has_primary_key()) {
    for (size_t i : t.primary_key) key += row[i].DebugString() + "\x1f";
  } else {
    for (const auto& v : row) key += v.DebugString() + "\x1f";
  }
  return key;
}

// BIT and unsigned integer columns hold kUInt values; DECIMAL UNSIGNED stays text.
bool IsUnsignedInteger(const ColumnDesc& col) {
  if (col.type == SqlType::kBit) return true;
  return col.is_unsigned && IsIntegerType(col.type);
}

}  // namespace

Result<Value> ReplicaValue(sqlite3_stmt* s, int i, const ColumnDesc& col) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_NULL: return Value::Null();
    case SQLITE_INTEGER: {
      int64_t v = sqlite3_column_int64(s, i);
      return IsUnsignedInteger(col) && v >= 0 ? Value::UInt(static_cast<uint64_t>(v)) : Value::Int(v);
    }
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(s, i);
      const float f = static_cast<float>(d);
      if (col.type == SqlType::kFloat && (static_cast<double>(f) == d || d != d)) return Value::Float(f);
      return Value::Double(d);
    }
    case SQLITE_TEXT: {
      std::string text(reinterpret_cast<const char*>(sqlite3_column_text(s, i)),
                       sqlite3_column_bytes(s, i));
      if (IsUnsignedInteger(col) && !text.empty() && text[0] != '0') {
        // The sink's text of a value above 2^63-1: digits only, no sign, space or leading 0.
        uint64_t u = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), u);
        if (ec == std::errc() && end == text.data() + text.size() &&
            u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return Value::UInt(u);
      }
      return Value::Text(std::move(text));
    }
    default: {
      const void* p = sqlite3_column_blob(s, i);
      int n = sqlite3_column_bytes(s, i);
      return Value::Bytes(std::string(static_cast<const char*>(p), p ? n : 0));
    }
  }
}

std::string ColumnDifferences(const Row& source, const Row& replica, const TableSchema& t, size_t max_value_chars) {
  constexpr size_t kMaxDescribed = 3;
  auto cut = [&](const Value& v) {
    std::string text = v.DebugString();
    if (text.size() <= max_value_chars) return text;
    size_t n = max_value_chars > 3 ? max_value_chars - 3 : 0;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 character
    return text.substr(0, n) + "...";
  };
  std::string out, rest;
  size_t described = 0, more = 0;
  for (size_t i = 0; i < source.size() && i < replica.size() && i < t.columns.size(); ++i) {
    if (source[i] == replica[i]) continue;
    if (described < kMaxDescribed) {
      out += fmt::format("{}column {}: source {} replica {}", described == 0 ? "" : "; ", t.columns[i].name,
                         cut(source[i]), cut(replica[i]));
      ++described;
    } else {
      rest += (more == 0 ? "" : ", ") + t.columns[i].name;
      ++more;
    }
  }
  if (more > 0) out += fmt::format("; and {} more column{}: {}", more, more == 1 ? "" : "s", rest);
  return out;
}

namespace {

std::string Describe(const Row& row, const TableSchema& t) {
  std::string out;
  for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
    if (!out.empty()) out += ", ";
    std::string v = row[i].DebugString();
    if (v.size() > 60) v = v.substr(0, 57) + "...";
    out += t.columns[i].name + "=" + v;
  }
  return out;
}

using SourceRows = std::multimap<std::string, Row>;

// Every source row of `schema`, by key, read with the snapshot converter.
Status ReadSourceRows(Connection& conn, const TableSchema& schema, SourceRows* src) {
  std::string select;
  for (const auto& c : schema.columns) select += (select.empty() ? "" : ", ") + SnapshotSelectExpr(c);
  std::string sql = fmt::format("SELECT {} FROM {}.{}", select, QuoteIdentifier(schema.db),
                                QuoteIdentifier(schema.table));
  return conn.QueryStream(sql, [&](const std::vector<TextCellView>& cells) -> Status {
    Row row;
    row.reserve(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, ValueFromText(schema.columns[i], cells[i]));
      row.push_back(std::move(v));
    }
    src->emplace(KeyOf(row, schema), std::move(row));
    return Status::Ok();
  }, nullptr);
}

// One replica row: matched against (and removed from) the source rows.
void MatchReplicaRow(const Row& row, const TableSchema& schema, SourceRows& src, TableComparison& cmp) {
  ++cmp.replica_rows;
  std::string key = KeyOf(row, schema);
  auto it = src.find(key);
  if (it == src.end()) {
    ++cmp.extra;
    if (cmp.examples.size() < 5) cmp.examples.push_back(PrintableText("extra in replica: " + Describe(row, schema)));
    return;
  }
  if (!(it->second == row)) {
    ++cmp.differing;
    if (cmp.examples.size() < 5) {
      std::string key_text;
      for (size_t k : schema.primary_key) key_text += (key_text.empty() ? "" : ", ") + row[k].DebugString();
      if (key_text.empty()) key_text = Describe(row, schema);
      cmp.examples.push_back(PrintableText(
          fmt::format("key {}: {}", key_text, ColumnDifferences(it->second, row, schema, 200))));
    }
  }
  src.erase(it);
}

// JSON compares by value: PostgreSQL's jsonb prints a document in its own layout.
void NormalizeJson(Row& row, const TableSchema& schema) {
  for (size_t i = 0; i < row.size() && i < schema.columns.size(); ++i) {
    if (schema.columns[i].type != SqlType::kJson || row[i].kind != Value::Kind::kText) continue;
    auto j = nlohmann::json::parse(row[i].s, nullptr, false);
    if (!j.is_discarded()) row[i].s = j.dump();
  }
}

// The source rows no replica row matched.
void FinishComparison(const TableSchema& schema, const SourceRows& src, TableComparison& cmp) {
  cmp.missing = src.size();
  for (auto it = src.begin(); it != src.end() && cmp.examples.size() < 5; ++it)
    cmp.examples.push_back(PrintableText("missing in replica: " + Describe(it->second, schema)));
}

}  // namespace

Result<std::vector<TableComparison>> CompareTablesMysql(const ConnectOptions& source, const TableFilter& filter,
                                                        const MysqlSinkOptions& destination,
                                                        std::vector<std::string>* unmatched) {
  ASSIGN_OR_RETURN(auto conn, Connection::Connect(source));
  RETURN_IF_ERROR(conn->Execute("SET time_zone = '+00:00'"));
  ASSIGN_OR_RETURN(auto tables, ListTablesSkippingUnmatched(*conn, filter, unmatched));
  ASSIGN_OR_RETURN(auto dest, Connection::Connect(destination.connect));
  RETURN_IF_ERROR(dest->Execute("SET time_zone = '+00:00'"));
  std::vector<TableComparison> out;
  for (const auto& name : tables) {
    ASSIGN_OR_RETURN(TableSchema schema, LoadTableSchema(*conn, name.db, name.table));
    TableComparison cmp;
    cmp.table = schema.QualifiedName();
    SourceRows src;
    RETURN_IF_ERROR(ReadSourceRows(*conn, schema, &src));
    cmp.source_rows = src.size();
    const std::string db = MysqlDestinationDatabase(destination, schema.db);
    const std::string qualified = QuoteIdentifier(db) + "." + QuoteIdentifier(schema.table);
    // The destination's columns must be the source's, by name and order (then the source
    // schema reads both sides: the types are the same one to one).
    ASSIGN_OR_RETURN(QueryResult cols,
                     dest->Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " +
                                 dest->Quote(db) + " AND TABLE_NAME = " + dest->Quote(schema.table) +
                                 " ORDER BY ORDINAL_POSITION"));
    std::string have, want;
    for (const auto& r : cols.rows) have += (have.empty() ? "" : ", ") + r[0].value_or("");
    for (const auto& c : schema.columns) want += (want.empty() ? "" : ", ") + c.name;
    if (have != want) {
      cmp.missing = cmp.source_rows;
      cmp.examples.push_back(cols.rows.empty() ? fmt::format("destination has no table {}", qualified)
                                               : fmt::format("destination table {} has columns ({}), source ({})",
                                                             qualified, have, want));
      out.push_back(std::move(cmp));
      continue;
    }
    std::string select;
    for (const auto& c : schema.columns) select += (select.empty() ? "" : ", ") + SnapshotSelectExpr(c);
    RETURN_IF_ERROR(dest->QueryStream(
        fmt::format("SELECT {} FROM {}", select, qualified),
        [&](const std::vector<TextCellView>& cells) -> Status {
          Row row;
          row.reserve(cells.size());
          for (size_t i = 0; i < cells.size(); ++i) {
            Result<Value> v = ValueFromText(schema.columns[i], cells[i]);
            if (!v.ok()) return v.status().WithContext(fmt::format("destination table {}", qualified));
            row.push_back(std::move(v).value());
          }
          MatchReplicaRow(row, schema, src, cmp);
          return Status::Ok();
        },
        nullptr));
    FinishComparison(schema, src, cmp);
    out.push_back(std::move(cmp));
  }
  return out;
}

Result<std::vector<TableComparison>> CompareTables(const ConnectOptions& source,
                                                   const TableFilter& filter,
                                                   const std::string& sqlite_path,
                                                   std::vector<std::string>* unmatched) {
  ASSIGN_OR_RETURN(auto conn, Connection::Connect(source));
  RETURN_IF_ERROR(conn->Execute("SET time_zone = '+00:00'"));
  ASSIGN_OR_RETURN(auto tables, ListTablesSkippingUnmatched(*conn, filter, unmatched));

  Result<sqlite3*> opened = OpenSqliteReader(sqlite_path);
  if (!opened.ok()) return Status::InvalidArgument(opened.status().message());
  sqlite3* db = *opened;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_guard(db, sqlite3_close);

  std::vector<TableComparison> out;
  for (const auto& name : tables) {
    ASSIGN_OR_RETURN(TableSchema schema, LoadTableSchema(*conn, name.db, name.table));
    TableComparison cmp;
    cmp.table = schema.QualifiedName();

    SourceRows src;
    RETURN_IF_ERROR(ReadSourceRows(*conn, schema, &src));
    cmp.source_rows = src.size();

    // Columns the replica table lacks (SQLite would read a double-quoted unknown name as a
    // string literal, so check first).
    std::vector<std::string> replica_cols;
    {
      sqlite3_stmt* info = nullptr;
      std::string q = "SELECT name FROM pragma_table_info(?)";
      if (sqlite3_prepare_v2(db, q.c_str(), -1, &info, nullptr) == SQLITE_OK) {
        std::string tname = SqliteTableName(schema);
        sqlite3_bind_text(info, 1, tname.c_str(), -1, SQLITE_TRANSIENT);
        while (sqlite3_step(info) == SQLITE_ROW)
          replica_cols.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(info, 0)));
      }
      sqlite3_finalize(info);
    }
    std::string missing_cols;
    for (const auto& c : schema.columns)
      if (!replica_cols.empty() && std::find(replica_cols.begin(), replica_cols.end(), c.name) == replica_cols.end())
        missing_cols += (missing_cols.empty() ? "" : ", ") + c.name;
    if (!missing_cols.empty()) {
      cmp.missing = cmp.source_rows;
      cmp.examples.push_back(fmt::format("replica table {} has no column {}", SqliteTableName(schema), missing_cols));
      out.push_back(std::move(cmp));
      continue;
    }
    std::string cols;
    for (const auto& c : schema.columns) cols += (cols.empty() ? "" : ", ") + SqliteQuote(c.name);
    std::string q = fmt::format("SELECT {} FROM {}", cols, SqliteQuote(SqliteTableName(schema)));
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, q.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      cmp.missing = cmp.source_rows;
      cmp.examples.push_back(fmt::format("replica has no table {}: {}", SqliteTableName(schema),
                                         sqlite3_errmsg(db)));
      out.push_back(std::move(cmp));
      continue;
    }
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt_guard(stmt, sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      Row row;
      for (size_t i = 0; i < schema.columns.size(); ++i) {
        ASSIGN_OR_RETURN(Value v, ReplicaValue(stmt, static_cast<int>(i), schema.columns[i]));
        row.push_back(std::move(v));
      }
      MatchReplicaRow(row, schema, src, cmp);
    }
    if (rc != SQLITE_DONE)
      return Status::Unavailable(fmt::format("reading {}: {}", SqliteTableName(schema), sqlite3_errmsg(db)));
    FinishComparison(schema, src, cmp);
    out.push_back(std::move(cmp));
  }
  return out;
}

Result<std::vector<TableComparison>> CompareTablesPostgres(const ConnectOptions& source, const TableFilter& filter,
                                                           const PostgresSinkOptions& replica,
                                                           std::vector<std::string>* unmatched) {
  ASSIGN_OR_RETURN(auto conn, Connection::Connect(source));
  RETURN_IF_ERROR(conn->Execute("SET time_zone = '+00:00'"));
  ASSIGN_OR_RETURN(auto tables, ListTablesSkippingUnmatched(*conn, filter, unmatched));
  std::vector<TableComparison> out;
  for (const auto& name : tables) {
    ASSIGN_OR_RETURN(TableSchema schema, LoadTableSchema(*conn, name.db, name.table));
    TableComparison cmp;
    cmp.table = schema.QualifiedName();
    SourceRows src;
    {
      SourceRows raw;
      RETURN_IF_ERROR(ReadSourceRows(*conn, schema, &raw));
      for (auto& [k, row] : raw) {
        NormalizeJson(row, schema);
        src.emplace(KeyOf(row, schema), std::move(row));
      }
    }
    cmp.source_rows = src.size();
    Result<std::vector<Row>> rows = ReadPostgresTable(replica, schema);
    if (!rows.ok()) {
      if (rows.status().code() != StatusCode::kNotFound) return rows.status();
      cmp.missing = cmp.source_rows;
      cmp.examples.push_back(rows.status().message());
      out.push_back(std::move(cmp));
      continue;
    }
    for (Row& row : *rows) {
      NormalizeJson(row, schema);
      MatchReplicaRow(row, schema, src, cmp);
    }
    FinishComparison(schema, src, cmp);
    out.push_back(std::move(cmp));
  }
  return out;
}

}  // namespace sluice::cli
