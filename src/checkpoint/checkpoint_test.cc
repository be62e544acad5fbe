#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <random>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_file.h"

namespace sluice {
namespace {

Checkpoint Sample() {
  Checkpoint cp;
  cp.flavor = Flavor::kMariaDB;
  cp.stream_start = {"mariadb-bin.000003", 18446744073709551615ull};
  cp.gtid = "0-1-42,1-2-7";
  cp.snapshot_done = false;
  cp.tables["sakila.actor"] = {true, {}, 200};
  cp.tables["sakila.film_actor"] = {false, {"17", "unicode \xc3\xa9 \"q\""}, 5462};
  return cp;
}

void ExpectEqual(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.flavor, b.flavor);
  EXPECT_EQ(a.stream_start, b.stream_start);
  EXPECT_EQ(a.gtid, b.gtid);
  EXPECT_EQ(a.snapshot_done, b.snapshot_done);
  ASSERT_EQ(a.tables.size(), b.tables.size());
  for (const auto& [k, v] : a.tables) {
    auto it = b.tables.find(k);
    ASSERT_NE(it, b.tables.end()) << k;
    EXPECT_EQ(v.done, it->second.done) << k;
    EXPECT_EQ(v.last_key, it->second.last_key) << k;
    EXPECT_EQ(v.rows, it->second.rows) << k;
  }
}

TEST(CheckpointTest, RoundTrip) {
  Checkpoint cp = Sample();
  std::string text = cp.ToJson();
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectEqual(cp, *back);
  EXPECT_EQ(back->ToJson(), text);  // deterministic
}

TEST(CheckpointTest, ExactText) {
  Checkpoint cp;
  cp.flavor = Flavor::kMySQL;
  cp.stream_start = {"binlog.000001", 4};
  cp.gtid = "";
  cp.snapshot_done = true;
  cp.tables["d.t"] = {true, {"1"}, 3};
  EXPECT_EQ(
      cp.ToJson(),
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"binlog.000001","pos":4},)"
      R"("gtid":"","snapshot":{"done":true,"tables":{"d.t":{"done":true,"rows":3,"last_key":["1"]}}}})");
}

// The position a table's copy was complete at (read_until) round-trips; absent, it is empty.
TEST(CheckpointTest, ReadUntilRoundTrips) {
  Checkpoint cp = Sample();
  cp.tables["sakila.actor"].read_until = {"mariadb-bin.000007", 4242};
  const std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("read_until":{"file":"mariadb-bin.000007","pos":4242})"), std::string::npos) << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tables["sakila.actor"].read_until, (BinlogPosition{"mariadb-bin.000007", 4242}));
  EXPECT_TRUE(back->tables["sakila.film_actor"].read_until.empty());
  EXPECT_EQ(back->ToJson(), text);
}

// A table marked for an online re-read (snapshot/reread.h) keeps the mark through a round
// trip; unmarked tables write no key, so older checkpoints read the same. A frozen snapshot
// part is not reused once a mark changes it.
TEST(CheckpointTest, RereadMarkRoundTrips) {
  Checkpoint cp = Sample();
  cp.FreezeSnapshotJson();
  cp.tables["sakila.actor"] = TableSnapshotProgress{};
  cp.tables["sakila.actor"].reread = true;
  std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("sakila.actor":{"done":false,"rows":0,"last_key":[],"reread":true})"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("\"reread\":true", text.find("sakila.film_actor")), std::string::npos) << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->tables["sakila.actor"].reread);
  EXPECT_FALSE(back->tables["sakila.film_actor"].reread);
  EXPECT_EQ(back->ToJson(), text);
  Result<Checkpoint> bad = Checkpoint::FromJson(
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"b.1","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"d.t":{"done":false,"rows":0,"last_key":[],"reread":1}}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("reread"), std::string::npos) << bad.status().ToString();
}

