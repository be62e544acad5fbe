// Every column type, filled with edge values, through the snapshot (rows 1-5) and through
// the binlog (rows 101-105, copies made after the snapshot; then updates): the SQLite
// replica must equal what SELECT returns, and the snapshot row and its binlog copy must
// serialise to byte-identical JSON (the one value converter).
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace sluice::testing {
namespace {

const char* kCreate = R"(
SET SESSION sql_mode = '';
SET SESSION time_zone = '+00:00';
DROP DATABASE IF EXISTS it_types;
CREATE DATABASE it_types CHARACTER SET utf8mb4;
CREATE TABLE it_types.t (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  dec1 DECIMAL(65,30), dec2 DECIMAL(10,0), dec3 DECIMAL(5,2), dec4 DECIMAL(20,10) UNSIGNED,
  f FLOAT, d DOUBLE,
  b1 BIT(1), b13 BIT(13), b64 BIT(64),
  y YEAR, dt DATE, tm TIME, tm6 TIME(6), tm2 TIME(2), dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts TIMESTAMP NULL DEFAULT NULL, ts6 TIMESTAMP(6) NULL DEFAULT NULL,
  c CHAR(10), c255 CHAR(255), vc VARCHAR(300), c_latin1 VARCHAR(50) CHARACTER SET latin1,
  c_utf8mb3 VARCHAR(20) CHARACTER SET utf8mb3,
  bin BINARY(8), vbin VARBINARY(300),
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('a','b','c'), s SET('x','y','z'),
  j JSON, g GEOMETRY, pt POINT
) ENGINE=InnoDB;
)";

const char* kRows = R"(
SET SESSION sql_mode = '';
SET SESSION time_zone = '+00:00';
-- 1: all NULL
INSERT INTO it_types.t (id) VALUES (1);
-- 2: minimum values
INSERT INTO it_types.t VALUES (2,
  -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
  '-99999999999999999999999999999999999.999999999999999999999999999999', -9999999999, -999.99, 0,
  -3.40282e38, -1.7976931348623157e308,
  b'0', b'0', b'0',
  1901, '1000-01-01', '-838:59:59', '-838:59:59.000000', '-00:00:00.01', '1000-01-01 00:00:00',
  '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.000000',
  '1970-01-01 00:00:01', '1970-01-01 00:00:01.000000',
  '', '', '', '', '', '', '', '', '', '', '', '', '', '', '',
  'a', '', '[]', ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(-1.5 -2.25)'));
-- 3: maximum values
INSERT INTO it_types.t VALUES (3,
  127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
  '99999999999999999999999999999999999.999999999999999999999999999999', 9999999999, 999.99, 9999999999.9999999999,
  3.40282e38, 1.7976931348623157e308,
  b'1', b'1111111111111', b'1111111111111111111111111111111111111111111111111111111111111111',
  2155, '9999-12-31', '838:59:59', '838:59:59.000000', '838:59:59.99', '9999-12-31 23:59:59',
  '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999',
  '2038-01-19 03:14:07', '2038-01-19 03:14:07.999999',
  'abcdefghij', REPEAT('é', 255), REPEAT('ü', 300), REPEAT('ÿ', 50), REPEAT('€', 20),
  UNHEX('FFFFFFFFFFFFFFFF'), UNHEX(REPEAT('FF', 300)),
  REPEAT('t', 255), REPEAT('x', 65535), REPEAT('m', 70000), REPEAT('l', 100000),
  UNHEX(REPEAT('AB', 255)), UNHEX(REPEAT('CD', 65535)), UNHEX(REPEAT('EF', 70000)), UNHEX(REPEAT('01', 100000)),
  'c', 'x,y,z', '{"a": [1, 2.5, "x", null, true, false], "b": {"c": "\\u00e9\\ud83d\\ude00", "d": -1e-7}}',
  ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))'), ST_GeomFromText('POINT(1e300 -1e-300)'));
-- 4: everyday and tricky values: zero temporals, fractions, 4-byte UTF-8, latin1, all bytes
INSERT INTO it_types.t VALUES (4,
  -1, 1, -1, 1, -1, 1, -1, 1, -1, 9223372036854775808,
  '-0.000000000000000000000000000001', 0, 0.01, 0.0000000001,
  0.1, 0.30000000000000004,
  b'1', b'1010101010101', b'1000000000000000000000000000000000000000000000000000000000000001',
  0, '0000-00-00', '00:00:00', '-00:00:00.000001', '-00:00:00.50', '0000-00-00 00:00:00',
  '2024-02-29 12:34:56.7', '2024-02-29 12:34:56.000001',
  '0000-00-00 00:00:00', '2024-06-30 23:59:59.5',
  'a  ', 'trailing   ', 'emoji 😀🎉 and 中文', 'Grüße, façade, ñ, ¿?', 'Ω≈ç√',
  UNHEX('0001020000000000'), UNHEX('000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9FA0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF'),
  'line1\nline2\ttab "quote" \\ backslash', '😀', '', 'x',
  UNHEX('00'), UNHEX('00FF00FF'), '', UNHEX('0A0D'),
  '', '', '{"nested": {"deeper": [[], {}, [1, [2, [3]]]]}, "s": "\\"quoted\\""}',
  ST_GeomFromText('LINESTRING(0 0,1 1,2 4)'), ST_GeomFromText('POINT(3 4)', 4326));
-- 5: ENUM/SET empty-string members and NULLs mixed with values
INSERT INTO it_types.t (id, e, s, ti, vc, bin) VALUES (5, 'b', 'y', NULL, NULL, 'ab');
)";

