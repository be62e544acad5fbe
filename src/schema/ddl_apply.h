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
// MODIFY, CONVERT TO CHARACTER SET, system versioning, ...). Rows written after the DDL
// carry their own values and are never the problem.
// Pure; thread-safe.
#pragma once

#include <string>
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

struct ApplyOptions {
  // The statement ran under a strict sql_mode (STRICT_TRANS_TABLES / STRICT_ALL_TABLES, from
  // the QUERY event): making a column NOT NULL would have failed on a NULL, so a logged
  // statement converted none.
  bool strict = false;
};

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