// "a.b.c" is `a`.`b.c` or `a.b`.`c`: a mark made by the stream keeps the database part
// ("db"), written only when known, so checkpoints without it read as before (each split is
// then tried). A "db" that is not the key's prefix is corruption.
TEST(CheckpointTest, RereadMarkKeepsTheDatabasePartOfADottedName) {
  Checkpoint cp = Sample();
  cp.FreezeSnapshotJson();
  cp.tables["it.dot.m.n"].reread = true;
  cp.tables["it.dot.m.n"].db = "it.dot";
  std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("it.dot.m.n":{"done":false,"rows":0,"last_key":[],"reread":true,"db":"it.dot"})"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\"db\"", text.find("sakila.film_actor")), std::string::npos) << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tables["it.dot.m.n"].db, "it.dot");
  EXPECT_EQ(back->tables["sakila.film_actor"].db, "");
  EXPECT_EQ(back->ToJson(), text);
  Result<Checkpoint> bad = Checkpoint::FromJson(
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"b.1","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"d.t":{"done":false,"rows":0,"last_key":[],"db":"d.t"}}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("is not the database part"), std::string::npos) << bad.status().ToString();
}

// The state of a re-read beside the stream (others_at, rereading) round-trips as "ahead",
// is absent when there is none, and a malformed one is named.
TEST(CheckpointTest, AheadOfAReReadRoundTrips) {
  Checkpoint cp = Sample();
  EXPECT_EQ(cp.ToJson().find("\"ahead\""), std::string::npos);
  cp.others_at = BinlogPosition{"mariadb-bin.000002", 777};
  cp.rereading = {"sakila.actor"};
  std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("ahead":{"file":"mariadb-bin.000002","pos":777,"tables":["sakila.actor"]})"), std::string::npos)
      << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->others_at.file, "mariadb-bin.000002");
  EXPECT_EQ(back->others_at.pos, 777u);
  EXPECT_EQ(back->rereading, std::vector<std::string>{"sakila.actor"});
  EXPECT_EQ(back->ToJson(), text);
  // Written as version 3, so that a sluice that does not know "ahead" refuses it instead of
  // applying the other tables' changes since the re-read's DDL twice; "ahead" under an older
  // version number is corrupt.
  EXPECT_EQ(text.rfind(R"({"version":3,)", 0), 0u) << text;
  cp.others_at = {};
  cp.rereading.clear();
  EXPECT_EQ(cp.ToJson().rfind(R"({"version":1,)", 0), 0u) << cp.ToJson();
  Result<Checkpoint> bad = Checkpoint::FromJson(
      R"({"version":3,"flavor":"mysql","stream_start":{"file":"b.1","pos":4},"gtid":"",)"
      R"("snapshot":{"done":true,"tables":{}},"ahead":{"file":"b.1","pos":9,"tables":"d.t"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ahead.tables"), std::string::npos) << bad.status().ToString();
  Result<Checkpoint> old_version = Checkpoint::FromJson(
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"b.1","pos":4},"gtid":"",)"
      R"("snapshot":{"done":true,"tables":{}},"ahead":{"file":"b.1","pos":9,"tables":["d.t"]}})");
  ASSERT_FALSE(old_version.ok());
  EXPECT_NE(old_version.status().message().find("version 1"), std::string::npos) << old_version.status().ToString();
}

// How far a copied table's replay went (replayed) round-trips inside "ahead" as version 4, so
// that a sluice that does not know it refuses the checkpoint instead of replaying those
// changes again; under version 3 it is corrupt.
TEST(CheckpointTest, ReplayedPositionsRoundTripAsVersion4) {
  Checkpoint cp = Sample();
  cp.others_at = BinlogPosition{"mariadb-bin.000002", 777};
  cp.rereading = {"sakila.actor", "sakila.film"};
  cp.replayed["sakila.actor"] = BinlogPosition{"mariadb-bin.000002", 500};
  const std::string text = cp.ToJson();
  EXPECT_EQ(text.rfind(R"({"version":4,)", 0), 0u) << text;
  EXPECT_NE(text.find(R"("replayed":{"sakila.actor":{"file":"mariadb-bin.000002","pos":500}})"), std::string::npos)
      << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->replayed.size(), 1u);
  EXPECT_EQ(back->replayed.at("sakila.actor").pos, 500u);
  EXPECT_EQ(back->ToJson(), text);
  std::string as3 = text;
  as3.replace(0, std::string(R"({"version":4,)").size(), R"({"version":3,)");
  Result<Checkpoint> bad = Checkpoint::FromJson(as3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ahead.replayed"), std::string::npos) << bad.status().ToString();
  // Without a re-read under way there is nothing to write.
  cp.others_at = {};
  EXPECT_EQ(cp.ToJson().find("replayed"), std::string::npos);
}

