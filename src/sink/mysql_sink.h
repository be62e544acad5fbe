// MysqlSink: a replica of the source tables in another MySQL or MariaDB server (InnoDB),
// written through Connector/C (mysql/connection.h).
//
// Tables: source table `db`.`t` becomes `map(db)`.`t`, where map(db) is
// MysqlSinkOptions::databases[db] or db itself. Each is created with the source's column
// types one to one (MysqlColumnDefinition: COLUMN_TYPE as the source prints it, its
// character set and collation, NULL/NOT NULL, literal DEFAULTs), the source primary key,
// ENGINE=InnoDB and the source table's collation. Generated, invisible, AUTO_INCREMENT and
// system-versioning attributes are not copied: those columns are plain columns holding the
// values the source logged. Secondary indexes are not copied either (only the key is needed
// to apply changes; ON DUPLICATE KEY UPDATE must meet no other unique key).
// Metadata: `<options.database>`.`_sluice_checkpoint`(id INT PRIMARY KEY, state LONGTEXT).
//
// Session (every connection, also after a reconnect): sql_mode = STRICT_ALL_TABLES,
// NO_AUTO_VALUE_ON_ZERO, NO_ENGINE_SUBSTITUTION, ERROR_FOR_DIVISION_BY_ZERO (no zero-date
// modes: the source's zero dates are stored as they are), time_zone '+00:00' (TIMESTAMP
// values are UTC text), character set utf8mb4, explicit_defaults_for_timestamp, foreign
// key checks off, autocommit on between transactions.
// Values go into SQL as literals (MysqlLiteral): integers and floating point in decimal (a
// FLOAT as its exact double, so the server rounds it back to the same float), DECIMAL text
// bare (an exact decimal literal), other text quoted with mysql_real_escape_string in
// utf8mb4 (the server converts to the column's charset; strict mode refuses a character
// that does not fit), bytes as X'hex'. So nothing is converted implicitly except
// text -> temporal/ENUM/SET/JSON, which is the server's own exact parse of its own output.
//
// Apply(txn) / ApplyGroup: START TRANSACTION; the changes; the checkpoint row; COMMIT.
// A table's upserts (c, r, updates keeping the key) with the same present columns become one
// multi-row INSERT ... ON DUPLICATE KEY UPDATE (in order: a later image of a key wins), its
// deletes one DELETE ... WHERE key IN (...), across the group (tables are independent, and
// changes to different byte-compared keys commute: see Table in the .cc). Row semantics are the SQLite sink's (sink/sqlite_sink.h): a key change
// deletes the row holding the new key, then moves the row (or inserts the after image);
// absent columns (MINIMAL/NOBLOB images) are left alone on update and take the source
// DEFAULT on insert; tables without a key update/delete the first row equal to the before
// image (compared byte for byte), inserting the after image when none matches.
// ApplySchemaChanges: MySQL DDL commits implicitly, so it cannot share a transaction with
// the checkpoint; each step is idempotent instead (the stream repeats the DDL after a
// crash between the DDL and the checkpoint): CREATE = DROP IF EXISTS + CREATE; RENAME and
// ALTER check what is already there; ALTER with only columns added at the end is
// ALTER TABLE ADD COLUMN, anything else a new table filled by INSERT ... SELECT through
// the column mapping, then swapped in with RENAME TABLE.
//
// Errors, by what the caller does next (MysqlErrorIsTransient): lost or refused
// connections (CR_SERVER_GONE_ERROR 2006, CR_SERVER_LOST 2013, connect errors), server
// shutdown (1053), connection killed (1927), deadlock (1213), lock wait timeout (1205),
// too many connections (1040) -> kUnavailable: the transaction was rolled back (or its
// commit may or may not have happened); the connection is dropped and the next call
// reconnects, reads the stored checkpoint and skips a transaction whose checkpoint is
// already stored (so a commit lost in flight is not applied twice). Everything else is
// definite: kFailedPrecondition naming the destination, table and the statement (first
// 200 characters), e.g. a duplicate on a key the source does not have, access denied,
// a disk-full server, a value the column refuses under strict mode.
// Ownership/thread safety: owns its connection; one thread at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mysql/connection.h"
#include "sink/sink.h"

