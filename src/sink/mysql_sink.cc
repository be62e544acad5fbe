// MysqlSink implementation. SQL written here (identifiers quoted with QuoteIdentifier):
//   upsert   INSERT INTO `d`.`t` (<cols>) VALUES (...),(...)
//              ON DUPLICATE KEY UPDATE c = VALUES(c), ...       (PK tables; keyless: plain)
//   delete   DELETE FROM `d`.`t` WHERE `k` IN (...)  |  WHERE (`a` = .. AND `b` = ..) OR ...
//   move     UPDATE `d`.`t` SET <present cols> WHERE <old key>   (key change, absent columns)
//   no PK    UPDATE/DELETE ... WHERE <before image, byte for byte> LIMIT 1
//   ckpt     INSERT INTO `meta`.`_sluice_checkpoint` (id, state) VALUES (1, '...')
//              ON DUPLICATE KEY UPDATE state = VALUES(state)
// A transaction's statements are text (literals, not prepared statements): one multi-row
// statement per run of same-shaped upserts costs one round trip, where prepared statements
// would cost one per row.
#include "sink/mysql_sink.h"

#include "checkpoint/checkpoint.h"

#include <mysql.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include <fmt/ranges.h>

#include "schema/text_value.h"
#include "util/log.h"

namespace sluice {

namespace {

constexpr const char* kSqlMode =
    "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO";

// mysql_real_escape_string for utf8mb4 without NO_BACKSLASH_ESCAPES (the session's mode):
// UTF-8 continuation bytes never equal these ASCII bytes, so byte-wise escaping is exact.
std::string EscapeText(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '\0': out += "\\0"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      case '\x1a': out += "\\Z"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string Quoted(std::string_view s) { return "'" + EscapeText(s) + "'"; }

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string out = "X'";
  out.reserve(bytes.size() * 2 + 3);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  out.push_back('\'');
  return out;
}

bool IsDecimalText(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  bool digit = false, dot = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') digit = true;
    else if (s[i] == '.' && !dot) dot = true;
    else return false;
  }
  return digit;
}

// Types whose literal DEFAULT MySQL 8 refuses (BLOB/TEXT/JSON/GEOMETRY take only expression
// defaults there); their defaults are applied by the sink itself on insert.
bool DefaultClauseAllowed(const ColumnDesc& c) {
  const SqlType t = c.type;
  return !(t == SqlType::kTinyText || t == SqlType::kText || t == SqlType::kMediumText ||
           t == SqlType::kLongText || t == SqlType::kTinyBlob || t == SqlType::kBlob ||
           t == SqlType::kMediumBlob || t == SqlType::kLongBlob || t == SqlType::kJson ||
           IsGeometryType(t) || t == SqlType::kVector);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Qualified(const std::string& db, const std::string& table) {
  return QuoteIdentifier(db) + "." + QuoteIdentifier(table);
}

std::string Truncated(std::string_view sql) {
  return sql.size() <= 200 ? std::string(sql) : std::string(sql.substr(0, 200)) + "...";
}

}  // namespace

std::string MysqlDestinationDatabase(const MysqlSinkOptions& options, const std::string& db) {
  auto it = options.databases.find(db);
  return it == options.databases.end() ? db : it->second;
}

bool MysqlErrorIsTransient(unsigned int errnum) {
  switch (errnum) {
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2004:  // CR_IPSOCK_ERROR
    case 2005:  // CR_UNKNOWN_HOST
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2026:  // CR_SSL_CONNECTION_ERROR during a restart looks like this too: no, definite
      return errnum != 2026;
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 5013:  // CR_ERR_NET_READ (Connector/C)
    case 5014:  // CR_ERR_NET_WRITE
    case 1040:  // ER_CON_COUNT_ERROR
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
    case 1213:  // ER_LOCK_DEADLOCK
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8: the server closed an idle session)
    case 1152:  // ER_ABORTING_CONNECTION
    case 1158:  // ER_NET_READ_ERROR
    case 1159:  // ER_NET_READ_INTERRUPTED
    case 1160:  // ER_NET_ERROR_ON_WRITE
    case 1161:  // ER_NET_WRITE_INTERRUPTED
      return true;
    default:
      return false;
  }
}

Result<std::string> MysqlLiteral(const ColumnDesc& column, const Value& v,
                                 const std::function<std::string(std::string_view)>& escape) {
  switch (v.kind) {
    case Value::Kind::kNull: return std::string("NULL");
    case Value::Kind::kAbsent:
      return Status::InvalidArgument(fmt::format("column {}: absent value written", column.name));
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kUInt: return std::to_string(v.u);
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (!std::isfinite(v.d))
        return Status::InvalidArgument(
            fmt::format("column {}: {} cannot be stored in MySQL/MariaDB", column.name, v.ToText()));
      // The shortest text that reads back as this double; a FLOAT's value is its exact
      // widening, so the server rounds it back to the same float. The exponent form keeps
      // it a floating-point literal (an integer-looking "-0" would lose the sign).
      if (v.d == 0) return std::string(std::signbit(v.d) ? "-0e0" : "0e0");
      return fmt::format("{}", v.d);
    case Value::Kind::kText:
      if (column.type == SqlType::kDecimal && IsDecimalText(v.s)) return v.s;  // exact literal
      return "'" + escape(v.s) + "'";
    case Value::Kind::kBytes: return Hex(v.s);
  }
  return Status::Internal(fmt::format("column {}: unknown value kind", column.name));
}

