// The snapshot side of the one value converter: maps a text-protocol result cell of a
// snapshot SELECT to the same canonical Value the binlog row decoder produces for that
// stored datum (core/value.h, docs/values.md).
//
// SnapshotSelectExpr gives the SELECT expression the snapshot must use for a column
// (a quoted identifier, or e.g. CAST(`f` AS DOUBLE) for FLOAT and DOUBLE so no digits are
// lost, even for FLOAT(M,D)/DOUBLE(M,D), which SELECT prints rounded to D decimals); the
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

// Where ValueFromText's result is known without building it, so that a writer can take a
// cell straight from the connector's buffer (the snapshot's JSON lines: sink/envelope.h):
//   kText      ValueFromText(col, s) is Value::Text(s), the cell as it is, for every s
//              (character types that are not binary, DECIMAL, temporal types, JSON, ENUM,
//              SET, UUID/INET);
//   kInteger   when CanonicalInteger(s, /*negative_ok=*/true), ValueFromText is
//              Value::Int(v) whose decimal text is s (signed TINYINT..BIGINT);
//   kUnsigned  the same with Value::UInt (unsigned TINYINT..BIGINT, negative_ok false);
//   kOther     no shortcut: call ValueFromText.
// Anything not covered (a ZEROFILL "007", a NULL) goes through ValueFromText as before.
enum class TextCellForm : uint8_t { kText, kInteger, kUnsigned, kOther };
TextCellForm TextCellFormOf(const ColumnDesc& col);
// `s` is the decimal form std::to_chars writes for its own value: digits with no leading
// zero ("0" alone), an optional '-' (when negative_ok, never "-0"), at most 18 digits (so
// it fits every integer column's range).
inline bool CanonicalInteger(std::string_view s, bool negative_ok) {
  size_t i = 0;
  if (negative_ok && !s.empty() && s[0] == '-') i = 1;
  const size_t digits = s.size() - i;
  if (digits == 0 || digits > 18) return false;
  if (s[i] == '0') return digits == 1 && i == 0;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// The canonical Value of a column's DEFAULT (ColumnDesc.default_value, as
// information_schema.COLUMNS.COLUMN_DEFAULT prints it), used where a row image leaves the
// column out (binlog_row_image=MINIMAL inserts). Understood: no default or NULL -> kNull;
// a quoted literal ('a''b', MariaDB) or a bare literal (7, 1.50, MySQL's unquoted text) ->
// parsed as ValueFromText would parse the same SELECT text; b'101' (BIT) -> kUInt.
// An expression default (current_timestamp(), uuid(), ...) has no value known outside the
// server: kNull (such columns are logged in every row image anyway; docs/sinks.md).
// Errors: kCorruption naming the column when a literal cannot be parsed for its type.
// Uses col.default_kind; when that is kNone but default_value is set (a ColumnDesc built by
// hand), the text is classified with ClassifyDefault(text, /*mysql=*/false, false).
Result<Value> DefaultValue(const ColumnDesc& col);

// The kind of information_schema.COLUMNS.COLUMN_DEFAULT text `printed` (nullopt: SQL NULL).
//   MariaDB (10.2.7+): nullopt -> kNone; "NULL" -> kNull; 'quoted' -> kLiteral; a number or
//     b'0101' / 0x.. -> kLiteral; anything else (current_timestamp(), uuid(), `a` * 2) ->
//     kExpression.
//   MySQL (`mysql`): nullopt -> kNone; EXTRA "DEFAULT_GENERATED" (`default_generated`) ->
//     kExpression; any other text is a literal printed without quotes -> kLiteral.
DefaultKind ClassifyDefault(std::optional<std::string_view> printed, bool mysql,
                            bool default_generated);

// DECIMAL text ("-1.5", "3", ".25") with exactly `scale` fraction digits, rounding half
// away from zero as the server does when it stores a value in a DECIMAL(p,scale) column:
// ("1.5", 4) -> "1.5000", ("3.75", 0) -> "4", ("-0.004", 2) -> "0.00" (no negative zero).
// Errors: kCorruption if `text` is not a plain decimal number (no exponent).
Result<std::string> RescaleDecimal(std::string_view text, uint32_t scale);

// MySQL 9 VECTOR: the stored bytes (little-endian float32s, as SELECT of the column and
// the binlog return them) -> the canonical text "[1.5,-2,3.0000001e-05]": each element the
// shortest decimal that round-trips the float32 (Value::ToText of kFloat), joined by ","
// without spaces. Lossless, unlike VECTOR_TO_STRING's 5-digit exponents (docs/values.md).
// Errors: kCorruption when the size is not a multiple of 4.
Result<std::string> VectorBytesToText(std::string_view bytes);

// Backtick-quotes an identifier for SQL: `a``b`.
std::string QuoteIdentifier(std::string_view name);

}  // namespace sluice
