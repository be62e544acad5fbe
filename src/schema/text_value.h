// The snapshot side of the one value converter: maps a text-protocol result cell of a
// snapshot SELECT to the same canonical Value the binlog row decoder produces for that
// stored datum (core/value.h, docs/values.md).
//
// SnapshotSelectExpr gives the SELECT expression the snapshot must use for a column
// (a quoted identifier, or e.g. CAST(`f` AS DOUBLE) for FLOAT so no digits are lost); the
// session must run with time_zone='+00:00' and character_set_results=utf8mb4 (binary
// columns come back as raw bytes).
// Errors: kCorruption naming the column when the text cannot be parsed for its type.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/value.h"
#include "schema/table_schema.h"
#include "util/status.h"

namespace sluice {

// `col` quoted with backticks (embedded backticks doubled), wrapped as the type needs.
std::string SnapshotSelectExpr(const ColumnDesc& col);

// `text` is the cell as returned for SnapshotSelectExpr(col); nullopt is SQL NULL.
Result<Value> ValueFromText(const ColumnDesc& col, std::optional<std::string_view> text);

// Backtick-quotes an identifier for SQL: `a``b`.
std::string QuoteIdentifier(std::string_view name);

}  // namespace sluice
