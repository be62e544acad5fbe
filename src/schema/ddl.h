// DDL understanding: classify a statement (a QUERY event's text) and, for the statements
// that shape tables, say which tables and what change, in terms of the typed column model
// (schema/table_schema.h).
//
// Table-shaping (kind != kNone):
//   CREATE TABLE [IF NOT EXISTS] t (...) | LIKE u | [AS] SELECT ... | (...) SELECT ...
//   ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] t <clauses>   (also CREATE/DROP INDEX, which
//                                                           are reported as an ALTER)
//   RENAME TABLE a TO b [, c TO d ...]                      (swaps, cross-database moves)
//   DROP TABLE [IF EXISTS] a [, b ...] [RESTRICT|CASCADE]
//   TRUNCATE [TABLE] t
// Everything else (databases, views, users, grants, routines, triggers, events, FLUSH,
// OPTIMIZE/ANALYZE/REPAIR/CHECK, SET, BEGIN/COMMIT/XA, DML) is kind kNone. TEMPORARY tables
// are kNone too (they are never replicated as rows) with `temporary` set.
//
// A table-shaping statement whose clauses are not all understood has `understood == false`
// and `not_understood` naming the first such clause: the caller must not guess (re-read the
// definition from the server, or stop). When even the table names could not be read (e.g.
// `TRUNCATE "db"."t"` parsed without ansi_quotes), `tables` and `renames` are empty. Table names without a database get `default_db`
// (the QUERY event's schema).
// Errors: kInvalidArgument only for text the tokenizer rejects (unterminated quote/comment).
// Pure; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/sql_tokenizer.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice::ddl {

enum class Kind : uint8_t { kNone, kCreateTable, kAlterTable, kRenameTable, kDropTable, kTruncate };
std::string_view KindName(Kind k);  // "none", "create", "alter", "rename", "drop", "truncate"

struct TableRef {
  std::string db;
  std::string table;
  std::string ToString() const { return db + "." + table; }
  friend bool operator==(const TableRef&, const TableRef&) = default;
};

enum class OpKind : uint8_t {
  kAddColumn,          // column (definition), placement
  kDropColumn,         // name
  kModifyColumn,       // column (definition; same name), placement
  kChangeColumn,       // name -> column (definition, new name), placement
  kRenameColumn,       // name -> new_name
  kSetDefault,         // name, column.default_*   (ALTER COLUMN c SET DEFAULT x)
  kDropDefault,        // name                     (ALTER COLUMN c DROP DEFAULT)
  kSetVisibility,      // name, column.is_invisible (ALTER COLUMN c SET [IN]VISIBLE)
  kAddPrimaryKey,      // key_columns
  kDropPrimaryKey,
  kAddIndex,           // name (may be ""), key_columns  (KEY/INDEX/UNIQUE/FULLTEXT/SPATIAL)
  kDropIndex,          // name
  kRenameIndex,        // name -> new_name
  kAlterIndex,         // name  (ALTER INDEX i [IN]VISIBLE / IGNORED)
  kAddForeignKey,      // name
  kDropForeignKey,     // name
  kAddCheck,           // name
  kDropConstraint,     // name  (DROP CONSTRAINT / DROP CHECK)
  kRenameTable,        // new_table
  kConvertCharset,     // charset, collation  (CONVERT TO CHARACTER SET: rewrites rows)
  kDefaultCharset,     // charset, collation  (new columns only)
  kEngine,             // name = engine
  kAutoIncrement,      // the table's AUTO_INCREMENT counter
  kTableOption,        // name = option (COMMENT, ROW_FORMAT, KEY_BLOCK_SIZE, STATS_*, ...)
  kPartition,          // name = what (PARTITION BY / ADD / DROP / REORGANIZE / REMOVE ...)
  kAddSystemVersioning,
  kDropSystemVersioning,
  kAddPeriod,          // PERIOD FOR SYSTEM_TIME / application periods
  kDropPeriod,
  kRebuild,            // FORCE, ENGINE with no change, ORDER BY, algorithm/lock options
  kDisableKeys,        // name = "keys" (DISABLE/ENABLE KEYS), "discard_tablespace",
                       // "import_tablespace" (IMPORT replaces every row without row events)
};
std::string_view OpName(OpKind k);  // "add_column", "drop_column", ...

enum class Placement : uint8_t { kDefault, kFirst, kAfter };

// What a column definition wrote that the typed column does not keep, and on which the value
// the server stores depends: the DEFAULT value as written (its bytes in the statement, from
// the value's first token to the next token, trailing blanks cut; "" without DEFAULT), and
// whether the definition said NULL or NOT NULL (a TIMESTAMP that says neither is NOT NULL
// DEFAULT CURRENT_TIMESTAMP under explicit_defaults_for_timestamp=OFF). ddl_apply.h judges it.
struct ColumnSyntax {
  std::string default_written;
  bool null_written = false;
  friend bool operator==(const ColumnSyntax&, const ColumnSyntax&) = default;
};