Result<std::string> MysqlColumnDefinition(const ColumnDesc& c) {
  if (c.column_type.empty())
    return Status::NotSupported(fmt::format("column {}: no column type to create it with ({})", c.name,
                                            c.data_type));
  std::string def = c.column_type;
  if (HasCharset(c.type) && !c.charset.empty() && c.charset != "binary") {
    def += " CHARACTER SET " + c.charset;
    if (!c.collation.empty()) def += " COLLATE " + c.collation;
  }
  def += c.nullable ? " NULL" : " NOT NULL";
  if (DefaultClauseAllowed(c)) {
    if (c.default_kind == DefaultKind::kLiteral) {
      ASSIGN_OR_RETURN(Value d, DefaultValue(c));
      ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(c, d, EscapeText));
      def += " DEFAULT " + lit;
    } else if (c.default_kind == DefaultKind::kNull && c.nullable) {
      def += " DEFAULT NULL";
    }
  }
  return def;
}

Result<std::string> MysqlCreateTableSql(const TableSchema& table, const std::string& dest_db,
                                        const std::string& name) {
  std::string sql = "CREATE TABLE " + Qualified(dest_db, name) + " (";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    Result<std::string> def = MysqlColumnDefinition(table.columns[i]);
    if (!def.ok()) return def.status().WithContext(fmt::format("table {}", table.QualifiedName()));
    sql += (i ? ", " : "") + QuoteIdentifier(table.columns[i].name) + " " + *def;
  }
  if (table.has_primary_key()) {
    sql += ", PRIMARY KEY (";
    for (size_t j = 0; j < table.primary_key.size(); ++j)
      sql += (j ? ", " : "") + QuoteIdentifier(table.columns[table.primary_key[j]].name);
    sql += ")";
  }
  sql += ") ENGINE=InnoDB";
  if (!table.collation.empty()) sql += " DEFAULT COLLATE=" + table.collation;
  return sql;
}

// A statement being built from consecutive changes of one shape.
struct MysqlSink::Batch {
  Table* table = nullptr;
  char kind = 0;     // 'I' upsert, 'D' delete by key
  std::string mask;  // 'I': per column '1' value, '2' DEFAULT (absent from the image), '0' none
  std::string sql;
  size_t rows = 0;
  bool relaxed = false;  // holds an ENUM's '' error value, which strict mode refuses
};

struct MysqlSink::Table {
  TableSchemaPtr schema;
  std::string db, name;  // destination
  std::string quoted;    // `db`.`name`
  std::vector<std::string> qcols;
  std::vector<bool> is_pk;
  std::vector<Value> defaults;
  std::vector<std::string> default_error;
  // Changes not yet sent, in this sink transaction: one upsert and one delete statement being
  // built. When `commutable` (every key column compares by its bytes: integers, DECIMAL,
  // temporal, binary), the rows in the two hold distinct keys (keys_u, keys_d), so the two
  // statements may run in either order and changes to other keys need not flush them; a
  // change to a key pending in the other statement flushes that one first. Otherwise (a
  // character key, where a collation may equate two spellings) at most one is pending and
  // every change of another kind flushes it. Tables are independent of each other: the
  // destination tables have no foreign keys or triggers.
  Batch upsert, del;
  std::unordered_set<std::string> keys_u, keys_d;
  bool commutable = false;
  bool dirty = false;
  const std::string& column(size_t i) const { return schema->columns[i].name; }
};


MysqlSink::MysqlSink(MysqlSinkOptions options) : options_(std::move(options)) {
  where_ = "mysql sink " + options_.connect.Describe();
}

MysqlSink::~MysqlSink() = default;

std::string MysqlSink::Escape(std::string_view s) { return EscapeText(s); }

Result<std::unique_ptr<MysqlSink>> MysqlSink::Open(MysqlSinkOptions options) {
  if (options.database.empty())
    return Status::InvalidArgument("mysql sink: sink.database (where the checkpoint is kept) is empty");
  // A sink statement may run long (a big multi-row INSERT, an INSERT ... SELECT rebuilding a
  // table): the source's 60 s read timeout would turn that into a retry loop.
  options.connect.read_timeout_s = std::max<uint32_t>(options.connect.read_timeout_s, 3600);
  options.connect.write_timeout_s = std::max<uint32_t>(options.connect.write_timeout_s, 3600);
  std::unique_ptr<MysqlSink> sink(new MysqlSink(std::move(options)));
  RETURN_IF_ERROR(sink->EnsureConnected());
  sink->stored_after_reconnect_.reset();
  return sink;
}

