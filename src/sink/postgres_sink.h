// PostgresSink: a replica of the source tables in a PostgreSQL database, through libpq.
// The apply logic is SqlApplier's (sink/sql_applier.h); this file is PostgreSQL's dialect
// and connection.
//
// Tables: source table db.t becomes "<schema>"."t" where <schema> is
// PostgresSinkOptions::schemas[db], or db itself when unmapped; the schema is created when
// missing. Column types (PostgresColumnType, docs/sinks.md "PostgreSQL"), lossless:
//   TINYINT, SMALLINT, TINYINT UNSIGNED -> smallint; MEDIUMINT, INT, SMALLINT/MEDIUMINT
//   UNSIGNED -> integer; BIGINT, INT UNSIGNED -> bigint; BIGINT UNSIGNED -> numeric(20,0);
//   DECIMAL(p,s) -> numeric(p,s); FLOAT -> real; DOUBLE -> double precision; BIT(n) ->
//   bit varying(n); YEAR -> smallint; DATE -> date; DATETIME(n) -> timestamp(n);
//   TIMESTAMP(n) -> timestamptz(n) (session time zone UTC); TIME(n) -> interval(n) (MySQL
//   TIME spans -838:59:59..838:59:59, beyond PostgreSQL's time); the zero DATE/DATETIME/
//   TIMESTAMP ('0000-00-00...') -> '-infinity' (no other value maps there; other dates
//   with a zero part are refused, naming table and column); CHAR/VARCHAR/TEXT/ENUM ->
//   text (a NUL byte in such a value is refused: PostgreSQL text cannot hold it);
//   SET -> text[] (the members, in definition order); JSON -> jsonb; BINARY/VARBINARY/BLOB,
//   strings of charset binary, GEOMETRY (SRID + WKB as the server gives it) -> bytea;
//   UUID -> uuid; INET4/INET6 -> text; VECTOR -> text (the canonical text).
// Bookkeeping in schema "_sluice": checkpoint(id int PRIMARY KEY, state text) and
// tables(name text PRIMARY KEY, source_db, source_table, columns).
// Writes: snapshot chunks with COPY (into the table directly; when a row with that key is
// already there, the chunk is copied into a temporary table and merged with INSERT ...
// ON CONFLICT DO UPDATE); stream batches as multi-row INSERT ... ON CONFLICT DO UPDATE,
// UPDATE and DELETE by key; the checkpoint row in the same transaction.
//
// Errors: kUnavailable (transient: the caller applies the same transaction again, after a
// reconnect) for a lost or refused connection (SQLSTATE class 08, 57P01-57P03, libpq
// connection errors), serialization failures and deadlocks (40001, 40P01), lock timeouts
// (55P03) and too many connections (53300); every other error is definite (constraint
// violations, permission denied, disk full 53100, ...), kFailedPrecondition naming the
// destination, SQLSTATE, table and statement. A value a column cannot hold exactly is
// kInvalidArgument naming table and column.
// Ownership/thread safety: owns its PGconn; one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sink/sql_applier.h"

namespace sluice {

struct PostgresSinkOptions {
  // libpq connection string ("host=127.0.0.1 port=5432 user=sluice dbname=replica") or URI,
  // without the password.
  std::string conninfo;
  std::string password;  // from the environment (sink.postgres.password_env); may be empty
  std::map<std::string, std::string> schemas;  // source database -> PostgreSQL schema
  int connect_timeout_s = 10;
};

// `conninfo` for a message or a check line: a password in it (URI userinfo, "?password=",
// "password=") shown as "***", whatever the form. The config refuses a conninfo holding one
// (cli/postgres_config.h); this masks it anyway wherever one is printed. Without a password
// the conninfo is returned as written; a key=value one with a password comes back rebuilt
// from libpq's parse (its keywords in libpq's order).
std::string PostgresConninfoForDisplay(const std::string& conninfo);

// The PostgreSQL schema for source database `db` under `options`.
std::string PostgresSchemaName(const PostgresSinkOptions& options, const std::string& db);

// PostgreSQL keeps at most this many bytes of a name (NAMEDATALEN - 1): a longer identifier
// is cut with only a NOTICE (docs "Identifiers and Key Words"), so two source names that
// share their first 63 bytes would become one table, schema or column (probe7 F2).
inline constexpr size_t kPostgresMaxNameBytes = 63;
// How many bytes of identifier `name` PostgreSQL keeps: all of them when it has at most 63,
// else its longest prefix of at most 63 bytes that ends where a UTF-8 character does (its
// truncate_identifier and pg_mbcliplen, in a UTF8 database). Pure.
size_t PostgresKeptNameBytes(std::string_view name);
// Whether PostgreSQL keeps every name source table db.t with `columns` becomes under
// `options` as it is: its schema (PostgresSchemaName), its table name, each column. The first
// it would cut is kInvalidArgument naming the source table, the name, its length in bytes,
// the limit, what it would become and what to do (source.exclude, sink.postgres.schemas, a
// shorter name in the source). Pure.
Status CheckPostgresNames(const PostgresSinkOptions& options, const std::string& db, const std::string& table,
                          const std::vector<std::string>& columns);
// The lossless PostgreSQL type of a source column (see above); kNotSupported for types
// sluice does not know.
Result<std::string> PostgresColumnType(const ColumnDesc& column);

class PostgresSink : public SqlApplier {
 public:
  [[nodiscard]] static Result<std::unique_ptr<PostgresSink>> Open(PostgresSinkOptions options);

 private:
  using SqlApplier::SqlApplier;
};

// Reads every row of the replica table of `table` back as canonical Values (core/value.h),
// the inverse of the type mapping, for `sluice compare`. Rows in no particular order.
// kNotFound when the table does not exist; kUnavailable for connection errors.
Result<std::vector<Row>> ReadPostgresTable(const PostgresSinkOptions& options, const TableSchema& table);

}  // namespace sluice
