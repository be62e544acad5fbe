// SqlApplier: the Sink of every SQL destination (SQLite, PostgreSQL, MySQL/MariaDB), a
// replica of the source tables, written through a SqlDialect and a SqlConnection
// (sink/sql_dialect.h).
//
// Tables: each source table becomes SqlDialect::TableName(table); columns keep their source
// names and order with SqlDialect::ColumnType types; source primary keys become PRIMARY KEY.
// Bookkeeping (SqlMeta): the checkpoint row and one row per table in the tables table.
// Two source tables mapping to one destination name (SqlDialect::NamesEqual) is
// kFailedPrecondition.
//
// Apply(txn) / ApplyGroup(group): Begin; every change of every transaction in order; the
// last non-empty checkpoint; Commit. Any error rolls the whole destination transaction
// back, so data and checkpoint move together or not at all (never part of a source
// transaction, never part of a group).
// Row semantics (PK tables): c/r upsert; u updates the present after-image columns of the
// row with the before-image key, moving it when the key changed (a row already holding the
// new key is deleted first), and inserts the after image when no row matched; d deletes by
// key. Absent (kAbsent) columns are left untouched by updates (and by an upsert that
// meets an existing row); a newly inserted row stores the source column's DEFAULT
// (schema/text_value.h DefaultValue: literal defaults in canonical form, NULL for none and
// for expression defaults, which the server logs in every image anyway). Tables without a
// primary key: c/r insert; u/d act on the first row equal to the before image on its
// present columns (NULL matches NULL), and u inserts the after image when none matches.
// When SqlDialect::MaxRowsPerStatement() > 1, a table's inserts and key-keeping updates
// (as upserts) and its deletes by key are collected over the whole group and sent as
// multi-row statements (tables are independent; within a table, changes to distinct keys
// commute where keys compare by bytes, and a later change to a pending key replaces the
// pending one when it alone leaves the same row; otherwise order is kept); snapshot chunks go through
// SqlConnection::BulkLoad when the backend has one; chunks encoded ahead by the sink's
// snapshot Preformatter (Transaction::preformatted, the table and row count in
// Transaction::counted) go to SqlConnection::LoadEncodedReads, before the group's other changes
// (snapshot reads of distinct keys: the order does not matter).
// An empty checkpoint leaves the stored checkpoint as it was. The checkpoint's schema history
// is kept in its own table (SqlMeta::kSaveSchemas), written only when it changed, in the same
// transaction as the checkpoint row that refers to it; LoadCheckpoint joins them.
//
// Transient errors (kUnavailable): the call rolls back and returns kUnavailable; the next
// call reconnects first (SqlConnection::Reconnect). When the connection was lost during
// COMMIT, the outcome is unknown: the next Apply/ApplyGroup reads the stored checkpoint and,
// if it already equals the one the lost commit carried, returns Ok without applying the
// transaction again (exactly once across destination restarts).
//
// Errors otherwise: kInvalidArgument for changes that do not fit the table (value count,
// absent key column, a value the column cannot hold exactly), kFailedPrecondition when an
// existing destination table's columns differ from the source schema, or for a definite
// database error; messages name the destination (SqlConnection::Describe), the table and
// column or statement.
// Ownership/thread safety: owns its dialect and connection; one thread at a time.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sink/sink.h"
#include "sink/sql_dialect.h"

namespace sluice {

// Whether PrepareTable can use the existing destination table `have` (as
// SqlDialect::DescribeTable reports it) for `schema`: OK, or the kFailedPrecondition
// PrepareTable gives, naming the table and column (PrepareTable adds the destination's
// description in front). Columns appended at the end of `schema` that `have` lacks count as
// there: PrepareTable adds them (up to the first key column). Pure.
Status MatchExistingTable(const SqlDialect& dialect, const TableSchema& schema, std::vector<SqlExistingColumn> have);

class SqlApplier : public Sink {
 public:
  // Creates the bookkeeping tables if missing.
  [[nodiscard]] static Result<std::unique_ptr<SqlApplier>> Open(std::unique_ptr<SqlDialect> dialect,
                                                                std::unique_ptr<SqlConnection> conn);
  ~SqlApplier() override;
  SqlApplier(const SqlApplier&) = delete;
  SqlApplier& operator=(const SqlApplier&) = delete;