Status MysqlSink::EnsureConnected() {
  if (conn_) return Status::Ok();
  const bool reconnect = connected_once_;
  Result<std::unique_ptr<Connection>> c = Connection::Connect(options_.connect);
  if (!c.ok()) return c.status().WithContext(where_);
  conn_ = std::move(*c);
  const std::string meta = QuoteIdentifier(options_.database);
  Status st = Exec("session setup",
                   fmt::format("SET SESSION sql_mode = '{}', time_zone = '+00:00', foreign_key_checks = 0, "
                               "autocommit = 1",
                               kSqlMode));
  // Session-settable on MariaDB 10.1+ and MySQL 8; older servers keep their global value.
  if (st.ok()) (void)Exec("session setup", "SET SESSION explicit_defaults_for_timestamp = 1");
  if (st.ok() && !conn_) st = Status::Unavailable(where_ + ": connection lost during session setup");
  if (st.ok()) {
    // One run per destination: a named lock held by this session (gone with it).
    // A killed run's session keeps the lock until the server notices (after the statement
    // it was running, and its rollback): wait a little. After a reconnect the server may not
    // have noticed yet that our own old session is gone: worth another try (kUnavailable);
    // at the start it is another run.
    Result<QueryResult> r = conn_->Query("SELECT GET_LOCK(" + Quoted("sluice:" + options_.database) + ", " +
                                         (reconnect ? "2" : "10") + ")");
    if (!r.ok()) {
      st = r.status().WithContext(where_);
    } else if (r->rows.empty() || r->rows[0].empty() || r->rows[0][0] != std::optional<std::string>("1")) {
      std::string msg = fmt::format(
          "{}: destination database {} is in use by another sluice run (named lock sluice:{} is held)",
          where_, options_.database, options_.database);
      st = reconnect ? Status::Unavailable(std::move(msg)) : Status::FailedPrecondition(std::move(msg));
    }
  }
  if (st.ok()) st = Exec("create checkpoint database", "CREATE DATABASE IF NOT EXISTS " + meta);
  if (st.ok())
    st = Exec("create checkpoint table",
              "CREATE TABLE IF NOT EXISTS " + meta +
                  ".`_sluice_checkpoint` (id INT NOT NULL PRIMARY KEY, state LONGTEXT NOT NULL) "
                  "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
  if (st.ok()) {
    Result<QueryResult> r = conn_->Query("SELECT @@max_allowed_packet");
    if (r.ok() && !r->rows.empty() && r->rows[0][0]) {
      const size_t packet = std::stoull(*r->rows[0][0]);
      if (packet / 2 < options_.max_statement_bytes) options_.max_statement_bytes = std::max<size_t>(packet / 2, 1024);
    }
  }
  if (st.ok() && reconnect) {
    Result<std::optional<std::string>> stored = LoadCheckpoint();
    if (!stored.ok()) st = stored.status();
    else stored_after_reconnect_ = *stored;
  }
  if (!st.ok()) {
    conn_.reset();
    return st;
  }
  if (reconnect) LogInfo("{}: reconnected", where_);
  connected_once_ = true;
  return Status::Ok();
}

Status MysqlSink::Exec(std::string_view what, const std::string& sql, uint64_t* affected, uint64_t* matched) {
  if (!conn_) return Status::Unavailable(fmt::format("{}: {}: not connected", where_, what));
  MYSQL* m = conn_->handle();
  if (mysql_real_query(m, sql.data(), sql.size()) == 0) {
    if (affected) *affected = mysql_affected_rows(m);
    if (matched) {
      // UPDATE reports "Rows matched: N  Changed: M  Warnings: W"; affected rows count
      // only changed rows, and a row updated to the values it had still matched.
      *matched = 0;
      if (const char* info = mysql_info(m)) {
        if (const char* p = std::strstr(info, "Rows matched:")) *matched = std::strtoull(p + 13, nullptr, 10);
      }
    }
    // Statements here return no rows; drain anything that does.
    do {
      if (MYSQL_RES* res = mysql_store_result(m)) mysql_free_result(res);
    } while (mysql_next_result(m) == 0);
    return Status::Ok();
  }
  const unsigned int err = mysql_errno(m);
  std::string msg = fmt::format("{}: {}: [{}] {} (SQL: {})", where_, what, err, mysql_error(m), Truncated(sql));
  if (MysqlErrorIsTransient(err)) {
    conn_.reset();  // the server rolls back whatever was open
    return Status::Unavailable(std::move(msg));
  }
  return Status::FailedPrecondition(std::move(msg));
}

Result<std::optional<std::string>> MysqlSink::LoadCheckpoint() {
  if (!conn_) RETURN_IF_ERROR(EnsureConnected());
  Result<QueryResult> r = conn_->Query("SELECT state FROM " + QuoteIdentifier(options_.database) +
                                       ".`_sluice_checkpoint` WHERE id = 1");
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kUnavailable) conn_.reset();
    return r.status().WithContext(where_ + ": load checkpoint");
  }
  std::optional<std::string> out;
  if (!r->rows.empty() && r->rows[0][0]) out = *r->rows[0][0];
  return out;
}

Status MysqlSink::WriteCheckpoint(const std::string& checkpoint) {
  return Exec("checkpoint", "INSERT INTO " + QuoteIdentifier(options_.database) +
                                ".`_sluice_checkpoint` (id, state) VALUES (1, " + Quoted(checkpoint) +
                                ") ON DUPLICATE KEY UPDATE state = VALUES(state)");
}

Status MysqlSink::InTransaction(const std::string& checkpoint, const std::function<Status()>& body) {
  RETURN_IF_ERROR(Exec("begin", "START TRANSACTION"));
  Status st = body();
  if (st.ok() && !checkpoint.empty()) st = WriteCheckpoint(checkpoint);
  if (st.ok()) st = Exec("commit", "COMMIT");
  if (!st.ok() && conn_) (void)Exec("rollback", "ROLLBACK");
  return st;
}

Status MysqlSink::SaveCheckpoint(const std::string& checkpoint) {
  RETURN_IF_ERROR(EnsureConnected());
  return WriteCheckpoint(checkpoint);
}

Status MysqlSink::Flush() { return Status::Ok(); }

