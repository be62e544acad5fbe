// Regression tests for bugs the libFuzzer targets (fuzz/) found. Every file under
// tests/fuzz-regressions/<target>/ is a crasher or hang input committed as found; it is
// replayed through the same target body the fuzzer ran (fuzz/targets.h). Under the ASan
// build (build-asan) a memory error fails the test; in every build a hang hits the ctest
// timeout. Byte-built tests below pin each fixed bug's expected error.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zlib.h>

#include "../../fuzz/targets.h"
#include "binlog/events.h"
#include "binlog/json_binary.h"
#include "binlog/rows_event.h"
#include "binlog/table_map.h"
#include "binlog/value_decoder.h"

namespace sluice::binlog {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadFileBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The committed inputs of one target, sorted. Fails loudly when tests/fuzz-regressions is
// missing; a target with no crashers yet has no subdirectory (git keeps no empty ones).
std::vector<fs::path> Inputs(const std::string& target) {
  const fs::path root = fs::path(SLUICE_SOURCE_DIR) / "tests" / "fuzz-regressions";
  EXPECT_TRUE(fs::is_directory(root)) << root << " is missing";
  const fs::path dir = root / target;
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzRegressions, EventStreamInputs) {
  for (const fs::path& p : Inputs("event_stream")) {
    SCOPED_TRACE(p.string());
    auto bytes = ReadFileBytes(p);
    sluice::fuzz::FuzzEventStream(bytes.data(), bytes.size());
  }
}

TEST(FuzzRegressions, JsonBinaryInputs) {
  for (const fs::path& p : Inputs("json_binary")) {
    SCOPED_TRACE(p.string());
    auto bytes = ReadFileBytes(p);
    sluice::fuzz::FuzzJsonBinary(bytes.data(), bytes.size());
  }
}

TEST(FuzzRegressions, RowsInputs) {
  for (const fs::path& p : Inputs("rows")) {
    SCOPED_TRACE(p.string());
    auto bytes = ReadFileBytes(p);
    sluice::fuzz::FuzzRows(bytes.data(), bytes.size());
  }
}

// FuzzRows also decodes each input with plans built once (BuildRowPlans, as the stream does)
// and aborts when rows or error differ from DecodeRows with the schema. Random inputs over
// every fixed table (a bounded sample: the fuzzer runs this for real), their bytes mostly
// zero (a valid length, bitmap, integer or temporal of most types). Most inputs end in an
// error part-way (images must end exactly at the body's end): the rows decoded before it and
// the error (table, row, column name, offset) are what is compared.
TEST(FuzzRegressions, RowsDecodedWithPlansEqualRowsDecodedWithTheSchema) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<uint8_t> in;
  for (int i = 0; i < 10000; ++i) {
    in.assign(6 + next() % 120, 0);
    in[0] = static_cast<uint8_t>(next());
    in[1] = static_cast<uint8_t>(next() & 3);
    for (size_t k = 2; k < 6; ++k) in[k] = (next() % 4 == 0) ? static_cast<uint8_t>(next()) : 0;
    for (size_t k = 6; k < in.size(); ++k) in[k] = next() % 4 != 0 ? 0 : static_cast<uint8_t>(next() % 3 == 0 ? next() : next() % 8);
    sluice::fuzz::FuzzRows(in.data(), in.size());
  }
}

// event_table_map.cc: the ByteReader over an optional-metadata TLV viewed a temporary
// std::string as its name, so any error inside a TLV read freed memory (heap-use-after-free
// in ByteReader::Error). Found by event_stream_fuzzer.
TEST(FuzzRegressions, TableMapOptionalMetadataErrorNamesTheField) {
  std::vector<uint8_t> body = {
      1, 0, 0, 0, 0, 0,  // table_id
      0, 0,              // flags
      1, 'd', 0,         // db
      1, 't', 0,         // table
      1,                 // column count
      3,                 // LONG
      0,                 // metadata length
      0,                 // null bitmap
      4, 2, 5, 'a',      // COLUMN_NAME: name of length 5 with 1 byte left
  };
  auto m = DecodeTableMap(body, 1000, 8, Flavor::kMySQL);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kCorruption);
  EXPECT_NE(m.status().message().find("TABLE_MAP_EVENT optional metadata 4 at offset"), std::string::npos)
      << m.status().ToString();
}

// rows.cc: a row whose images hold no column reads no bytes, so a non-empty body looped
// forever (a TABLE_MAP and rows event of 0 columns). Found by rows_fuzzer.
TEST(FuzzRegressions, RowsWithNoColumnsAndLeftoverBytesIsCorruption) {
  TableMap map;
  map.db = "d";
  map.table = "t";
  const uint8_t body[] = {0xff, 0xff, 0xff};
  for (RowsKind kind : {RowsKind::kWrite, RowsKind::kUpdate, RowsKind::kDelete}) {
    RowsEvent ev;
    ev.kind = kind;
    ev.body = body;
    std::vector<DecodedRow> out;
    Status st = DecodeRows(ev, map, nullptr, {}, &out);
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  }
  // Columns present in neither image: same.
  map.column_types = {ColumnType::MYSQL_TYPE_LONG};
  map.column_meta = {0};
  RowsEvent ev;
  ev.kind = RowsKind::kUpdate;
  ev.column_count = 1;
  ev.present_before = {false};
  ev.present_after = {false};
  ev.body = body;
  std::vector<DecodedRow> out;
  EXPECT_EQ(DecodeRows(ev, map, nullptr, {}, &out).code(), StatusCode::kCorruption);
}

