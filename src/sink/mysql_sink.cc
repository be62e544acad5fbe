// MySQL/MariaDB dialect and connection of SqlApplier. SQL written here (identifiers quoted
// with QuoteIdentifier, parameters "?"):
//   upsert   INSERT INTO `d`.`t` (c..) VALUES (?..),(?..) ON DUPLICATE KEY UPDATE c = VALUES(c)..
//   no PK    UPDATE `d`.`t` SET c = ? .. | DELETE FROM `d`.`t`
//              WHERE <column null-safely equal to ?> AND .. LIMIT 1
//   ckpt     INSERT INTO `meta`.`_sluice_checkpoint` (id, state) VALUES (1, ?)
//              ON DUPLICATE KEY UPDATE state = VALUES(state)
//   rebuild  RENAME TABLE `d`.`t` TO `d`.`_sluice_old_<h>`, `d`.`_sluice_rebuild_<h>` TO `d`.`t`
//            (<h>: 16 hex digits of a hash of the table's name)
// Prepared statements (binary protocol): one multi-row INSERT of up to 256 rows costs one
// round trip, and values need no text escaping.
#include "sink/mysql_sink.h"

#include <mysql.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <regex>
#include <unordered_map>

#include "schema/sql_tokenizer.h"
#include "schema/text_value.h"
#include "util/hex.h"
#include "util/log.h"

