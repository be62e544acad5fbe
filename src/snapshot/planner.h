// Planner: splits a table into primary-key ranges for parallel snapshot workers.
//
// Row count: the optimizer's estimate (information_schema.TABLES.TABLE_ROWS), replaced by an
// exact COUNT(*) when the estimate is below `exact_count_max_rows`. Number of ranges:
// ceil(rows / chunk_rows), at least 1, at most `max_ranges_per_table`; 1 when `parallel` is
// false or the table has no primary key.
// Boundaries:
//   single-column integer keys  by value, from MIN and MAX: lower + (max - min) * i / n
//                               (exact 128-bit arithmetic on the server's integer texts),
//                               unless the optimizer's estimate (EXPLAIN) of one such range
//                               exceeds chunk_rows and 2.5 times the mean of the ranges'
//                               estimates (values clustered, a few far away): then refined
//                               by value where the rows are, by estimates (no scan), and
//                               logged (IntegerBoundaries in planner.cc);
//   every other key             by sampling the key index in strides of rows / n: one
//                               keyset hop per boundary (WHERE key > previous ORDER BY key
//                               LIMIT 1 OFFSET stride - 1), the key read as the snapshot reads
//                               it (SnapshotSelectExpr + ValueFromText), so the boundary is
//                               the server's own value. Composite keys hop in row-value order.
// Keys are never compared in C++: the hops are ordered by the server under each column's
// collation, and every later use of a boundary is an SQL comparison (mysql/key_literal.h).
// The ranges partition the keys: (-inf, b1], (b1, b2], ..., (b_{n-1}, +inf).
// Errors: connection errors (connection.h); kCorruption for an unreadable key value.
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

struct PlanOptions {
  uint64_t chunk_rows = 100000;            // about this many rows per range
  uint32_t max_ranges_per_table = 64;
  uint64_t exact_count_max_rows = 1000000; // COUNT(*) when the estimate is below this
  bool parallel = true;
};

struct TablePlan {
  uint64_t expected_rows = 0;
  bool exact_count = false;
  std::vector<RangeProgress> ranges;  // fresh: no progress, no segments
};

Result<TablePlan> PlanTable(Connection& conn, const TableSchema& schema, const PlanOptions& options);

}  // namespace sluice