  Result<std::optional<std::string>> LoadCheckpoint() override;
  // CREATE TABLE IF NOT EXISTS (columns added at the end since are added), or check that
  // the existing table has the same columns. Apply() prepares tables it has not seen
  // itself, so calling this is optional.
  Status PrepareTable(const TableSchema& table) override;
  Result<std::optional<bool>> HasTable(const TableSchema& table) override;
  Status Apply(const Transaction& txn) override;
  Status ApplyGroup(const std::vector<Transaction>& group) override;
  Status SaveCheckpoint(const std::string& checkpoint) override;
  // One destination transaction (where DDL is transactional): CREATE (replacing a kept
  // table of that name), RENAME, ALTER (ADD COLUMN for columns added at the end with a
  // literal default or NULL; otherwise a new table filled from the old one by the column
  // mapping), DROP (the table is kept), then the checkpoint row.
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string& checkpoint) override;
  // DELETE FROM the table and the checkpoint row, in one destination transaction.
  Status ResetTable(const TableSchema& table, const std::string& checkpoint) override;
  Status Flush() override;  // every commit is already durable: nothing to do
  bool CheckpointsEachTransaction() const override { return false; }  // a group's last only
  // Parts of a large source transaction: one open destination transaction until the
  // ApplyGroup that ends it commits (tables first met in a part are created inside it, so
  // only where DDL is transactional: SqlDialect::TransactionalDdl).
  bool SupportsParts() const override { return dialect_->TransactionalDdl(); }
  Status ApplyPart(const Transaction& part) override;
  void AbortParts() override;

  SqlConnection& connection() { return *conn_; }
  // A DROP (SchemaChange kDrop) drops the destination table too, instead of keeping it with
  // its rows (config sink.drop_tables).
  void set_drop_tables(bool drop) { drop_tables_ = drop; }
  const SqlDialect& dialect() const { return *dialect_; }

 protected:
  // For backends that wrap the applier in their own class (SqliteSink): construct, then Init().
  SqlApplier(std::unique_ptr<SqlDialect> dialect, std::unique_ptr<SqlConnection> conn);
  // Creates the bookkeeping tables if missing.
  Status Init();

 private:
  // kFailedPrecondition, naming both source tables and the destination table, when a change
  // of `changes` would give a table the destination name another source table holds (the
  // tables table, as the changes before it leave it). Reads only.
  Status RefuseTakenNames(const std::vector<SchemaChange>& changes);
  // Marks the connection for Reconnect() when `st` is transient; returns it.
  Status Note(Status st);