// Incremental progress round-trips (binary key texts as hex) and is absent when empty; a
// malformed entry is named.
TEST(CheckpointTest, IncrementalProgressRoundTrips) {
  Checkpoint cp = Sample();
  IncrementalProgress p;
  p.mode = "incremental";
  p.backfill_done = true;
  p.backfill_last_key = {"42"};
  p.backfill_rows = 42;
  p.watermark = {"2026-01-01 00:00:00.000000", "\xff\x01"};
  p.run_high = {"2026-01-02 00:00:00.000000", "7"};
  p.runs = 3;
  cp.incremental["shop.orders"] = p;
  std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("incremental":{"shop.orders":{"mode":"incremental")"), std::string::npos) << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->incremental.size(), 1u);
  EXPECT_EQ(back->incremental.at("shop.orders"), p);
  EXPECT_EQ(back->ToJson(), text);
  EXPECT_EQ(Sample().ToJson().find("incremental"), std::string::npos);

  std::string bad = text;
  bad.replace(bad.find(R"("runs":3)"), 8, R"("runs":"3")");
  Result<Checkpoint> broken = Checkpoint::FromJson(bad);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(R"(incremental["shop.orders"].runs)"), std::string::npos)
      << broken.status().ToString();
}

// The server identity travels with the position; a checkpoint without one (older sluice)
// reads as "not recorded", and a malformed one is named.
TEST(CheckpointTest, SourceIdentityRoundTripsAndIsOptional) {
  Checkpoint cp = Sample();
  cp.source.server_id = 4294967295u;
  cp.source.server_uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
  std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("source":{"server_id":4294967295,"server_uuid":"3e11fa47-71ca-11e1-9e33-c80aa9429562"})"),
            std::string::npos) << text;
  auto back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->source, cp.source);
  EXPECT_EQ(back->ToJson(), text);

  auto old = Checkpoint::FromJson(Sample().ToJson());
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->source.known());
  EXPECT_EQ(Sample().ToJson().find("\"source\""), std::string::npos);

  std::string bad = text;
  bad.replace(bad.find("4294967295"), 10, "\"one\"");
  auto broken = Checkpoint::FromJson(bad);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("source.server_id"), std::string::npos) << broken.status().ToString();
}

TEST(CheckpointTest, PositionWitnessRoundTripsAndIsOptional) {
  Checkpoint cp = Sample();
  cp.witness = PositionWitness{cp.stream_start.file, 1764982800u, cp.stream_start.pos - 31, 31, 18446744073709551615ull};
  const std::string text = cp.ToJson();
  EXPECT_NE(text.find(R"("witness":{"file":")" + cp.stream_start.file + R"(","created":1764982800,"event_pos":)"),
            std::string::npos) << text;
  auto back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->witness, cp.witness);
  EXPECT_TRUE(back->witness.HasEventEndingAt(back->stream_start));
  EXPECT_EQ(back->ToJson(), text);

  EXPECT_EQ(Sample().ToJson().find("\"witness\""), std::string::npos);
  auto old = Checkpoint::FromJson(Sample().ToJson());
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->witness.AppliesTo(old->stream_start));

  std::string bad = text;
  bad.replace(bad.find("\"event_size\":31"), 15, "\"event_size\":4294967296");
  auto broken = Checkpoint::FromJson(bad);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("witness.event_size"), std::string::npos) << broken.status().ToString();

  // A witness of another file, or of an event that does not end at the position, says nothing.
  PositionWitness w = cp.witness;
  EXPECT_FALSE(w.HasEventEndingAt({cp.stream_start.file, cp.stream_start.pos + 1}));
  EXPECT_FALSE(w.AppliesTo({"other-bin.000001", cp.stream_start.pos}));
  w.event_size = 0;
  EXPECT_TRUE(w.AppliesTo(cp.stream_start));
  EXPECT_FALSE(w.HasEventEndingAt(cp.stream_start));
}