namespace sluice {

namespace {

constexpr const char* kSqlMode =
    "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO";
// For one statement writing an ENUM's '' error value, which strict mode refuses.
constexpr const char* kRelaxedSqlMode = "NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION";

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
// defaults there); their defaults are bound by the applier on insert instead.
bool DefaultClauseAllowed(const ColumnDesc& c) {
  const SqlType t = c.type;
  return !(t == SqlType::kTinyText || t == SqlType::kText || t == SqlType::kMediumText ||
           t == SqlType::kLongText || t == SqlType::kTinyBlob || t == SqlType::kBlob ||
           t == SqlType::kMediumBlob || t == SqlType::kLongBlob || t == SqlType::kJson ||
           IsGeometryType(t) || t == SqlType::kVector);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Lower case, integer display widths and YEAR(4)'s width left out, and FLOAT(M,D)/DOUBLE(M,D)
// compared as FLOAT/DOUBLE (MysqlColumnDefinition creates them without M,D; tables created
// before kept them).
std::string NormalizedType(std::string_view type) {
  static const std::regex kWidth("\\b(tinyint|smallint|mediumint|int|bigint|year)\\(\\d+\\)");
  static const std::regex kFloatDigits("\\b(float|double)\\(\\d+,\\d+\\)");
  return std::regex_replace(std::regex_replace(Lower(type), kWidth, "$1"), kFloatDigits, "$1");
}

// A normalised column definition cut into its type, character set, collation and the rest
// (" not null default 0"), looking for the keywords outside quoted ENUM/SET labels.
struct TypeParts {
  std::string base, charset, collation, rest;
};
TypeParts SplitType(const std::string& t) {
  TypeParts p;
  size_t cut = std::string::npos;
  bool quoted = false;
  for (size_t i = 0; i < t.size() && cut == std::string::npos; ++i) {
    if (t[i] == '\'') quoted = !quoted;
    else if (!quoted && t[i] == ' ')
      for (std::string_view k : {" character set ", " collate ", " null", " not null", " default "})
        if (t.compare(i, k.size(), k) == 0) cut = i;
  }
  p.base = t.substr(0, cut);
  std::string_view rest = cut == std::string::npos ? std::string_view() : std::string_view(t).substr(cut);
  auto word = [&](std::string_view key, std::string* out) {
    if (!rest.starts_with(key)) return;
    rest.remove_prefix(key.size());
    const size_t end = rest.find(' ');
    *out = std::string(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  };
  word(" character set ", &p.charset);
  word(" collate ", &p.collation);
  p.rest = std::string(rest);
  return p;
}

std::string Truncated(std::string_view sql) {
  return sql.size() <= 200 ? std::string(sql) : std::string(sql.substr(0, 200)) + "...";
}

// SqlColumn::bind_kind for MySQL.
enum MyKind : uint8_t {
  kMyPlain = 0,
  kMyDecimal,     // text bound as a decimal
  kMyStrictEnum,  // ENUM without a '' label: '' is the error value (kRelaxedSqlMode)
};

class MyConnection;

class MyStatement : public SqlStatement {
 public:
  MyStatement(MyConnection* conn, MYSQL_STMT* stmt, std::string sql)
      : conn_(conn), stmt_(stmt), sql_(std::move(sql)) {
    const size_t n = mysql_stmt_param_count(stmt_);
    binds_.resize(n);
    nums_.resize(n);
    lengths_.resize(n);
  }
  ~MyStatement() override { mysql_stmt_close(stmt_); }
  MyStatement(const MyStatement&) = delete;
  MyStatement& operator=(const MyStatement&) = delete;

  Status Bind(int index, const Value& v, const SqlColumn* column) override;
  Result<int64_t> Execute() override;
  Result<std::vector<std::vector<std::optional<std::string>>>> Query() override;

 private:
  Status Run();
  Status Error();

  MyConnection* conn_;
  MYSQL_STMT* stmt_;
  std::string sql_;
  std::vector<MYSQL_BIND> binds_;
  std::vector<uint64_t> nums_;  // storage of bound numbers (int64, uint64, double, float bits)
  std::vector<unsigned long> lengths_;
  bool relaxed_ = false;  // an ENUM '' error value is bound for the next run
};

class MyConnection : public SqlConnection {
 public:
  // `exclusive`: take the named lock sluice:<database> (one run per destination).
  MyConnection(MysqlSinkOptions options, bool exclusive) : options_(std::move(options)), exclusive_(exclusive) {
    describe_ = "mysql sink " + options_.connect.Describe();
  }
  ~MyConnection() override { prepared_.clear(); }

  // Opens the session (see the header); `reconnect`: after a transient error, when a lock
  // still held by our own old session is worth a retry (kUnavailable) rather than another
  // run's (kFailedPrecondition).
  Status Connect(bool reconnect) {
    prepared_.clear();
    conn_.reset();
    ConnectOptions o = options_.connect;
    o.found_rows = true;
    Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
    if (!c.ok()) return c.status().WithContext(describe_);
    conn_ = std::move(*c);
    Status st = Exec(fmt::format("SET SESSION sql_mode = '{}', time_zone = '+00:00', foreign_key_checks = 0, "
                                 "autocommit = 1",
                                 kSqlMode));
    // Session-settable on MariaDB 10.1+ and MySQL 8; older servers keep their global value.
    if (st.ok()) (void)Exec("SET SESSION explicit_defaults_for_timestamp = 1");
    if (st.ok() && exclusive_) {
      // A killed run's session keeps the lock until the server notices (after the statement
      // it was running, and its rollback): wait a little.
      Result<QueryResult> r = conn_->Query("SELECT GET_LOCK(" + conn_->Quote("sluice:" + options_.database) + ", " +
                                           (reconnect ? "2" : "10") + ")");
      if (!r.ok()) {
        st = r.status().WithContext(describe_);
      } else if (r->rows.empty() || r->rows[0].empty() || r->rows[0][0] != std::optional<std::string>("1")) {
        std::string msg = fmt::format(
            "{}: destination database {} is in use by another sluice run (named lock sluice:{} is held)", describe_,
            options_.database, options_.database);
        st = reconnect ? Status::Unavailable(std::move(msg)) : Status::FailedPrecondition(std::move(msg));
      }
    }
    if (st.ok()) {
      Result<QueryResult> r = conn_->Query("SELECT @@max_allowed_packet, @@lower_case_table_names");
      if (r.ok() && !r->rows.empty() && r->rows[0][0]) {
        const size_t packet = std::stoull(*r->rows[0][0]);
        max_allowed_packet_ = packet;
        max_statement_bytes_ = std::max<size_t>(std::min(options_.max_statement_bytes, packet / 2), 1024);
      }
      if (r.ok() && !r->rows.empty() && r->rows[0].size() > 1 && r->rows[0][1])
        lower_case_table_names_ = std::atoi(r->rows[0][1]->c_str());
    }
    if (!st.ok()) {
      conn_.reset();
      return st;
    }
    if (reconnect) LogInfo("{}: reconnected", describe_);
    return Status::Ok();
  }

  Status MakeError(unsigned int err, const char* text, std::string_view sql) const {
    std::string msg = fmt::format("{}: [{}] {} (SQL: {})", describe_, err, text, Truncated(sql));
    // A statement on an open session: a TLS error there is the network failing (connection.h).
    if (MysqlErrorIsTransient(err) || TlsErrorIsNetworkFailure(err, text, /*established=*/true))
      return Status::Unavailable(std::move(msg));
    return Status::FailedPrecondition(std::move(msg));
  }

  Status Exec(const std::string& sql) override {
    if (!conn_) return Status::Unavailable(describe_ + ": not connected (SQL: " + Truncated(sql) + ")");
    MYSQL* m = conn_->handle();
    if (mysql_real_query(m, sql.data(), sql.size()) != 0) return MakeError(mysql_errno(m), mysql_error(m), sql);
    do {
      if (MYSQL_RES* res = mysql_store_result(m)) mysql_free_result(res);
    } while (mysql_next_result(m) == 0);
    return Status::Ok();
  }

  Result<SqlStatement*> Prepare(const std::string& sql) override {
    if (!conn_) return Status::Unavailable(describe_ + ": not connected (SQL: " + Truncated(sql) + ")");
    auto it = prepared_.find(sql);
    if (it != prepared_.end()) return it->second.get();
    MYSQL* m = conn_->handle();
    MYSQL_STMT* stmt = mysql_stmt_init(m);
    if (stmt == nullptr) return MakeError(mysql_errno(m), mysql_error(m), sql);
    if (mysql_stmt_prepare(stmt, sql.data(), sql.size()) != 0) {
      Status st = MakeError(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), sql);
      mysql_stmt_close(stmt);
      return st;
    }
    auto s = std::make_unique<MyStatement>(this, stmt, sql);
    SqlStatement* out = s.get();
    prepared_.emplace(sql, std::move(s));
    return out;
  }

  Status Begin() override { return Exec("START TRANSACTION"); }
  Status Commit() override { return Exec("COMMIT"); }
  void Rollback() override {
    if (conn_) (void)mysql_real_query(conn_->handle(), "ROLLBACK", 8);
  }
  Status Reconnect() override {
    // A deadlock or lock wait timeout leaves the session (and its named lock) alive.
    if (conn_ && mysql_ping(conn_->handle()) == 0) {
      Rollback();
      return Status::Ok();
    }
    return Connect(/*reconnect=*/true);
  }
  std::string Describe() const override { return describe_; }

  size_t max_statement_bytes() const { return max_statement_bytes_; }
  uint64_t max_allowed_packet() const { return max_allowed_packet_; }
  int lower_case_table_names() const { return lower_case_table_names_; }
  Connection* connection() { return conn_.get(); }

 private:
  MysqlSinkOptions options_;
  bool exclusive_;
  std::string describe_;
  size_t max_statement_bytes_ = 1u << 20;
  uint64_t max_allowed_packet_ = 0;  // the server's, 0 until read
  int lower_case_table_names_ = 0;   // the server's (1, 2: table and database names ignore case)
  std::unique_ptr<Connection> conn_;
  // Statements by text. Declared after conn_: destroyed first (mysql_stmt_close needs the
  // MYSQL handle alive).
  std::unordered_map<std::string, std::unique_ptr<MyStatement>> prepared_;
};

Status MyStatement::Error() { return conn_->MakeError(mysql_stmt_errno(stmt_), mysql_stmt_error(stmt_), sql_); }

Status MyStatement::Bind(int index, const Value& v, const SqlColumn* column) {
  if (index < 1 || static_cast<size_t>(index) > binds_.size())
    return Status::Internal(fmt::format("parameter {} of {} bound (SQL: {})", index, binds_.size(), Truncated(sql_)));
  const size_t i = static_cast<size_t>(index) - 1;
  MYSQL_BIND& b = binds_[i];
  std::memset(&b, 0, sizeof b);
  const uint8_t kind = column != nullptr ? column->bind_kind : static_cast<uint8_t>(kMyPlain);
  switch (v.kind) {
    case Value::Kind::kNull:
      b.buffer_type = MYSQL_TYPE_NULL;
      return Status::Ok();
    case Value::Kind::kAbsent: return Status::Internal("absent value bound");
    case Value::Kind::kInt:
    case Value::Kind::kUInt:
      nums_[i] = v.kind == Value::Kind::kInt ? static_cast<uint64_t>(v.i) : v.u;
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.is_unsigned = v.kind == Value::Kind::kUInt;
      b.buffer = &nums_[i];
      return Status::Ok();
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (!std::isfinite(v.d)) return Status::InvalidArgument(fmt::format("{} cannot be stored in MySQL/MariaDB", v.ToText()));
      if (v.kind == Value::Kind::kFloat) {
        // The float the source stored (v.d is its exact widening).
        const float f = static_cast<float>(v.d);
        std::memcpy(&nums_[i], &f, sizeof f);
        b.buffer_type = MYSQL_TYPE_FLOAT;
      } else {
        std::memcpy(&nums_[i], &v.d, sizeof v.d);
        b.buffer_type = MYSQL_TYPE_DOUBLE;
      }
      b.buffer = &nums_[i];
      return Status::Ok();
    case Value::Kind::kText:
      b.buffer_type = kind == kMyDecimal && IsDecimalText(v.s) ? MYSQL_TYPE_NEWDECIMAL : MYSQL_TYPE_STRING;
      if (kind == kMyStrictEnum && v.s.empty()) relaxed_ = true;
      break;
    case Value::Kind::kBytes:
      b.buffer_type = MYSQL_TYPE_BLOB;
      break;
  }
  lengths_[i] = static_cast<unsigned long>(v.s.size());
  b.buffer = const_cast<char*>(v.s.data());
  b.buffer_length = lengths_[i];
  b.length = &lengths_[i];
  return Status::Ok();
}

Status MyStatement::Run() {
  if (const uint64_t packet = conn_->max_allowed_packet(); packet > 0) {
    // A statement over the destination's max_allowed_packet: the server drops the connection
    // ([1153], seen as 2006 "gone away"), and retried as a network failure it went round for
    // minutes before the real error came (a new user's probe, one 100 MB row).
    uint64_t bytes = sql_.size();
    for (size_t i = 0; i < binds_.size(); ++i) bytes += binds_[i].length != nullptr ? lengths_[i] + 9 : 9;
    if (bytes > packet)
      return Status::FailedPrecondition(fmt::format(
          "the statement holds about {} bytes of values, more than the destination's max_allowed_packet ({} bytes), "
          "so the server would refuse it ([1153]); raise it on the destination: SET GLOBAL max_allowed_packet = {} "
          "(and in its configuration; at most 1073741824) (SQL: {})",
          bytes, packet, std::min<uint64_t>(uint64_t{1} << 30, std::bit_ceil(bytes + 1024)), Truncated(sql_)));
  }
  if (!binds_.empty() && mysql_stmt_bind_param(stmt_, binds_.data()) != 0) return Error();
  const bool relaxed = relaxed_;
  relaxed_ = false;
  if (relaxed) RETURN_IF_ERROR(conn_->Exec(fmt::format("SET SESSION sql_mode = '{}'", kRelaxedSqlMode)));
  Status st = mysql_stmt_execute(stmt_) == 0 ? Status::Ok() : Error();
  if (relaxed) {
    Status back = conn_->Exec(fmt::format("SET SESSION sql_mode = '{}'", kSqlMode));
    if (st.ok()) st = back;
  }
  return st;
}

Result<int64_t> MyStatement::Execute() {
  RETURN_IF_ERROR(Run());
  // With CLIENT_FOUND_ROWS: rows matched by an UPDATE, rows deleted, rows inserted.
  return static_cast<int64_t>(mysql_stmt_affected_rows(stmt_));
}

Result<std::vector<std::vector<std::optional<std::string>>>> MyStatement::Query() {
  RETURN_IF_ERROR(Run());
  std::vector<std::vector<std::optional<std::string>>> rows;
  MYSQL_RES* meta = mysql_stmt_result_metadata(stmt_);
  if (meta == nullptr) return rows;
  const unsigned int n = mysql_num_fields(meta);
  mysql_free_result(meta);
  std::vector<MYSQL_BIND> out(n);
  std::vector<unsigned long> len(n);
  std::vector<my_bool> is_null(n);
  for (unsigned int i = 0; i < n; ++i) {
    std::memset(&out[i], 0, sizeof out[i]);
    out[i].buffer_type = MYSQL_TYPE_STRING;
    out[i].length = &len[i];
    out[i].is_null = &is_null[i];
  }
  if (mysql_stmt_bind_result(stmt_, out.data()) != 0 || mysql_stmt_store_result(stmt_) != 0) {
    Status st = Error();
    mysql_stmt_free_result(stmt_);
    return st;
  }
  int rc;
  while ((rc = mysql_stmt_fetch(stmt_)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
    std::vector<std::optional<std::string>> row(n);
    for (unsigned int i = 0; i < n; ++i) {
      if (is_null[i]) continue;
      std::string s(len[i], '\0');
      if (len[i] > 0) {
        MYSQL_BIND col;
        std::memset(&col, 0, sizeof col);
        col.buffer_type = MYSQL_TYPE_STRING;
        col.buffer = s.data();
        col.buffer_length = len[i];
        if (mysql_stmt_fetch_column(stmt_, &col, i, 0) != 0) {
          Status st = Error();
          mysql_stmt_free_result(stmt_);
          return st;
        }
      }
      row[i] = std::move(s);
    }
    rows.push_back(std::move(row));
  }
  Status st = rc == MYSQL_NO_DATA ? Status::Ok() : Error();
  mysql_stmt_free_result(stmt_);
  RETURN_IF_ERROR(st);
  return rows;
}

class MyDialect : public SqlDialect {
 public:
  MyDialect(MysqlSinkOptions options, size_t max_statement_bytes, bool names_ignore_case)
      : options_(std::move(options)), max_statement_bytes_(max_statement_bytes),
        names_ignore_case_(names_ignore_case), meta_(QuoteIdentifier(options_.database)) {}

  std::string_view name() const override { return "mysql"; }
  // With lower_case_table_names 1 or 2 the server compares table and database names without
  // case (ASCII letters here; the server folds others too). A rename that changes only the
  // case must not drop its target first: that is the table itself.
  bool NamesEqual(std::string_view a, std::string_view b) const override {
    return names_ignore_case_ ? sql::EqualsIgnoreAsciiCase(a, b) : a == b;
  }
  std::string Quote(std::string_view identifier) const override { return QuoteIdentifier(identifier); }
  // The bookkeeping database (sink.mysql.database): a source database mapped onto it put its
  // tables among sluice's own, and a source table named _sluice_checkpoint had its rows
  // overwritten by every checkpoint (a new user's probe).
  std::string_view ReservedNamespace() const override { return options_.database; }
  std::string Placeholder(int index) const override {
    (void)index;
    return "?";
  }
  SqlTableName TableName(const TableSchema& table) const override {
    const std::string db = MysqlDestinationDatabase(options_, table.db);
    SqlTableName n;
    n.quoted_namespace = QuoteIdentifier(db);
    n.quoted = n.quoted_namespace + "." + QuoteIdentifier(table.table);
    n.key = n.quoted;
    n.display = db + "." + table.table;
    n.namespace_name = db;
    n.table_name = table.table;
    return n;
  }
  Result<std::string> ColumnType(const ColumnDesc& column) const override { return MysqlColumnDefinition(column); }
  // `declared` is a whole definition ("int(11) NOT NULL DEFAULT 0"), `existing` the
  // catalog's COLUMN_TYPE ("int(11)") or another definition. Integer display widths are not
  // compared: a schema parsed from DDL has none, and MySQL 8 prints none.
  // A character set or collation given on both sides must be the same: a key column's
  // collation decides which keys are equal (a new user's probe: a column changed to
  // utf8mb4_bin was taken as matching the destination's utf8mb4_general_ci, and 'A' then
  // overwrote 'a'). `existing` from DescribeTable ends in the column's character set and
  // collation.
  bool SameType(std::string_view declared, std::string_view existing) const override {
    const TypeParts d = SplitType(NormalizedType(declared)), e = SplitType(NormalizedType(existing));
    if (d.base != e.base) return false;
    if (!d.charset.empty() && !e.charset.empty() && d.charset != e.charset) return false;
    if (!d.collation.empty() && !e.collation.empty() && d.collation != e.collation) return false;
    return d.rest.starts_with(e.rest);
  }
  uint8_t BindKind(const ColumnDesc& c) const override {
    if (c.type == SqlType::kDecimal) return kMyDecimal;
    if (c.type == SqlType::kEnum && std::find(c.labels.begin(), c.labels.end(), "") == c.labels.end())
      return kMyStrictEnum;
    return kMyPlain;
  }
  Result<std::string> Literal(const Value& v, const ColumnDesc& column) const override {
    return MysqlLiteral(column, v);
  }
  std::string UpsertSql(const SqlTable& t, const std::vector<size_t>& cols, const std::vector<size_t>& update_cols,
                        size_t rows) const override {
    if (cols.empty()) return "INSERT INTO " + t.name.quoted + " () VALUES ()";
    std::string sql = "INSERT INTO " + t.name.quoted + " (";
    for (size_t j = 0; j < cols.size(); ++j) sql += (j ? ", " : "") + t.columns[cols[j]].quoted;
    sql += ") VALUES ";
    std::string one = "(";
    for (size_t j = 0; j < cols.size(); ++j) one += j ? ", ?" : "?";
    one += ")";
    sql.reserve(sql.size() + rows * (one.size() + 2) + 64);
    for (size_t r = 0; r < rows; ++r) {
      if (r) sql += ", ";
      sql += one;
    }
    if (!t.schema->has_primary_key()) return sql;
    std::string set;
    for (size_t c : update_cols)
      set += (set.empty() ? "" : ", ") + t.columns[c].quoted + " = VALUES(" + t.columns[c].quoted + ")";
    if (set.empty()) {
      // Nothing to update: keep the row (not INSERT IGNORE, which would hide errors).
      const std::string& k = t.columns[t.schema->primary_key[0]].quoted;
      set = k + " = " + k;
    }
    return sql + " ON DUPLICATE KEY UPDATE " + set;
  }
  std::string NullSafeEquals(const std::string& quoted_column, const std::string& param) const override {
    return quoted_column + " <=> " + param;
  }
  Result<std::string> RowLocator(const TableSchema& table) const override {
    (void)table;
    return std::string();  // FirstMatchSql needs none: LIMIT 1
  }
  std::string FirstMatchSql(const SqlTable& t, const std::vector<size_t>& set_cols,
                            const std::vector<size_t>& where_cols) const override {
    std::string sql;
    if (set_cols.empty()) {
      sql = "DELETE FROM " + t.name.quoted;
    } else {
      sql = "UPDATE " + t.name.quoted + " SET ";
      for (size_t j = 0; j < set_cols.size(); ++j) sql += (j ? ", " : "") + t.columns[set_cols[j]].quoted + " = ?";
    }
    for (size_t j = 0; j < where_cols.size(); ++j) {
      const SqlColumn& c = t.columns[where_cols[j]];
      sql += j ? " AND " : " WHERE ";
      sql += MatchExpr(*c.source, c.quoted);
    }
    return sql + " LIMIT 1";
  }
  size_t MaxRowsPerStatement() const override { return 256; }
  size_t MaxParameters() const override { return 65535; }
  size_t MaxStatementBytes() const override { return max_statement_bytes_; }

  std::vector<std::string> CreateMetadataSql() const override {
    const std::string opts = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    return {"CREATE DATABASE IF NOT EXISTS " + meta_,
            "CREATE TABLE IF NOT EXISTS " + meta_ +
                ".`_sluice_checkpoint` (id INT NOT NULL PRIMARY KEY, state LONGTEXT NOT NULL)" + opts,
            "CREATE TABLE IF NOT EXISTS " + meta_ +
                ".`_sluice_tables` (name VARCHAR(700) NOT NULL PRIMARY KEY, source_db VARCHAR(256) NOT NULL, "
                "source_table VARCHAR(256) NOT NULL, columns LONGTEXT NOT NULL)" +
                opts,
            "CREATE TABLE IF NOT EXISTS " + meta_ +
                ".`_sluice_schemas` (ref VARCHAR(255) NOT NULL PRIMARY KEY, history LONGTEXT NOT NULL)" + opts};
  }
  std::string MetaSql(SqlMeta which) const override {
    switch (which) {
      case SqlMeta::kLoadCheckpoint: return "SELECT state FROM " + meta_ + ".`_sluice_checkpoint` WHERE id = 1";
      case SqlMeta::kSaveCheckpoint:
        return "INSERT INTO " + meta_ +
               ".`_sluice_checkpoint` (id, state) VALUES (1, ?) ON DUPLICATE KEY UPDATE state = VALUES(state)";
      case SqlMeta::kLookupTable:
        // A destination that ignores the case of names (lower_case_table_names 1 or 2) holds
        // `db`.`T` and `db`.`t` as one table: the row of either is the holder's.
        return "SELECT source_db, source_table FROM " + meta_ + ".`_sluice_tables` WHERE " +
               (names_ignore_case_ ? "LOWER(name) = LOWER(?)" : "name = ?");
      case SqlMeta::kStoreTable:
        return "INSERT INTO " + meta_ +
               ".`_sluice_tables` (name, source_db, source_table, columns) VALUES (?, ?, ?, ?) "
               "ON DUPLICATE KEY UPDATE source_db = VALUES(source_db), source_table = VALUES(source_table), "
               "columns = VALUES(columns)";
      case SqlMeta::kForgetTable: return "DELETE FROM " + meta_ + ".`_sluice_tables` WHERE name = ?";
      case SqlMeta::kLoadSchemas: return "SELECT history FROM " + meta_ + ".`_sluice_schemas` WHERE ref = ?";
      case SqlMeta::kSaveSchemas:
        return "INSERT INTO " + meta_ +
               ".`_sluice_schemas` (ref, history) VALUES (?, ?) ON DUPLICATE KEY UPDATE history = VALUES(history)";
      case SqlMeta::kDropOtherSchemas: return "DELETE FROM " + meta_ + ".`_sluice_schemas` WHERE ref <> ?";
    }
    return "";
  }
  std::string EnsureNamespaceSql(const SqlTableName& table) const override {
    return "CREATE DATABASE IF NOT EXISTS " + table.quoted_namespace;
  }
  Result<std::optional<std::vector<SqlExistingColumn>>> DescribeTable(SqlConnection& conn,
                                                                      const SqlTableName& table) const override {
    return DescribeByQuery(conn,
                           "SELECT c.COLUMN_NAME, CONCAT(c.COLUMN_TYPE, IF(c.COLLATION_NAME IS NULL, '', CONCAT("
                           "' CHARACTER SET ', c.CHARACTER_SET_NAME, ' COLLATE ', c.COLLATION_NAME))), "
                           "IFNULL(k.SEQ_IN_INDEX, 0) FROM information_schema.COLUMNS c "
                           "LEFT JOIN information_schema.STATISTICS k ON k.TABLE_SCHEMA = c.TABLE_SCHEMA AND "
                           "k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME AND k.INDEX_NAME = 'PRIMARY' "
                           "WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? ORDER BY c.ORDINAL_POSITION",
                           {table.namespace_name, table.table_name});
  }
  std::vector<std::string> RenameTableSql(const SqlTableName& from, const SqlTableName& to) const override {
    return {"RENAME TABLE " + from.quoted + " TO " + to.quoted};
  }
  std::string TableOptionsSql(const TableSchema& table) const override {
    return " ENGINE=InnoDB" + (table.collation.empty() ? std::string() : " DEFAULT COLLATE=" + table.collation);
  }
  // The column's whole definition: its literal DEFAULT (or the type's implicit one, as the
  // source's own ALTER gave its rows) fills the rows already there.
  Result<std::string> AddColumnSql(const SqlTableName& table, const ColumnDesc& column,
                                   const Value& default_value) const override {
    (void)default_value;
    ASSIGN_OR_RETURN(std::string def, MysqlColumnDefinition(column));
    return "ALTER TABLE " + table.quoted + " ADD COLUMN " + QuoteIdentifier(column.name) + " " + def;
  }
  std::string SwapTablesSql(const SqlTableName& from, const SqlTableName& old, const SqlTableName& scratch,
                            const SqlTableName& to) const override {
    return "RENAME TABLE " + from.quoted + " TO " + old.quoted + ", " + scratch.quoted + " TO " + to.quoted;
  }
  std::optional<SqlTableName> MarkerTable(std::string_view name) const override {
    SqlTableName n;
    n.quoted_namespace = meta_;
    n.quoted = meta_ + "." + QuoteIdentifier(name);
    n.key = n.quoted;
    n.display = options_.database + "." + std::string(name);
    n.namespace_name = options_.database;
    n.table_name = name;
    return n;
  }
  Result<std::vector<std::string>> ListMarkerTables(SqlConnection& conn) const override {
    ASSIGN_OR_RETURN(auto found, DescribeByQuery(conn,
                                                 "SELECT TABLE_NAME, '', 0 FROM information_schema.TABLES "
                                                 "WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '\\_sluice\\_ddl\\_%'",
                                                 {options_.database}));
    std::vector<std::string> names;
    if (found)
      for (SqlExistingColumn& c : *found) names.push_back(std::move(c.name));
    return names;
  }
  std::string AlsoRenameSql(const std::string& rename, const SqlTableName& from, const SqlTableName& to) const override {
    return rename + ", " + from.quoted + " TO " + to.quoted;
  }
  bool TransactionalDdl() const override { return false; }

 private:
  // `col` equal to a parameter, null-safely and byte for byte (first-match rows of keyless
  // tables): character columns compared as bytes in their own charset (a collation would
  // match 'a' with 'A ').
  static std::string MatchExpr(const ColumnDesc& col, const std::string& q) {
    if (HasCharset(col.type) && !col.charset.empty() && col.charset != "binary")
      return "CAST(" + q + " AS BINARY) <=> CAST(CONVERT(? USING " + col.charset + ") AS BINARY)";
    if (IsFixedBinaryTextType(col.type) || IsTemporalType(col.type) || IsIntegerType(col.type) ||
        col.type == SqlType::kDecimal || col.type == SqlType::kFloat || col.type == SqlType::kDouble ||
        col.type == SqlType::kBit || col.type == SqlType::kYear)
      return q + " <=> ?";
    return "CAST(" + q + " AS BINARY) <=> ?";
  }

  MysqlSinkOptions options_;
  size_t max_statement_bytes_;
  bool names_ignore_case_;  // lower_case_table_names 1 or 2
  std::string meta_;  // the bookkeeping database, quoted
};

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
      return false;  // 2026 (CR_SSL_CONNECTION_ERROR) included: a TLS setup error needs a person
  }
}

Result<std::string> MysqlLiteral(const ColumnDesc& column, const Value& v) {
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
      return "'" + EscapeText(v.s) + "'";
    case Value::Kind::kBytes: return SqlHexLiteral(v.s);
  }
  return Status::Internal(fmt::format("column {}: unknown value kind", column.name));
}

Result<std::string> MysqlColumnDefinition(const ColumnDesc& c) {
  if (c.column_type.empty())
    return Status::NotSupported(fmt::format("column {}: no column type to create it with ({})", c.name,
                                            c.data_type));
  std::string def = c.column_type;
  // FLOAT(M,D)/DOUBLE(M,D) without M,D: the destination would round every value it stores to
  // D decimals, also the exact floats the binlog carries and the rows a rebuild copies. The
  // source rounds a value when it stores it (the binlog then carries the rounded float), but
  // an ALTER to FLOAT(7,3) keeps the stored floats, and the destination's rebuild rounded
  // them (a new user's probe: 1.23456 became 1.235, 0.0004 became 0).
  if ((c.type == SqlType::kFloat || c.type == SqlType::kDouble) && def.find('(') != std::string::npos) {
    const size_t open = def.find('('), close = def.find(')', open);
    if (close != std::string::npos) def.erase(open, close - open + 1);
  }
  if (HasCharset(c.type) && !c.charset.empty() && c.charset != "binary") {
    def += " CHARACTER SET " + c.charset;
    if (!c.collation.empty()) def += " COLLATE " + c.collation;
  }
  def += c.nullable ? " NULL" : " NOT NULL";
  if (DefaultClauseAllowed(c)) {
    if (c.default_kind == DefaultKind::kLiteral) {
      ASSIGN_OR_RETURN(Value d, DefaultValue(c));
      ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(c, d));
      def += " DEFAULT " + lit;
    } else if (c.default_kind == DefaultKind::kNull && c.nullable) {
      def += " DEFAULT NULL";
    }
  } else if (c.default_kind == DefaultKind::kLiteral && !IsGeometryType(c.type) && c.type != SqlType::kVector) {
    // TEXT/BLOB/JSON take a literal default only as an expression (MySQL 8.0.13+, MariaDB
    // 10.2+): without it, ADD COLUMN h TEXT DEFAULT 'abc' left the existing rows NULL in the
    // destination where the source's hold 'abc' (a new user's probe).
    ASSIGN_OR_RETURN(Value d, DefaultValue(c));
    ASSIGN_OR_RETURN(std::string lit, MysqlLiteral(c, d));
    def += " DEFAULT (" + lit + ")";
  }
  return def;
}