struct AlterOp {
  OpKind kind;
  std::string name;      // the existing column/index/constraint named by the clause
  std::string new_name;  // RENAME COLUMN/INDEX target
  std::optional<ColumnDesc> column;  // ADD/MODIFY/CHANGE definition; SET DEFAULT value
  Placement placement = Placement::kDefault;
  std::string after;     // Placement::kAfter
  std::vector<std::string> key_columns;
  std::string charset;   // CONVERT TO / DEFAULT CHARACTER SET
  std::string collation;
  TableRef new_table;    // kRenameTable; kPartition "exchange"/"convert": the other table
  bool if_exists = false;      // DROP COLUMN IF EXISTS, ...
  bool if_not_exists = false;  // ADD COLUMN IF NOT EXISTS, ...
  ColumnSyntax syntax;         // ADD/MODIFY/CHANGE COLUMN, SET DEFAULT
};

struct Statement {
  Kind kind = Kind::kNone;
  bool understood = true;
  std::string not_understood;  // first clause not understood, with its byte offset
  bool temporary = false;
  bool if_exists = false;
  bool if_not_exists = false;
  bool or_replace = false;
  bool ignore = false;         // ALTER IGNORE TABLE
  // MariaDB SET STATEMENT var=x[, ...] FOR <statement>: the statement ran with session
  // variables (sql_mode, explicit_defaults_for_timestamp, ...) the QUERY event does not carry.
  bool set_statement = false;

  // Tables the statement shapes: CREATE/ALTER/TRUNCATE one; DROP several; RENAME every
  // source then every target, in statement order (see renames).
  std::vector<TableRef> tables;
  std::vector<std::pair<TableRef, TableRef>> renames;  // RENAME TABLE / ALTER ... RENAME

  // CREATE TABLE: the new definition (columns in order, primary key, engine, charset,
  // system versioning), filled as far as the statement says; like/select say where the
  // rest comes from.
  std::optional<TableSchema> definition;
  std::vector<ColumnSyntax> column_syntax;  // CREATE: one per definition->columns
  std::string default_charset;    // table-level DEFAULT CHARSET / COLLATE (CREATE)
  std::string default_collation;
  std::optional<TableRef> like;   // CREATE TABLE t LIKE u
  bool as_select = false;         // CREATE TABLE ... SELECT (rows come with the statement)
  bool sequence = false;          // CREATE TABLE ... SEQUENCE=1 (MariaDB: makes a SEQUENCE)

  std::vector<AlterOp> ops;       // ALTER TABLE clauses in order (CREATE/DROP INDEX too)

  // DROP DATABASE/SCHEMA db (kind kDropTable, `tables` empty): every table of db is dropped;
  // the caller, which knows them, names them.
  std::string drop_database;

  // One line: "<kind> <tables>[: op(name), ...]" / "none", plus " (partial: ...)".
  std::string Summary() const;
};

struct ParseOptions {
  // Decides /*!NNNNN */ comments (schema/sql_tokenizer.h).
  uint32_t server_version = sql::kAnyServerVersion;
  // MariaDB: JSON is an alias of LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin (with a
  // JSON_VALID check), as the server itself records it.
  bool mariadb = false;
  // The statement's sql_mode has ANSI_QUOTES: "x" is an identifier (schema/sql_tokenizer.h).
  bool ansi_quotes = false;
};

Result<Statement> Parse(std::string_view sql, std::string_view default_db,
                        const ParseOptions& options = {});

// Calls `fn` on every table name `st` holds, to be rewritten in place: `tables`, both sides
// of `renames`, `like`, the CREATE definition's db/table and the ALTER clauses' `new_table`
// (drop_database is the caller's). For a server with lower_case_table_names, where a
// statement's text keeps the case it was written in and row events name the stored table
// (stream/streamer.cc folds or checks the names).
void ForEachTableRef(Statement& st, const std::function<void(TableRef&)>& fn);

// Column definition tokens (after the name) -> the typed column: type, length/precision/
// scale/fsp, unsigned, charset/collation, labels, NULL/NOT NULL, DEFAULT (literal,
// NULL or expression), AUTO_INCREMENT, generated (VIRTUAL/STORED/PERSISTENT), INVISIBLE,
// ROW START/END. column_type is rebuilt in the server's lower-case form ("decimal(6,2)
// unsigned", "varchar(10)", "enum('a','b')"). Clauses that do not change the stored value
// (COMMENT, KEY, UNIQUE, REFERENCES, CHECK, COLUMN_FORMAT, STORAGE, SRID, ...) are
// accepted. `*primary_key` is set for an inline PRIMARY KEY.
// Errors: kNotSupported naming the first token it does not know.
Result<ColumnDesc> ParseColumnDefinition(const std::vector<sql::Token>& tokens, size_t* pos,
                                         std::string name, bool* primary_key,
                                         const ParseOptions& options = {});

}  // namespace sluice::ddl