std::map<int64_t, nlohmann::json> AfterImagesById(const std::string& path) {
  std::map<int64_t, nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["after"].is_null()) continue;
    out[j["after"]["id"].get<int64_t>()] = j["after"];
  }
  return out;
}

TEST(Types, EveryTypeThroughSnapshotAndBinlogEqualsSelect) {
  ASSERT_EQ(RunSqlText(kCreate), 0);
  ASSERT_EQ(RunSqlText(kRows), 0);

  TempDir dir;
  SluiceConfigSpec sq;
  sq.tables = {"it_types.t"};
  sq.sink_path = dir.File("replica.db");
  std::string sqlite_config = WriteConfig(dir, sq);
  TempDir jdir;
  SluiceConfigSpec js = sq;
  js.sink_type = "jsonl";
  js.sink_path = jdir.File("changes.jsonl");
  js.server_id = 5402;
  std::string jsonl_config = WriteConfig(jdir, js);

  // Snapshot (rows 1-5).
  auto r = RunSluice({"run", "--config", sqlite_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"run", "--config", jsonl_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_types.t"}, sq.sink_path);

  // The same values again through the binlog (rows 101-105).
  ASSERT_EQ(RunSqlText("SET SESSION sql_mode = ''; INSERT INTO it_types.t SELECT id + 100, ti, tiu, si, siu, mi, miu, i, iu, bi, biu,"
                       " dec1, dec2, dec3, dec4, f, d, b1, b13, b64, y, dt, tm, tm6, tm2, dtm, dtm3, dtm6, ts, ts6,"
                       " c, c255, vc, c_latin1, c_utf8mb3, bin, vbin, tt, tx, mt, lt, tb, bl, mb, lb, e, s, j, g, pt"
                       " FROM it_types.t WHERE id <= 5"), 0);
  r = RunSluice({"run", "--config", sqlite_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"run", "--config", jsonl_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_types.t"}, sq.sink_path);

  // Snapshot row k and binlog row k+100 give byte-identical JSON values.
  auto after = AfterImagesById(js.sink_path);
  for (int64_t id = 1; id <= 5; ++id) {
    ASSERT_TRUE(after.count(id) && after.count(id + 100)) << "row " << id;
    auto a = after[id], b = after[id + 100];
    a.erase("id");
    b.erase("id");
    for (auto it = a.begin(); it != a.end(); ++it) {
      EXPECT_EQ(it.value().dump(), b[it.key()].dump()) << "row " << id << " column " << it.key();
    }
  }
  // A few exact canonical values (docs/values.md).
  auto& max = after[3];
  EXPECT_EQ(max["biu"].dump(), "18446744073709551615");
  EXPECT_EQ(max["bi"].dump(), "9223372036854775807");
  EXPECT_EQ(max["dec1"], "99999999999999999999999999999999999.999999999999999999999999999999");
  EXPECT_EQ(max["dtm6"], "9999-12-31 23:59:59.999999");
  EXPECT_EQ(max["tm"], "838:59:59");
  EXPECT_EQ(max["ts"], "2038-01-19 03:14:07");
  EXPECT_EQ(max["s"], "x,y,z");
  EXPECT_EQ(max["b64"].dump(), "18446744073709551615");
  auto& mixed = after[4];
  EXPECT_EQ(mixed["dec1"], "-0.000000000000000000000000000001");
  EXPECT_EQ(mixed["tm6"], "-00:00:00.000001");
  EXPECT_EQ(mixed["dt"], "0000-00-00");
  EXPECT_EQ(mixed["y"].dump(), "0");
  EXPECT_EQ(mixed["f"].dump(), "0.1");
  EXPECT_EQ(mixed["vc"], "emoji 😀🎉 and 中文");
  EXPECT_EQ(mixed["c_latin1"], "Grüße, façade, ñ, ¿?");
  EXPECT_EQ(after[1]["vc"], nullptr);

  // Updates through the binlog: every column of row 101 takes row 103's values, and row 103
  // becomes all NULL; then a primary-key change and a delete.
  ASSERT_EQ(RunSqlText("SET SESSION sql_mode = '';"
                       "UPDATE it_types.t a JOIN it_types.t b ON b.id = 103 SET a.ti = b.ti, a.biu = b.biu, a.dec1 = b.dec1,"
                       " a.f = b.f, a.d = b.d, a.b64 = b.b64, a.tm6 = b.tm6, a.dtm6 = b.dtm6, a.ts6 = b.ts6, a.vc = b.vc,"
                       " a.vbin = b.vbin, a.lt = b.lt, a.lb = b.lb, a.e = b.e, a.s = b.s, a.j = b.j, a.g = b.g WHERE a.id = 101;"
                       "UPDATE it_types.t SET ti = NULL, vc = NULL, lb = NULL, j = NULL, g = NULL WHERE id = 103;"
                       "UPDATE it_types.t SET id = 1000 WHERE id = 104;"
                       "DELETE FROM it_types.t WHERE id = 102;"), 0);
  r = RunSluice({"run", "--config", sqlite_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_types.t"}, sq.sink_path);
}

// FLOAT(M,D) and DOUBLE(M,D): MariaDB's SELECT prints such a value rounded to D decimals,
// but the binlog carries the stored double. Both paths must give the stored value
// (docs/values.md): -0.000001 in a DOUBLE(16,6) is stored as -1.0000000000287557e-06.
TEST(Types, FloatAndDoubleWithScaleGiveTheStoredValueOnBothPaths) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_fd; CREATE DATABASE it_fd;"
                       "CREATE TABLE it_fd.t (id INT PRIMARY KEY, d DOUBLE(16,6), f FLOAT(10,3),"
                       " f4 FLOAT(7,4), d0 DOUBLE(20,0), dp DOUBLE);"
                       "INSERT INTO it_fd.t VALUES (1, -0.000001, 1.1, 3.14159, 12345.678, 0.1),"
                       " (2, 123.456789, -2.345, 0.0001, -1e15, 1e300), (3, NULL, NULL, NULL, NULL, NULL)"), 0);
  TempDir dir;
  SluiceConfigSpec js;
  js.tables = {"it_fd.t"};
  js.sink_type = "jsonl";
  js.sink_path = dir.File("changes.jsonl");
  std::string config = WriteConfig(dir, js);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("INSERT INTO it_fd.t SELECT id + 100, d, f, f4, d0, dp FROM it_fd.t"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  auto after = AfterImagesById(js.sink_path);
  for (int64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(after.count(id) && after.count(id + 100)) << "row " << id;
    auto a = after[id], b = after[id + 100];
    a.erase("id");
    b.erase("id");
    EXPECT_EQ(a.dump(), b.dump()) << "snapshot row " << id << " vs its binlog copy";
  }
  EXPECT_EQ(after[1]["d"].dump(), "-1.0000000000287557e-06");
  // FLOAT values print as the shortest text of the stored float32 (docs/values.md).
  EXPECT_EQ(after[1]["f"].dump(), "1.1");
  EXPECT_EQ(after[1]["f4"].dump(), "3.1416");
  EXPECT_EQ(after[2]["d"].get<double>(), 123.456789);

  // compare (which reads the source the snapshot's way) agrees with an SQLite replica.
  TempDir sdir;
  SluiceConfigSpec sq;
  sq.tables = {"it_fd.t"};
  sq.sink_path = sdir.File("replica.db");
  sq.server_id = 5403;
  r = RunSluice({"run", "--config", WriteConfig(sdir, sq), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_fd.t"}, sq.sink_path);
}

}  // namespace
}  // namespace sluice::testing
