// The two small interfaces a SQL destination implements for the dialect-free applier
// (sink/sql_applier.h): SqlConnection (talks to the database) and SqlDialect (writes its
// SQL). SQLite (sink/sqlite_sink.h) is one implementation; PostgreSQL and MySQL/MariaDB
// are others. The applier owns all row semantics (upsert by key, key change, first-match
// delete, absent columns, statement cache, checkpoint, schema changes, group commit); a
// backend only says how to spell and run things.
//
// Errors (every Status/Result below): classified by what the caller does next, as in
// sink/sink.h. kUnavailable = transient (connection lost, server restarting, lock timeout,
// deadlock/serialization failure, disk full where the database reports it as such): the
// applier rolls back and the caller applies the same transaction again later, after
// SqlConnection::Reconnect(). Any other code is definite and stops the run; messages name
// the destination (path, host:port/db) and the database's own words. The applier adds
// the table, column and statement to them, so backends need not.
//
// Ownership: the applier owns one SqlDialect and one SqlConnection and uses them from one
// thread at a time. SqlStatement objects are owned by the connection that prepared them
// and stay valid until the connection is destroyed or Reconnect() returns (the applier
// drops every statement pointer it holds when it reconnects).
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/value.h"
#include "pipeline/change.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

// How the applier names one destination table.
struct SqlTableName {
  // Unique key of the table in this destination, used by the metadata table
  // (_sluice_tables.name) and the applier's caches. Compared as the destination compares
  // names (SQLite: case-insensitively; SqlDialect::NamesEqual).
  std::string key;
  std::string quoted;   // how SQL refers to it: "sakila.actor" (SQLite), "sakila"."actor" (PG)
  std::string display;  // for messages: sakila.actor
  // The namespace (PG schema, MySQL database) the table lives in, quoted, or "" when the
  // destination has none (SQLite). SqlDialect::EnsureNamespaceSql creates it.
  std::string quoted_namespace;
  // The same names unquoted, for catalog queries: namespace ("" when none) and the table's
  // name inside it (SQLite: the key).
  std::string namespace_name;
  std::string table_name;
};

// One column of a destination table, computed once per table by the applier.
struct SqlColumn {
  const ColumnDesc* source = nullptr;  // the source column (points into SqlTable::schema)
  const TableSchema* table = nullptr;  // its source table (SqlTable::schema), for messages
  std::string quoted;                  // SqlDialect::Quote(source->name)
  std::string type;                    // SqlDialect::ColumnType(*source); "" = none (SQLite)
  // Dialect-private: what a bound value must be turned into (SqlDialect::BindKind), so the
  // connection does not look at the type text per value.
  uint8_t bind_kind = 0;
  bool is_pk = false;
  // The source DEFAULT as a canonical Value (schema/text_value.h DefaultValue), bound on
  // insert when the row image leaves the column out; non-empty default_error: the
  // default could not be understood (reported only when it is needed).
  Value default_value;
  std::string default_error;
};

// What the applier knows of one destination table. Built by the applier; the dialect
// reads it to write statements.
struct SqlTable {
  TableSchemaPtr schema;
  SqlTableName name;
  std::vector<SqlColumn> columns;  // in source column order
  // Keyless tables: the dialect's row address (SQLite: a free alias of rowid; PG: ctid),
  // from SqlDialect::RowLocator; "" for tables with a primary key or dialects without one.
  std::string row_locator;
  const std::string& column_name(size_t i) const { return schema->columns[i].name; }
};

