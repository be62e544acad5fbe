// PostgreSQL dialect and connection of SqlApplier. SQL written here:
//   upsert   INSERT INTO "s"."t" (c..) VALUES ($1..),($n..) ON CONFLICT (pk..) DO UPDATE
//            SET c = excluded.c..            (SqlDialect default, up to 128 rows)
//   no PK    UPDATE/DELETE ... WHERE ctid = (SELECT ctid FROM "s"."t" WHERE c IS NOT
//            DISTINCT FROM $1 .. LIMIT 1)
//   bulk     SAVEPOINT; COPY "s"."t" (c..) FROM STDIN; RELEASE — on a duplicate key:
//            ROLLBACK TO SAVEPOINT; COPY into a temporary table; INSERT ... SELECT ...
//            ON CONFLICT DO UPDATE. One COPY stream takes every BulkLoad into the same
//            table until another statement (the checkpoint, COMMIT) or kMaxCopyText bytes
//            end it. Tables of integer, string and bytes columns only are copied in FORMAT
//            binary (the server parses no text: BENCHMARKS.md, snapshot into PostgreSQL).
// Values travel as text parameters in the PostgreSQL input form of the column's type
// (PgText), bytea as binary parameters; COPY uses the same text, COPY-escaped.
#include "sink/postgres_sink.h"

#include <libpq-fe.h>

#include <array>
#include <charconv>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "schema/text_value.h"
#include "util/hash.h"
#include "util/hex.h"
#include "util/redact.h"

namespace sluice {

namespace {

// SqlColumn::bind_kind for PostgreSQL.
enum PgKind : uint8_t {
  kPgPlain = 0,  // numbers and types whose MySQL text is PostgreSQL's input form
  kPgText,       // text: NUL bytes refused
  kPgBytea,
  kPgBit,
  kPgDate,
  kPgDateTime,
  kPgTimestamp,
  kPgTime,
  kPgSet,
};

PgKind PgKindOf(const ColumnDesc& c) {
  const SqlType t = c.type;
  if (IsCharacterType(t)) return c.charset == "binary" ? kPgBytea : kPgText;
  if (IsBinaryType(t) || IsGeometryType(t)) return kPgBytea;
  switch (t) {
    case SqlType::kBit: return kPgBit;
    case SqlType::kDate: return kPgDate;
    case SqlType::kDateTime: return kPgDateTime;
    case SqlType::kTimestamp: return kPgTimestamp;
    case SqlType::kTime: return kPgTime;
    case SqlType::kSet: return kPgSet;
    case SqlType::kEnum:
    case SqlType::kInet4:
    case SqlType::kInet6:
    case SqlType::kVector: return kPgText;
    default: return kPgPlain;
  }
}

std::string PgQuote(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

// `text` as an SQL string literal: quoted, its quotes doubled (standard_conforming_strings, on
// since PostgreSQL 9.1: backslashes are plain characters).
std::string PgStringLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  return out + "'";
}

// A MySQL date/time text with a zero year, month or day ('0000-00-00', '2020-00-15').
bool HasZeroDatePart(std::string_view s) {
  if (s.size() < 10) return false;
  return s.substr(0, 4) == "0000" || s.substr(5, 2) == "00" || s.substr(8, 2) == "00";
}

bool IsZeroDateTime(std::string_view s) {
  for (char c : s)
    if (c != '0' && c != '-' && c != ':' && c != ' ' && c != '.') return false;
  return true;
}

// The PostgreSQL input text of `v` for column `c` (for text parameters, COPY and literals);
// bytea values come back raw (the caller encodes them as its channel needs).
// A NUL byte in a value bound for text (or another textual type): PostgreSQL cannot store
// it, and the run stops on it. The message says the way forward: sluice has no setting that
// stores a text column as bytea (docs/sinks.md, "PostgreSQL"), so the source row is fixed and
// the table copied again. `source`: the source table, when the caller knows it.
std::string NulByteMessage(const TableSchema* source = nullptr) {
  return fmt::format(
      "the value holds a NUL byte, which PostgreSQL text cannot hold; remove the NUL byte from the source row "
      "(e.g. UPDATE ... SET col = REPLACE(col, CHAR(0), '')), then `sluice resnapshot --config FILE {}` and run "
      "again (a column of a binary type or CHARACTER SET binary on the source becomes bytea, which holds any byte)",
      source ? source->db + "." + source->table : std::string("DB.TABLE"));
}

Result<std::string> PgText(const Value& v, const ColumnDesc& c, uint8_t kind, const TableSchema* table = nullptr) {
  switch (v.kind) {
    case Value::Kind::kNull:
    case Value::Kind::kAbsent: return Status::Internal("null value converted");
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kUInt: {
      if (kind != kPgBit) return std::to_string(v.u);
      const uint32_t n = c.numeric_precision >= 1 && c.numeric_precision <= 64 ? c.numeric_precision : 64;
      if (n < 64 && (v.u >> n) != 0)
        return Status::InvalidArgument(fmt::format("value {} does not fit BIT({})", v.u, n));
      std::string bits(n, '0');
      for (uint32_t i = 0; i < n; ++i)
        if ((v.u >> i) & 1) bits[n - 1 - i] = '1';
      return bits;
    }
    case Value::Kind::kFloat:
    case Value::Kind::kDouble:
      if (!std::isfinite(v.d)) return Status::InvalidArgument(fmt::format("{} cannot be stored", v.d));
      return v.ToText();
    case Value::Kind::kBytes:
      if (kind == kPgBytea) return v.s;
      return Status::InvalidArgument("bytes given for a non-binary column");
    case Value::Kind::kText: break;
  }
  const std::string& s = v.s;
  switch (kind) {
    case kPgDate:
    case kPgDateTime:
    case kPgTimestamp:
      if (IsZeroDateTime(s)) return std::string("-infinity");
      if (HasZeroDatePart(s))
        // As for a NUL byte: the way forward is a source row PostgreSQL can hold, copied again.
        return Status::InvalidArgument(fmt::format(
            "'{}' has a zero year, month or day, which PostgreSQL's {} cannot hold (an all-zero value becomes "
            "-infinity); set the source row to a real date or NULL (e.g. UPDATE ... SET col = NULL WHERE MONTH(col) "
            "= 0 OR DAYOFMONTH(col) = 0), then `sluice resnapshot --config FILE {}` and run again, or leave the "
            "table out (source.exclude)",
            s, kind == kPgDate ? "date" : "timestamp",
            table ? table->db + "." + table->table : std::string("DB.TABLE")));
      return kind == kPgTimestamp ? s + "+00" : s;
    case kPgSet: {
      // Comma-joined labels -> an array literal; MySQL forbids commas in SET members.
      std::string out = "{";
      size_t start = 0;
      while (!s.empty() && start <= s.size()) {
        size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        out += out.size() > 1 ? ",\"" : "\"";
        for (size_t i = start; i < end; ++i) {
          if (s[i] == '"' || s[i] == '\\') out.push_back('\\');
          out.push_back(s[i]);
        }
        out += "\"";
        start = end + 1;
      }
      return out + "}";
    }
    case kPgBytea: return s;
    default:
      if (std::memchr(s.data(), 0, s.size()) != nullptr)
        return Status::InvalidArgument(NulByteMessage(table));
      return s;
  }
}

// What the caller does next after a failed libpq call (docs: header).
StatusCode PgCode(PGconn* conn, const char* sqlstate) {
  if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD) return StatusCode::kUnavailable;
  const std::string_view st = sqlstate != nullptr ? sqlstate : "";
  if (st.empty()) return StatusCode::kUnavailable;  // no server answer: the connection broke
  if (st.substr(0, 2) == "08" || st == "40001" || st == "40P01" || st == "55P03" || st == "53300" ||
      st == "57P01" || st == "57P02" || st == "57P03")
    return StatusCode::kUnavailable;
  if (st == "22P02" || st == "22003" || st == "22007" || st == "22008" || st == "22021" || st == "22P05")
    return StatusCode::kInvalidArgument;
  return StatusCode::kFailedPrecondition;
}

Status MakePgStatus(StatusCode code, std::string msg) {
  switch (code) {
    case StatusCode::kUnavailable: return Status::Unavailable(std::move(msg));
    case StatusCode::kInvalidArgument: return Status::InvalidArgument(std::move(msg));
    default: return Status::FailedPrecondition(std::move(msg));
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class PgConnection;

class PgStatement : public SqlStatement {
 public:
  PgStatement(PgConnection* conn, std::string name, std::string sql)
      : conn_(conn), name_(std::move(name)), sql_(std::move(sql)) {}
  Status Bind(int index, const Value& v, const SqlColumn* column) override;
  Result<int64_t> Execute() override;
  Result<std::vector<std::vector<std::optional<std::string>>>> Query() override;

 private:
  Result<PGresult*> Run();

  PgConnection* conn_;
  std::string name_;
  std::string sql_;
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  // Converted values; values_ points into them only once Run() starts (the vector may grow,
  // and moving a short std::string moves its characters).
  std::vector<std::string> bufs_;
  std::vector<bool> owned_;
  int count_ = 0;  // parameters bound (highest index)
};

// How a column travels in a COPY of FORMAT binary: integers as 2, 4 or 8 big-endian bytes,
// text and bytea as their bytes.
enum class BinaryKind : uint8_t { kInt2, kInt4, kInt8, kText, kBytea };

// The binary kinds of `table`'s columns when every column is one of those (the types whose
// binary form is the value's bytes or a plain integer: MySQL's integer types up to signed
// BIGINT, character types, ENUM, binary strings and BLOBs), else empty: the text format.
std::vector<BinaryKind> BinaryCopyKinds(const SqlTable& table) {
  std::vector<BinaryKind> out;
  for (const SqlColumn& col : table.columns) {
    const ColumnDesc& c = *col.source;
    Result<std::string> type = PostgresColumnType(c);
    if (!type.ok()) return {};
    const bool integer = c.type == SqlType::kTinyInt || c.type == SqlType::kSmallInt ||
                         c.type == SqlType::kMediumInt || c.type == SqlType::kInt || c.type == SqlType::kBigInt;
    if (integer && *type == "smallint") out.push_back(BinaryKind::kInt2);
    else if (integer && *type == "integer") out.push_back(BinaryKind::kInt4);
    else if (integer && *type == "bigint") out.push_back(BinaryKind::kInt8);
    else if ((IsCharacterType(c.type) || c.type == SqlType::kEnum) && *type == "text" && col.bind_kind == kPgText)
      out.push_back(BinaryKind::kText);
    else if ((IsCharacterType(c.type) || IsBinaryType(c.type)) && *type == "bytea" && col.bind_kind == kPgBytea)
      out.push_back(BinaryKind::kBytea);
    else
      return {};
  }
  return out;
}

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  char buf[8];
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) buf[i] = static_cast<char>(v & 0xff);
  out->append(buf, static_cast<size_t>(bytes));
}

class PgConnection : public SqlConnection {
 public:
  // `exclusive`: hold the destination's advisory lock for the session (one writer per
  // PostgreSQL database); compare's reader does not.
  PgConnection(PostgresSinkOptions options, bool exclusive) : options_(std::move(options)), exclusive_(exclusive) {}
  ~PgConnection() override {
    prepared_.clear();
    if (conn_ != nullptr) PQfinish(conn_);
  }