Result<std::unique_ptr<MysqlSink>> MysqlSink::Open(MysqlSinkOptions options) {
  if (options.database.empty())
    return Status::InvalidArgument("mysql sink: sink.database (where the checkpoint is kept) is empty");
  // A sink statement may run long (a big multi-row INSERT, an INSERT ... SELECT rebuilding a
  // table): the source's 60 s read timeout would turn that into a retry loop.
  options.connect.read_timeout_s = std::max<uint32_t>(options.connect.read_timeout_s, 3600);
  options.connect.write_timeout_s = std::max<uint32_t>(options.connect.write_timeout_s, 3600);
  auto conn = std::make_unique<MyConnection>(options, /*exclusive=*/true);
  RETURN_IF_ERROR(conn->Connect(/*reconnect=*/false));
  const size_t max_bytes = conn->max_statement_bytes();
  const uint64_t packet = conn->max_allowed_packet();
  const int lower_case = conn->lower_case_table_names();
  std::unique_ptr<MysqlSink> sink(new MysqlSink(
      std::make_unique<MyDialect>(std::move(options), max_bytes, lower_case != 0), std::move(conn)));
  sink->max_allowed_packet_ = packet;
  sink->lower_case_table_names_ = lower_case;
  RETURN_IF_ERROR(sink->Init());
  return sink;
}

}  // namespace sluice
