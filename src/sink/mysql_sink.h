// MysqlSink: a replica of the source tables in another MySQL or MariaDB server (InnoDB),
// written through Connector/C prepared statements. The apply logic is SqlApplier's
// (sink/sql_applier.h: upserts, key changes, first-match rows of keyless tables, absent
// columns, group commit, checkpoint in the same transaction, exactly once across a lost
// COMMIT); this file is MySQL's dialect and connection.
//
// Tables: source table `db`.`t` becomes `map(db)`.`t`, where map(db) is
// MysqlSinkOptions::databases[db] or db itself. Each is created with the source's column
// types one to one (MysqlColumnDefinition: COLUMN_TYPE as the source prints it, its
// character set and collation, NULL/NOT NULL, literal DEFAULTs), the source primary key,
// ENGINE=InnoDB and the source table's collation. Generated, invisible, AUTO_INCREMENT and
// system-versioning attributes are not copied: those columns are plain columns holding the
// values the source logged. Secondary indexes are not copied either (only the key is needed
// to apply changes; ON DUPLICATE KEY UPDATE must meet no other unique key).
// Bookkeeping in `<options.database>`: _sluice_checkpoint(id INT PRIMARY KEY, state
// LONGTEXT) (the same table earlier versions wrote), _sluice_tables, _sluice_schemas.
//
// Session (every connection, also after a reconnect): CLIENT_FOUND_ROWS (an UPDATE that
// matched a row but changed nothing is not "no row"), sql_mode = STRICT_ALL_TABLES,
// NO_AUTO_VALUE_ON_ZERO, NO_ENGINE_SUBSTITUTION, ERROR_FOR_DIVISION_BY_ZERO (no zero-date
// modes: the source's zero dates are stored as they are), time_zone '+00:00' (TIMESTAMP
// values are UTC text), character set utf8mb4, explicit_defaults_for_timestamp, foreign
// key checks off, and the named lock sluice:<database> (GET_LOCK): one run per destination.
// Values are bound in the binary protocol: integers as 64-bit integers, FLOAT as a float
// and DOUBLE as a double (exact), DECIMAL as decimal text, bytes as a blob, other text as a
// utf8mb4 string the server parses into the column's type (temporal, ENUM, SET, JSON) or
// converts to its charset (strict mode refuses a character that does not fit). An ENUM's
// '' error value (stored by a non-strict source) is written in a non-strict sql_mode for
// that one statement.
// Statements: multi-row INSERT ... ON DUPLICATE KEY UPDATE c = VALUES(c) (up to 256 rows,
// bounded by max_statement_bytes), UPDATE/DELETE by key, and for keyless tables
// UPDATE/DELETE ... WHERE <each present column null-safely (<=>) equal, character columns
// compared as bytes in their charset> LIMIT 1.
// Schema changes: MySQL DDL commits implicitly (SqlDialect::TransactionalDdl false), so a
// crash may fall between a DDL and its checkpoint; the applier then repeats the change
// and finds what is done (CREATE = DROP IF EXISTS + CREATE; RENAME/ALTER compare the
// destination table with the new definition first; rebuilds swap tables with one RENAME
// TABLE). Large source transactions are applied whole (no parts: a table first met in a
// part would commit the parts before it).
//
// Errors, by what the caller does next (MysqlErrorIsTransient): lost or refused
// connections (CR_SERVER_GONE_ERROR 2006, CR_SERVER_LOST 2013, connect errors), server
// shutdown (1053), connection killed (1927), deadlock (1213), lock wait timeout (1205),
// too many connections (1040) -> kUnavailable: the applier rolls back, reconnects and
// applies the same transaction again. Everything else is definite: kFailedPrecondition
// naming the destination, the server's error and the statement (first 200 characters);
// the applier adds the table (and column for a value the column cannot take).
// Ownership/thread safety: owns its connection; one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "mysql/connection.h"
#include "sink/sql_applier.h"

namespace sluice {

struct MysqlSinkOptions {
  ConnectOptions connect;             // where the destination is (password from the env)
  std::string database = "sluice";    // holds the bookkeeping tables; created if missing
  std::map<std::string, std::string> databases;  // source db -> destination db
  // Bound values of one multi-row statement, at most (also at most half the server's
  // max_allowed_packet).
  size_t max_statement_bytes = 4u << 20;
};

// The destination database of source database `db` under `options`.
std::string MysqlDestinationDatabase(const MysqlSinkOptions& options, const std::string& db);
// The column definition (without the name) for a source column: "varchar(20) CHARACTER SET
// latin1 COLLATE latin1_swedish_ci NOT NULL DEFAULT 'x'". kNotSupported naming the column
// for a type with no COLUMN_TYPE.
Result<std::string> MysqlColumnDefinition(const ColumnDesc& column);
// `v` of `column` as an SQL literal (DEFAULT clauses, table rebuilds). kInvalidArgument for
// kAbsent and non-finite floating point, naming the column.
Result<std::string> MysqlLiteral(const ColumnDesc& column, const Value& v);
// Whether a client or server error number is transient for the sink (see above).
bool MysqlErrorIsTransient(unsigned int errnum);

class MysqlSink : public SqlApplier {
 public:
  [[nodiscard]] static Result<std::unique_ptr<MysqlSink>> Open(MysqlSinkOptions options);

  // The destination's @@max_allowed_packet in bytes, read when the sink opened (0 if the
  // server did not say). A row's statement must fit in it (`sluice check`, "sink
  // max_allowed_packet").
  uint64_t max_allowed_packet() const { return max_allowed_packet_; }
  // The destination's @@lower_case_table_names, read when the sink opened: 1 or 2 = table
  // and database names ignore case there, so source tables `db`.`T` and `db`.`t` would be one
  // table (refused: cli/run.h CheckNameCollisions, SqlApplier::PrepareTable).
  int lower_case_table_names() const { return lower_case_table_names_; }

 private:
  using SqlApplier::SqlApplier;
  uint64_t max_allowed_packet_ = 0;
  int lower_case_table_names_ = 0;
};

}  // namespace sluice