TEST(CheckpointTest, EmptyDefaultRoundTrips) {
  Checkpoint cp;
  Result<Checkpoint> back = Checkpoint::FromJson(cp.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectEqual(cp, *back);
}

TEST(CheckpointTest, UnknownVersionIsFailedPrecondition) {
  Checkpoint cp = Sample();
  std::string text = cp.ToJson();
  std::string v5 = text;
  v5.replace(v5.find("\"version\":1"), 11, "\"version\":5");
  Result<Checkpoint> r = Checkpoint::FromJson(v5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("version 5"), std::string::npos) << r.status().ToString();

  r = Checkpoint::FromJson(R"({"version":0})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

TEST(CheckpointTest, SchemaHistoryTravelsAsVersion2) {
  Checkpoint cp = Sample();
  EXPECT_NE(cp.ToJson().find("\"version\":1"), std::string::npos);  // none: still version 1
  auto h = std::make_shared<SchemaHistory>();
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "t";
  ColumnDesc c;
  c.name = "id";
  c.SetType("int");
  t->columns.push_back(c);
  ASSERT_TRUE(h->Add("shop", "t", {{"binlog.000001", 4}, t, ""}).ok());
  ASSERT_TRUE(h->Add("shop", "t", {{"binlog.000001", 900}, nullptr, "DROP TABLE t"}).ok());
  cp.schemas = h;
  std::string text = cp.ToJson();
  EXPECT_NE(text.find("\"version\":2"), std::string::npos) << text;
  Result<Checkpoint> back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectEqual(cp, *back);
  ASSERT_NE(back->schemas, nullptr);
  EXPECT_TRUE(*back->schemas == *h);

  // With an online re-read under way it is version 3, schemas and all.
  Checkpoint with_ahead = cp;
  with_ahead.others_at = BinlogPosition{"binlog.000001", 950};
  with_ahead.rereading = {"shop.t"};
  std::string text3 = with_ahead.ToJson();
  EXPECT_NE(text3.find("\"version\":3"), std::string::npos) << text3;
  Result<Checkpoint> back3 = Checkpoint::FromJson(text3);
  ASSERT_TRUE(back3.ok()) << back3.status().ToString();
  ASSERT_NE(back3->schemas, nullptr);
  EXPECT_TRUE(*back3->schemas == *h);
  EXPECT_EQ(back3->others_at.pos, 950u);

  // Version 2 without its schemas, or with broken ones, is corrupt.
  std::string no_schemas = Sample().ToJson();
  no_schemas.replace(no_schemas.find("\"version\":1"), 11, "\"version\":2");
  EXPECT_EQ(Checkpoint::FromJson(no_schemas).status().code(), StatusCode::kCorruption);
  std::string bad = text;
  bad.replace(bad.find("\"ddl\":\"DROP TABLE t\""), 20, "\"ddl\":7");
  auto r = Checkpoint::FromJson(bad);
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("versions[1].ddl"), std::string::npos) << r.status().ToString();
}

TEST(CheckpointTest, GarbageIsCorruption) {
  const char* cases[] = {
      "",
      "not json",
      "{\"version\":1",       // truncated
      "[1,2]",                // not an object
      "{}",                   // no version
      "{\"version\":\"1\"}",  // version of the wrong type
      "{\"version\":1.0}",
      "{\"version\":1}",  // fields missing
      R"({"version":1,"flavor":"oracle","stream_start":{"file":"f","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{}}})",
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"f","pos":-4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{}}})",
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"f","pos":4},"gtid":null,)"
      R"("snapshot":{"done":false,"tables":{}}})",
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"f","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"a.b":{"done":1,"rows":0,"last_key":[]}}}})",
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"f","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"a.b":{"done":true,"rows":0,"last_key":[1]}}}})",
  };
  for (const char* c : cases) {
    Result<Checkpoint> r = Checkpoint::FromJson(c);
    ASSERT_FALSE(r.ok()) << c;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << c << " -> " << r.status().ToString();
  }
  Result<Checkpoint> r = Checkpoint::FromJson(
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"f","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"a.b":{"done":true,"rows":"x","last_key":[]}}}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("snapshot.tables[\"a.b\"].rows"), std::string::npos)
      << r.status().ToString();
}

TEST(CheckpointTest, UnknownKeysAreIgnored) {
  Result<Checkpoint> r = Checkpoint::FromJson(
      R"({"version":1,"future":[1],"flavor":"mariadb","stream_start":{"file":"f","pos":4},)"
      R"("gtid":"0-1-1","snapshot":{"done":true,"tables":{}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gtid, "0-1-1");
}

class CheckpointFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-cpfile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(CheckpointFileTest, WriteReadReplace) {
  const std::string path = dir_ + "/state.json";
  Result<std::optional<std::string>> r = ReadSmallFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());

  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  r = ReadSmallFile(path);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, "first");

  ASSERT_TRUE(WriteFileAtomic(path, std::string("se\0cond", 7)).ok());
  r = ReadSmallFile(path);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, std::string("se\0cond", 7));
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "tmp file left behind";
}