  Status Connect() {
    if (conn_ != nullptr) PQfinish(conn_);
    copy_.reset();
    prepared_.clear();
    next_id_ = 0;
    const std::string timeout = std::to_string(options_.connect_timeout_s);
    const char* keys[] = {"dbname", "password", "connect_timeout", "application_name", nullptr};
    const char* vals[] = {options_.conninfo.c_str(), options_.password.empty() ? nullptr : options_.password.c_str(),
                          timeout.c_str(), "sluice", nullptr};
    conn_ = PQconnectdbParams(keys, vals, /*expand_dbname=*/1);
    if (conn_ == nullptr) return Status::Unavailable("postgres: out of memory");
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string msg = Trim(PQerrorMessage(conn_));
      // A wrong password or a missing database does not fix itself; a server away does.
      const bool definite = msg.find("password authentication failed") != std::string::npos ||
                            msg.find("does not exist") != std::string::npos ||
                            msg.find("no password supplied") != std::string::npos ||
                            msg.find("invalid ") != std::string::npos;
      const std::string text = fmt::format("postgres {}: cannot connect: {}", DescribeOptions(), msg);
      PQfinish(conn_);
      conn_ = nullptr;
      return definite ? Status::FailedPrecondition(text) : Status::Unavailable(text);
    }
    describe_ = fmt::format("postgres {}:{}/{}", PQhost(conn_), PQport(conn_), PQdb(conn_));
    // NOTICEs ("relation already exists, skipping") are not for the user's terminal.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    RETURN_IF_ERROR(Exec(
        "SET TIME ZONE 'UTC'; SET datestyle = 'ISO, YMD'; SET intervalstyle = 'postgres'; "
        "SET bytea_output = 'hex'; SET extra_float_digits = 1; SET client_encoding = 'UTF8'; "
        "SET standard_conforming_strings = on"));
    if (!exclusive_) return Status::Ok();
    // Two sluice runs writing one database would interleave their transactions. A killed
    // predecessor's session ends when its socket closes: wait a little for it.
    for (int attempt = 0;; ++attempt) {
      PGresult* res = PQexec(conn_, "SELECT pg_try_advisory_lock(1397310277)");
      const bool ok = PQresultStatus(res) == PGRES_TUPLES_OK;
      const bool got = ok && PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
      Status err = ok ? Status::Ok() : Error(res, "pg_try_advisory_lock");
      PQclear(res);
      RETURN_IF_ERROR(err);
      if (got) return Status::Ok();
      if (attempt >= 50)
        return Status::FailedPrecondition(fmt::format(
            "{}: another sluice run is writing into this database (it holds advisory lock 1397310277)", describe_));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::string DescribeOptions() const { return PostgresConninfoForDisplay(options_.conninfo); }

  Status Error(PGresult* res, std::string_view what) const {
    const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string msg = res != nullptr ? Trim(PQresultErrorMessage(res)) : "";
    if (msg.empty() && conn_ != nullptr) msg = Trim(PQerrorMessage(conn_));
    std::string w(what);
    if (w.size() > 300) w = w.substr(0, 297) + "...";
    return MakePgStatus(PgCode(conn_, state), fmt::format("{}: {}{}{}: {}", describe_, state ? state : "",
                                                          state ? ": " : "", w, msg));
  }

  Status Exec(const std::string& sql) override {
    if (conn_ == nullptr) return Status::Unavailable(describe_ + ": not connected");
    RETURN_IF_ERROR(EndCopy());
    PGresult* res = PQexec(conn_, sql.c_str());
    const ExecStatusType st = PQresultStatus(res);
    Status out = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? Status::Ok() : Error(res, sql);
    PQclear(res);
    return out;
  }

  void ForgetStatements() override {
    if (prepared_.empty()) return;
    prepared_.clear();
    // Best effort: a session that failed keeps them until it ends, under names never used again.
    if (conn_ != nullptr && EndCopy().ok()) PQclear(PQexec(conn_, "DEALLOCATE ALL"));
  }

  Result<SqlStatement*> Prepare(const std::string& sql) override {
    if (conn_ == nullptr) return Status::Unavailable(describe_ + ": not connected");
    auto it = prepared_.find(sql);
    if (it != prepared_.end()) return it->second.get();
    RETURN_IF_ERROR(EndCopy());
    std::string name = "s" + std::to_string(next_id_++);
    PGresult* res = PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr);
    Status st = PQresultStatus(res) == PGRES_COMMAND_OK ? Status::Ok() : Error(res, "prepare " + sql);
    PQclear(res);
    RETURN_IF_ERROR(st);
    auto stmt = std::make_unique<PgStatement>(this, std::move(name), sql);
    SqlStatement* out = stmt.get();
    prepared_.emplace(sql, std::move(stmt));
    return out;
  }

  Status Begin() override { return Exec("BEGIN"); }
  Status Commit() override {
    if (conn_ == nullptr) return Status::Unavailable(describe_ + ": not connected");
    RETURN_IF_ERROR(EndCopy());
    PGresult* res = PQexec(conn_, "COMMIT");
    Status out;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
      out = Error(res, "COMMIT");
    } else if (std::strcmp(PQcmdStatus(res), "COMMIT") != 0) {
      // COMMIT of a failed transaction answers ROLLBACK.
      out = Status::Internal(describe_ + ": COMMIT rolled back (an earlier statement failed)");
    }
    PQclear(res);
    return out;
  }
  void Rollback() override {
    AbortCopy();
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE)
      (void)Exec("ROLLBACK");
  }
  Status Reconnect() override {
    // A deadlock or serialization failure leaves the session usable (and its lock held).
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
      Rollback();
      PGresult* res = PQexec(conn_, "SELECT 1");
      const bool alive = PQresultStatus(res) == PGRES_TUPLES_OK;
      PQclear(res);
      if (alive) return Status::Ok();
    }
    return Connect();
  }
  std::string Describe() const override { return describe_; }

  bool SupportsBulkLoad() const override { return true; }
  Status BulkLoad(const SqlTable& table, const std::vector<const Row*>& rows) override;

  PGconn* conn() const { return conn_; }
  const std::string& describe() const { return describe_; }
  // Ends the open COPY stream, if any (every other statement calls this first): a duplicate
  // key in it is merged as BulkLoad says. Errors name the table.
  Status EndCopy();

 private:
  // The open COPY stream of BulkLoad.
  struct OpenCopy {
    std::string target;   // the table, quoted
    std::string display;  // for messages
    std::string cols;     // quoted column list
    std::string conflict; // keyed tables: " ON CONFLICT (pk..) DO UPDATE SET .." for the merge
    bool keyed = false;   // inside SAVEPOINT sluice_copy
    // FORMAT binary (BinaryCopyKinds): the server skips parsing text; otherwise text format.
    std::vector<BinaryKind> binary;
    // Keyed tables: every row since the savepoint (sent again into the merge on a duplicate
    // key); keyless: the rows not sent yet.
    std::string text;
    size_t sent = 0;      // bytes of `text` sent
  };
  // The COPY statement of a stream into `target`.
  static std::string CopySql(const std::string& target, const std::string& cols, bool binary) {
    return "COPY " + target + " (" + cols + ") FROM STDIN" + (binary ? " WITH (FORMAT binary)" : "");
  }
  static std::string CopySql(const OpenCopy& c, const std::string& target) {
    return CopySql(target, c.cols, !c.binary.empty());
  }
  Status StartCopy(const std::string& sql);
  // Sends copy text from c.text[c.sent..]; false when the connection failed.
  bool SendCopy(OpenCopy& c);
  // Appends `rows` in COPY text form to copy_->text, sending it as it grows.
  Status FormatCopy(const SqlTable& table, const std::vector<const Row*>& rows);
  // The same in COPY binary form.
  Status FormatBinaryCopy(const SqlTable& table, const std::vector<const Row*>& rows);
  // PQputCopyEnd (errmsg non-null: abort) and the statement's results.
  Status FinishCopy(const char* errmsg, const std::string& sql);
  // Abandons the open COPY stream (the transaction is being rolled back).
  void AbortCopy();

  PostgresSinkOptions options_;
  bool exclusive_ = true;
  PGconn* conn_ = nullptr;
  std::string describe_ = "postgres";
  std::unordered_map<std::string, std::unique_ptr<PgStatement>> prepared_;
  uint64_t next_id_ = 0;
  std::optional<OpenCopy> copy_;
  // The last stream's text buffer, kept for its capacity: a fresh one per stream paid a page
  // fault per 4 KiB of text.
  std::string spare_text_;
};