Result<std::vector<std::string>> MysqlSink::DestinationColumns(const std::string& db, const std::string& table,
                                                               std::vector<std::string>* types) {
  Result<QueryResult> r = conn_->Query(
      "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " + Quoted(db) +
      " AND TABLE_NAME = " + Quoted(table) + " ORDER BY ORDINAL_POSITION");
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kUnavailable) conn_.reset();
    return r.status().WithContext(fmt::format("{}: columns of {}", where_, Qualified(db, table)));
  }
  std::vector<std::string> names;
  if (types) types->clear();
  for (const TextRow& row : r->rows) {
    names.push_back(row[0].value_or(""));
    if (types) types->push_back(Lower(row[1].value_or("")));
  }
  return names;
}

void MysqlSink::Forget(const std::string& quoted) {
  auto it = tables_.find(quoted);
  if (it == tables_.end()) return;
  Table* gone = it->second.get();
  std::erase_if(by_schema_, [&](const auto& e) { return e.second.second == gone; });
  tables_.erase(it);
}

Status MysqlSink::PrepareTable(const TableSchema& schema) {
  RETURN_IF_ERROR(EnsureConnected());
  if (schema.columns.empty()) return Status::InvalidArgument(fmt::format("table {}: no columns", schema.QualifiedName()));
  const std::string db = MysqlDestinationDatabase(options_, schema.db);
  const std::string quoted = Qualified(db, schema.table);
  if (auto it = tables_.find(quoted); it != tables_.end()) {
    const TableSchema& old = *it->second->schema;
    if (old.db != schema.db || old.table != schema.table)
      return Status::FailedPrecondition(fmt::format("{}: source tables {} and {} both map to {}", where_,
                                                    old.QualifiedName(), schema.QualifiedName(), quoted));
    if (old == schema) return Status::Ok();
    Forget(quoted);
  }
  auto t = std::make_unique<Table>();
  t->schema = std::make_shared<const TableSchema>(schema);
  t->db = db;
  t->name = schema.table;
  t->quoted = quoted;
  t->is_pk.assign(schema.columns.size(), false);
  for (size_t k : schema.primary_key) {
    if (k >= schema.columns.size())
      return Status::InvalidArgument(fmt::format("table {}: primary key index {} out of range", schema.QualifiedName(), k));
    t->is_pk[k] = true;
  }
  t->commutable = schema.has_primary_key();
  for (size_t k : schema.primary_key) {
    const SqlType type = schema.columns[k].type;
    t->commutable = t->commutable && (IsIntegerType(type) || type == SqlType::kYear || type == SqlType::kBit ||
                                      type == SqlType::kDecimal || IsTemporalType(type) || IsBinaryType(type));
  }
  for (const ColumnDesc& c : schema.columns) {
    t->qcols.push_back(QuoteIdentifier(c.name));
    Result<Value> d = DefaultValue(c);
    t->defaults.push_back(d.ok() ? std::move(d).value() : Value::Null());
    t->default_error.push_back(d.ok() ? "" : d.status().ToString());
  }

  RETURN_IF_ERROR(Exec("create database", "CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(db)));
  ASSIGN_OR_RETURN(std::vector<std::string> have, DestinationColumns(db, schema.table));
  if (have.empty()) {
    ASSIGN_OR_RETURN(std::string create, MysqlCreateTableSql(schema, db, schema.table));
    RETURN_IF_ERROR(Exec("table " + quoted, create));
  } else {
    // The table exists (an earlier run). Columns added at the end since then (an ALTER TABLE
    // ... ADD COLUMN while sluice was stopped) are added; any other difference stops.
    bool prefix = have.size() <= schema.columns.size();
    for (size_t i = 0; prefix && i < have.size(); ++i) prefix = have[i] == schema.columns[i].name;
    if (!prefix)
      return Status::FailedPrecondition(fmt::format(
          "{}: table {} has columns ({}) that are not the source table {}'s ({} columns, first {}); "
          "drop it or map the database elsewhere (sink.databases)",
          where_, quoted, fmt::join(have, ", "), schema.QualifiedName(), schema.columns.size(),
          schema.columns[0].name));
    std::string add;
    for (size_t i = have.size(); i < schema.columns.size(); ++i) {
      ASSIGN_OR_RETURN(std::string def, MysqlColumnDefinition(schema.columns[i]));
      add += (add.empty() ? "" : ", ") + std::string("ADD COLUMN ") + t->qcols[i] + " " + def;
    }
    if (!add.empty()) RETURN_IF_ERROR(Exec("table " + quoted, "ALTER TABLE " + quoted + " " + add));
  }
  tables_.emplace(quoted, std::move(t));
  return Status::Ok();
}

Result<MysqlSink::Table*> MysqlSink::TableFor(const TableSchemaPtr& schema) {
  if (schema == nullptr) return Status::InvalidArgument("row change without a table schema");
  auto it = by_schema_.find(schema.get());
  if (it != by_schema_.end()) return it->second.second;
  RETURN_IF_ERROR(PrepareTable(*schema));
  Table* t = tables_.at(Qualified(MysqlDestinationDatabase(options_, schema->db), schema->table)).get();
  by_schema_.emplace(schema.get(), std::make_pair(schema, t));
  return t;
}

Status MysqlSink::FlushBatch(Batch& b) {
  if (b.rows == 0) {
    b.table = nullptr;
    b.kind = 0;
    return Status::Ok();
  }
  Table& t = *b.table;
  if (b.kind == 'I' && t.schema->has_primary_key()) {
    std::string set;
    for (size_t i = 0; i < t.qcols.size(); ++i)
      if (b.mask[i] == '1' && !t.is_pk[i]) set += (set.empty() ? "" : ", ") + t.qcols[i] + " = VALUES(" + t.qcols[i] + ")";
    if (set.empty()) {
      const std::string& k = t.qcols[t.schema->primary_key[0]];
      set = k + " = " + k;  // nothing to update: keep the row (not INSERT IGNORE, which hides errors)
    }
    b.sql += " ON DUPLICATE KEY UPDATE " + set;
  } else if (b.kind == 'D' && t.schema->primary_key.size() == 1) {
    b.sql += ")";
  }
  Status st;
  if (b.relaxed) {
    // The source stored an invalid ENUM value as its '' error value (non-strict mode):
    // written the same way, in the same non-strict mode, for this one statement.
    st = Exec("table " + t.quoted, "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'");
    if (st.ok()) st = Exec("table " + t.quoted, b.sql);
    if (conn_) {
      Status back = Exec("session setup", fmt::format("SET SESSION sql_mode = '{}'", kSqlMode));
      if (st.ok()) st = back;
    }
  } else {
    st = Exec("table " + t.quoted, b.sql);
  }
  b.relaxed = false;
  b.sql.clear();
  b.rows = 0;
  b.table = nullptr;
  b.kind = 0;
  return st;
}

Status MysqlSink::FlushTable(Table& t) {
  t.keys_u.clear();
  t.keys_d.clear();
  Status st = FlushBatch(t.del);
  if (st.ok()) st = FlushBatch(t.upsert);
  return st;
}

std::string MysqlSink::KeyText(Table& t, const std::function<const Value&(size_t)>& value) {
  std::string key;
  for (size_t k : t.schema->primary_key) {
    key += value(k).DebugString();
    key.push_back('\x1f');
  }
  return key;
}

Status MysqlSink::Upsert(Table& t, const std::vector<const Value*>& image) {
  Batch& b = t.upsert;
  if (!t.dirty) {
    t.dirty = true;
    dirty_.push_back(&t);
  }
  const size_t n = t.qcols.size();
  std::string mask(n, '0');
  for (size_t i = 0; i < n; ++i) {
    const bool present = image[i] != nullptr && !image[i]->is_absent();
    if (t.is_pk[i] && !present)
      return Status::InvalidArgument(fmt::format("table {}: row to insert has no value for key column {}",
                                                 t.schema->QualifiedName(), t.column(i)));
    if (!present && !t.default_error[i].empty())
      return Status::InvalidArgument(fmt::format("table {}: column {} is not in the row image and its DEFAULT "
                                                 "is not understood: {}",
                                                 t.schema->QualifiedName(), t.column(i), t.default_error[i]));
    mask[i] = present ? '1' : '2';
  }
  std::string key;
  if (t.commutable) {
    key = KeyText(t, [&](size_t k) -> const Value& { return *image[k]; });
    if (t.keys_d.count(key)) {
      RETURN_IF_ERROR(FlushBatch(t.del));
      t.keys_d.clear();
    }
  } else if (t.del.rows > 0) {
    RETURN_IF_ERROR(FlushBatch(t.del));
  }
  if (b.rows > 0 && (b.mask != mask || b.sql.size() >= options_.max_statement_bytes)) {
    RETURN_IF_ERROR(FlushBatch(b));
    t.keys_u.clear();
  }
  if (t.commutable) t.keys_u.insert(std::move(key));
  if (b.rows == 0) {
    b.table = &t;
    b.kind = 'I';
    b.mask = mask;
    b.sql = "INSERT INTO " + t.quoted + " (";
    for (size_t i = 0; i < n; ++i) b.sql += (i ? ", " : "") + t.qcols[i];
    b.sql += ") VALUES ";
  } else {
    b.sql += ", ";
  }
  b.sql += "(";
  for (size_t i = 0; i < n; ++i) {
    const Value& v = mask[i] == '1' ? *image[i] : t.defaults[i];
    Result<std::string> lit = MysqlLiteral(t.schema->columns[i], v, EscapeText);
    if (!lit.ok()) return lit.status().WithContext(fmt::format("table {}", t.schema->QualifiedName()));
    if (i) b.sql += ", ";
    b.sql += *lit;
    const ColumnDesc& col = t.schema->columns[i];
    if (col.type == SqlType::kEnum && v.kind == Value::Kind::kText && v.s.empty() &&
        std::find(col.labels.begin(), col.labels.end(), "") == col.labels.end())
      b.relaxed = true;
  }
  b.sql += ")";
  ++b.rows;
  return Status::Ok();
}

namespace {

// `col` equal to `v` byte for byte (first-match rows of keyless tables): character columns
// compared as bytes in their own charset (a collation would match 'a' with 'A ').
Result<std::string> MatchExpr(const ColumnDesc& col, const std::string& qcol, const Value& v) {
  if (v.is_null()) return qcol + " IS NULL";
  ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(col, v, EscapeText));
  if (HasCharset(col.type) && !col.charset.empty() && col.charset != "binary")
    return "CAST(" + qcol + " AS BINARY) = CAST(CONVERT(" + lit + " USING " + col.charset + ") AS BINARY)";
  if (IsFixedBinaryTextType(col.type) || IsTemporalType(col.type) || IsIntegerType(col.type) ||
      col.type == SqlType::kDecimal || col.type == SqlType::kFloat || col.type == SqlType::kDouble ||
      col.type == SqlType::kBit || col.type == SqlType::kYear)
    return qcol + " = " + lit;
  return "CAST(" + qcol + " AS BINARY) = " + lit;
}

}  // namespace

Status MysqlSink::ApplyChange(Table& t, const RowChange& c) {
  const size_t n = t.qcols.size();
  const std::string& tname = t.schema->QualifiedName();
  const auto check = [&](const Row& row, bool want, const char* which) -> Status {
    if (!want && row.empty()) return Status::Ok();
    if (!want)
      return Status::InvalidArgument(fmt::format("table {}: op '{}' has a {} image", tname, static_cast<char>(c.op), which));
    if (row.size() != n)
      return Status::InvalidArgument(
          fmt::format("table {}: {} image has {} values, table has {} columns", tname, which, row.size(), n));
    return Status::Ok();
  };
  std::vector<const Value*> image(n, nullptr);
  const std::vector<size_t>& pk = t.schema->primary_key;
  const auto key_where = [&](const auto& key_value) -> Result<std::string> {
    std::string w;
    for (size_t j = 0; j < pk.size(); ++j) {
      ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(t.schema->columns[pk[j]], key_value(pk[j]), EscapeText));
      w += (j ? " AND " : "") + t.qcols[pk[j]] + " = " + lit;
    }
    return w;
  };
  const auto match_where = [&](const Row& before) -> Result<std::string> {
    std::string w;
    for (size_t i = 0; i < n; ++i) {
      if (before[i].is_absent()) continue;
      ASSIGN_OR_RETURN(std::string e, MatchExpr(t.schema->columns[i], t.qcols[i], before[i]));
      w += (w.empty() ? "" : " AND ") + e;
    }
    if (w.empty()) return Status::InvalidArgument(fmt::format("table {}: change with an empty before image", tname));
    return w;
  };
  const auto set_list = [&](const Row& after, bool with_key) -> Result<std::string> {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      if (after[i].is_absent() || (t.is_pk[i] && !with_key)) continue;
      ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(t.schema->columns[i], after[i], EscapeText));
      s += (s.empty() ? "" : ", ") + t.qcols[i] + " = " + lit;
    }
    return s;
  };
  switch (c.op) {
    case Op::kCreate:
    case Op::kRead:
      RETURN_IF_ERROR(check(c.before, false, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      for (size_t i = 0; i < n; ++i) image[i] = &c.after[i];
      return Upsert(t, image);
    case Op::kDelete: {
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, false, "after"));
      if (!t.schema->has_primary_key()) {
        RETURN_IF_ERROR(FlushTable(t));
        ASSIGN_OR_RETURN(std::string w, match_where(c.before));
        return Exec("table " + t.quoted, "DELETE FROM " + t.quoted + " WHERE " + w + " LIMIT 1");
      }
      for (size_t k : pk)
        if (c.before[k].is_absent())
          return Status::InvalidArgument(fmt::format("table {}: delete without value of key column {}", tname, t.column(k)));
      Batch& b = t.del;
      if (!t.dirty) {
        t.dirty = true;
        dirty_.push_back(&t);
      }
      if (t.commutable) {
        std::string key = KeyText(t, [&](size_t k) -> const Value& { return c.before[k]; });
        if (t.keys_u.count(key)) {
          RETURN_IF_ERROR(FlushBatch(t.upsert));
          t.keys_u.clear();
        }
        if (b.rows > 0 && b.sql.size() >= options_.max_statement_bytes) {
          RETURN_IF_ERROR(FlushBatch(b));
          t.keys_d.clear();
        }
        t.keys_d.insert(std::move(key));
      } else {
        if (t.upsert.rows > 0) RETURN_IF_ERROR(FlushBatch(t.upsert));
        if (b.rows > 0 && b.sql.size() >= options_.max_statement_bytes) RETURN_IF_ERROR(FlushBatch(b));
      }
      std::string item;
      if (pk.size() == 1) {
        ASSIGN_OR_RETURN(item, MysqlLiteral(t.schema->columns[pk[0]], c.before[pk[0]], EscapeText));
      } else {
        ASSIGN_OR_RETURN(std::string w, key_where([&](size_t k) -> const Value& { return c.before[k]; }));
        item = "(" + w + ")";
      }
      if (b.rows == 0) {
        b.table = &t;
        b.kind = 'D';
        b.sql = "DELETE FROM " + t.quoted + " WHERE " + (pk.size() == 1 ? t.qcols[pk[0]] + " IN (" : std::string());
      } else {
        b.sql += pk.size() == 1 ? ", " : " OR ";
      }
      b.sql += item;
      ++b.rows;
      return Status::Ok();
    }
    case Op::kUpdate: {
      RETURN_IF_ERROR(check(c.before, true, "before"));
      RETURN_IF_ERROR(check(c.after, true, "after"));
      if (!t.schema->has_primary_key()) {
        RETURN_IF_ERROR(FlushTable(t));
        ASSIGN_OR_RETURN(std::string set, set_list(c.after, true));
        if (set.empty()) return Status::Ok();
        ASSIGN_OR_RETURN(std::string w, match_where(c.before));
        uint64_t matched = 0;
        RETURN_IF_ERROR(Exec("table " + t.quoted, "UPDATE " + t.quoted + " SET " + set + " WHERE " + w + " LIMIT 1",
                             nullptr, &matched));
        if (matched > 0) return Status::Ok();
        for (size_t i = 0; i < n; ++i) image[i] = &c.after[i];
        return Upsert(t, image);
      }
      bool key_changed = false;
      for (size_t k : pk) {
        if (c.before[k].is_absent())
          return Status::InvalidArgument(fmt::format("table {}: update without before value of key column {}", tname, t.column(k)));
        if (!c.after[k].is_absent() && !(c.after[k] == c.before[k])) key_changed = true;
      }
      const auto new_key = [&](size_t k) -> const Value& { return c.after[k].is_absent() ? c.before[k] : c.after[k]; };
      for (size_t i = 0; i < n; ++i) image[i] = t.is_pk[i] ? &new_key(i) : &c.after[i];
      if (!key_changed) return Upsert(t, image);  // the present columns, by key
      // A key change: free the new key (a row there cannot exist in a faithful replica),
      // then move the row; with every column present that is delete + insert.
      RETURN_IF_ERROR(FlushTable(t));
      ASSIGN_OR_RETURN(std::string at_new, key_where(new_key));
      RETURN_IF_ERROR(Exec("table " + t.quoted, "DELETE FROM " + t.quoted + " WHERE " + at_new));
      ASSIGN_OR_RETURN(std::string at_old, key_where([&](size_t k) -> const Value& { return c.before[k]; }));
      bool all_present = true;
      for (const Value& v : c.after) all_present = all_present && !v.is_absent();
      if (all_present) {
        RETURN_IF_ERROR(Exec("table " + t.quoted, "DELETE FROM " + t.quoted + " WHERE " + at_old));
        return Upsert(t, image);
      }
      ASSIGN_OR_RETURN(std::string set, set_list(c.after, true));
      uint64_t matched = 0;
      RETURN_IF_ERROR(
          Exec("table " + t.quoted, "UPDATE " + t.quoted + " SET " + set + " WHERE " + at_old, nullptr, &matched));
      if (matched > 0) return Status::Ok();
      return Upsert(t, image);
    }
  }
  return Status::InvalidArgument(fmt::format("table {}: unknown op code {}", tname, static_cast<int>(c.op)));
}

