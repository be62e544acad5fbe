// AppendRowsEventLines (the stream's JSON lines straight from the row image) against the
// general path it must equal byte for byte: DecodeRows, FillStreamChange, AppendEnvelope + '\n'.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../../fuzz/targets.h"
#include "binlog/rows_event.h"
#include "pipeline/change.h"
#include "sink/envelope.h"

namespace sluice {
namespace {

using binlog::ColumnType;
using binlog::RowsKind;
using CT = binlog::ColumnType;

constexpr int64_t kTs = 1764633600123;

SourceInfo RowsSource() {
  SourceInfo s;
  s.flavor = Flavor::kMariaDB;
  s.server_id = 7;
  s.file = "mariadb-bin.000002";
  s.pos = 1234;
  s.gtid = "0-7-99";
  s.timestamp = 1700000000;
  return s;
}

// The general path: the lines the stream's JSON lines sink wrote before the direct one, or
// the error it stopped with.
Result<std::string> ValuePath(const binlog::RowsEvent& ev, const binlog::TableMap& map, const binlog::RowPlans& plans,
                              const TableSchemaPtr& table, const SourceInfo& src, int64_t ts_ms = kTs) {
  std::vector<binlog::DecodedRow> rows;
  RETURN_IF_ERROR(binlog::DecodeRows(ev, map, plans, {}, &rows));
  const Op op = ev.kind == RowsKind::kWrite ? Op::kCreate : ev.kind == RowsKind::kDelete ? Op::kDelete : Op::kUpdate;
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    RowChange c;
    FillStreamChange(c, op, table, rows[i].before, rows[i].after, src, static_cast<uint32_t>(i));
    RETURN_IF_ERROR(AppendEnvelope(c, ts_ms, &out));
    out.push_back('\n');
  }
  return out;
}

struct Fixture {
  fuzz::internal::Table t;
  TableSchemaPtr table;
  std::shared_ptr<const binlog::RowPlans> plans;
};

Fixture Make(const std::vector<fuzz::internal::Col>& cols) {
  Fixture f{fuzz::internal::Make("t", cols), nullptr, nullptr};
  f.table = std::make_shared<TableSchema>(f.t.schema);
  auto plans = binlog::BuildRowPlans(f.t.map, f.table.get(), {});
  EXPECT_TRUE(plans.ok()) << plans.status().ToString();
  if (plans.ok()) f.plans = *plans;
  return f;
}

binlog::RowsEvent Event(RowsKind kind, size_t n, const std::vector<uint8_t>& body) {
  binlog::RowsEvent ev;
  ev.kind = kind;
  ev.table_id = 1;
  ev.column_count = n;
  ev.present_before.assign(n, true);
  ev.present_after.assign(n, true);
  ev.body = body;
  ev.body_offset = 500;
  return ev;
}

// Checks one event both ways: the direct path takes it (when `taken`) and writes what the
// general path writes, or leaves it (nullopt, *out untouched).
void ExpectSame(const Fixture& f, RowsKind kind, const std::vector<uint8_t>& body, bool taken, const char* what) {
  SCOPED_TRACE(what);
  const binlog::RowsEvent ev = Event(kind, f.t.map.column_count(), body);
  auto want = ValuePath(ev, f.t.map, *f.plans, f.table, RowsSource());
  RowsEventLinesCache cache;
  std::string got = "kept|";
  auto n = AppendRowsEventLines(ev, f.t.map, *f.plans, f.table, RowsSource(), kTs, &cache, &got);
  if (!taken) {
    EXPECT_FALSE(n.has_value()) << what << ": the direct path should leave this event to the general one";
    EXPECT_EQ(got, "kept|") << what << ": *out changed although the event was left";
    return;
  }
  ASSERT_TRUE(want.ok()) << what << ": the general path failed: " << want.status().ToString();
  ASSERT_TRUE(n.has_value()) << what << ": the direct path did not take the event";
  EXPECT_EQ(got, "kept|" + *want) << what;
  // A second event through the same cache (the shared parts cached) gives the same again.
  std::string again;
  ASSERT_TRUE(AppendRowsEventLines(ev, f.t.map, *f.plans, f.table, RowsSource(), kTs, &cache, &again).has_value());
  EXPECT_EQ(again, *want) << what << " (cached parts)";
}

std::vector<uint8_t> Cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
std::vector<uint8_t> Str(uint8_t len_bytes, std::string_view s) {
  std::vector<uint8_t> out;
  for (uint8_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<uint8_t>(s.size() >> (8 * i)));
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

TEST(RowsEventLinesTest, IntegersSignedAndUnsigned) {
  Fixture f = Make({{CT::MYSQL_TYPE_TINY, 0}, {CT::MYSQL_TYPE_TINY, 0, true}, {CT::MYSQL_TYPE_SHORT, 0},
                    {CT::MYSQL_TYPE_INT24, 0}, {CT::MYSQL_TYPE_INT24, 0, true}, {CT::MYSQL_TYPE_LONG, 0},
                    {CT::MYSQL_TYPE_LONG, 0, true}, {CT::MYSQL_TYPE_LONGLONG, 0}, {CT::MYSQL_TYPE_LONGLONG, 0, true}});
  const std::vector<uint8_t> image = {0x00, 0x00,  // null bitmap (9 columns)
                                      0x80, 0xff, 0x00, 0x80, 0x00, 0x00, 0x80, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff,
                                      0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const std::vector<uint8_t> small = {0x00, 0x00, 1, 2, 3, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0,
                                      8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0};
  ExpectSame(f, RowsKind::kWrite, image, true, "insert of extreme integers");
  ExpectSame(f, RowsKind::kWrite, Cat({image, small}), true, "two rows in one event");
  ExpectSame(f, RowsKind::kUpdate, Cat({small, image}), true, "update");
  ExpectSame(f, RowsKind::kDelete, small, true, "delete");
  ExpectSame(f, RowsKind::kWrite, {0xff, 0x01}, true, "every column NULL");
}

TEST(RowsEventLinesTest, Utf8StringsCharVarcharText) {
  Fixture f = Make({{CT::MYSQL_TYPE_VARCHAR, 1000, false, 45},   // VARCHAR(250) utf8mb4: 2-byte length
                    {CT::MYSQL_TYPE_VARCHAR, 40, false, 33},     // VARCHAR(10) utf8mb3
                    {CT::MYSQL_TYPE_STRING, 0xFE78, false, 45},  // CHAR(30) utf8mb4 (120 bytes)
                    {CT::MYSQL_TYPE_BLOB, 2, false, 45}});       // TEXT utf8mb4
  const std::string escapes = "quote \" backslash \\ newline \n tab \t ctl \x01 end";
  ExpectSame(f, RowsKind::kWrite,
             Cat({{0x00}, Str(2, "plain"), Str(1, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"),
                  Str(1, "padded     "), Str(2, escapes)}),
             true, "ASCII, multibyte, CHAR pad spaces cut, escapes");
  ExpectSame(f, RowsKind::kUpdate,
             Cat({{0x0a}, Str(2, ""), Str(1, "   "), {0x00}, Str(2, "a"), Str(1, "b"), Str(1, "c"), Str(2, "d")}),
             true, "empty strings, NULLs, a CHAR of spaces only, then a plain after image");
  ExpectSame(f, RowsKind::kWrite, Cat({{0x00}, Str(2, "a"), Str(1, "b"), Str(1, "bad \xc3"), Str(2, "d")}), false,
             "invalid UTF-8 in a CHAR: left to the general path");
  ExpectSame(f, RowsKind::kWrite, Cat({{0x00}, Str(2, "a"), Str(1, "\xed\xa0\x80"), Str(1, "c"), Str(2, "d")}),
             false, "a UTF-16 surrogate: left to the general path");
}

// The lines are written into space made ahead from the event's size; events whose lines are
// far larger than their image (many all-NULL rows; strings of control bytes, 6 output bytes
// each; a general-path value in between) make it grow, and text already in *out stays.
TEST(RowsEventLinesTest, LinesMuchLargerThanTheImage) {
  Fixture f = Make({{CT::MYSQL_TYPE_TINY, 0}, {CT::MYSQL_TYPE_VARCHAR, 1000, false, 45},
                    {CT::MYSQL_TYPE_DATE, 0}, {CT::MYSQL_TYPE_BLOB, 2, false, 63}});
  std::vector<uint8_t> nulls;
  for (int i = 0; i < 300; ++i) nulls.push_back(0x0f);  // 300 rows, every column NULL
  ExpectSame(f, RowsKind::kWrite, nulls, true, "300 all-NULL rows of one byte each");
  ExpectSame(f, RowsKind::kUpdate, nulls, true, "150 all-NULL updates");
  const std::string controls(700, '\x01');
  std::vector<uint8_t> body;
  for (int i = 0; i < 20; ++i)
    body = Cat({body, {0x00, 0x7f}, Str(2, controls), {0xa6, 0xf0, 0x0f}, Str(2, std::string(90, '\xff'))});
  ExpectSame(f, RowsKind::kWrite, body, true, "20 rows of 700 control bytes, a DATE and a BLOB each");
}

TEST(RowsEventLinesTest, Latin1AndBinaryStrings) {
  Fixture f = Make({{CT::MYSQL_TYPE_VARCHAR, 30, false, 8},     // VARCHAR latin1 (general)
                    {CT::MYSQL_TYPE_STRING, 0xFE0A, false, 8},  // CHAR(10) latin1 (general)
                    {CT::MYSQL_TYPE_VARCHAR, 100, false, 63},   // VARBINARY: base64
                    {CT::MYSQL_TYPE_STRING, 0xFE10, false, 63},  // BINARY(16): re-padded (general)
                    {CT::MYSQL_TYPE_BLOB, 2, false, 63},         // BLOB: base64
                    {CT::MYSQL_TYPE_VARCHAR, 100, false, 0}});   // unknown charset: base64
  ExpectSame(f, RowsKind::kWrite,
             Cat({{0x00}, Str(1, "caf\xe9 \x80"), Str(1, "pad\xe9   "), Str(1, std::string("\x00\xff\x10", 3)),
                  Str(1, "abc"), Str(2, std::string("\x00\x01\x02\x03\x04", 5)), Str(1, "xy")}),
             true, "latin1 converted, binary as base64, BINARY(16) padded");
}

TEST(RowsEventLinesTest, TemporalDecimalAndOtherTypesTakeTheGeneralConversion) {
  Fixture f = Make({{CT::MYSQL_TYPE_DATETIME2, 0}, {CT::MYSQL_TYPE_TIMESTAMP2, 3}, {CT::MYSQL_TYPE_NEWDECIMAL, 10 << 8 | 2},
                    {CT::MYSQL_TYPE_DATE, 0}, {CT::MYSQL_TYPE_DOUBLE, 8}, {CT::MYSQL_TYPE_YEAR, 0},
                    {CT::MYSQL_TYPE_STRING, static_cast<uint16_t>(CT::MYSQL_TYPE_ENUM) << 8 | 1, false, 45, {"a", "b"}}});
  // DATETIME2(0) 2024-05-06 07:08:09; TIMESTAMP2(3) 1700000000.123; DECIMAL(10,2) -12.34;
  // DATE 2024-05-06; DOUBLE 1.5; YEAR 2024; ENUM 'b'.
  const std::vector<uint8_t> row = {0x00,
                                    0x99, 0xb3, 0x19, 0xc7, 0x09,
                                    0x65, 0x53, 0xf1, 0x00, 0x04, 0xce,
                                    0x7f, 0xff, 0xff, 0xf3, 0xdd,
                                    0xa6, 0xf0, 0x0f,
                                    0, 0, 0, 0, 0, 0, 0xf8, 0x3f,
                                    124,
                                    2};
  ExpectSame(f, RowsKind::kWrite, row, true, "temporal, decimal, double, year, enum");
  ExpectSame(f, RowsKind::kDelete, row, true, "the same deleted");
}

TEST(RowsEventLinesTest, LeavesWhatItDoesNotTake) {
  Fixture f = Make({{CT::MYSQL_TYPE_LONG, 0}, {CT::MYSQL_TYPE_VARCHAR, 40, false, 45}});
  const std::vector<uint8_t> row = Cat({{0x00}, {1, 0, 0, 0}, Str(1, "x")});
  ExpectSame(f, RowsKind::kWrite, {0x00, 1, 0, 0}, false, "a truncated image");
  ExpectSame(f, RowsKind::kWrite, Cat({row, {0x00}}), false, "trailing bytes after the last whole row");
  // An image without every column (binlog_row_image=MINIMAL): the general path's *_absent.
  binlog::RowsEvent ev = Event(RowsKind::kUpdate, 2, Cat({{0x00}, {1, 0, 0, 0}, row}));
  ev.present_before = {true, false};
  RowsEventLinesCache cache;
  std::string out;
  EXPECT_FALSE(AppendRowsEventLines(ev, f.t.map, *f.plans, f.table, RowsSource(), kTs, &cache, &out).has_value())
      << "an image without every column must be left to the general path";
  ev = Event(RowsKind::kPartialUpdate, 2, row);
  EXPECT_FALSE(AppendRowsEventLines(ev, f.t.map, *f.plans, f.table, RowsSource(), kTs, &cache, &out).has_value())
      << "a partial JSON update must be left to the general path";
  // A table definition with more columns than the TABLE_MAP (columns added since).
  auto wider = std::make_shared<TableSchema>(*f.table);
  wider->columns.push_back(ColumnDesc{"added"});
  ev = Event(RowsKind::kWrite, 2, row);
  EXPECT_FALSE(AppendRowsEventLines(ev, f.t.map, *f.plans, wider, RowsSource(), kTs, &cache, &out).has_value())
      << "a definition wider than the row image must be left to the general path";
  EXPECT_TRUE(out.empty()) << out;
}

TEST(RowsEventLinesTest, SourceVariantsAndEscapedNames) {
  Fixture f = Make({{CT::MYSQL_TYPE_LONG, 0}, {CT::MYSQL_TYPE_VARCHAR, 40, false, 45}});
  auto t = std::make_shared<TableSchema>(*f.table);
  t->db = "d\"b";
  t->table = "t\\able";
  t->columns[0].name = "na\"me";
  t->columns[1].name = "\xc3\xa9t\xc3\xa9";
  const std::vector<uint8_t> body = Cat({{0x00}, {1, 0, 0, 0}, Str(1, "x")});
  for (int variant = 0; variant < 3; ++variant) {
    SourceInfo src = RowsSource();
    if (variant == 1) src.gtid.clear();                  // no GTID: null
    if (variant == 2) src.flavor = Flavor::kMySQL, src.file = "bin\"log.1";
    const binlog::RowsEvent ev = Event(RowsKind::kWrite, 2, body);
    auto want = ValuePath(ev, f.t.map, *f.plans, t, src);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    RowsEventLinesCache cache;
    std::string got;
    ASSERT_TRUE(AppendRowsEventLines(ev, f.t.map, *f.plans, t, src, kTs, &cache, &got).has_value())
        << "variant " << variant;
    EXPECT_EQ(got, *want) << "variant " << variant;
  }
}

// One cache through a stream of events whose source and clock change one field at a time
// (the shared parts of the tail are kept between events and made again when what they are
// made of changes): every event's lines equal the general path's.
TEST(RowsEventLinesTest, OneCacheAcrossChangingSources) {
  Fixture f = Make({{CT::MYSQL_TYPE_LONG, 0}, {CT::MYSQL_TYPE_VARCHAR, 40, false, 45}});
  auto other = std::make_shared<TableSchema>(*f.table);
  other->table = "other";
  const std::vector<uint8_t> body = Cat({{0x00}, {1, 0, 0, 0}, Str(1, "x")});
  RowsEventLinesCache cache;
  SourceInfo src = RowsSource();
  int64_t ts = kTs;
  TableSchemaPtr table = f.table;
  const std::vector<std::pair<const char*, std::function<void()>>> steps = {
      {"first", [] {}},
      {"same again", [] {}},
      {"next position", [&] { src.pos += 100; }},
      {"clock", [&] { ++ts; }},
      {"file", [&] { src.file = "mariadb-bin.000003"; }},
      {"gtid", [&] { src.gtid = "0-7-100"; }},
      {"no gtid", [&] { src.gtid.clear(); }},
      {"gtid again", [&] { src.gtid = "0-7-101"; }},
      {"event time", [&] { src.timestamp += 1; }},
      {"server id", [&] { src.server_id = 8; }},
      {"flavor", [&] { src.flavor = Flavor::kMySQL; }},
      {"another table", [&] { table = other; }},
      {"back to the first table", [&] { table = f.table; }},
      {"file needing an escape", [&] { src.file = "bin\"log.4"; }},
  };
  for (const auto& [what, change] : steps) {
    change();
    for (RowsKind kind : {RowsKind::kWrite, RowsKind::kDelete}) {
      const binlog::RowsEvent ev = Event(kind, 2, body);
      auto want = ValuePath(ev, f.t.map, *f.plans, table, src, ts);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
      std::string got;
      ASSERT_TRUE(AppendRowsEventLines(ev, f.t.map, *f.plans, table, src, ts, &cache, &got).has_value()) << what;
      EXPECT_EQ(got, *want) << what;
    }
  }
  // A file name that is not UTF-8 is left to the general path (its error), and the next
  // event with a good one is taken again.
  src.file = "bad\xc3";
  std::string got;
  EXPECT_FALSE(AppendRowsEventLines(Event(RowsKind::kWrite, 2, body), f.t.map, *f.plans, table, src, ts, &cache, &got)
                   .has_value());
  EXPECT_TRUE(got.empty());
  src.file = "mariadb-bin.000005";
  auto want = ValuePath(Event(RowsKind::kWrite, 2, body), f.t.map, *f.plans, table, src, ts);
  ASSERT_TRUE(want.ok());
  ASSERT_TRUE(AppendRowsEventLines(Event(RowsKind::kWrite, 2, body), f.t.map, *f.plans, table, src, ts, &cache, &got)
                  .has_value());
  EXPECT_EQ(got, *want) << "after a file name that is not UTF-8";
}

// In the spirit of FuzzRegressions.RowsDecodedWithPlansEqualRowsDecodedWithTheSchema: random
// row images over every fixed table of the rows fuzzer (fuzz/targets.h), mostly zero bytes
// (valid lengths, bitmaps and integers): whenever the direct path takes an event its lines
// equal the general path's, and it takes every event the general path formats whose
// columns are all of the kinds it writes itself or converts.
TEST(RowsEventLinesTest, RandomImagesEqualTheGeneralPath) {
  uint64_t x = 0x2545f4914f6cdd1dull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const auto& tables = fuzz::internal::Tables();
  std::vector<TableSchemaPtr> schemas;
  std::vector<std::shared_ptr<const binlog::RowPlans>> plans;
  for (const auto& t : tables) {
    schemas.push_back(std::make_shared<TableSchema>(t.schema));
    auto p = binlog::BuildRowPlans(t.map, schemas.back().get(), {});
    plans.push_back(p.ok() ? *p : nullptr);
  }
  size_t taken = 0, general_ok = 0;
  std::vector<uint8_t> body;
  RowsEventLinesCache cache;
  // A bounded sample (about 0.3 s here; the ASan build runs it too).
  for (int i = 0; i < 5000; ++i) {
    const size_t k = next() % tables.size();
    if (plans[k] == nullptr) continue;
    const auto& t = tables[k];
    const size_t n = t.map.column_count();
    body.assign(next() % 200, 0);
    for (auto& b : body) b = next() % 4 != 0 ? 0 : static_cast<uint8_t>(next() % 3 == 0 ? next() : next() % 8);
    const int kind = static_cast<int>(next() % 3);
    const binlog::RowsEvent ev =
        Event(kind == 0 ? RowsKind::kWrite : kind == 1 ? RowsKind::kUpdate : RowsKind::kDelete, n, body);
    auto want = ValuePath(ev, t.map, *plans[k], schemas[k], RowsSource());
    std::string got;
    auto rows = AppendRowsEventLines(ev, t.map, *plans[k], schemas[k], RowsSource(), kTs, &cache, &got);
    if (want.ok()) ++general_ok;
    if (!rows) {
      ASSERT_TRUE(got.empty()) << "table " << t.map.table << " input " << i << ": *out changed on a left event";
      // Only what the general path refuses (or cannot be taken at all) is left.
      if (want.ok() && !want->empty())
        ADD_FAILURE() << "table " << t.map.table << " input " << i << ": the general path formats it but the "
                      << "direct path left it";
      continue;
    }
    ++taken;
    ASSERT_TRUE(want.ok()) << "table " << t.map.table << " input " << i
                           << ": the direct path wrote lines the general path refuses: " << want.status().ToString();
    ASSERT_EQ(got, *want) << "table " << t.map.table << " input " << i;
  }
  EXPECT_GE(taken, 10u) << "too few random events were formatted (general path formatted " << general_ok << ")";
}

}  // namespace
}  // namespace sluice