// A COPY stream ends after this much text (it is also what a keyed table's stream keeps for
// a merge); 1 MiB goes to libpq per call.
constexpr size_t kMaxCopyText = size_t{64} << 20;
constexpr size_t kCopySendBytes = size_t{1} << 20;

Status PgStatement::Bind(int index, const Value& v, const SqlColumn* column) {
  if (index < 1) return Status::Internal("parameter index < 1");
  const size_t i = static_cast<size_t>(index - 1);
  if (values_.size() <= i) {
    values_.resize(i + 1, nullptr);
    lengths_.resize(i + 1, 0);
    formats_.resize(i + 1, 0);
    bufs_.resize(i + 1);
    owned_.resize(i + 1, false);
  }
  owned_[i] = false;
  count_ = std::max(count_, index);
  formats_[i] = 0;
  lengths_[i] = 0;
  if (v.is_null()) {
    values_[i] = nullptr;
    return Status::Ok();
  }
  if (column == nullptr) {
    if (v.kind == Value::Kind::kText) {
      if (std::memchr(v.s.data(), 0, v.s.size()) != nullptr)
        return Status::InvalidArgument("a NUL byte in a text value");
      values_[i] = v.s.c_str();
    } else if (v.kind == Value::Kind::kBytes) {
      values_[i] = v.s.data();
      lengths_[i] = static_cast<int>(v.s.size());
      formats_[i] = 1;
    } else {
      bufs_[i] = v.ToText();
      owned_[i] = true;
    }
    return Status::Ok();
  }
  const uint8_t kind = column->bind_kind;
  if (kind == kPgBytea) {
    if (v.kind != Value::Kind::kBytes && v.kind != Value::Kind::kText)
      return Status::InvalidArgument(fmt::format("a {} value for a bytea column", v.DebugString()));
    if (v.s.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
      return Status::InvalidArgument("value larger than 2 GiB");
    values_[i] = v.s.data();
    lengths_[i] = static_cast<int>(v.s.size());
    formats_[i] = 1;
    return Status::Ok();
  }
  if (v.kind == Value::Kind::kText && (kind == kPgPlain || kind == kPgTime)) {
    values_[i] = v.s.c_str();  // the MySQL text is the input form (decimal, json, time)
    if (std::memchr(v.s.data(), 0, v.s.size()) != nullptr)
      return Status::InvalidArgument(NulByteMessage(column->table));
    return Status::Ok();
  }
  if (v.kind == Value::Kind::kText && kind == kPgText) {
    if (std::memchr(v.s.data(), 0, v.s.size()) != nullptr)
      return Status::InvalidArgument(NulByteMessage(column->table));
    values_[i] = v.s.c_str();
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(bufs_[i], PgText(v, *column->source, kind, column->table));
  owned_[i] = true;
  return Status::Ok();
}

Result<PGresult*> PgStatement::Run() {
  PGconn* c = conn_->conn();
  if (c == nullptr) return Status::Unavailable(conn_->describe() + ": not connected");
  RETURN_IF_ERROR(conn_->EndCopy());
  for (int i = 0; i < count_; ++i)
    if (owned_[static_cast<size_t>(i)]) values_[static_cast<size_t>(i)] = bufs_[static_cast<size_t>(i)].c_str();
  PGresult* res = PQexecPrepared(c, name_.c_str(), count_, values_.data(), lengths_.data(), formats_.data(), 0);
  const ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    Status err = conn_->Error(res, sql_);
    PQclear(res);
    return err;
  }
  return res;
}

Result<int64_t> PgStatement::Execute() {
  ASSIGN_OR_RETURN(PGresult * res, Run());
  const char* n = PQcmdTuples(res);
  const int64_t changed = n != nullptr && *n != '\0' ? std::atoll(n) : 0;
  PQclear(res);
  return changed;
}

Result<std::vector<std::vector<std::optional<std::string>>>> PgStatement::Query() {
  ASSIGN_OR_RETURN(PGresult * res, Run());
  std::vector<std::vector<std::optional<std::string>>> rows;
  const int nr = PQntuples(res), nc = PQnfields(res);
  for (int r = 0; r < nr; ++r) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < nc; ++c) {
      if (PQgetisnull(res, r, c)) row.emplace_back();
      else row.emplace_back(std::string(PQgetvalue(res, r, c), static_cast<size_t>(PQgetlength(res, r, c))));
    }
  }
  PQclear(res);
  return rows;
}

