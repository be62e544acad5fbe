// A MySQL WRITE_ROWS_EVENT v2 (type 30) carrying extra row info, built byte by byte.
// Layout: MySQL libs/mysql/binlog/event/rows_event.h (Rows_event: "var_header_len" of
// 2 bytes that counts itself, then the extra row info; enum_extra_row_info_typecode
// NDB = 0, PART = 1) and rows_event.cpp (Rows_event::Rows_event reading it), MySQL 8.0.
#include <gtest/gtest.h>

#include "binlog/events.h"
#include "binlog/rows_event.h"
#include "binlog/table_map.h"

namespace sluice::binlog {
namespace {

std::vector<uint8_t> WriteRowsV2WithPartitionInfo() {
  std::vector<uint8_t> body = {
      0x71, 0, 0, 0, 0, 0,  // table_id = 0x71 (6 bytes)
      0x01, 0x00,           // flags: STMT_END_F
      0x05, 0x00,           // var_header_len = 5: itself (2) + 3 bytes of extra row info
      0x01, 0x05, 0x00,     // PART info: type 1, partition id 5 (2 bytes)
      0x01,                 // column count (packed integer) = 1
      0x01,                 // columns present in the after image: column 0
      0x00,                 // row 1: null bitmap (no NULLs)
      0x2A, 0x00, 0x00, 0x00,  // INT 42
  };
  const uint32_t size = static_cast<uint32_t>(19 + body.size());
  std::vector<uint8_t> ev = {0, 0, 0, 0,     // timestamp
                             30,             // WRITE_ROWS_EVENT (v2)
                             1, 0, 0, 0,     // server_id
                             static_cast<uint8_t>(size), 0, 0, 0,  // event_size
                             0, 0, 0, 0,     // log_pos
                             0, 0};          // flags
  ev.insert(ev.end(), body.begin(), body.end());
  return ev;
}

TEST(RowsV2ExtraDataTest, ExtraRowInfoIsKeptAndRowsStillDecode) {
  auto bytes = WriteRowsV2WithPartitionInfo();
  auto ev = DecodeEvent(bytes, 1000, DecodeContext{});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  const auto* rows = std::get_if<RowsEvent>(&ev->body);
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->version, 2);
  EXPECT_EQ(rows->table_id, 0x71u);
  EXPECT_TRUE(rows->stmt_end());
  ASSERT_EQ(rows->extra_data.size(), 3u);
  EXPECT_EQ(rows->extra_data[0], 0x01);
  EXPECT_EQ(rows->column_count, 1u);

  TableMap map;
  map.table_id = 0x71;
  map.db = "d";
  map.table = "t";
  map.column_types = {ColumnType::MYSQL_TYPE_LONG};
  map.column_meta = {0};
  map.nullable = {true};
  std::vector<DecodedRow> out;
  ASSERT_TRUE(DecodeRows(*rows, map, nullptr, DecodeOptions{}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].after.size(), 1u);
  EXPECT_EQ(out[0].after[0], Value::Int(42));
}

TEST(RowsV2ExtraDataTest, VarHeaderLengthBeyondTheEventIsAnError) {
  auto bytes = WriteRowsV2WithPartitionInfo();
  bytes[19 + 8] = 0xF0;  // var_header_len = 240, past the end of the event
  auto ev = DecodeEvent(bytes, 1000, DecodeContext{});
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), StatusCode::kCorruption);
  EXPECT_NE(ev.status().message().find("offset"), std::string::npos) << ev.status().ToString();
}

}  // namespace
}  // namespace sluice::binlog