Status MysqlSink::Apply(const Transaction& txn) {
  if (txn.changes.empty() && txn.checkpoint.empty()) return Status::Ok();
  return ApplyTransactions(&txn, 1);
}

Status MysqlSink::ApplyGroup(const std::vector<Transaction>& group) {
  if (group.empty()) return Status::Ok();
  return ApplyTransactions(group.data(), group.size());
}

Status MysqlSink::ApplyTransactions(const Transaction* txns, size_t count) {
  RETURN_IF_ERROR(EnsureConnected());
  // The whole checkpoint text: the streamer's refers to its schema history (checkpoint.h).
  std::string whole;
  const std::string* checkpoint = nullptr;
  for (size_t k = 0; k < count; ++k)
    if (!txns[k].checkpoint.empty()) checkpoint = &txns[k].checkpoint;
  for (size_t k = count; k-- > 0;)
    if (!txns[k].checkpoint.empty()) {
      if (txns[k].schemas) {
        whole = WholeCheckpoint(txns[k]);
        checkpoint = &whole;
      }
      break;
    }
  if (stored_after_reconnect_.has_value()) {
    // The last commit before the connection broke may have reached the server: if its
    // checkpoint is stored, this (repeated) call is already applied.
    std::optional<std::string> stored = *stored_after_reconnect_;
    stored_after_reconnect_.reset();
    if (checkpoint != nullptr && stored && *stored == *checkpoint) {
      LogInfo("{}: the transaction was committed before the connection broke; not applying it again", where_);
      return Status::Ok();
    }
  }
  // Tables first (DDL commits implicitly, so never inside the data transaction).
  targets_.clear();
  for (size_t k = 0; k < count; ++k) {
    for (const RowChange& c : txns[k].changes) {
      ASSIGN_OR_RETURN(Table * t, TableFor(c.table));
      targets_.push_back(t);
    }
  }
  Status st = InTransaction(checkpoint ? *checkpoint : std::string(), [&]() -> Status {
    size_t i = 0;
    for (size_t k = 0; k < count; ++k)
      for (const RowChange& c : txns[k].changes) RETURN_IF_ERROR(ApplyChange(*targets_[i++], c));
    for (Table* t : dirty_) RETURN_IF_ERROR(FlushTable(*t));
    return Status::Ok();
  });
  // Nothing pending survives the transaction (a failed one is applied again from scratch).
  for (Table* t : dirty_) {
    t->upsert = Batch();
    t->del = Batch();
    t->keys_u.clear();
    t->keys_d.clear();
    t->dirty = false;
  }
  dirty_.clear();
  return st;
}