  Status Exec(const std::string& sql);
  Result<SqlStatement*> Meta(SqlMeta which);
  Result<SqlTable*> TableFor(const TableSchemaPtr& schema);
  Status ApplyChanges(const Transaction* txns, size_t count);
  Status ApplyChange(SqlTable& t, const RowChange& c);
  Status ApplyInsert(SqlTable& t, const std::vector<const Value*>& image);
  Status InsertReads(SqlTable& t);
  Status InsertEncodedReads(const Transaction& txn);
  Status ApplyUpdatePk(SqlTable& t, const RowChange& c);
  Status ApplyUpdateNoPk(SqlTable& t, const RowChange& c);
  Status ApplyDelete(SqlTable& t, const RowChange& c);
  // Stream batches (SqlDialect::MaxRowsPerStatement() > 1): a table's upserts and deletes by
  // key not sent yet (see Batch in the .cc). Pointers into the changes being applied and
  // into SqlColumn::default_value.
  struct Pending {
    bool bytes_keys = false;  // key columns compare by bytes: upserts and deletes commute
    std::string mask;         // of the upserts: per column '1' value, '2' DEFAULT
    std::vector<const Value*> up_values;  // columns.size() per row
    std::vector<char> up_live;  // per row of up_values: 0 once a delete of its key took its place
    size_t up_rows = 0, up_bytes = 0;  // live rows; bytes of every row taken (an upper bound)
    std::unordered_map<std::string, size_t> up_keys;  // live rows: key -> row
    std::vector<const Value*> del_values;  // primary_key.size() per row
    std::vector<char> del_live;  // per row of del_values: 0 once an upsert of its key took its place
    size_t del_rows = 0;         // live rows
    std::unordered_map<std::string, size_t> del_keys;  // live rows: key -> row
  };
  Status Batch(SqlTable& t, const RowChange& c);
  Status FlushUpserts(SqlTable& t, Pending& p);
  Status FlushDeletes(SqlTable& t, Pending& p);
  Status FlushTable(SqlTable& t);
  // The checkpoint row, and the schema history it refers to when that is not the one stored
  // (a whole checkpoint text is split first: checkpoint.h).
  Status WriteCheckpoint(const std::string& checkpoint,
                         const std::shared_ptr<const SchemaHistoryText>& schemas = nullptr);
  Status Bind(SqlTable& t, SqlStatement* s, int index, size_t column, const Value& v);
  Result<int64_t> Run(SqlTable* t, SqlStatement* s);
  Result<SqlStatement*> CachedStatement(SqlTable& t, const std::string& key);
  Status Begin();   // no-op while parts hold the transaction open
  void Rollback();  // rolls back everything, parts included
  // Before any work: reconnects after a transient error (dropping every cached statement).
  Status Recover();
  // Wraps a failed commit: remembers `checkpoint` when the outcome is unknown.
  Status Commit(const std::string* checkpoint);
  Status CreateTableSql(const TableSchema& schema, const std::string& quoted, bool if_not_exists,
                        std::string* sql) const;
  Status BuildTable(const TableSchema& schema, SqlTable* t) const;
  void ForgetTable(const std::string& key);

  std::unique_ptr<SqlDialect> dialect_;
  std::unique_ptr<SqlConnection> conn_;
  std::unordered_map<std::string, std::unique_ptr<SqlTable>> tables_;  // by SqlTableName::key
  // Schema objects already matched to a table; holds the pointer alive so it is never reused.
  std::unordered_map<const TableSchema*, std::pair<TableSchemaPtr, SqlTable*>> by_schema_;
  // Per table key: statement cache key -> prepared statement (owned by conn_).
  std::unordered_map<const SqlTable*, std::unordered_map<std::string, SqlStatement*>> stmts_;
  bool need_reconnect_ = false;
  bool drop_tables_ = false;
  // The checkpoint of a commit whose outcome is unknown (connection lost during COMMIT).
  std::optional<std::string> in_doubt_;
  std::string key_;                  // scratch: statement cache key
  std::vector<const Value*> image_;  // scratch: values of an insert
  std::vector<SqlTable*> targets_;   // scratch: the table of each change being applied
  std::vector<const RowChange*> flat_;  // scratch: the changes being applied, in order
  std::unordered_map<const SqlTable*, Pending> pending_;  // scratch: stream batches
  std::vector<SqlTable*> dirty_;                          // scratch: tables with one, in order
  std::array<SqlStatement*, 8> meta_{};   // SqlMeta statements (owned by conn_)
  // The history the schemas table holds (as of the open transaction); null: unknown, written
  // again by the next checkpoint that refers to one. Reset by Rollback and Recover.
  std::shared_ptr<const SchemaHistoryText> stored_schemas_;
  bool part_open_ = false;  // ApplyPart opened the current transaction
  std::vector<const Row*> rows_;     // scratch: rows of a bulk load
};

}  // namespace sluice
