// Partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT, binlog_row_value_options=PARTIAL_JSON),
// byte-built from the layouts in MySQL sql/json_diff.cc (Json_diff_vector::write_binary),
// sql/rpl_record.h (unpack_row: before-image, shared-image, after-image) and
// sql-common/json_binary.cc; one image is the PARTIAL_UPDATE_ROWS_EVENT at offset 3750 of
// ../shared/fixtures/binlogs/json.binlog.000001 (MySQL 8.0, binlog_row_image=MINIMAL).
#include "binlog/json_diff.h"

#include <gtest/gtest.h>

#include "binlog/rows_event.h"

namespace sluice::binlog {
namespace {

std::vector<uint8_t> ByteList(std::initializer_list<int> v) {
  std::vector<uint8_t> out;
  for (int b : v) out.push_back(static_cast<uint8_t>(b));
  return out;
}
void Append(std::vector<uint8_t>* out, std::string_view s) { out->insert(out->end(), s.begin(), s.end()); }

TEST(JsonDiff, ApplyKeepsMysqlKeyOrderAndScalarSpelling) {
  std::vector<JsonDiff> diffs = {
      {JsonDiff::Op::kInsert, "$.c", "\"x\""},
      {JsonDiff::Op::kRemove, "$.bb[0]", ""},
      {JsonDiff::Op::kReplace, "$.\"a\"", "2.50"},
      {JsonDiff::Op::kInsert, "$.bb[9]", "{\"k\": null}"},
      {JsonDiff::Op::kInsert, "$.bb[0]", "[]"},
      {JsonDiff::Op::kReplace, "$.\"key with space\"", "true"},
  };
  auto r = ApplyJsonDiffs(R"({"a": 1, "bb": [1, 2e300], "key with space": "\"q\""})", diffs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, R"({"a": 2.50, "c": "x", "bb": [[], 2e300, {"k": null}], "key with space": true})");
}

TEST(JsonDiff, MissingTargetsAndRootPathsAreCorruption) {
  EXPECT_EQ(ApplyJsonDiffs("{}", {{JsonDiff::Op::kReplace, "$.a", "1"}}).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ApplyJsonDiffs("[1]", {{JsonDiff::Op::kRemove, "$[3]", ""}}).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ApplyJsonDiffs("[1]", {{JsonDiff::Op::kReplace, "$", "1"}}).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ApplyJsonDiffs("[1", {{JsonDiff::Op::kRemove, "$[0]", ""}}).status().code(), StatusCode::kCorruption);
}

TEST(JsonDiff, DecodeBinaryVector) {
  // length(4) | op path_len path value_len value(binary JSON int16 26) | op(REMOVE) path
  std::vector<uint8_t> v = ByteList({0x11, 0, 0, 0, 0x00, 5});
  Append(&v, "$.age");
  for (int b : {3, 0x05, 0x1a, 0x00, 0x02, 4}) v.push_back(static_cast<uint8_t>(b));
  Append(&v, "$[1]");
  v.push_back(0xEE);  // the next column's bytes: not part of the vector
  size_t consumed = 0;
  auto d = DecodeJsonDiffs(v, &consumed);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(consumed, v.size() - 1);
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].op, JsonDiff::Op::kReplace);
  EXPECT_EQ((*d)[0].path, "$.age");
  EXPECT_EQ((*d)[0].value_text, "26");
  EXPECT_EQ((*d)[1].op, JsonDiff::Op::kRemove);
  EXPECT_EQ(JsonDiffsToText(*d), R"([{"op": "replace", "path": "$.age", "value": 26}, {"op": "remove", "path": "$[1]"}])");
  v[4] = 7;  // unknown operation
  EXPECT_EQ(DecodeJsonDiffs(v, &consumed).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeJsonDiffs(std::span<const uint8_t>(v.data(), 10), &consumed).status().code(),
            StatusCode::kCorruption);
}

TableMap IdJsonMap() {
  TableMap map;
  map.db = "d";
  map.table = "t";
  map.column_types = {ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_JSON};
  map.column_meta = {0, 4};
  return map;
}