namespace sluice {

struct MysqlSinkOptions {
  ConnectOptions connect;             // where the destination is (password from the env)
  std::string database = "sluice";    // holds _sluice_checkpoint; created if missing
  std::map<std::string, std::string> databases;  // source db -> destination db
  size_t max_statement_bytes = 4u << 20;         // one multi-row statement, at most
};

// The destination database of source database `db` under `options`.
std::string MysqlDestinationDatabase(const MysqlSinkOptions& options, const std::string& db);
// The column definition (without the name) for a source column: "varchar(20) CHARACTER SET
// latin1 COLLATE latin1_swedish_ci NOT NULL DEFAULT 'x'". kNotSupported naming the column
// for a type with no COLUMN_TYPE.
Result<std::string> MysqlColumnDefinition(const ColumnDesc& column);
// CREATE TABLE `dest_db`.`name` (...) for `table`.
Result<std::string> MysqlCreateTableSql(const TableSchema& table, const std::string& dest_db,
                                        const std::string& name);
// `v` of `column` as an SQL literal; `escape` escapes text for single quotes (the
// connection's mysql_real_escape_string). kInvalidArgument for kAbsent and non-finite
// floating point, naming the column.
Result<std::string> MysqlLiteral(const ColumnDesc& column, const Value& v,
                                 const std::function<std::string(std::string_view)>& escape);
// Whether a client or server error number is transient for the sink (see above).
bool MysqlErrorIsTransient(unsigned int errnum);

class MysqlSink : public Sink {
 public:
  [[nodiscard]] static Result<std::unique_ptr<MysqlSink>> Open(MysqlSinkOptions options);
  ~MysqlSink() override;
  MysqlSink(const MysqlSink&) = delete;
  MysqlSink& operator=(const MysqlSink&) = delete;

  Result<std::optional<std::string>> LoadCheckpoint() override;
  // CREATE DATABASE/TABLE IF NOT EXISTS, or check that the existing table's columns have
  // the source's names and types (kFailedPrecondition naming the first difference).
  Status PrepareTable(const TableSchema& table) override;
  Status Apply(const Transaction& txn) override;
  Status ApplyGroup(const std::vector<Transaction>& group) override;
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  // DELETE FROM the table and the checkpoint row, in one transaction.
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  Status Flush() override;  // every commit is already durable on the server

 private:
  struct Table;
  struct Batch;
  explicit MysqlSink(MysqlSinkOptions options);

  Status EnsureConnected();
  // Runs `sql`; on error returns the classified Status naming `what` and the statement, and
  // drops the connection on a transient error. `affected`/`matched` get the counts.
  Status Exec(std::string_view what, const std::string& sql, uint64_t* affected = nullptr,
              uint64_t* matched = nullptr);
  Result<Table*> TableFor(const TableSchemaPtr& schema);
  Status ApplyTransactions(const Transaction* txns, size_t count);
  Status ApplyChange(Table& t, const RowChange& c);
  Status Upsert(Table& t, const std::vector<const Value*>& image);
  Status FlushBatch(Batch& batch);
  Status FlushTable(Table& t);  // its pending delete and upsert statements
  static std::string KeyText(Table& t, const std::function<const Value&(size_t)>& value);
  Status WriteCheckpoint(const std::string& checkpoint);
  Status InTransaction(const std::string& checkpoint, const std::function<Status()>& body);
  std::string Escape(std::string_view s);
  Result<std::vector<std::string>> DestinationColumns(const std::string& db, const std::string& table,
                                                      std::vector<std::string>* types = nullptr);
  void Forget(const std::string& dest_name);

  MysqlSinkOptions options_;
  std::unique_ptr<Connection> conn_;
  std::string where_;  // "mysql sink user@host:port" for messages
  bool connected_once_ = false;
  // After a reconnect: the stored checkpoint, compared with the next transaction's to skip
  // one whose commit reached the server although its answer was lost.
  std::optional<std::optional<std::string>> stored_after_reconnect_;
  std::unordered_map<std::string, std::unique_ptr<Table>> tables_;  // by "`db`.`t`"
  std::unordered_map<const TableSchema*, std::pair<TableSchemaPtr, Table*>> by_schema_;
  std::vector<Table*> targets_;
  std::vector<Table*> dirty_;  // tables with changes pending in the open transaction
};

}  // namespace sluice
