// CompareTables: checks that an SQLite replica (CompareTablesMysql: a MySQL/MariaDB
// destination, sink/mysql_sink.h) equals the source, table by table, row by
// row and value by value, through the canonical Value form (core/value.h).
//
// Source rows are read with the snapshot converter (SnapshotSelectExpr + ValueFromText);
// replica rows are mapped back from their SQLite storage class using the column's source
// type (sink/sqlite_sink.h mapping). Rows are matched by primary key (a multiset of whole
// rows for tables without one), so the two sides' sort orders do not matter.
// Memory: both sides of one table are held at once; meant for tests, demos and checks of
// moderate tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/value.h"
#include "mysql/connection.h"
#include "mysql/schema_loader.h"
#include "sink/mysql_sink.h"
#include "sink/postgres_sink.h"
#include "util/status.h"
#include "util/utf8.h"

struct sqlite3_stmt;

namespace sluice::cli {

struct TableComparison {
  std::string table;  // "db.table"
  uint64_t source_rows = 0;
  uint64_t replica_rows = 0;
  uint64_t missing = 0;    // in the source, not in the replica
  uint64_t extra = 0;      // in the replica, not in the source
  uint64_t differing = 0;  // same key, different values
  std::vector<std::string> examples;  // up to 5 human-readable differences
  bool equal() const { return missing == 0 && extra == 0 && differing == 0; }
};

// The canonical Value of result column `i` of a replica row, mapped back from its SQLite
// storage class using the column's source type (shared with `sluice verify`, so both read
// the replica the same way). Only what the sink itself writes maps back to the column's kind:
// an unsigned integer is an INTEGER from 0 to 2^63-1 or the decimal TEXT of a larger one, a
// FLOAT a REAL that is exactly a float. Anything else stored there (a negative INTEGER, "5
// apples", "007", a REAL between floats) keeps the kind SQLite gives it (Int, Text, Double),
// so that it compares unequal to every source value and is reported, never read as one.
// Never fails for a value that SQLite returns.
Result<Value> ReplicaValue(sqlite3_stmt* stmt, int i, const ColumnDesc& col);

// Report lines escape their values with PrintableText (util/utf8.h).

// What differs between a source row and a replica row of one key, for a report line: every
// differing column in table order, the first kMaxDescribed as "column c: source X replica Y"
// joined by "; " (values as DebugString, cut to `max_value_chars`), then "and N more
// columns: d, e" naming the rest. "" when the rows are equal. Not escaped (PrintableText).
std::string ColumnDifferences(const Row& source, const Row& replica, const TableSchema& t, size_t max_value_chars);

// An include pattern of `filter` that selects no table (a database emptied or not yet
// filled) does not stop the comparison: the tables the others select are compared, and the
// pattern's message ("table pattern 'x.*' matches no table ...") is appended to *unmatched
// (ignored when null). kNotFound when no pattern selects a table.
Result<std::vector<TableComparison>> CompareTables(const ConnectOptions& source,
                                                   const TableFilter& filter,
                                                   const std::string& sqlite_path,
                                                   std::vector<std::string>* unmatched = nullptr);
// The same against a MySQL/MariaDB destination: its rows are read with the source's own
// snapshot converter (the destination's column types are the source's one to one), from
// MysqlDestinationDatabase(destination, db).`table`.
Result<std::vector<TableComparison>> CompareTablesMysql(const ConnectOptions& source, const TableFilter& filter,
                                                        const MysqlSinkOptions& destination,
                                                        std::vector<std::string>* unmatched = nullptr);
// The same against a PostgreSQL replica (sink/postgres_sink.h): its rows are read back through
// the inverse of the type mapping (ReadPostgresTable); JSON compares by value (jsonb keeps its
// own layout). A missing replica table counts every source row as missing.
Result<std::vector<TableComparison>> CompareTablesPostgres(const ConnectOptions& source, const TableFilter& filter,
                                                           const PostgresSinkOptions& replica,
                                                           std::vector<std::string>* unmatched = nullptr);

}  // namespace sluice::cli