// A prepared statement with numbered parameters (SqlDialect::Placeholder).
class SqlStatement {
 public:
  virtual ~SqlStatement() = default;
  // Binds `v` to the 1-based parameter `index` for the next Execute/Query. `column` is the
  // destination column the value is written to or compared with; nullptr for metadata
  // parameters (then v is kText, kBytes, kInt or kNull). `v` must stay alive and unchanged
  // until Execute/Query returns (backends may keep a pointer instead of copying).
  // kAbsent is never bound. Errors: kInvalidArgument when the value cannot be stored
  // exactly in the column (message says why, e.g. "unsigned value 18446744073709551615
  // does not fit its INTEGER column"; the applier adds table and column).
  virtual Status Bind(int index, const Value& v, const SqlColumn* column) = 0;
  // Runs the statement with the bound values; returns the number of rows it changed.
  // Bindings are kept for the next run only as far as the caller binds them again (the
  // applier binds every parameter before each run).
  virtual Result<int64_t> Execute() = 0;
  // Runs a query; every row's columns as text (nullopt for NULL). For metadata only
  // (small results).
  virtual Result<std::vector<std::vector<std::optional<std::string>>>> Query() = 0;
};

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // Runs SQL without parameters or results (DDL, one statement).
  virtual Status Exec(const std::string& sql) = 0;
  // The prepared statement for `sql`, cached by its text (preparing the same text twice
  // returns the same object). Owned by the connection.
  virtual Result<SqlStatement*> Prepare(const std::string& sql) = 0;
  // Transactions. Begin takes the write lock where the database has one (SQLite BEGIN
  // IMMEDIATE). Rollback is best effort (a lost connection has rolled back already).
  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;
  // After a kUnavailable error: drop the session and open a new one (SQLite: nothing to
  // do). Invalidates every SqlStatement. kUnavailable while the server is still away.
  virtual Status Reconnect() { return Status::Ok(); }
  // After a table's definition changed: drops every prepared statement (invalidates every
  // SqlStatement), so that the next Prepare reads the table as it is now. PostgreSQL fixes a
  // statement's parameter types when it is prepared: one prepared before `n INT` became
  // BIGINT or TEXT read the new values as integers ('0042' stored as '42'). MySQL and SQLite
  // prepare again by themselves, with the types the client binds: nothing to do.
  virtual void ForgetStatements() {}
  // Bulk load hook, used when SupportsBulkLoad(): snapshot chunks (transactions, or groups
  // of them, whose changes are all Op::kRead full row images of one table). Writes `rows`
  // (each a full row image, no kAbsent, in column order) into `table` inside the open
  // transaction, replacing rows with the same key (a chunk copied again after a crash, or
  // rows the stream wrote first). Errors as above; the applier adds the table.
  virtual bool SupportsBulkLoad() const { return false; }
  virtual Status BulkLoad(const SqlTable& table, const std::vector<const Row*>& rows) {
    (void)table, (void)rows;
    return Status::NotSupported("bulk load");
  }
  // Encoded reads hook: snapshot chunks whose rows the sink's snapshot Preformatter encoded
  // ahead, on the read workers, as the values this connection binds (Transaction::preformatted
  // with the table and row count in Transaction::counted; SQLite: sink/sqlite_sink.h). Binds
  // and runs `upsert` (the table's full-row upsert) once per row of `encoded`, `rows` rows of
  // `columns` values, inside the open transaction. Malformed input is kInternal; otherwise
  // the errors of SqlStatement::Execute. Only for connections whose sink makes such chunks.
  virtual Status LoadEncodedReads(SqlStatement* upsert, size_t columns, size_t rows, std::string_view encoded) {
    (void)upsert, (void)columns, (void)rows, (void)encoded;
    return Status::Internal("this destination takes no encoded snapshot reads");
  }
  // For messages: "sqlite /path/replica.db", "postgres 127.0.0.1:5432/db".
  virtual std::string Describe() const = 0;
};

// An existing destination column as the catalog reports it.
struct SqlExistingColumn {
  std::string name;
  std::string type;  // comparable with SqlDialect::ColumnType (SqlDialect::SameType)
  int pk = 0;        // 1-based position in the primary key, 0 = not in it
};

// Runs a dialect's DescribeTable catalogue query `sql` with the text parameters `params` and
// reads its rows as (name, type, pk position); no rows = no such table (nullopt). Shared by the
// dialects so each writes only its query.
Result<std::optional<std::vector<SqlExistingColumn>>> DescribeByQuery(SqlConnection& conn, const std::string& sql,
                                                                      const std::vector<std::string>& params);

// Statement texts of the applier's own bookkeeping. Tables (names are the dialect's):
//   checkpoint: one row (id = 1) with the checkpoint text `state`
//   tables: per destination table its key (SqlTableName::key), source db, source table and
//           a JSON array of {"name","column_type",<dialect>_type} (for people and compare)
enum class SqlMeta : uint8_t {
  kLoadCheckpoint,  // no parameters; one row, one column (the state) or no row
  kSaveCheckpoint,  // (1) state: inserts or replaces the row id = 1
  kLookupTable,     // (1) key: rows of (source_db, source_table)
  kStoreTable,      // (1) key (2) source_db (3) source_table (4) columns JSON; replaces
  kForgetTable,     // (1) key
  // The checkpoint's schema history, stored apart from it (checkpoint.h, split form):
  kLoadSchemas,       // (1) ref: one row, one column (the history) or no row
  kSaveSchemas,       // (1) ref (2) history: inserts or replaces
  kDropOtherSchemas,  // (1) ref: deletes every history but that one
};

