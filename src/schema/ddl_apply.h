// DDL application: the definition of a table after a parsed table-shaping statement
// (schema/ddl.h), and whether a sink can follow the change in place exactly.
//
// ApplyAlter(before, stmt) walks stmt.ops in order over a copy of `before` and returns the
// new definition plus, for each of its columns, where its values come from (a column of
// `before`, or -1 for a new column whose existing rows take its default). Errors
// (kFailedPrecondition, naming the clause) when a clause names a column that is not there
// or adds one that already is: the history and the statement disagree, which must stop the
// run rather than map values onto the wrong columns.
//
// `exact` says whether every existing row's stored values, seen through the new
// definition, are what a sink gets by renaming/moving/dropping columns and filling new
// columns with their literal default (or NULL); when it is false, `why_not_exact` names
// the first clause that breaks this (a new column from an expression, AUTO_INCREMENT, a
// STORED/VIRTUAL generated column, NOT NULL without a default, a narrowing or retyping
// MODIFY, CONVERT TO CHARACTER SET, system versioning, a DEFAULT whose stored value sluice
// cannot state (DefaultNotExact; for ADD COLUMN it fills the existing rows, for MODIFY, CHANGE
// and SET DEFAULT it would be recorded in the definition), a TIMESTAMP that says neither NULL
// nor DEFAULT, ALTER IGNORE, IMPORT TABLESPACE, an ENGINE that does not keep the rows, a
// SET STATEMENT prefix hiding the sql_mode ...). Rows written after the DDL carry their own
// values and are never the problem.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schema/ddl.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice::ddl {

struct Applied {
  TableSchema after;
  std::vector<int> source_of;  // per column of `after`: index into `before`, or -1
  bool exact = true;
  std::string why_not_exact;
  bool renamed = false;        // ALTER ... RENAME TO: after.db/after.table are the new name
};

// ApplyOptions::sql_mode when the QUERY event does not say (every bit set: every mode that
// changes a literal may have been on).
inline constexpr uint64_t kUnknownSqlMode = ~uint64_t{0};

struct ApplyOptions {
  // The statement ran under a strict sql_mode (STRICT_TRANS_TABLES / STRICT_ALL_TABLES, from
  // the QUERY event): making a column NOT NULL would have failed on a NULL, so a logged
  // statement converted none.
  bool strict = false;
  // The statement's sql_mode bits (Q_SQL_MODE_CODE of the QUERY event, MariaDB/MySQL
  // sql_mode values), or kUnknownSqlMode: NO_BACKSLASH_ESCAPES, EMPTY_STRING_IS_NULL and
  // ORACLE change what a quoted DEFAULT stores.
  uint64_t sql_mode = 0;
};

// Whether the value the server stores for `col`'s literal DEFAULT (col.default_kind ==
// kLiteral), written in the statement as `written` (ColumnSyntax::default_written) under
// `sql_mode`, is the value DefaultValue(col) (schema/text_value.h) gives every sink: "" when
// it is, else why not. Only forms whose stored value is the literal itself are vouched for:
//   integer columns    a decimal integer (or TRUE/FALSE) in the type's range, at most
//                      INT64_MAX for BIGINT UNSIGNED (the sinks hold 64-bit signed integers)
//   DECIMAL(p,s)       a decimal number with at most s fraction digits and p-s integer digits
//   CHAR/VARCHAR/TEXT  a single-quoted printable-ASCII string without backslashes, within
//                      the column's length (CHAR: no trailing blank), outside the sql_modes
//                      that change quoted text, in a non-binary character set
//   ENUM / SET         a member exactly as defined / members in definition order, once each
//   DATE / DATETIME(n) 'YYYY-MM-DD' / 'YYYY-MM-DD hh:mm:ss' with exactly n fraction digits,
//                      a valid date from year 1000
// Anything else (hex, bit and X'' literals, introducers, exponents, numbers for text and
// quoted text for numbers, TIME, TIMESTAMP (the session time_zone), YEAR, BIT, FLOAT/DOUBLE,
// UUID/INET, JSON, binary strings, ...) is converted by the server in ways sluice does not
// reproduce: the caller re-reads. Sources: MariaDB manual, "Data Types" and "SQL_MODE".
std::string DefaultNotExact(const ColumnDesc& col, std::string_view written, uint64_t sql_mode);

// `stmt.kind` must be kAlterTable.
Result<Applied> ApplyAlter(const TableSchema& before, const Statement& stmt, const ApplyOptions& options = {});

// Whether values stored under column `from` read the same under `to` (the same stored
// value, the same canonical text): a widening of the same kind, or no type change at all.
// `why` gets the reason when not.
bool WideningOrSame(const ColumnDesc& from, const ColumnDesc& to, std::string* why, bool strict = false);

// Fills charset (and collation) of character columns that the statement left without one,
// from the table's default collation, or `db_default_collation` when the table has none.
void FillDefaultCharsets(TableSchema& t, const std::string& db_default_collation);

}  // namespace sluice::ddl
