// CheckRowLayout: does a table definition read from the server now describe the rows of a
// binlog event written earlier? A row is decoded against the current definition (names,
// signedness, labels, charsets), so a DDL between the event and now could make sluice put
// values under the wrong columns. This check compares, column by column, the TABLE_MAP's
// names (when binlog_row_metadata=FULL gives them) and the family of each binlog column type
// (integer, decimal, float, temporal, string, ...) with the definition, and fails with
// kFailedPrecondition naming the table and the first column that differs.
// Pure; no state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "binlog/table_map.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

// What a stop says to do about `table` ("db.table") whose rows sluice cannot map: `sluice
// resnapshot` of it into this replica, or a new replica.
std::string ResnapshotHint(const std::string& table);

// With `allow_appended_columns`, a row with fewer columns than the definition passes when it
// matches the definition's first columns (columns were added at the end since the event).
Status CheckRowLayout(const binlog::TableMap& map, const TableSchema& schema,
                      bool allow_appended_columns = false);

// CheckTableMap: the stricter check of a TABLE_MAP against the version the schema history
// says its rows were written under (schema/schema_history.h). Column count must be equal;
// each column's binlog type must be the one the definition gives (integer width, DECIMAL
// precision and scale, fractional seconds, family otherwise); with metadata
// (binlog_row_metadata=FULL) also the names, signedness, character sets and ENUM/SET
// members. kFailedPrecondition naming the table, the column and `where` (the event's
// binlog position) and what to do. The cause it names: with `ddl` (the statement sluice read
// that made this version, and `ddl_at`, where it is in the binlog), that statement's result as
// sluice understood it disagrees with the row (misread, or the table changed again without a
// logged statement); without, a definition changed with no DDL in the binlog (e.g. under SET
// sql_log_bin=0).
Status CheckTableMap(const binlog::TableMap& map, const TableSchema& schema, std::string_view where,
                     std::string_view ddl = {}, std::string_view ddl_at = {});

// For "TRUNCATE [TABLE] [db.]name" (read by ddl::Parse, schema/ddl.h), the (db, table) it
// empties, with `default_db` (the QUERY event's schema) when the
// statement names no database; nullopt for any other statement.
std::optional<std::pair<std::string, std::string>> ParseTruncate(std::string_view default_db,
                                                                 std::string_view query);

}  // namespace sluice
