#include "sink/envelope.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace sluice {
namespace {

TableSchemaPtr MakeTable(std::vector<std::string> names) {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "items";
  for (auto& n : names) t->columns.push_back(ColumnDesc{n});
  t->primary_key = {0};
  return t;
}

SourceInfo Source() {
  SourceInfo s;
  s.flavor = Flavor::kMariaDB;
  s.server_id = 7;
  s.file = "mariadb-bin.000002";
  s.pos = 1234;
  s.gtid = "0-7-99";
  s.timestamp = 1700000000;
  s.snapshot = false;
  s.row = 3;
  return s;
}

std::string Env(const RowChange& c, int64_t ts = 1700000000123) {
  std::string out;
  Status st = AppendEnvelope(c, ts, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::string JsonValue(const Value& v) {
  std::string out;
  EXPECT_TRUE(AppendJsonValue(v, &out));
  return out;
}

const char kSource[] =
    R"("source":{"connector":"sluice","flavor":"mariadb","server_id":7,"file":"mariadb-bin.000002",)"
    R"("pos":1234,"gtid":"0-7-99","db":"shop","table":"items","snapshot":false,"ts_ms":1700000000000,"row":3}})";

TEST(EnvelopeTest, EveryValueKind) {
  RowChange c;
  c.op = Op::kCreate;
  c.table = MakeTable({"id", "neg", "big", "f", "d", "txt", "bin", "nul", "gone"});
  c.after = {Value::Int(1),
             Value::Int(std::numeric_limits<int64_t>::min()),
             Value::UInt(std::numeric_limits<uint64_t>::max()),
             Value::Float(0.1f),
             Value::Double(0.1 + 0.2),
             Value::Text("h\xc3\xa9llo \xf0\x9f\x98\x80 \"q\" \\ \n\t\x01\x1f\x7f"),
             Value::Bytes(std::string("\x00\xff\x10", 3)),
             Value::Null(),
             Value::Absent()};
  c.source = Source();
  EXPECT_EQ(
      Env(c),
      std::string(
          R"({"before":null,"after":{"id":1,"neg":-9223372036854775808,)"
          R"("big":18446744073709551615,"f":0.1,"d":0.30000000000000004,)"
          "\"txt\":\"h\xc3\xa9llo \xf0\x9f\x98\x80 \\\"q\\\" \\\\ \\n\\t\\u0001\\u001f\x7f\","
          R"("bin":"AP8Q","nul":null},"after_absent":["gone"],"op":"c","ts_ms":1700000000123,)") +
          kSource);
}

TEST(EnvelopeTest, UpdateDeleteReadAndSourceVariants) {
  RowChange u;
  u.op = Op::kUpdate;
  u.table = MakeTable({"id", "v"});
  u.before = {Value::Int(1), Value::Absent()};
  u.after = {Value::Int(2), Value::Text("x")};
  u.source = Source();
  EXPECT_EQ(Env(u),
            std::string(R"({"before":{"id":1},"before_absent":["v"],"after":{"id":2,"v":"x"},)"
                        R"("op":"u","ts_ms":1700000000123,)") +
                kSource);

  RowChange d;
  d.op = Op::kDelete;
  d.table = u.table;
  d.before = {Value::Int(2), Value::Text("x")};
  d.source = Source();
  d.source.gtid.clear();
  d.source.flavor = Flavor::kMySQL;
  d.source.snapshot = true;
  EXPECT_EQ(
      Env(d, 5),
      R"({"before":{"id":2,"v":"x"},"after":null,"op":"d","ts_ms":5,)"
      R"("source":{"connector":"sluice","flavor":"mysql","server_id":7,"file":"mariadb-bin.000002",)"
      R"("pos":1234,"gtid":null,"db":"shop","table":"items","snapshot":true,"ts_ms":1700000000000,"row":3}})");

  RowChange r;
  r.op = Op::kRead;
  r.table = u.table;
  r.after = {Value::Int(3), Value::Text("")};
  std::string out = Env(r, 0);
  EXPECT_EQ(out.substr(0, 60), R"({"before":null,"after":{"id":3,"v":""},"op":"r","ts_ms":0,"s)");
  // Every envelope is valid JSON.
  for (const std::string& text : {Env(u), Env(d), out}) {
    EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded()) << text;
  }
}

TEST(EnvelopeTest, Numbers) {
  EXPECT_EQ(JsonValue(Value::Float(0.1f)), "0.1");
  EXPECT_EQ(JsonValue(Value::Float(3.4028235e38f)), "3.4028235e+38");
  EXPECT_EQ(JsonValue(Value::Float(-1.5f)), "-1.5");
  EXPECT_EQ(JsonValue(Value::Float(1e-7f)), "1e-07");
  EXPECT_EQ(JsonValue(Value::Double(0.1 + 0.2)), "0.30000000000000004");
  EXPECT_EQ(JsonValue(Value::Double(1e300)), "1e+300");
  EXPECT_EQ(JsonValue(Value::Double(-0.0)), "-0");
  EXPECT_EQ(JsonValue(Value::Double(100)), "100");
  EXPECT_EQ(JsonValue(Value::Double(std::numeric_limits<double>::quiet_NaN())), "\"NaN\"");
  EXPECT_EQ(JsonValue(Value::Double(std::numeric_limits<double>::infinity())), "\"Infinity\"");
  EXPECT_EQ(JsonValue(Value::Float(-std::numeric_limits<float>::infinity())), "\"-Infinity\"");
  EXPECT_EQ(JsonValue(Value::UInt(std::numeric_limits<uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(JsonValue(Value::UInt(0)), "0");
  EXPECT_EQ(JsonValue(Value::Int(-1)), "-1");
  // Numbers parse back to the same values.
  auto j = nlohmann::json::parse("[" + JsonValue(Value::UInt(18446744073709551615ull)) + "," +
                                 JsonValue(Value::Double(0.1 + 0.2)) + "]");
  EXPECT_EQ(j[0].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(j[1].get<double>(), 0.1 + 0.2);
}

TEST(EnvelopeTest, Base64) {
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\xfb\xff\xbf", 3), "+/+/"},
  };
  for (const auto& [in, want] : cases) {
    std::string out;
    AppendBase64(in, &out);
    EXPECT_EQ(out, want) << in;
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  std::string out;
  AppendBase64(all, &out);
  EXPECT_EQ(out.size(), 344u);
  EXPECT_EQ(out.substr(0, 12), "AAECAwQFBgcI");
  EXPECT_EQ(out.substr(out.size() - 8), "/P3+/w==");
  EXPECT_EQ(JsonValue(Value::Bytes("")), "\"\"");
}

TEST(EnvelopeTest, StringEscapes) {
  std::string out;
  ASSERT_TRUE(AppendJsonString(std::string("a\0b", 3), &out));
  EXPECT_EQ(out, "\"a\\u0000b\"");
  out.clear();
  ASSERT_TRUE(AppendJsonString("\b\f\r/\xe2\x80\xa8", &out));  // U+2028 passes through
  EXPECT_EQ(out, "\"\\b\\f\\r/\xe2\x80\xa8\"");
  // Invalid UTF-8: lone continuation, truncated sequence, overlong, surrogate, > U+10FFFF.
  for (const char* bad : {"\x80", "ab\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\xe2\x28\xa1"}) {
    out.clear();
    EXPECT_FALSE(AppendJsonString(bad, &out)) << bad;
  }
  // Edge valid: U+07FF, U+FFFF, U+10FFFF, U+0080.
  out.clear();
  EXPECT_TRUE(AppendJsonString("\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf\xc2\x80", &out));
}

// The envelope writer scans strings 16 and 8 bytes at a time and copies a change whose
// strings need no escape without a second scan: an escape or a multi-byte character at
// any position, in values, names or the source fields, must still come out exactly as
// AppendJsonString writes it (checked by parsing the line back).
TEST(EnvelopeTest, EscapesAtEveryPositionOfLongStrings) {
  const std::vector<std::string> specials = {"\"", "\\", "\n", std::string("\x01"),
                                             std::string(1, '\0'), "\xc3\xa9", "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80"};
  for (const std::string& special : specials) {
    for (size_t len : {size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{40}}) {
      for (size_t at = 0; at <= len; ++at) {
        std::string v(len, 'x');
        v.insert(at, special);
        RowChange c;
        c.op = Op::kUpdate;
        c.table = MakeTable({"id", "v" + special});
        c.before = {Value::Int(1), Value::Text(v)};
        c.after = {Value::Int(1), Value::Text(std::string(len, 'y'))};
        c.source = Source();
        c.source.file = "bin" + special + ".000001";
        const std::string line = Env(c);
        std::string quoted;
        ASSERT_TRUE(AppendJsonString(v, &quoted));
        EXPECT_NE(line.find(quoted), std::string::npos) << line;
        auto j = nlohmann::json::parse(line);
        EXPECT_EQ(j["before"]["v" + special], v);
        EXPECT_EQ(j["after"]["v" + special], std::string(len, 'y'));
        EXPECT_EQ(j["source"]["file"], c.source.file);
      }
    }
  }
  // Clean strings of every length around the 8- and 16-byte steps.
  for (size_t len = 0; len < 40; ++len) {
    RowChange c;
    c.op = Op::kCreate;
    c.table = MakeTable({"id", "v"});
    c.after = {Value::Int(1), Value::Text(std::string(len, 'z'))};
    c.source = Source();
    auto j = nlohmann::json::parse(Env(c));
    EXPECT_EQ(j["after"]["v"], std::string(len, 'z'));
  }
}

TEST(EnvelopeTest, Errors) {
  RowChange c;
  c.op = Op::kCreate;
  std::string out;
  EXPECT_EQ(AppendEnvelope(c, 0, &out).code(), StatusCode::kInvalidArgument);  // no table

  c.table = MakeTable({"id", "v"});
  c.after = {Value::Int(1)};
  out.clear();
  Status st = AppendEnvelope(c, 0, &out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("shop.items"), std::string::npos) << st.ToString();

  c.after = {Value::Int(1), Value::Text("ok")};
  c.before = {Value::Int(1), Value::Text("ok")};  // insert with a before image
  out.clear();
  EXPECT_EQ(AppendEnvelope(c, 0, &out).code(), StatusCode::kInvalidArgument);

  c.op = Op::kDelete;  // delete without a before image
  c.before.clear();
  out.clear();
  EXPECT_EQ(AppendEnvelope(c, 0, &out).code(), StatusCode::kInvalidArgument);

  c.op = Op::kCreate;
  c.after = {Value::Int(1), Value::Text("bad \xff")};
  out.clear();
  st = AppendEnvelope(c, 0, &out);
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("column v"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("shop.items"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// AppendReadLines (snapshot chunks) must give byte for byte AppendEnvelope + '\n' per row,
// whatever the values, and AppendEnvelope's error for a row it refuses.
TEST(AppendReadLinesTest, SameBytesAsOneEnvelopePerRow) {
  auto t = MakeTable({"id", "na\"me", "f", "d", "b", "u", "n", "txt"});
  SourceInfo src = Source();
  src.snapshot = true;
  std::vector<Row> rows = {
      {Value::Int(1), Value::Text("plain"), Value::Float(1.5), Value::Double(0.1), Value::Bytes("\x01\xff"),
       Value::UInt(18446744073709551615ull), Value::Null(), Value::Text("caf\xc3\xa9")},
      {Value::Int(-2), Value::Text("q\"uo\\te\n\x01"), Value::Float(-0.0), Value::Double(1e300), Value::Bytes(""),
       Value::UInt(0), Value::Null(), Value::Text("")},
      // An absent value: the general writer's "after_absent" form.
      {Value::Int(3), Value::Absent(), Value::Float(2), Value::Double(3), Value::Bytes("ab"), Value::UInt(1),
       Value::Null(), Value::Text("x")},
      {Value::Int(4), Value::Text("four"), Value::Float(4), Value::Double(4), Value::Bytes("abc"), Value::UInt(4),
       Value::Text("y"), Value::Text(std::string(300, 'z'))},
  };
  std::string want;
  for (const Row& r : rows) {
    RowChange c;
    c.op = Op::kRead;
    c.table = t;
    c.after = r;
    c.source = src;
    want += Env(c, 42) + "\n";
  }
  std::string got = "earlier\n";
  Status st = AppendReadLines(t, rows, src, 42, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "earlier\n" + want) << "AppendReadLines differs from AppendEnvelope per row";

  // Escapes in the shared parts (file name, table name) are written as the general writer does.
  auto odd = MakeTable({"a"});
  std::const_pointer_cast<TableSchema>(odd)->table = "it\"ems";
  src.file = "bin\\log.000001";
  src.gtid.clear();
  std::vector<Row> one = {{Value::Text("v")}, {Value::Int(5)}};
  std::string want2;
  for (const Row& r : one) {
    RowChange c;
    c.op = Op::kRead;
    c.table = odd;
    c.after = r;
    c.source = src;
    want2 += Env(c, 7) + "\n";
  }
  std::string got2;
  ASSERT_TRUE(AppendReadLines(odd, one, src, 7, &got2).ok());
  EXPECT_EQ(got2, want2) << "shared parts with escapes";
}

TEST(AppendReadLinesTest, RefusesWhatAppendEnvelopeRefusesWithItsMessage) {
  auto t = MakeTable({"id", "name"});
  SourceInfo src = Source();
  std::vector<Row> rows = {{Value::Int(1), Value::Text("ok")}, {Value::Int(2), Value::Text(std::string("\xff", 1))}};
  RowChange c;
  c.op = Op::kRead;
  c.table = t;
  c.after = rows[1];
  c.source = src;
  std::string scratch;
  Status want = AppendEnvelope(c, 1, &scratch);
  ASSERT_FALSE(want.ok());
  std::string got;
  Status st = AppendReadLines(t, rows, src, 1, &got);
  EXPECT_FALSE(st.ok()) << "invalid UTF-8 in the second row's name column must be refused";
  EXPECT_EQ(st.ToString(), want.ToString());
  // A row with the wrong value count.
  std::vector<Row> short_row = {{Value::Int(1)}};
  EXPECT_FALSE(AppendReadLines(t, short_row, src, 1, &got).ok()) << "a row of 1 value for 2 columns";
}

}  // namespace
}  // namespace sluice

#include "schema/text_value.h"

namespace sluice {
namespace {

ColumnDesc Typed(const std::string& name, const std::string& type, bool is_unsigned = false,
                 const std::string& charset = "") {
  ColumnDesc c{name};
  c.SetType(type);
  c.is_unsigned = is_unsigned;
  c.charset = charset;
  return c;
}

// ReadLineWriter (snapshot rows straight from text cells) must give, per row, byte for byte
// AppendReadLines of the Row ValueFromText makes of the cells, for every shortcut and every
// cell it must not shortcut, and the same errors.
TEST(ReadLineWriterTest, SameBytesAsConvertingTheCellsFirst) {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "it\"ems";
  t->columns = {Typed("id", "bigint"),        Typed("u", "bigint", true),     Typed("tiny", "tinyint"),
                Typed("c", "char", false, "utf8mb4"), Typed("v", "varchar", false, "latin1"),
                Typed("bin", "varbinary", false, "binary"), Typed("cbin", "char", false, "binary"),
                Typed("d", "decimal"),       Typed("f", "float"),            Typed("dbl", "double"),
                Typed("dt", "datetime"),     Typed("y", "year"),             Typed("bits", "bit"),
                Typed("e", "enum"),          Typed("j", "json"),             Typed("na\"me", "int")};
  t->primary_key = {0};
  SourceInfo src = Source();
  src.snapshot = true;
  src.file = "bin\\log.000001";
  using Cells = std::vector<std::optional<std::string_view>>;
  const std::string nul("a\0b", 3);
  std::vector<Cells> rows = {
      {"1", "18446744073709551615", "-128", "plain", "caf\xc3\xa9", "\x01\xff", "ab", "-1.50", "1.5", "0.1",
       "2024-01-02 03:04:05.123456", "2024", "5", "red", "{\"a\":1}", "0"},
      // Not canonical integers (ZEROFILL, a sign, 19+ digits), escapes, NULLs, empty text.
      {"-9223372036854775808", "007", "-05", "q\"uo\\te\n\x01", nul, std::nullopt, "", "0", "-0", "1e300",
       "0000-00-00 00:00:00", "0000", "0", "", "[]", "-0"},
      {"0", "0", "0", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt},
      {"123456789012345678", "1234567890123456789", "00", "", "\t", "", "x", "3", "3.4028234663852886e38",
       "-2.5", "1970-01-01", "1901", "18446744073709551615", "b", "null", "-2147483648"},
  };
  std::string want = "earlier\n";
  std::vector<Row> converted;
  for (const Cells& cells : rows) {
    Row row;
    for (size_t i = 0; i < cells.size(); ++i) {
      Result<Value> v = ValueFromText(t->columns[i], cells[i]);
      ASSERT_TRUE(v.ok()) << "row " << converted.size() << " column " << t->columns[i].name << ": "
                          << v.status().ToString();
      row.push_back(std::move(v).value());
    }
    converted.push_back(std::move(row));
  }
  ASSERT_TRUE(AppendReadLines(t, converted, src, 42, &want).ok());
  ReadLineWriter w(t);
  w.Begin(src, 42);
  std::string got = "earlier\n";
  for (const Cells& cells : rows) {
    Status st = w.Append(cells, &got);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  EXPECT_EQ(got, want) << "ReadLineWriter differs from ValueFromText + AppendReadLines";

  // Begin again at another point and time: the shared parts follow.
  src.file = "b.000002";
  src.gtid.clear();
  std::string want2;
  ASSERT_TRUE(AppendReadLines(t, {converted[0]}, src, 43, &want2).ok());
  w.Begin(src, 43);
  std::string got2;
  ASSERT_TRUE(w.Append(rows[0], &got2).ok());
  EXPECT_EQ(got2, want2) << "after a second Begin";
}

TEST(ReadLineWriterTest, RefusesWithTheErrorsOfTheGeneralWay) {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "items";
  t->columns = {Typed("id", "int"), Typed("name", "varchar", false, "utf8mb4")};
  t->primary_key = {0};
  SourceInfo src = Source();
  ReadLineWriter w(t);
  w.Begin(src, 1);
  std::string out;
  using Cells = std::vector<std::optional<std::string_view>>;

  // Invalid UTF-8 in a character column: AppendReadLines' error for the converted row.
  const Row bad = {Value::Int(2), Value::Text(std::string("\xff", 1))};
  std::string scratch;
  Status want = AppendReadLines(t, {bad}, src, 1, &scratch);
  ASSERT_FALSE(want.ok());
  Status st = w.Append(Cells{"2", std::string_view("\xff", 1)}, &out);
  EXPECT_EQ(st.ToString(), want.ToString()) << "invalid UTF-8 in column name";

  // An integer cell ValueFromText rejects: its error, with the table as context.
  Status parse = ValueFromText(t->columns[0], std::string_view("12x")).status().WithContext(t->QualifiedName());
  ASSERT_FALSE(parse.ok());
  st = w.Append(Cells{"12x", "ok"}, &out);
  EXPECT_EQ(st.ToString(), parse.ToString()) << "unparsable integer in column id";

  st = w.Append(Cells{"1"}, &out);
  EXPECT_EQ(st.code(), StatusCode::kInternal) << "1 cell for 2 columns: " << st.ToString();
}

}  // namespace
}  // namespace sluice