TEST_F(CheckpointFileTest, StaleTmpIsIgnoredAndOverwritten) {
  const std::string path = dir_ + "/state.json";
  ASSERT_TRUE(WriteFileAtomic(path, "good").ok());
  ASSERT_TRUE(WriteFileAtomic(path + ".tmp", "half-writ").ok());  // crash left a tmp file
  Result<std::optional<std::string>> r = ReadSmallFile(path);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, "good");
  ASSERT_TRUE(WriteFileAtomic(path, "better").ok());
  r = ReadSmallFile(path);
  EXPECT_EQ(**r, "better");
}

TEST_F(CheckpointFileTest, WriteIntoMissingDirectoryFails) {
  Status st = WriteFileAtomic(dir_ + "/no/such/dir/state.json", "x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("no/such/dir"), std::string::npos) << st.ToString();
}

// Another user plants "<path>.tmp" as a symlink to a file of ours: the write must neither
// follow it nor touch the file it points to, and the new file is private (0600).
TEST_F(CheckpointFileTest, PlantedTmpSymlinkIsNotFollowedAndFilesArePrivate) {
  const std::string path = dir_ + "/state.json";
  const std::string victim = dir_ + "/victim";
  ASSERT_TRUE(WriteFileAtomic(victim, "precious").ok());
  ASSERT_EQ(symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ::umask(022);
  ASSERT_TRUE(WriteFileAtomic(path, "state").ok());
  Result<std::optional<std::string>> v = ReadSmallFile(victim);
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(**v, "precious");
  Result<std::optional<std::string>> r = ReadSmallFile(path);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, "state");
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "tmp file left behind";
}

TEST_F(CheckpointFileTest, CheckpointHelpers) {
  const std::string path = dir_ + "/cp.json";
  Result<std::optional<Checkpoint>> none = LoadCheckpointFile(path);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(SaveCheckpointFile(path, Sample()).ok());
  Result<std::optional<Checkpoint>> back = LoadCheckpointFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->has_value());
  ExpectEqual(Sample(), **back);

  ASSERT_TRUE(WriteFileAtomic(path, "{garbage").ok());
  back = LoadCheckpointFile(path);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kCorruption);
  EXPECT_NE(back.status().message().find(path), std::string::npos) << back.status().ToString();
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(CheckpointRangesTest, RangesSegmentsAndBinaryKeysRoundTrip) {
  Checkpoint cp;
  cp.flavor = Flavor::kMariaDB;
  cp.stream_start = {"bin.000001", 100};
  TableSnapshotProgress& t = cp.tables["d.t"];
  t.expected_rows = 10;
  const std::string raw("\x00\xff\x80 a", 5);  // not UTF-8: stored as hex
  RangeProgress r1;
  r1.upper = {raw};
  r1.done = true;
  r1.rows = 4;
  r1.last_key = {"\xC3\xA1"};  // 'á', valid UTF-8: stored as text
  r1.segments = {{{"\xC3\xA1"}, {"bin.000001", 100}}, {{}, {"bin.000001", 300}}};
  RangeProgress r2;
  r2.lower = {raw};
  t.ranges = {r1, r2};
  std::string text = cp.ToJson();
  EXPECT_NE(text.find("{\"hex\":\"00ff802061\"}"), std::string::npos) << text;
  auto back = Checkpoint::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const TableSnapshotProgress& b = back->tables.at("d.t");
  ASSERT_EQ(b.ranges.size(), 2u);
  EXPECT_EQ(b.ranges[0].upper, std::vector<std::string>{raw});
  EXPECT_EQ(b.ranges[1].lower, std::vector<std::string>{raw});
  EXPECT_EQ(b.ranges[0].last_key, std::vector<std::string>{"\xC3\xA1"});
  ASSERT_EQ(b.ranges[0].segments.size(), 2u);
  EXPECT_EQ(b.ranges[0].segments[1].point.pos, 300u);
  EXPECT_EQ(b.expected_rows, 10u);
  EXPECT_EQ(back->ToJson(), text);

  auto bad = Checkpoint::FromJson(
      R"({"version":1,"flavor":"mysql","stream_start":{"file":"b","pos":4},"gtid":"",)"
      R"("snapshot":{"done":false,"tables":{"d.t":{"done":false,"rows":0,"last_key":[{"hex":"0g"}]}}}})");
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
}

