// Every column type, filled with edge values, through the snapshot (rows 1-5) and through
// the binlog (rows 101-105, copies made after the snapshot; then updates): the SQLite
// replica must equal what SELECT returns, and the snapshot row and its binlog copy must
// serialise to byte-identical JSON (the one value converter).
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "types_fixture.h"

namespace sluice::testing {
namespace {

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