// COPY text format: backslash, newline, carriage return and tab escaped; NULL is \N.
// Appends the runs between special bytes whole: the per-byte push_back this replaced was a
// third of the snapshot's CPU (BENCHMARKS.md, PostgreSQL snapshot). Returns false, with
// `out` partly appended, when `s` holds a NUL byte (PostgreSQL text cannot hold one).
bool AppendCopyText(std::string* out, std::string_view s) {
  static constexpr auto kSpecial = [] {
    std::array<bool, 256> t{};
    t['\\'] = t['\n'] = t['\r'] = t['\t'] = t[0] = true;
    return t;
  }();
  const char* p = s.data();
  const char* const end = p + s.size();
  while (p < end) {
    const char* q = p;
    while (q < end && !kSpecial[static_cast<unsigned char>(*q)]) ++q;
    out->append(p, q);
    if (q == end) break;
    switch (*q) {
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default: return false;
    }
    p = q + 1;
  }
  return true;
}

void AppendInt(std::string* out, auto v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

Status PgConnection::StartCopy(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  Status out = PQresultStatus(res) == PGRES_COPY_IN ? Status::Ok() : Error(res, sql);
  PQclear(res);
  return out;
}

bool PgConnection::SendCopy(OpenCopy& c) {
  while (c.sent < c.text.size()) {
    const size_t n = std::min(c.text.size() - c.sent, kCopySendBytes);
    if (PQputCopyData(conn_, c.text.data() + c.sent, static_cast<int>(n)) != 1) return false;
    c.sent += n;
  }
  if (!c.keyed) {
    c.text.clear();
    c.sent = 0;
  }
  return true;
}

Status PgConnection::FinishCopy(const char* errmsg, const std::string& sql) {
  const bool ended = PQputCopyEnd(conn_, errmsg) == 1;
  Status out;
  PGresult* res;
  while ((res = PQgetResult(conn_)) != nullptr) {
    if (out.ok() && PQresultStatus(res) != PGRES_COMMAND_OK) out = Error(res, sql);
    PQclear(res);
  }
  if (!ended && out.ok()) out = Error(nullptr, sql);
  return out;
}

void PgConnection::AbortCopy() {
  if (!copy_) return;
  copy_.reset();
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) (void)FinishCopy("sluice: rolled back", "COPY");
}