// The snapshot object is written straight into text (thousands of ranges made a document per
// applied group: most of the run); it must be nlohmann's dump of the document byte for byte,
// for every field and every kind of string: quotes, backslashes, control characters, UTF-8,
// keys that are not UTF-8 (hex objects), empty keys and unbounded ranges.
TEST(CheckpointRangesTest, SnapshotTextEqualsTheDocumentsDump) {
  std::mt19937 rng(20261205);
  const std::vector<std::string> texts = {"", "7", "-12", "a\"b", "back\\slash", "tab\there", "nl\nx", "\x01\x1f\x7f",
                                          "ñandú 😀", std::string("zero\0byte", 9), "\xff\xfe", "\xc3", "é\x80",
                                          "\b\f\r", "\u2028"};
  auto pick = [&] { return texts[rng() % texts.size()]; };
  auto key = [&] {
    KeyTexts k;
    for (size_t n = rng() % 3; n > 0; --n) k.push_back(pick());
    return k;
  };
  for (int round = 0; round < 300; ++round) {
    std::map<std::string, TableSnapshotProgress> tables;
    for (size_t n = rng() % 4; n > 0; --n) {
      TableSnapshotProgress& t = tables["db" + std::to_string(rng() % 3) + (rng() % 2 ? ".t\"q" : ".tä")];
      t.done = rng() % 2;
      t.rows = rng() % 2 ? rng() : 0xFFFFFFFFFFFFFFFFull;
      t.last_key = key();
      if (rng() % 2) t.copied_at = {"mariadb-bin.00000" + std::to_string(rng() % 9), rng()};
      if (rng() % 2) t.read_until = {"mariadb-bin.00000" + std::to_string(rng() % 9), rng()};
      t.expected_rows = rng() % 2 ? rng() : 0;
      t.reread = rng() % 2;
      if (rng() % 2) t.db = rng() % 2 ? "ñandú 😀" : "a\"b\\\n";  // names from a server: UTF-8
      for (size_t r = rng() % 4; r > 0; --r) {
        RangeProgress range;
        range.lower = key();
        range.upper = key();
        range.done = rng() % 2;
        range.rows = rng();
        range.last_key = key();
        for (size_t g = rng() % 3; g > 0; --g) range.segments.push_back({key(), {"bin.000002", rng()}});
        t.ranges.push_back(std::move(range));
      }
    }
    const bool done = rng() % 2;
    ASSERT_EQ(SnapshotJsonForTest(done, tables, false), SnapshotJsonForTest(done, tables, true)) << "round " << round;
  }
  // A file name that is not UTF-8 (never from a server; nlohmann replaces its bytes): left to
  // the document, and the checkpoint text is the same as before.
  std::map<std::string, TableSnapshotProgress> odd;
  odd["d.t"].copied_at = {"bin\xff", 4};
  EXPECT_EQ(SnapshotJsonForTest(false, odd, false), "<declined>");
  Checkpoint cp;
  cp.tables = odd;
  EXPECT_NE(cp.ToJson().find(SnapshotJsonForTest(false, odd, true)), std::string::npos) << cp.ToJson();
}

TEST(CheckpointRangesTest, HandoffPiecesMergeEqualPointsAndNeedEveryRangeDone) {
  TableSnapshotProgress t;
  RangeProgress r1, r2, r3;
  r1.upper = {"10"};
  r1.done = true;
  r1.segments = {{{"4"}, {"b.1", 100}}, {{"9"}, {"b.1", 200}}};
  r2.lower = {"10"};
  r2.upper = {"20"};
  r2.done = true;
  r2.segments = {{{"12"}, {"b.1", 200}}};
  r3.lower = {"20"};
  r3.done = false;
  t.ranges = {r1, r2, r3};
  EXPECT_TRUE(HandoffPieces(t).empty());
  t.ranges[2].done = true;
  t.ranges[2].segments = {{{}, {"b.1", 150}}};
  auto pieces = HandoffPieces(t);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].end, std::vector<std::string>{"4"});
  EXPECT_EQ(pieces[0].point.pos, 100u);
  EXPECT_EQ(pieces[1].end, std::vector<std::string>{"20"});  // (4, 10] and (10, 20] at 200
  EXPECT_EQ(pieces[1].point.pos, 200u);
  EXPECT_TRUE(pieces[2].end.empty());
  EXPECT_EQ(pieces[2].point.pos, 150u);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// The streamer freezes the snapshot part once; the text must equal a fresh format, follow