class SqlDialect {
 public:
  virtual ~SqlDialect() = default;
  virtual std::string_view name() const = 0;  // "sqlite", "postgres", "mysql"
  // `identifier` quoted for SQL (embedded quote characters doubled).
  virtual std::string Quote(std::string_view identifier) const = 0;
  // Text of the 1-based parameter `index`: "?" (SQLite, MySQL), "$3" (PG).
  virtual std::string Placeholder(int index) const = 0;
  virtual SqlTableName TableName(const TableSchema& table) const = 0;
  // Whether two SqlTableName::key values name the same table (SQLite: ignoring case).
  virtual bool NamesEqual(std::string_view a, std::string_view b) const { return a == b; }
  // Whether the destination keeps every name `table` becomes (namespace, table, columns) as
  // it is: kFailedPrecondition naming the table, the name, its length and the limit when it
  // would cut one (PostgreSQL: more than 63 bytes), so that no two names become one there.
  // Also where a dialect refuses a table it cannot hold at all (SQLite: over 2000 columns).
  // The default keeps every name.
  virtual Status CheckNames(const TableSchema& table) const {
    (void)table;
    return Status::Ok();
  }
  // The lossless destination type of a source column (docs/sinks.md), "" for no declared
  // type (SQLite only). kNotSupported names the type when it cannot be kept exactly.
  virtual Result<std::string> ColumnType(const ColumnDesc& column) const = 0;
  // Whether ColumnType text `declared` is the type `existing`: a DescribeTable type, or
  // another ColumnType text (two schemas of one table, e.g. one read from the catalog and
  // one parsed from DDL).
  virtual bool SameType(std::string_view declared, std::string_view existing) const {
    return declared == existing;
  }
  virtual uint8_t BindKind(const ColumnDesc& column) const {
    (void)column;
    return 0;
  }
  // `v` (canonical Value of `column`) as an SQL literal, for DEFAULT clauses and table
  // rebuilds. kNull gives NULL.
  virtual Result<std::string> Literal(const Value& v, const ColumnDesc& column) const = 0;

  // --- statements -----------------------------------------------------------------
  // Insert of `rows` rows (parameters row by row, `cols` order, numbered from 1). For
  // tables with a primary key, a row whose key exists gets `update_cols` from the new row
  // and keeps its other columns (no update_cols: the existing row stays as it is). `cols`
  // empty only with rows == 1 (insert all defaults). The default writes
  //   INSERT INTO t (c..) VALUES (..),(..) ON CONFLICT (pk..) DO UPDATE SET c = excluded.c..
  //   | DO NOTHING
  // which SQLite and PostgreSQL share; MySQL overrides (ON DUPLICATE KEY UPDATE).
  virtual std::string UpsertSql(const SqlTable& t, const std::vector<size_t>& cols,
                                const std::vector<size_t>& update_cols, size_t rows) const;
  // A null-safe equality test between a column and a parameter: "c IS ?" (SQLite),
  // "c IS NOT DISTINCT FROM $1" (PG), "c <=> ?" (MySQL).
  virtual std::string NullSafeEquals(const std::string& quoted_column, const std::string& param) const = 0;
  // Keyless tables: the name of the row address column (SqlTable::row_locator), or "" if
  // the dialect's first-match statements need none. kNotSupported when there is none free.
  virtual Result<std::string> RowLocator(const TableSchema& table) const = 0;
  // Update (`set_cols` from parameters 1..) or delete (set_cols empty) of ONE row, the first
  // whose `where_cols` equal the following parameters null-safely (NullSafeEquals). The
  // default: ... WHERE <locator> = (SELECT <locator> FROM t WHERE .. LIMIT 1).
  virtual std::string FirstMatchSql(const SqlTable& t, const std::vector<size_t>& set_cols,
                                    const std::vector<size_t>& where_cols) const;
  // Rows per multi-row statement (upserts and deletes by key) the applier may build; 1 =
  // one statement per row (cheapest for an in-process database). The applier never puts
  // more than MaxParameters() parameters into one statement.
  virtual size_t MaxRowsPerStatement() const { return 1; }
  virtual size_t MaxParameters() const { return 32766; }
  // Bytes of bound values (text and bytes lengths, 8 per number) one multi-row statement
  // may carry; a run stops before it would exceed this (MySQL: max_allowed_packet).
  virtual size_t MaxStatementBytes() const { return SIZE_MAX; }

