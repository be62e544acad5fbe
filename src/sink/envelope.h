// Envelope: the Debezium-style JSON text of one RowChange (docs/sinks.md), written straight
// into a string with a small escaper (no JSON tree per row).
//
// Shape, keys in this order, no whitespace, no trailing newline:
//   {"before":{<col>:<value>,...}|null,
//    "before_absent":["col",...],          only when the before image has kAbsent columns
//    "after":{...}|null,
//    "after_absent":["col",...],           only when the after image has kAbsent columns
//    "op":"c"|"u"|"d"|"r",
//    "ts_ms":<ts_ms argument: wall-clock ms when sluice processed the change>,
//    "source":{"connector":"sluice","flavor":"mariadb"|"mysql"|"unknown","server_id":N,
//              "file":"...","pos":N,"gtid":"..."|null,"db":"...","table":"...",
//              "snapshot":true|false,"ts_ms":<event time, seconds*1000>,"row":N}}
// Images list columns in table order; absent columns are left out of the image and named
// in the "*_absent" array instead. Values: kNull null; kInt/kUInt exact decimal integers;
// kFloat the shortest decimal that round-trips the float32; kDouble the shortest that
// round-trips the double (NaN/inf, impossible from MySQL, as the strings "NaN", "Infinity",
// "-Infinity"); kText a JSON string (UTF-8 passed through; '"', '\\' and U+0000..U+001F
// escaped); kBytes a base64 string (RFC 4648 standard alphabet, with '=' padding).
// Output is a pure function of (change, ts_ms): identical Values give identical bytes.
//
// Errors: kInvalidArgument when the change has no table, or an image is missing, present
// when it must not be (c/r have no before, d has no after), or has a value count other than
// the table's column count; kCorruption when text (value, name, file, gtid) is not valid
// UTF-8, naming the table and column. On error *out may hold a partial envelope: callers
// cut it back to its old size.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "binlog/rows_event.h"
#include "core/value.h"
#include "pipeline/change.h"
#include "util/status.h"

namespace sluice {

// Appends the envelope of `change` to *out.
[[nodiscard]] Status AppendEnvelope(const RowChange& change, int64_t ts_ms, std::string* out);

// Snapshot chunks: appends, for each row of `rows`, the envelope of the read record
// {op r, table, after = row, source} (no before image) and a '\n': byte for byte what
// AppendEnvelope and a newline give per row, but with what every row shares (the column
// names and the whole "op"/"ts_ms"/"source" tail) formatted once per call instead of per
// row. A row it cannot take the short way (an absent value, a wrong value count, text that
// is not UTF-8) goes through AppendEnvelope, so errors are AppendEnvelope's for the first
// failing row; on error *out may hold partial lines (callers cut it back).
[[nodiscard]] Status AppendReadLines(const TableSchemaPtr& table, const std::vector<Row>& rows,
                                     const SourceInfo& source, int64_t ts_ms, std::string* out);

// The stream's rows straight from the binlog row image (issue 8: no Value per column, no
// second pass over each string): appends, for each row of `event` (a WRITE/UPDATE/DELETE
// rows event of `table`, whose TABLE_MAP is `map` and column plans `plans`:
// binlog/rows_event.h), the envelope of the change DecodeRows and FillStreamChange
// (pipeline/change.h) make of it, with `source` and source.row = the row's index, and a '\n':
// byte for byte what AppendEnvelope and a newline give per change. Integer columns and
// strings in a UTF-8 charset or binary are written from the image's bytes; other columns
// through DecodeColumnValue and AppendJsonValue. Returns the number of rows written, or
// nullopt with *out unchanged when the event is not one it takes: a partial JSON update, an
// image without every column, a layout that does not match `table`, or anything that would
// be an error (a truncated image, text that is not UTF-8): the caller then decodes Values
// (DecodeRows) and formats them, which gives the general path's output or error.
// `cache` keeps what is worked out once per table definition (its escaped column names, the
// shared parts checked once per op against AppendEnvelope's output); it only saves work. One
// thread at a time uses a cache.
class RowsEventLinesCache {
 public:
  RowsEventLinesCache();
  ~RowsEventLinesCache();
  struct Table;  // envelope.cc
  std::unordered_map<const TableSchema*, std::unique_ptr<Table>> tables;
  std::string tail;  // scratch: the current event's shared tail
  struct TailParts;  // envelope.cc: the parts of the tail that rarely change between events
  std::unique_ptr<TailParts> tail_parts;
};
[[nodiscard]] std::optional<size_t> AppendRowsEventLines(const binlog::RowsEvent& event,
                                                         const binlog::TableMap& map,
                                                         const binlog::RowPlans& plans,
                                                         const TableSchemaPtr& table, const SourceInfo& source,
                                                         int64_t ts_ms, RowsEventLinesCache* cache,
                                                         std::string* out);
// Snapshot chunks straight from the text cells of the snapshot SELECT (schema/text_value.h:
// SnapshotSelectExpr of every column, in column order; nullopt is SQL NULL): per row, byte
// for byte the line AppendReadLines writes for the Row that ValueFromText makes of the cells,
// but integer and character cells (TextCellFormOf) go into the line as they are, checked and
// escaped, without becoming Values (no parse, no string per cell). Other cells, and integers
// not in canonical form (ZEROFILL), go through ValueFromText.
// Use: Begin(source, ts_ms) at the start of each chunk (the shared parts depend on them),
// then Append(cells, out) per row.
// Errors: a cell ValueFromText rejects: its error with the table as context (as
// Snapshot::ReadRange reports it); kInternal when the cell count is not the column count;
// otherwise AppendReadLines' errors for that row. On error *out may hold a partial line.
// Thread safety: one thread at a time.
class ReadLineWriter {
 public:
  explicit ReadLineWriter(TableSchemaPtr table);
  void Begin(const SourceInfo& source, int64_t ts_ms);
  [[nodiscard]] Status Append(const std::vector<std::optional<std::string_view>>& cells, std::string* out);

 private:
  // The line of one row the general way: Values, then AppendReadLines.
  Status AppendConverted(const std::vector<std::optional<std::string_view>>& cells, std::string* out);

  TableSchemaPtr table_;
  std::vector<uint8_t> form_;   // TextCellForm per column
  SourceInfo source_;
  int64_t ts_ms_ = 0;
  bool shared_ = false;         // names_/tail_ hold the shared parts (else every row converts)
  std::string names_;           // "name": per column, escaped
  std::vector<size_t> name_end_;
  std::string tail_;            // "},"op":...}}\n
  size_t fixed_ = 0;            // bytes of a line besides its values
  std::vector<Value> values_;   // this row's converted cells (kOther, or not canonical)
  std::vector<uint8_t> how_;    // per cell of this row: 0 null, 1 as is, 2 escaped, 3 values_[i]
  std::vector<Row> one_;        // AppendConverted's row
};

// Building blocks, exposed for tests and other JSON writers.
// Appends `s` as a quoted JSON string; false (with *out partly written) if `s` is not valid
// UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
[[nodiscard]] bool AppendJsonString(std::string_view s, std::string* out);
// Appends the RFC 4648 base64 of `bytes` (standard alphabet, padded), without quotes.
void AppendBase64(std::string_view bytes, std::string* out);
// Appends the JSON form of a value (as in the envelope). kAbsent is written as null here;
// the envelope never calls this for absent values. False only for invalid UTF-8 text.
[[nodiscard]] bool AppendJsonValue(const Value& v, std::string* out);

}  // namespace sluice
