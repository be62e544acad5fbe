// MySQL partial JSON updates (binlog_row_value_options=PARTIAL_JSON): the diff vector a
// PARTIAL_UPDATE_ROWS_EVENT stores for a JSON column instead of the whole after document,
// and its application to the before document.
//
// Binary form (MySQL sql/json_diff.cc Json_diff_vector::write_binary / read_binary):
//   diff_vector ::= length(4, LE: bytes of the diffs that follow) diff*
//   diff        ::= operation(1: 0 REPLACE, 1 INSERT, 2 REMOVE)
//                   path_length(packed int) path(text, Json_path::to_string: "$.a[2].\"b c\"")
//                   [unless REMOVE: value_length(packed int) value(binary JSON, json_binary.h)]
// Application (sql/json_diff.cc apply_json_diffs, as Json_dom does it): every path has at
// least one leg, made of member names and array indexes only. REPLACE sets the value at the
// path, which must exist. INSERT adds the value to the path's parent: an object member (the
// name must not exist yet; MySQL keeps members ordered by key length, then bytes), or an
// array cell at the index (appended when the index is past the end). REMOVE deletes the
// member or cell at the path, which must exist.
// The document is JSON text as MySQL prints it (json_binary.h); the result is printed the
// same way, with scalars kept exactly as the input spelled them.
// Errors: kCorruption naming the diff and what is wrong. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace sluice::binlog {

struct JsonDiff {
  enum class Op : uint8_t { kReplace = 0, kInsert = 1, kRemove = 2 };
  Op op = Op::kReplace;
  std::string path;        // as written: "$.age"
  std::string value_text;  // the value as MySQL JSON text; empty for kRemove
};

// Parses the diffs of one column: `data` starts at the 4-byte length. *consumed gets the
// number of bytes the vector takes (4 + length).
Result<std::vector<JsonDiff>> DecodeJsonDiffs(std::span<const uint8_t> data, size_t* consumed);

// `doc` with `diffs` applied, printed as MySQL prints JSON.
Result<std::string> ApplyJsonDiffs(std::string_view doc, const std::vector<JsonDiff>& diffs);

// The diffs as a JSON array, for when no before document is known (sluice decode of a
// MINIMAL-image binlog): [{"op": "replace", "path": "$.age", "value": 26}, ...].
std::string JsonDiffsToText(const std::vector<JsonDiff>& diffs);

}  // namespace sluice::binlog