TEST(DecodeRows, PartialUpdateAppliesDiffsToTheFullBeforeImage) {
  // before: id 1, j = [24] (binary JSON small array: 02 count=1 size=7 int16 24)
  std::vector<uint8_t> body = ByteList({0x00, 1, 0, 0, 0, 8, 0, 0, 0, 0x02, 0x01, 0x00, 0x07, 0x00, 0x05, 0x18, 0x00});
  // shared-image: value_options = PARTIAL_JSON_UPDATES, partial_bits = column j
  for (int b : {0x01, 0x01}) body.push_back(static_cast<uint8_t>(b));
  // after: id 1, j = diffs: REPLACE $[0] 25; INSERT $[5] true
  for (int b : {0x00, 1, 0, 0, 0, 19, 0, 0, 0, 0x00, 4}) body.push_back(static_cast<uint8_t>(b));
  Append(&body, "$[0]");
  for (int b : {3, 0x05, 0x19, 0x00, 0x01, 4}) body.push_back(static_cast<uint8_t>(b));
  Append(&body, "$[5]");
  for (int b : {2, 0x04, 0x01}) body.push_back(static_cast<uint8_t>(b));
  RowsEvent ev;
  ev.kind = RowsKind::kPartialUpdate;
  ev.column_count = 2;
  ev.present_before = {true, true};
  ev.present_after = {true, true};
  ev.body = body;
  std::vector<DecodedRow> rows;
  Status st = DecodeRows(ev, IdJsonMap(), nullptr, DecodeOptions{}, &rows);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].before, (Row{Value::Int(1), Value::Text("[24]")}));
  EXPECT_EQ(rows[0].after, (Row{Value::Int(1), Value::Text("[25, true]")}));

  // value_options = 0: the after image holds a whole document (length-prefixed).
  std::vector<uint8_t> full = ByteList({0x00, 1, 0, 0, 0, 8, 0, 0, 0, 0x02, 0x01, 0x00, 0x07, 0x00, 0x05, 0x18, 0x00,
                                     0x00,
                                     0x00, 2, 0, 0, 0, 8, 0, 0, 0, 0x02, 0x01, 0x00, 0x07, 0x00, 0x05, 0x1a, 0x00});
  ev.body = full;
  rows.clear();
  st = DecodeRows(ev, IdJsonMap(), nullptr, DecodeOptions{}, &rows);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(rows[0].after, (Row{Value::Int(2), Value::Text("[26]")}));
}

TEST(DecodeRows, PartialUpdateWithoutBeforeDocumentFromMysqlFixture) {
  // json.binlog.000001 offset 3750: t(id INT PK, json_col JSON, name VARCHAR(100) AS
  // (json_col->>'$.name'), age INT AS (json_col->'$.age')); first row of the event.
  TableMap map;
  map.db = "mysql";
  map.table = "t";
  map.column_types = {ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_JSON,
                      ColumnType::MYSQL_TYPE_VARCHAR, ColumnType::MYSQL_TYPE_LONG};
  map.column_meta = {0, 4, 400, 0};
  map.collation_ids = {0, 0, 255, 0};
  map.has_charsets = true;
  std::vector<uint8_t> body = ByteList({0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x0b, 0x00, 0x00, 0x00,
                                     0x00, 0x05, 0x24, 0x2e, 0x61, 0x67, 0x65, 0x03, 0x05, 0x1a, 0x00,
                                     0x03, 0x00, 0x4a, 0x6f, 0x65, 0x1a, 0x00, 0x00, 0x00});
  RowsEvent ev;
  ev.kind = RowsKind::kPartialUpdate;
  ev.column_count = 4;
  ev.present_before = {true, false, false, false};
  ev.present_after = {false, true, true, true};
  ev.body = body;
  std::vector<DecodedRow> rows;
  EXPECT_EQ(DecodeRows(ev, map, nullptr, DecodeOptions{}, &rows).code(), StatusCode::kNotSupported);
  rows.clear();
  DecodeOptions inspect;
  inspect.partial_json_diff_without_base = true;
  Status st = DecodeRows(ev, map, nullptr, inspect, &rows);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].after, (Row{Value::Absent(), Value::Text(R"([{"op": "replace", "path": "$.age", "value": 26}])"),
                                Value::Text("Joe"), Value::Int(26)}));
}

}  // namespace
}  // namespace sluice::binlog
