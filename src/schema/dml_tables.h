// The tables a data-changing statement can change, for a statement-logged change met in a
// ROW binlog (binlog_format=STATEMENT or MIXED in some session): a QUERY event whose text is
// INSERT, REPLACE, UPDATE, DELETE or LOAD DATA.
//
//   INSERT [LOW_PRIORITY|DELAYED|HIGH_PRIORITY] [IGNORE] [INTO] t ...   t (a SELECT part only
//   reads) REPLACE [LOW_PRIORITY|DELAYED] [INTO] t ...                        t UPDATE
//   [LOW_PRIORITY] [IGNORE] <table references> SET ...          every table reference DELETE
//   [LOW_PRIORITY] [QUICK] [IGNORE] FROM t ...                  t DELETE ... t1[.*] [, t2[.*]] FROM
//   <table references> ...           t1, t2 (through aliases) DELETE ... FROM t1[.*] [, t2[.*]]
//   USING <table references> ...     t1, t2 (through aliases) LOAD DATA|XML ... INFILE '...'
//   [REPLACE|IGNORE] INTO TABLE t ...   t
// <table references>: names with [PARTITION (...)] [[AS] alias] [index hints], joined by ","
// or [NATURAL] [INNER|CROSS|LEFT|RIGHT] [OUTER] JOIN / STRAIGHT_JOIN with ON <expr> or
// USING (...), nested in parentheses; derived tables "(SELECT ...) alias" are only read.
// Names may be db.t and `quoted`; an unqualified one is in `default_db` (the QUERY event's
// schema). Comments are skipped, /*! ... */ contents read (schema/sql_tokenizer.h).
//
// Only what the text names: a trigger on a named table, a stored function the statement
// calls (see `calls`), or a view named in place of a table can change other tables; the
// caller decides what to do about those.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schema/ddl.h"
#include "schema/sql_tokenizer.h"

namespace sluice::ddl {

enum class DmlKind : uint8_t { kNotDml, kInsert, kReplace, kUpdate, kDelete, kLoadData };

struct DmlTables {
  DmlKind kind = DmlKind::kNotDml;
  // Every table the statement can change is in `tables` (in statement order, no repeats).
  // False when the text could not be read that far: `unknown` says why, with a byte offset.
  bool known = false;
  std::vector<TableRef> tables;
  std::string unknown;
  // With `known`: every name followed by "(" ([db.]f(...), the default database for a bare
  // one), which holds each stored function the statement calls (a function can change other
  // tables) along with built-in functions and column lists: the caller asks the server.
  std::vector<TableRef> calls;
};

// `ansi_quotes`: the statement's sql_mode has ANSI_QUOTES ("x" is an identifier).
DmlTables TablesChangedBy(std::string_view sql, std::string_view default_db,
                          uint32_t server_version = sql::kAnyServerVersion, bool ansi_quotes = false);

}  // namespace sluice::ddl