Status PgConnection::FormatBinaryCopy(const SqlTable& table, const std::vector<const Row*>& rows) {
  std::string& buf = copy_->text;
  const std::vector<BinaryKind>& kinds = copy_->binary;
  const size_t n = table.columns.size();
  for (const Row* row : rows) {
    AppendBigEndian(&buf, n, 2);
    for (size_t i = 0; i < n; ++i) {
      const Value& v = (*row)[i];
      if (v.is_null()) {
        AppendBigEndian(&buf, 0xffffffffu, 4);
        continue;
      }
      const SqlColumn& col = table.columns[i];
      const BinaryKind kind = kinds[i];
      if (kind == BinaryKind::kText || kind == BinaryKind::kBytea) {
        std::string converted;
        const std::string* bytes = &v.s;
        if (kind == BinaryKind::kText) {
          if (v.kind != Value::Kind::kText) {
            Result<std::string> text = PgText(v, *col.source, col.bind_kind, table.schema.get());
            if (!text.ok()) return text.status().WithContext(fmt::format("column {}", col.source->name));
            converted = std::move(*text);
            bytes = &converted;
          }
          if (std::memchr(bytes->data(), 0, bytes->size()) != nullptr)
            return Status::InvalidArgument(fmt::format("column {}: {}", col.source->name, NulByteMessage(table.schema.get())));
        } else if (v.kind != Value::Kind::kBytes && v.kind != Value::Kind::kText) {
          return Status::InvalidArgument(
              fmt::format("column {}: a {} value for a bytea column", col.source->name, v.DebugString()));
        }
        if (bytes->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
          return Status::InvalidArgument(fmt::format("column {}: value larger than 2 GiB", col.source->name));
        AppendBigEndian(&buf, bytes->size(), 4);
        buf += *bytes;
        continue;
      }
      int64_t x = 0;
      if (v.kind == Value::Kind::kInt) {
        x = v.i;
      } else if (v.kind == Value::Kind::kUInt && v.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        x = static_cast<int64_t>(v.u);
      } else if (v.kind != Value::Kind::kText ||
                 std::from_chars(v.s.data(), v.s.data() + v.s.size(), x).ptr != v.s.data() + v.s.size()) {
        return Status::InvalidArgument(
            fmt::format("column {}: {} is not an integer its column can hold", col.source->name, v.DebugString()));
      }
      const int width = kind == BinaryKind::kInt2 ? 2 : kind == BinaryKind::kInt4 ? 4 : 8;
      if (width < 8 && (x < -(int64_t{1} << (8 * width - 1)) || x >= (int64_t{1} << (8 * width - 1))))
        return Status::InvalidArgument(fmt::format("column {}: {} does not fit its {}-byte integer column",
                                                   col.source->name, x, width));
      AppendBigEndian(&buf, static_cast<uint32_t>(width), 4);
      AppendBigEndian(&buf, static_cast<uint64_t>(x), width);
    }
    if (buf.size() - copy_->sent >= kCopySendBytes && !SendCopy(*copy_)) return Error(nullptr, CopySql(*copy_, copy_->target));
  }
  if (!SendCopy(*copy_)) return Error(nullptr, CopySql(*copy_, copy_->target));
  return Status::Ok();
}

Status PgConnection::FormatCopy(const SqlTable& table, const std::vector<const Row*>& rows) {
  if (!copy_->binary.empty()) return FormatBinaryCopy(table, rows);
  std::string& buf = copy_->text;
  for (const Row* row : rows) {
    for (size_t i = 0; i < table.columns.size(); ++i) {
      if (i) buf.push_back('\t');
      const Value& v = (*row)[i];
      if (v.is_null()) {
        buf += "\\N";
        continue;
      }
      const SqlColumn& col = table.columns[i];
      // Fast paths: the value's own text or digits are the input form (as in PgText).
      if (v.kind == Value::Kind::kText &&
          (col.bind_kind == kPgText || col.bind_kind == kPgPlain || col.bind_kind == kPgTime)) {
        if (!AppendCopyText(&buf, v.s))
          return Status::InvalidArgument(fmt::format("column {}: {}", col.source->name, NulByteMessage(table.schema.get())));
        continue;
      }
      if (v.kind == Value::Kind::kInt) {
        AppendInt(&buf, v.i);
        continue;
      }
      if (v.kind == Value::Kind::kUInt && col.bind_kind != kPgBit) {
        AppendInt(&buf, v.u);
        continue;
      }
      Result<std::string> text = PgText(v, *col.source, col.bind_kind, table.schema.get());
      if (!text.ok()) return text.status().WithContext(fmt::format("column {}", col.source->name));
      if (col.bind_kind == kPgBytea) {
        buf += "\\\\x";
        AppendHexDigits(*text, &buf);
      } else if (!AppendCopyText(&buf, *text)) {
        return Status::InvalidArgument(fmt::format("column {}: {}", col.source->name, NulByteMessage(table.schema.get())));
      }
    }
    buf.push_back('\n');
    if (buf.size() - copy_->sent >= kCopySendBytes && !SendCopy(*copy_))
      return Error(nullptr, CopySql(*copy_, copy_->target));
  }
  // What is formatted goes now: the server works on it while the next rows are fetched.
  if (!SendCopy(*copy_)) return Error(nullptr, CopySql(*copy_, copy_->target));
  return Status::Ok();
}

Status PgConnection::BulkLoad(const SqlTable& table, const std::vector<const Row*>& rows) {
  if (conn_ == nullptr) return Status::Unavailable(describe_ + ": not connected");
  if (copy_ && (copy_->target != table.name.quoted || copy_->text.size() >= kMaxCopyText)) RETURN_IF_ERROR(EndCopy());
  if (!copy_) {
    OpenCopy c;
    c.text = std::move(spare_text_);
    c.text.clear();
    c.target = table.name.quoted;
    c.display = table.name.display;
    for (size_t i = 0; i < table.columns.size(); ++i) c.cols += (i ? ", " : "") + table.columns[i].quoted;
    c.keyed = table.schema->has_primary_key();
    if (c.keyed) {
      std::string pk, set;
      for (size_t i = 0; i < table.columns.size(); ++i)
        if (!table.columns[i].is_pk)
          set += (set.empty() ? "" : ", ") + table.columns[i].quoted + " = excluded." + table.columns[i].quoted;
      for (size_t j = 0; j < table.schema->primary_key.size(); ++j)
        pk += (j ? ", " : "") + table.columns[table.schema->primary_key[j]].quoted;
      c.conflict = " ON CONFLICT (" + pk + ") DO " + (set.empty() ? "NOTHING" : "UPDATE SET " + set);
      RETURN_IF_ERROR(Exec("SAVEPOINT sluice_copy"));
    }
    c.binary = BinaryCopyKinds(table);
    if (!c.binary.empty()) {
      // The signature, flags and header extension length of FORMAT binary.
      c.text.append("PGCOPY\n\377\r\n\0", 11);
      AppendBigEndian(&c.text, 0, 4);
      AppendBigEndian(&c.text, 0, 4);
    }
    RETURN_IF_ERROR(StartCopy(CopySql(c, c.target)));
    copy_ = std::move(c);
  }
  Status st = FormatCopy(table, rows);
  if (!st.ok()) AbortCopy();  // the caller rolls the transaction back
  return st;
}

Status PgConnection::EndCopy() {
  if (!copy_) return Status::Ok();
  OpenCopy c = std::move(*copy_);
  copy_.reset();
  const std::string sql = CopySql(c, c.target);
  if (!c.binary.empty()) AppendBigEndian(&c.text, 0xffff, 2);  // the trailer
  Status st = SendCopy(c) ? FinishCopy(nullptr, sql) : Error(nullptr, sql);
  if (!st.ok() && c.keyed && st.message().find("23505") != std::string::npos) {
    // Some keys are there already (a chunk copied again, or rows the stream wrote): the
    // stream's rows again, into a temporary table, merged.
    const std::string load = CopySql(c, "_sluice_load");
    st = Exec("ROLLBACK TO SAVEPOINT sluice_copy");
    if (st.ok()) st = Exec("CREATE TEMPORARY TABLE IF NOT EXISTS _sluice_load (LIKE " + c.target + ")");
    if (st.ok()) st = Exec("TRUNCATE _sluice_load");
    if (st.ok()) st = StartCopy(load);
    if (st.ok()) {
      c.sent = 0;
      st = SendCopy(c) ? FinishCopy(nullptr, load) : Error(nullptr, load);
    }
    if (st.ok())
      st = Exec("INSERT INTO " + c.target + " (" + c.cols + ") SELECT " + c.cols + " FROM _sluice_load" + c.conflict);
    if (st.ok()) st = Exec("DROP TABLE _sluice_load");
  }
  if (st.ok() && c.keyed) st = Exec("RELEASE SAVEPOINT sluice_copy");
  spare_text_ = std::move(c.text);
  return st.WithContext("table " + c.display + ": bulk load");
}

class PgDialect : public SqlDialect {
 public:
  explicit PgDialect(PostgresSinkOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "postgres"; }
  std::string Quote(std::string_view identifier) const override { return PgQuote(identifier); }
  std::string Placeholder(int index) const override { return "$" + std::to_string(index); }
  std::string_view ReservedNamespace() const override { return "_sluice"; }
  Status CheckNames(const TableSchema& table) const override {
    std::vector<std::string> columns;
    for (const ColumnDesc& c : table.columns) columns.push_back(c.name);
    Status st = CheckPostgresNames(options_, table.db, table.table, columns);
    return st.ok() ? st : Status::FailedPrecondition(st.message());
  }
  SqlTableName TableName(const TableSchema& table) const override {
    SqlTableName n;
    n.namespace_name = PostgresSchemaName(options_, table.db);
    n.table_name = table.table;
    n.key = n.namespace_name + "." + n.table_name;
    n.quoted_namespace = PgQuote(n.namespace_name);
    n.quoted = n.quoted_namespace + "." + PgQuote(n.table_name);
    n.display = n.key;
    return n;
  }
  Result<std::string> ColumnType(const ColumnDesc& column) const override { return PostgresColumnType(column); }
  uint8_t BindKind(const ColumnDesc& column) const override { return PgKindOf(column); }
  Result<std::string> Literal(const Value& v, const ColumnDesc& column) const override {
    if (v.is_null() || v.is_absent()) return std::string("NULL");
    ASSIGN_OR_RETURN(std::string type, PostgresColumnType(column));
    const uint8_t kind = PgKindOf(column);
    ASSIGN_OR_RETURN(std::string text, PgText(v, column, kind));
    if (kind == kPgBytea) return "'\\x" + HexDigits(text) + "'::bytea";
    return PgStringLiteral(text) + "::" + type;
  }
  std::string NullSafeEquals(const std::string& quoted_column, const std::string& param) const override {
    return quoted_column + " IS NOT DISTINCT FROM " + param;
  }
  Result<std::string> RowLocator(const TableSchema&) const override { return std::string("ctid"); }
  size_t MaxRowsPerStatement() const override { return 128; }
  size_t MaxParameters() const override { return 65535; }
  std::vector<std::string> CreateMetadataSql() const override {
    return {"CREATE SCHEMA IF NOT EXISTS _sluice",
            "CREATE TABLE IF NOT EXISTS _sluice.checkpoint(id integer PRIMARY KEY CHECK (id = 1), state text NOT NULL)",
            "CREATE TABLE IF NOT EXISTS _sluice.tables(name text PRIMARY KEY, source_db text NOT NULL, "
            "source_table text NOT NULL, columns text NOT NULL)",
            "CREATE TABLE IF NOT EXISTS _sluice.schemas(ref text PRIMARY KEY, history text NOT NULL)"};
  }
  std::string MetaSql(SqlMeta which) const override {
    switch (which) {
      case SqlMeta::kLoadCheckpoint: return "SELECT state FROM _sluice.checkpoint WHERE id = 1";
      case SqlMeta::kSaveCheckpoint:
        return "INSERT INTO _sluice.checkpoint(id, state) VALUES (1, $1) "
               "ON CONFLICT (id) DO UPDATE SET state = excluded.state";
      case SqlMeta::kLookupTable: return "SELECT source_db, source_table FROM _sluice.tables WHERE name = $1";
      case SqlMeta::kStoreTable:
        return "INSERT INTO _sluice.tables(name, source_db, source_table, columns) VALUES ($1, $2, $3, $4) "
               "ON CONFLICT (name) DO UPDATE SET source_db = excluded.source_db, "
               "source_table = excluded.source_table, columns = excluded.columns";
      case SqlMeta::kForgetTable: return "DELETE FROM _sluice.tables WHERE name = $1";
      case SqlMeta::kLoadSchemas: return "SELECT history FROM _sluice.schemas WHERE ref = $1";
      case SqlMeta::kSaveSchemas:
        return "INSERT INTO _sluice.schemas(ref, history) VALUES ($1, $2) "
               "ON CONFLICT (ref) DO UPDATE SET history = excluded.history";
      case SqlMeta::kDropOtherSchemas: return "DELETE FROM _sluice.schemas WHERE ref <> $1";
    }
    return "";
  }
  std::string EnsureNamespaceSql(const SqlTableName& table) const override {
    return "CREATE SCHEMA IF NOT EXISTS " + table.quoted_namespace;
  }
  Result<std::optional<std::vector<SqlExistingColumn>>> DescribeTable(SqlConnection& conn,
                                                                      const SqlTableName& table) const override {
    return DescribeByQuery(conn,
                           "SELECT a.attname, format_type(a.atttypid, a.atttypmod), "
                           "COALESCE((SELECT k.ord FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(attnum, ord) "
                           "WHERE i.indrelid = c.oid AND i.indisprimary AND k.attnum = a.attnum), 0) "
                           "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                           "JOIN pg_attribute a ON a.attrelid = c.oid "
                           "WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') "
                           "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                           {table.namespace_name, table.table_name});
  }
  std::vector<std::string> RenameTableSql(const SqlTableName& from, const SqlTableName& to) const override {
    if (from.namespace_name == to.namespace_name)
      return {"ALTER TABLE " + from.quoted + " RENAME TO " + PgQuote(to.table_name)};
    // Another schema: moved under a name of its own, then renamed there. Moved under its old
    // name it met a table of that name in the other schema (a captured yb.t when ya.t becomes
    // yb.u), and renamed to the name it already had PostgreSQL refused ("relation already
    // exists": RENAME TABLE ya.t TO yb.t stopped every run; a new user's probe). The target
    // name itself is free (the applier drops it first). One transaction: all or none.
    // Its primary key's index moves with it and is a relation of the schema too: renamed
    // first to a name of its own (the probe's yb.s and the moved ya.s both had "s_pkey").
    const std::string name = fmt::format("_sluice_mv_{:016x}", Fnv1a64(to.key));
    const std::string scratch = from.quoted_namespace + "." + PgQuote(name);
    const std::string literal = PgStringLiteral(scratch);  // the scratch table's quoted name
    return {"ALTER TABLE " + from.quoted + " RENAME TO " + PgQuote(name),
            "DO $sluice$DECLARE c name; BEGIN SELECT conname INTO c FROM pg_constraint WHERE conrelid = " + literal +
                "::regclass AND contype = 'p'; IF c IS NOT NULL THEN EXECUTE format('ALTER TABLE %s RENAME "
                "CONSTRAINT %I TO %I', " + literal + ", c, '" + name + "_pkey'); END IF; END$sluice$",
            "ALTER TABLE " + scratch + " SET SCHEMA " + to.quoted_namespace,
            "ALTER TABLE " + to.quoted_namespace + "." + PgQuote(name) + " RENAME TO " + PgQuote(to.table_name)};
  }

 private:
  PostgresSinkOptions options_;
};

// PostgreSQL's text of a stored value (SELECT c::text, array_to_string for SET) -> the text
// MySQL's SELECT gives for the column (schema/text_value.h ValueFromText reads it).
Result<std::string> MySqlTextOf(const ColumnDesc& c, std::string pg) {
  const auto pad_fraction = [&](std::string s) {
    // PostgreSQL drops trailing zeros of fractional seconds; MySQL prints exactly fsp digits.
    size_t dot = s.find('.');
    std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    if (dot != std::string::npos) s.resize(dot);
    frac.resize(c.fsp, '0');
    return c.fsp > 0 ? s + "." + frac : s;
  };
  switch (PgKindOf(c)) {
    case kPgBit: {
      uint64_t v = 0;
      for (char ch : pg) v = (v << 1) | (ch == '1' ? 1u : 0u);
      return std::to_string(v);
    }
    case kPgDate:
      return pg == "-infinity" ? std::string("0000-00-00") : pg;
    case kPgDateTime:
    case kPgTimestamp:
      if (pg == "-infinity") return pad_fraction("0000-00-00 00:00:00");
      if (PgKindOf(c) == kPgTimestamp && pg.size() > 3 && pg.compare(pg.size() - 3, 3, "+00") == 0) pg.resize(pg.size() - 3);
      return pad_fraction(pg);
    case kPgTime:
      return pad_fraction(pg);
    case kPgBytea: {
      if (pg.size() < 2 || pg[0] != '\\' || pg[1] != 'x') return Status::Corruption("bytea not in hex form");
      std::string out;
      out.reserve((pg.size() - 2) / 2);
      for (size_t i = 2; i + 1 < pg.size(); i += 2) out.push_back(static_cast<char>(std::stoi(pg.substr(i, 2), nullptr, 16)));
      return out;
    }
    default:
      return pg;
  }
}

}  // namespace

std::string PostgresSchemaName(const PostgresSinkOptions& options, const std::string& db) {
  auto it = options.schemas.find(db);
  return it != options.schemas.end() ? it->second : db;
}

size_t PostgresKeptNameBytes(std::string_view name) {
  if (name.size() <= kPostgresMaxNameBytes) return name.size();
  size_t n = kPostgresMaxNameBytes;
  // Back off continuation bytes (10xxxxxx) to the first byte of the character cut in two.
  if ((static_cast<unsigned char>(name[n]) & 0xC0) == 0x80)
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return n;
}

Status CheckPostgresNames(const PostgresSinkOptions& options, const std::string& db, const std::string& table,
                          const std::vector<std::string>& columns) {
  auto refuse = [&](std::string_view what, std::string_view name, std::string_view fix) {
    return Status::InvalidArgument(fmt::format(
        "table `{}`.`{}`: {} {} is {} bytes long, and PostgreSQL keeps only the first {} bytes of a name "
        "(it would become {}, where another name of those first bytes would meet it); sluice does not let "
        "a name be cut: {}",
        db, table, what, name, name.size(), kPostgresMaxNameBytes, name.substr(0, PostgresKeptNameBytes(name)),
        fix));
  };
  const std::string schema = PostgresSchemaName(options, db);
  if (PostgresKeptNameBytes(schema) < schema.size())
    return refuse(options.schemas.count(db) ? fmt::format("its schema (sink.postgres.schemas.{})", db)
                                            : std::string("its schema (the source database's name)"),
                  schema,
                  "map the database onto a shorter schema name (sink.postgres.schemas), or leave its tables out "
                  "(source.exclude)");
  if (PostgresKeptNameBytes(table) < table.size())
    return refuse("the table name", table,
                  fmt::format("leave `{}`.`{}` out (source.exclude) or give it a shorter name in the source", db,
                              table));
  for (const std::string& c : columns)
    if (PostgresKeptNameBytes(c) < c.size())
      return refuse("column", c,
                    fmt::format("give the column a shorter name in the source, or leave `{}`.`{}` out "
                                "(source.exclude)",
                                db, table));
  // Names PostgreSQL keeps for itself (a new user's probe got its raw error at the first copy,
  // after `check` said READY): schemas starting with pg_, and the system columns every table has.
  if (schema.starts_with("pg_"))
    return Status::InvalidArgument(fmt::format(
        "table `{}`.`{}`: its schema would be {}, and PostgreSQL keeps names starting with pg_ for its own "
        "schemas; map the database onto another schema (sink.postgres.schemas.{} = \"...\"), or leave its "
        "tables out (source.exclude)",
        db, table, schema, db));
  for (const std::string& c : columns)
    for (const char* system : {"tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"})
      if (c == system)
        return Status::InvalidArgument(fmt::format(
            "table `{}`.`{}`: column {} is the name of a PostgreSQL system column, which every table has; "
            "rename the column in the source, or leave `{}`.`{}` out (source.exclude)",
            db, table, c, db, table));
  return Status::Ok();
}

Result<std::string> PostgresColumnType(const ColumnDesc& c) {
  const SqlType t = c.type;
  const auto frac = [&](const char* base, const char* suffix) {
    return fmt::format("{}({}){}", base, std::min<uint32_t>(c.fsp, 6), suffix);
  };
  switch (t) {
    case SqlType::kTinyInt: return std::string("smallint");
    case SqlType::kSmallInt: return std::string(c.is_unsigned ? "integer" : "smallint");
    case SqlType::kMediumInt: return std::string("integer");
    case SqlType::kInt: return std::string(c.is_unsigned ? "bigint" : "integer");
    case SqlType::kBigInt: return std::string(c.is_unsigned ? "numeric(20,0)" : "bigint");
    case SqlType::kDecimal:
      return fmt::format("numeric({},{})", c.numeric_precision > 0 ? c.numeric_precision : 10, c.numeric_scale);
    case SqlType::kFloat: return std::string("real");
    case SqlType::kDouble: return std::string("double precision");
    case SqlType::kBit:
      return fmt::format("bit varying({})", c.numeric_precision >= 1 && c.numeric_precision <= 64 ? c.numeric_precision : 64);
    case SqlType::kYear: return std::string("smallint");
    case SqlType::kDate: return std::string("date");
    case SqlType::kDateTime: return frac("timestamp", " without time zone");
    case SqlType::kTimestamp: return frac("timestamp", " with time zone");
    case SqlType::kTime: return frac("interval", "");
    case SqlType::kSet: return std::string("text[]");
    case SqlType::kJson: return std::string("jsonb");
    case SqlType::kUuid: return std::string("uuid");
    case SqlType::kEnum:
    case SqlType::kInet4:
    case SqlType::kInet6:
    case SqlType::kVector: return std::string("text");
    default: break;
  }
  if (IsCharacterType(t)) return std::string(c.charset == "binary" ? "bytea" : "text");
  if (IsBinaryType(t) || IsGeometryType(t)) return std::string("bytea");
  return Status::NotSupported(fmt::format("column {}: data type '{}' has no PostgreSQL mapping in sluice", c.name,
                                          c.data_type));
}

Result<std::unique_ptr<PostgresSink>> PostgresSink::Open(PostgresSinkOptions options) {
  if (options.conninfo.empty()) return Status::InvalidArgument("postgres sink: conninfo is empty");
  auto conn = std::make_unique<PgConnection>(options, /*exclusive=*/true);
  RETURN_IF_ERROR(conn->Connect());
  std::unique_ptr<PostgresSink> sink(new PostgresSink(std::make_unique<PgDialect>(std::move(options)), std::move(conn)));
  RETURN_IF_ERROR(sink->Init());
  return sink;
}

Result<std::vector<Row>> ReadPostgresTable(const PostgresSinkOptions& options, const TableSchema& table) {
  PgConnection conn(options, /*exclusive=*/false);
  RETURN_IF_ERROR(conn.Connect());
  PgDialect dialect(options);
  const SqlTableName name = dialect.TableName(table);
  ASSIGN_OR_RETURN(auto have, dialect.DescribeTable(conn, name));
  if (!have) return Status::NotFound(fmt::format("{}: no table {}", conn.Describe(), name.display));
  std::string sql = "SELECT ";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const ColumnDesc& c = table.columns[i];
    const std::string q = PgQuote(c.name);
    sql += i ? ", " : "";
    sql += c.type == SqlType::kSet ? "array_to_string(" + q + ", ',')" : q + "::text";
  }
  sql += " FROM " + name.quoted;
  ASSIGN_OR_RETURN(SqlStatement * s, conn.Prepare(sql));
  ASSIGN_OR_RETURN(auto rows, s->Query());
  std::vector<Row> out;
  out.reserve(rows.size());
  for (auto& r : rows) {
    Row row;
    row.reserve(r.size());
    for (size_t i = 0; i < r.size() && i < table.columns.size(); ++i) {
      const ColumnDesc& c = table.columns[i];
      if (!r[i]) {
        row.push_back(Value::Null());
        continue;
      }
      Result<std::string> text = MySqlTextOf(c, std::move(*r[i]));
      if (!text.ok()) return text.status().WithContext(fmt::format("{} column {}", name.display, c.name));
      ASSIGN_OR_RETURN(Value v, ValueFromText(c, *text));
      row.push_back(std::move(v));
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string PostgresConninfoForDisplay(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  if (parsed == nullptr) {
    // Not a connection string libpq reads (a bare database name, or a broken one): nothing
    // to parse the password out of, so none is shown at all.
    return conninfo.find("password") == std::string::npos ? RedactOneUrlCredentials(conninfo)
                                                          : "(a connection string, not shown: it holds a password)";
  }
  std::string password;
  bool has_password = false;
  for (const PQconninfoOption* o = parsed; o->keyword != nullptr; ++o)
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr && o->val[0] != '\0') {
      has_password = true;
      password = o->val;
    }
  std::string out;
  if (!has_password) {
    out = conninfo;
  } else if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0) {
    out = RedactOneUrlCredentials(conninfo);
    for (size_t at = out.find('?'); at != std::string::npos && at < out.size();) {
      const size_t amp = out.find('&', at + 1);
      const size_t end = amp == std::string::npos ? out.size() : amp;
      if (out.compare(at + 1, 9, "password=") == 0) out.replace(at + 10, end - at - 10, "***");
      at = out.find('&', at + 1);
    }
  }
  if (has_password && (out.empty() || out.find(password) != std::string::npos)) {
    // The key=value form, or a URI whose password is written in a way not masked above
    // (percent-encoded): rebuilt from the parse.
    out.clear();
    for (const PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
      if (o->val == nullptr) continue;
      std::string v = std::strcmp(o->keyword, "password") == 0 ? "***" : o->val;
      if (v.empty() || v.find_first_of(" \t\n\\'") != std::string::npos) {
        std::string q = "'";
        for (char c : v) {
          if (c == '\'' || c == '\\') q += '\\';
          q += c;
        }
        v = q + "'";
      }
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", o->keyword, v);
    }
  }
  PQconninfoFree(parsed);
  return out;
}

}  // namespace sluice