// the position, and never hide a later change of the snapshot part.
TEST(CheckpointFreezeTest, FrozenSnapshotTextEqualsAFreshFormatAndNeverGoesStale) {
  Checkpoint cp;
  cp.flavor = Flavor::kMariaDB;
  cp.stream_start = {"bin.000001", 100};
  cp.gtid = "0-1-5";
  cp.snapshot_done = true;
  TableSnapshotProgress& t = cp.tables["d.t"];
  t.done = true;
  t.rows = 2;
  RangeProgress r;
  r.upper = {"7"};
  r.done = true;
  r.rows = 2;
  r.segments = {{{}, {"bin.000001", 90}}};
  t.ranges = {r, r};
  const std::string fresh = cp.ToJson();
  Checkpoint frozen = cp;
  frozen.FreezeSnapshotJson();
  EXPECT_EQ(frozen.ToJson(), fresh);

  Checkpoint next = frozen;  // as the streamer does per transaction
  next.stream_start = {"bin.000002", 4};
  next.gtid = "0-1-6";
  Checkpoint plain = cp;
  plain.stream_start = next.stream_start;
  plain.gtid = next.gtid;
  EXPECT_EQ(next.ToJson(), plain.ToJson());

  next.tables["d.t"].rows = 3;  // a change of the snapshot part is never hidden
  plain.tables["d.t"].rows = 3;
  EXPECT_EQ(next.ToJson(), plain.ToJson());
  next.tables["d.u"].done = false;
  plain.tables["d.u"].done = false;
  EXPECT_EQ(next.ToJson(), plain.ToJson());
  auto back = Checkpoint::FromJson(next.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tables.size(), 2u);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

std::shared_ptr<SchemaHistory> OneTableHistory(const std::string& column) {
  auto h = std::make_shared<SchemaHistory>();
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = "t";
  ColumnDesc c;
  c.name = column;
  c.SetType("int");
  t->columns.push_back(c);
  EXPECT_TRUE(h->Add("shop", "t", {{"binlog.000001", 4}, t, ""}).ok());
  return h;
}

// Issue 8: per-transaction checkpoints refer to the schema history instead of holding it;
// the split form joined with the history's text is exactly the whole checkpoint, and a
// whole checkpoint splits into exactly that.
TEST(CheckpointSplitTest, SplitFormJoinsBackToTheWholeText) {
  Checkpoint cp;
  cp.flavor = Flavor::kMariaDB;
  cp.stream_start = {"binlog.000002", 1234};
  cp.gtid = "0-1-9";
  cp.schemas = OneTableHistory("id");
  auto text = SchemaHistoryTextOf(*cp.schemas);
  const std::string whole = cp.ToJson();
  const std::string split = cp.ToJsonWithRef(text.get());
  EXPECT_EQ(split.find(text->json), std::string::npos) << "the split form must not hold the history: " << split;
  EXPECT_LT(split.size() + text->json.size() / 2, whole.size());
  EXPECT_EQ(CheckpointSchemasRef(split), text->ref) << split;
  EXPECT_EQ(CheckpointSchemasRef(whole), "") << whole;
  EXPECT_EQ(JoinCheckpoint(split, text->json), whole);
  SplitCheckpointText parts = SplitCheckpoint(whole);
  EXPECT_EQ(parts.split, split);
  ASSERT_NE(parts.schemas, nullptr);
  EXPECT_EQ(parts.schemas->ref, text->ref);
  EXPECT_EQ(parts.schemas->json, text->json);
  Transaction txn;
  txn.checkpoint = split;
  txn.schemas = text;
  EXPECT_EQ(WholeCheckpoint(txn), whole);

  // Another history gets another ref.
  EXPECT_NE(SchemaHistoryTextOf(*OneTableHistory("id2"))->ref, text->ref);

  // Without a history both forms are the same text, and nothing splits off.
  Checkpoint plain = cp;
  plain.schemas = nullptr;
  EXPECT_EQ(plain.ToJsonWithRef(text.get()), plain.ToJson());
  EXPECT_EQ(SplitCheckpoint(plain.ToJson()).schemas, nullptr);
  EXPECT_EQ(JoinCheckpoint(plain.ToJson(), text->json), plain.ToJson());

  // A split text read as a checkpoint (its history lost) is corrupt, naming the ref.
  auto r = Checkpoint::FromJson(split);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find(text->ref), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace sluice