Status MysqlSink::ResetTable(const TableSchema& table, const std::string& checkpoint) {
  RETURN_IF_ERROR(PrepareTable(table));
  const std::string quoted = Qualified(MysqlDestinationDatabase(options_, table.db), table.table);
  return InTransaction(checkpoint, [&] { return Exec("table " + quoted, "DELETE FROM " + quoted); });
}

Status MysqlSink::ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) {
  RETURN_IF_ERROR(EnsureConnected());
  for (const SchemaChange& c : changes) {
    switch (c.kind) {
      case SchemaChange::Kind::kCreate: {
        // The source table starts empty: a destination table of that name (kept after a
        // DROP, or from an earlier attempt of this statement) goes.
        const std::string db = MysqlDestinationDatabase(options_, c.after->db);
        const std::string q = Qualified(db, c.after->table);
        RETURN_IF_ERROR(Exec("create database", "CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(db)));
        RETURN_IF_ERROR(Exec("table " + q, "DROP TABLE IF EXISTS " + q));
        ASSIGN_OR_RETURN(std::string create, MysqlCreateTableSql(*c.after, db, c.after->table));
        RETURN_IF_ERROR(Exec("table " + q, create));
        Forget(q);
        break;
      }
      case SchemaChange::Kind::kRename:
      case SchemaChange::Kind::kAlter: {
        const TableSchema& b = *c.before;
        const TableSchema& a = *c.after;
        const std::string from_db = MysqlDestinationDatabase(options_, b.db);
        const std::string to_db = MysqlDestinationDatabase(options_, a.db);
        const std::string from = Qualified(from_db, b.table), to = Qualified(to_db, a.table);
        const std::string what = fmt::format("{} of table {} ({})", SchemaChangeKindName(c.kind), from, Truncated(c.ddl));
        Forget(from);
        Forget(to);
        RETURN_IF_ERROR(Exec("create database", "CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(to_db)));
        std::vector<std::string> from_types, to_types;
        ASSIGN_OR_RETURN(std::vector<std::string> from_cols, DestinationColumns(from_db, b.table, &from_types));
        const bool same_name = Lower(from) == Lower(to);
        std::vector<std::string> to_cols;
        if (!same_name) {
          ASSIGN_OR_RETURN(to_cols, DestinationColumns(to_db, a.table, &to_types));
        } else {
          to_cols = from_cols;
          to_types = from_types;
        }
        // Already done (the statement is repeated after a crash before its checkpoint)?
        bool done = to_cols.size() == a.columns.size() && (same_name || from_cols.empty());
        for (size_t i = 0; done && i < a.columns.size(); ++i)
          done = to_cols[i] == a.columns[i].name && to_types[i] == Lower(a.columns[i].column_type);
        if (done) break;
        if (from_cols.empty())
          return Status::FailedPrecondition(fmt::format("{}: {}: the destination has no table {}", where_, what, from));
        bool identity = c.kind == SchemaChange::Kind::kRename;
        if (!identity && c.source_of.size() == a.columns.size() && a.columns.size() >= b.columns.size()) {
          identity = true;
          for (size_t i = 0; i < a.columns.size(); ++i) {
            identity = identity && c.source_of[i] == (i < b.columns.size() ? static_cast<int>(i) : -1);
            if (i < b.columns.size())
              identity = identity && b.columns[i].name == a.columns[i].name &&
                         b.columns[i].column_type == a.columns[i].column_type &&
                         b.columns[i].nullable == a.columns[i].nullable && b.columns[i].collation == a.columns[i].collation;
          }
          identity = identity && a.primary_key == b.primary_key;
        }
        if (identity) {
          if (!same_name) {
            RETURN_IF_ERROR(Exec(what, "DROP TABLE IF EXISTS " + to));
            RETURN_IF_ERROR(Exec(what, "RENAME TABLE " + from + " TO " + to));
          }
          std::string add;
          for (size_t i = b.columns.size(); i < a.columns.size(); ++i) {
            ASSIGN_OR_RETURN(std::string def, MysqlColumnDefinition(a.columns[i]));
            add += (add.empty() ? "" : ", ") + std::string("ADD COLUMN ") + QuoteIdentifier(a.columns[i].name) + " " + def;
          }
          if (!add.empty()) RETURN_IF_ERROR(Exec(what, "ALTER TABLE " + to + " " + add));
          break;
        }
        // Anything else: a new table filled from the old one column by column, swapped in
        // by one RENAME TABLE (atomic), so a crash leaves either the old or the new table.
        if (c.source_of.size() != a.columns.size())
          return Status::Internal(fmt::format("{}: {}: schema change without a column mapping", where_, what));
        const std::string scratch = Qualified(to_db, "_sluice_new"), old = Qualified(to_db, "_sluice_old");
        RETURN_IF_ERROR(Exec(what, "DROP TABLE IF EXISTS " + scratch + ", " + old));
        ASSIGN_OR_RETURN(std::string create, MysqlCreateTableSql(a, to_db, "_sluice_new"));
        RETURN_IF_ERROR(Exec(what, create));
        std::string targets, sources;
        for (size_t i = 0; i < a.columns.size(); ++i) {
          targets += (i ? ", " : "") + QuoteIdentifier(a.columns[i].name);
          if (c.source_of[i] >= 0) {
            sources += (i ? ", " : "") + QuoteIdentifier(b.columns.at(static_cast<size_t>(c.source_of[i])).name);
          } else {
            Result<Value> d = DefaultValue(a.columns[i]);
            if (!d.ok()) return d.status().WithContext(fmt::format("table {} column {}", to, a.columns[i].name));
            ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(a.columns[i], *d, EscapeText));
            sources += (i ? ", " : "") + lit;
          }
        }
        RETURN_IF_ERROR(Exec(what, "INSERT INTO " + scratch + " (" + targets + ") SELECT " + sources + " FROM " + from));
        if (!same_name) RETURN_IF_ERROR(Exec(what, "DROP TABLE IF EXISTS " + to));
        RETURN_IF_ERROR(Exec(what, "RENAME TABLE " + from + " TO " + old + ", " + scratch + " TO " + to));
        RETURN_IF_ERROR(Exec(what, "DROP TABLE " + old));
        break;
      }
      case SchemaChange::Kind::kDrop:
        break;  // kept, with the rows it had (docs/schema-changes.md)
    }
  }
  if (!checkpoint.empty()) RETURN_IF_ERROR(WriteCheckpoint(checkpoint));
  for (const SchemaChange& c : changes)
    if (c.after) RETURN_IF_ERROR(PrepareTable(*c.after));
  return Status::Ok();
}

}  // namespace sluice