  // --- catalog and DDL --------------------------------------------------------------
  // Creates the applier's bookkeeping tables if missing (one or more statements).
  virtual std::vector<std::string> CreateMetadataSql() const = 0;
  virtual std::string MetaSql(SqlMeta which) const = 0;
  // The namespace of sluice's own tables, where no source table may go ("" when they live
  // beside the data under names of their own).
  virtual std::string_view ReservedNamespace() const { return ""; }
  // "CREATE SCHEMA IF NOT EXISTS ..." for a table's namespace, or "" (SQLite).
  virtual std::string EnsureNamespaceSql(const SqlTableName& table) const {
    (void)table;
    return "";
  }
  // The table's columns in order, or nullopt when the table does not exist. Runs inside
  // the applier's open transaction.
  virtual Result<std::optional<std::vector<SqlExistingColumn>>> DescribeTable(
      SqlConnection& conn, const SqlTableName& table) const = 0;
  // Statements renaming `from` to `to` (`to` does not exist: the applier dropped it).
  virtual std::vector<std::string> RenameTableSql(const SqlTableName& from, const SqlTableName& to) const = 0;
  // What follows the column list of CREATE TABLE (MySQL: " ENGINE=InnoDB DEFAULT COLLATE=..."), or "".
  virtual std::string TableOptionsSql(const TableSchema& table) const {
    (void)table;
    return "";
  }
  // ALTER TABLE adding `column` (at the end) to `table`; rows already there read
  // `default_value` (the source DEFAULT as a canonical Value, NULL when none). The default
  // writes "ALTER TABLE t ADD COLUMN c <ColumnType> DEFAULT <Literal>".
  virtual Result<std::string> AddColumnSql(const SqlTableName& table, const ColumnDesc& column,
                                           const Value& default_value) const;
  // Where DDL is not transactional: one statement that renames `from` to `old` and `scratch`
  // to `to` atomically (MySQL's RENAME TABLE a TO b, c TO d), so a crash during a table
  // rebuild leaves either the old table or the new one. "" = none (the applier drops and
  // renames, inside its transaction).
  virtual std::string SwapTablesSql(const SqlTableName& from, const SqlTableName& old, const SqlTableName& scratch,
                                    const SqlTableName& to) const {
    (void)from, (void)old, (void)scratch, (void)to;
    return "";
  }
  // Where DDL is not transactional: statement markers (SqlApplier::ApplySchemaChanges), empty
  // tables in the bookkeeping namespace whose names (starting `_sluice_ddl_`) record how far
  // a statement of several schema changes got. MarkerTable: the marker named `name`, nullopt
  // where markers are not used (the default). ListMarkerTables: the names of those there.
  // AlsoRenameSql: the rename statement `rename` (one of RenameTableSql or SwapTablesSql)
  // renaming `from` to `to` too, in the same atomic statement.
  virtual std::optional<SqlTableName> MarkerTable(std::string_view name) const {
    (void)name;
    return std::nullopt;
  }
  virtual Result<std::vector<std::string>> ListMarkerTables(SqlConnection& conn) const {
    (void)conn;
    return std::vector<std::string>{};
  }
  virtual std::string AlsoRenameSql(const std::string& rename, const SqlTableName& from, const SqlTableName& to) const {
    (void)from, (void)to;
    return rename;
  }
  // Whether DDL takes part in transactions (SQLite, PG: yes; MySQL: no, each DDL commits
  // implicitly). With false the applier: creates tables only outside data transactions (no
  // SqlApplier::SupportsParts, since a table first met in a later part would commit the
  // parts before it); makes each schema change idempotent, so the change repeated after a
  // crash between its DDL and its checkpoint finds what is done (DescribeTable) and does
  // only the rest; rebuilds tables through SwapTablesSql.
  virtual bool TransactionalDdl() const { return true; }
};

}  // namespace sluice