// json_binary.cc: value offsets may alias, so 40 nested 2-element arrays whose entries both
// point at the next array (405 bytes) printed 2^40 elements: a hang, then an OOM. The
// printer now bounds its text to 16 characters per document byte. Found by hand while
// fuzzing (json_binary_fuzzer timeout on the same shape).
TEST(FuzzRegressions, JsonAliasedOffsetsAreBounded) {
  constexpr int kLevels = 40;
  const uint16_t total = 10 * kLevels + 4;
  std::vector<uint8_t> doc = {0x02};  // small array
  for (int k = 0; k < kLevels; ++k) {
    const uint16_t size = static_cast<uint16_t>(total - 10 * k);
    const uint8_t level[] = {2, 0, static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8),
                             0x02, 10, 0, 0x02, 10, 0};  // 2 elements, both at offset 10
    doc.insert(doc.end(), std::begin(level), std::end(level));
  }
  doc.insert(doc.end(), {0, 0, 4, 0});  // []
  auto text = JsonBinaryToText(doc);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kCorruption);
  EXPECT_NE(text.status().message().find("values overlap"), std::string::npos) << text.status().ToString();

  // The bound leaves room for the densest valid text: 1000 strings of one control byte
  // (5 bytes each: entry 3, length 1, byte 1) print as a quoted 6-character escape.
  std::vector<uint8_t> dense = {0x03};  // large array
  const uint32_t n = 1000, header = 8 + 5 * n, size = header + 2 * n;
  auto le32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) dense.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  le32(n);
  le32(size);
  for (uint32_t i = 0; i < n; ++i) { dense.push_back(0x0C); le32(header + 2 * i); }
  for (uint32_t i = 0; i < n; ++i) dense.insert(dense.end(), {1, 0x01});
  auto ok = JsonBinaryToText(dense);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 2 + 8 * n + 2 * (n - 1));
}

// events.cc InflateMariadbCompressed: the 4-byte declared uncompressed length was allocated
// before inflating, so 20 bytes could ask for 4 GB (libFuzzer malloc limit). It is now
// checked against deflate's maximum ratio (1032:1). Found crafting inputs for
// event_stream_fuzzer's MariaDB compressed-event path.
TEST(FuzzRegressions, MariadbCompressedDeclaredLengthIsBounded) {
  auto pack = [](const std::string& text, uint32_t declared) {
    uLongf n = compressBound(text.size());
    std::vector<uint8_t> z(n);
    EXPECT_EQ(compress2(z.data(), &n, reinterpret_cast<const Bytef*>(text.data()), text.size(), 9), Z_OK);
    z.resize(n);
    std::vector<uint8_t> out(5 + z.size());
    out[0] = 0x84;  // zlib, 4-byte big-endian length
    for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<uint8_t>(declared >> (24 - 8 * i));
    std::copy(z.begin(), z.end(), out.begin() + 5);
    return out;
  };
  std::string out;
  Status st = InflateMariadbCompressed(pack("SELECT 1", 0xFFFFFFF0u), 500, "QUERY_COMPRESSED_EVENT", &out);
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("impossible"), std::string::npos) << st.ToString();
  EXPECT_TRUE(out.empty());
  // The most compressible input (zeros, level 9) still inflates.
  const std::string zeros(8 << 20, '\0');
  out.clear();
  st = InflateMariadbCompressed(pack(zeros, static_cast<uint32_t>(zeros.size())), 500, "QUERY_COMPRESSED_EVENT", &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, zeros);
}

// value_decoder.cc EnumValue: a STRING column whose metadata hides an ENUM (real type 0xF7)
// took the pack length from the metadata unchecked, so 9 bytes reached ByteReader::ReadLe
// (a 64-bit shift: undefined behaviour). ENUM is 1 or 2 bytes. Found by event_stream_fuzzer.
TEST(FuzzRegressions, EnumHiddenInStringMetaWithBadPackLength) {
  const uint8_t bytes[16] = {1};
  for (uint16_t meta : {0xF700, 0xF703, 0xF709, 0xF7FF}) {
    ByteReader r(bytes, 200, "row image");
    ColumnContext c;
    c.type = ColumnType::MYSQL_TYPE_STRING;
    c.meta = meta;
    auto v = DecodeColumnValue(r, c);
    ASSERT_FALSE(v.ok()) << meta;
    EXPECT_EQ(v.status().code(), StatusCode::kCorruption) << v.status().ToString();
  }
  ByteReader r(bytes, 200, "row image");
  ColumnContext c;
  c.type = ColumnType::MYSQL_TYPE_STRING;
  c.meta = 0xF701;
  auto v = DecodeColumnValue(r, c);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, Value::UInt(1));
}

}  // namespace
}  // namespace sluice::binlog
