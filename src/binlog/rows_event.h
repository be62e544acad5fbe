// RowsEvent: the undecoded body of a WRITE/UPDATE/DELETE_ROWS event (v1, v2, MariaDB
// compressed 166-171, MySQL PARTIAL_UPDATE_ROWS), and the row decoder over it.
//
// The event decoder (events.h) fills RowsEvent from the event bytes without touching the
// row images; DecodeRows (rows.cc) turns the images into canonical Values using the
// table's TableMap and, when known, its TableSchema. Row images are only decoded for
// tables someone wants.
// Layout source: MySQL libbinlogevents/src/rows_event.cpp (Rows_event), sql/log_event.cc
// (Rows_log_event::print_verbose_one_row, log_event_print_value); MariaDB sql/log_event.cc.
// Lifetime: `body` views either the event buffer or `owned_body`; keep the event alive.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "binlog/table_map.h"
#include "binlog/value_decoder.h"
#include "core/value.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice::binlog {

enum class RowsKind : uint8_t { kWrite, kUpdate, kDelete, kPartialUpdate };

struct RowsEvent {
  RowsKind kind = RowsKind::kWrite;
  int version = 2;          // 0 (5.1 pre-GA), 1 or 2
  bool compressed = false;  // MariaDB *_COMPRESSED_EVENT_V1 (body already inflated)
  uint64_t table_id = 0;
  uint16_t flags = 0;       // bit 0: STMT_END_F
  std::span<const uint8_t> extra_data;  // v2 extra row info, raw
  uint64_t column_count = 0;
  std::vector<bool> present_before;  // columns present in the before image (update/delete)
  std::vector<bool> present_after;   // columns present in the after image (write/update)
  std::span<const uint8_t> body;     // the row images
  std::string owned_body;            // storage for body when it had to be inflated
  uint64_t body_offset = 0;          // absolute offset of body[0], for error messages

  bool stmt_end() const { return flags & 1; }
};

// One row of a rows event: before image (update/delete) and after image (write/update).
// Columns absent from an image are Value::Absent(); a missing image is an empty Row.
struct DecodedRow {
  Row before;
  Row after;
};

struct DecodeOptions {
  // Keep ENUM/SET as index/bitmask (kUInt) when no labels are known, instead of failing.
  bool allow_unlabeled_enum = true;
  // A partial JSON update whose before image lacks the document: emit the diffs as JSON
  // text (json_diff.h JsonDiffsToText) instead of failing. For inspection tools only.
  bool partial_json_diff_without_base = false;
};

// Decodes every row of `event` against `map` (and `schema`, may be null: it supplies
// signedness, ENUM/SET labels, charsets and BINARY(n) padding when the TABLE_MAP lacks
// them). Appends to `out`. Errors are kCorruption naming the table, row index, column
// name/number and absolute offset.
Status DecodeRows(const RowsEvent& event, const TableMap& map, const TableSchema* schema,
                  const DecodeOptions& options, std::vector<DecodedRow>* out);

// The same in two steps, for a stream that meets one TABLE_MAP many times: what DecodeRows
// works out per column from `map`, `schema` and `options` before reading any row (types,
// charsets, labels, names), built once and reused for every rows event of that map. The
// plans point into `map` and `schema`: keep both alive and unchanged while they are used.
// BuildRowPlans fails as DecodeRows does (unknown collation, labels not convertible);
// DecodeRows with plans gives what DecodeRows(event, map, schema, options, out) gives.
struct RowPlans;
Result<std::shared_ptr<const RowPlans>> BuildRowPlans(const TableMap& map, const TableSchema* schema,
                                                      const DecodeOptions& options);
Status DecodeRows(const RowsEvent& event, const TableMap& map, const RowPlans& plans,
                  const DecodeOptions& options, std::vector<DecodedRow>* out);

// What `plans` holds for column i (0 <= i < PlanColumnCount): the ColumnContext
// DecodeColumnValue is called with, for writers that read a row image themselves (the JSON
// lines sink: sink/envelope.h AppendRowsEventLines). Valid while `plans` is.
size_t PlanColumnCount(const RowPlans& plans);
const ColumnContext& PlanColumn(const RowPlans& plans, size_t i);

}  // namespace sluice::binlog
