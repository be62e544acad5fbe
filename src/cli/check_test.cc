// The preflight check lines on hand-made facts: the cases a local MariaDB cannot be set up
// to show (MySQL GTIDs, an old version) and the edges of the retention arithmetic.
#include "cli/check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <tuple>

#include "cli/run.h"
#include "mysql/replication.h"
#include "sink/jsonl_sink.h"

namespace sluice::cli {
namespace {

SourceFacts GoodFacts() {
  SourceFacts f;
  f.endpoint = "127.0.0.1:3306";
  ParseServerVersion("10.11.6-MariaDB", &f.info);
  f.info.server_id = 1;
  f.info.log_bin = true;
  f.info.binlog_format = "ROW";
  f.info.binlog_row_image = "FULL";
  f.info.binlog_row_metadata = "FULL";
  f.max_allowed_packet = 16 << 20;
  f.replica_hosts_known = true;
  f.binlogs_known = true;
  f.binlogs = {{"bin.000003", 100}, {"bin.000004", 200}};
  f.tls_description = "TLSv1.3";
  TableFacts t;
  t.name = {"db", "t"};
  t.engine = "InnoDB";
  t.rows = 1000;
  t.largest_row = 100;
  f.tables.push_back(t);
  return f;
}

Config GoodConfig() {
  Config c;
  c.source.server_id = 5401;
  return c;
}

const CheckLine* Find(const std::vector<CheckLine>& lines, const std::string& name) {
  for (const auto& l : lines)
    if (l.name == name) return &l;
  return nullptr;
}
// Find on a temporary: keeps the lines alive (a pointer into them would dangle).
std::vector<CheckLine> g_kept;
const CheckLine* Find(std::vector<CheckLine>&& lines, const std::string& name) {
  g_kept = std::move(lines);
  return Find(static_cast<const std::vector<CheckLine>&>(g_kept), name);
}

TEST(Check, GoodFactsPassEveryLine) {
  for (const CheckLine& l : EvaluateServer(GoodFacts(), GoodConfig()))
    EXPECT_EQ(l.outcome, CheckOutcome::kPass) << l.name << ": " << l.detail;
  for (const CheckLine& l : EvaluateRetention(GoodFacts(), GoodConfig(), std::nullopt, std::nullopt))
    EXPECT_EQ(l.outcome, CheckOutcome::kPass) << l.name << ": " << l.detail;
}

TEST(Check, OldServersAndMySqlWithoutGtidsWarn) {
  SourceFacts f = GoodFacts();
  ParseServerVersion("5.7.44-log", &f.info);
  f.info.gtid_mode = "OFF";
  auto lines = EvaluateServer(f, GoodConfig());
  ASSERT_NE(Find(lines, "server version"), nullptr);
  EXPECT_EQ(Find(lines, "server version")->outcome, CheckOutcome::kWarn);
  EXPECT_EQ(Find(lines, "GTID")->outcome, CheckOutcome::kWarn);
  EXPECT_NE(Find(lines, "GTID")->detail.find("gtid_mode OFF"), std::string::npos);
  f.info.gtid_mode = "ON";
  EXPECT_EQ(Find(EvaluateServer(f, GoodConfig()), "GTID")->outcome, CheckOutcome::kPass);
}

// Cascading foreign keys on captured tables and prepared XA transactions: WARN lines (the run
// starts and logs them) naming the constraint and the transactions (a new user's probe: check
// was READY while the replica's child rows diverged; a pending XA held the resume point until
// a PURGE made the destination unrecoverable).
TEST(Check, CascadesAndPreparedXaTransactionsWarn) {
  SourceFacts f = GoodFacts();
  EXPECT_EQ(Find(EvaluateServer(f, GoodConfig()), "foreign key cascades"), nullptr);
  EXPECT_EQ(Find(EvaluateServer(f, GoodConfig()), "prepared XA transactions"), nullptr);
  f.fk_cascades = {"shop.items (fk_i: ON DELETE CASCADE from shop.orders)"};
  f.prepared_xa = {"x1", "x2"};
  auto lines = EvaluateServer(f, GoodConfig());
  const CheckLine* fk = Find(lines, "foreign key cascades");
  ASSERT_NE(fk, nullptr);
  EXPECT_EQ(fk->outcome, CheckOutcome::kWarn);
  EXPECT_FALSE(fk->fatal);
  EXPECT_NE(fk->detail.find("shop.items (fk_i: ON DELETE CASCADE from shop.orders)"), std::string::npos) << fk->detail;
  const CheckLine* xa = Find(lines, "prepared XA transactions");
  ASSERT_NE(xa, nullptr);
  EXPECT_EQ(xa->outcome, CheckOutcome::kWarn);
  EXPECT_NE(xa->detail.find("2 XA transaction(s)"), std::string::npos) << xa->detail;
  EXPECT_NE(xa->detail.find("x1, x2"), std::string::npos) << xa->detail;
  EXPECT_TRUE(RefuseOnFatal(lines).ok());
}

TEST(Check, FatalLinesAndTheCodeRunReturns) {
  SourceFacts f = GoodFacts();
  f.info.log_bin = false;
  f.info.binlog_format = "MIXED";
  auto lines = EvaluateServer(f, GoodConfig());
  EXPECT_TRUE(Find(lines, "log_bin")->fatal);
  EXPECT_TRUE(Find(lines, "binlog_format")->fatal);
  Status st = RefuseOnFatal(lines);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("binlog_format: MIXED"), std::string::npos) << st.message();
}

TEST(Check, ResumePositionPurgedOrFromAnotherServer) {
  SourceFacts f = GoodFacts();
  Checkpoint cp;
  cp.snapshot_done = true;
  cp.stream_start = {"bin.000002", 4};
  auto lines = EvaluateRetention(f, GoodConfig(), cp, std::nullopt);
  const CheckLine* l = Find(lines, "binlog retention: resume position");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outcome, CheckOutcome::kFail);
  EXPECT_TRUE(l->fatal);
  EXPECT_EQ(l->code, StatusCode::kDataLoss);
  EXPECT_NE(l->detail.find("the oldest binlog it has is bin.000003"), std::string::npos) << l->detail;
  EXPECT_EQ(RefuseOnFatal(lines).code(), StatusCode::kDataLoss);

  cp.source.server_id = 7;  // written against another server: a failover, judged by GTID
  l = Find(EvaluateRetention(f, GoodConfig(), cp, std::nullopt), "binlog retention: resume position");
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn);
  EXPECT_FALSE(l->fatal);
  EXPECT_NE(l->detail.find("another server (server_id 7"), std::string::npos) << l->detail;
  cp.source.server_id = 1;

  cp.stream_start = {"other-bin.000009", 4};  // a failover: not judged here
  l = Find(EvaluateRetention(f, GoodConfig(), cp, std::nullopt), "binlog retention: resume position");
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn);
  EXPECT_FALSE(l->fatal);

  cp.stream_start = {"bin.000004", 4};
  f.expire_seconds = 3600;
  l = Find(EvaluateRetention(f, GoodConfig(), cp, 3000.0), "binlog retention: resume position");
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn) << l->detail;
  l = Find(EvaluateRetention(f, GoodConfig(), cp, 60.0), "binlog retention: resume position");
  EXPECT_EQ(l->outcome, CheckOutcome::kPass) << l->detail;
}

// RESET MASTER (or a restore from an older backup) under a checkpoint of this server: the
// same FAIL (exit code 3 for `run`) whether the position lies past the end of its file, in a
// file after the newest, or where the server's binlog holds another GTID position.
TEST(Check, ResumePositionOfAResetHistoryFails) {
  SourceFacts f = GoodFacts();
  f.binlogs = {{"bin.000001", 624}};
  Checkpoint cp;
  cp.snapshot_done = true;
  cp.source.server_id = f.info.server_id;
  cp.stream_start = {"bin.000001", 76543};
  cp.gtid = "0-1-308";
  auto expect_reset = [&](const std::string& what) {
    auto lines = EvaluateRetention(f, GoodConfig(), cp, std::nullopt);
    const CheckLine* l = Find(lines, "binlog retention: resume position");
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->outcome, CheckOutcome::kFail);
    EXPECT_TRUE(l->fatal);
    EXPECT_EQ(l->code, StatusCode::kDataLoss);
    EXPECT_NE(l->detail.find(what), std::string::npos) << l->detail;
    EXPECT_NE(l->detail.find("reset (RESET MASTER)"), std::string::npos) << l->detail;
    EXPECT_NE(l->fix.find("take a new snapshot into a new destination"), std::string::npos) << l->fix;
    EXPECT_EQ(RefuseOnFatal(lines).code(), StatusCode::kDataLoss);
  };
  expect_reset("bin.000001:76543 is past the end of bin.000001 on the server (624 bytes)");
  cp.stream_start = {"bin.000033", 1200};
  expect_reset("bin.000033:1200 is in a binlog after the server's newest");

  cp.stream_start = {"bin.000001", 500};
  HistoryFacts h;
  h.flavor = Flavor::kMariaDB;
  h.binlogs_known = true;
  h.binlogs = f.binlogs;
  h.gtid_pos_asked = true;
  h.gtid_pos = "0-1-2";
  f.resume_history = h;
  expect_reset("holds GTID position 0-1-2, not the checkpoint's 0-1-308");
  f.resume_history->gtid_pos = "0-1-308";
  const CheckLine* l = Find(EvaluateRetention(f, GoodConfig(), cp, std::nullopt), "binlog retention: resume position");
  EXPECT_EQ(l->outcome, CheckOutcome::kPass) << l->detail;
}

TEST(Check, SnapshotExpectedToOutlastRetentionWarns) {
  SourceFacts f = GoodFacts();
  f.tables[0].rows = 10'000'000;
  Config c = GoodConfig();
  c.snapshot.expected_rows_per_second = 1000;  // 10,000 s
  f.expire_seconds = 3600;
  const CheckLine* l = Find(EvaluateRetention(f, c, std::nullopt, std::nullopt), "binlog retention: snapshot time");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn);
  EXPECT_NE(l->fix.find("binlog_expire_logs_seconds = 20000"), std::string::npos) << l->fix;
  // A finished table costs nothing.
  Checkpoint cp;
  cp.snapshot_done = true;
  cp.tables["db.t"].done = true;
  cp.stream_start = {"bin.000004", 4};
  l = Find(EvaluateRetention(f, c, cp, std::nullopt), "binlog retention: snapshot time");
  EXPECT_EQ(l->outcome, CheckOutcome::kPass) << l->detail;
  f.expire_seconds = 0;
  l = Find(EvaluateRetention(f, c, std::nullopt, std::nullopt), "binlog retention: snapshot time");
  EXPECT_EQ(l->outcome, CheckOutcome::kPass);
}

TEST(Check, PacketAgainstUpdateEventOfLargestRow) {
  SourceFacts f = GoodFacts();
  f.tables[0].largest_row = 10 << 20;  // an update event carries it twice
  const CheckLine* l = Find(EvaluateServer(f, GoodConfig()), "max_allowed_packet");
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn);
  EXPECT_NE(l->fix.find("max_allowed_packet = 33554432"), std::string::npos) << l->fix;
}

// source.server_id listed by SHOW SLAVE HOSTS. `sluice run` (no settling) with the id
// registered from this machine: most often its own previous run, stopped a moment ago (make
// demo's resume step warned "in use"), so the warning says so. Listed from elsewhere, or
// still listed after check's 3 s: in use.
TEST(Check, ServerIdListedFromThisMachineRightAfterAStop) {
  SourceFacts f = GoodFacts();
  Config c = GoodConfig();
  f.replica_hosts = {{5401, ReplicaHostName()}, {7, "other"}};
  f.replica_ids_settled = false;  // sluice run
  const CheckLine* l = Find(EvaluateServer(f, c), "server_id");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn) << l->detail;
  EXPECT_FALSE(l->fatal);
  EXPECT_EQ(l->detail, "source.server_id 5401 is listed by the server (" + ReplicaHostName() +
                           ", this machine): a replica that just disconnected, such as this tool's previous run, "
                           "stays listed for a few seconds; if another replica uses it, the server drops one of "
                           "the two");
  EXPECT_EQ(ReplicaHostName().rfind("sluice", 0), 0u) << ReplicaHostName();
  f.replica_ids_settled = true;  // sluice check, still listed after 3 s
  l = Find(EvaluateServer(f, c), "server_id");
  EXPECT_EQ(l->outcome, CheckOutcome::kFail);
  EXPECT_NE(l->detail.find("is in use by a connected replica"), std::string::npos) << l->detail;
  f.replica_ids_settled = false;
  f.replica_hosts = {{5401, "sluice@elsewhere"}};
  l = Find(EvaluateServer(f, c), "server_id");
  EXPECT_EQ(l->outcome, CheckOutcome::kFail);
  EXPECT_NE(l->detail.find("is in use by a connected replica (sluice@elsewhere)"), std::string::npos) << l->detail;
}

// What a run registers names its process, so that the next run on this machine tells a run
// killed a moment ago (warned about, above) from one still running (refused: the server would
// drop that one's connection for this one's).
TEST(Check, ServerIdHeldByARunningSluiceOnThisMachineIsRefused) {
  const std::string mine = RegisteredReplicaHost();
  EXPECT_LE(mine.size(), 60u);
  EXPECT_EQ(SluicePidOf(mine), static_cast<int64_t>(::getpid())) << mine;
  EXPECT_EQ(SluicePidOf(ReplicaHostName()), std::nullopt);  // an older sluice: no id
  EXPECT_EQ(SluicePidOf("sluice@elsewhere.example pid 12"), std::nullopt);
  EXPECT_EQ(SluicePidOf(mine + "0x"), std::nullopt);
  EXPECT_EQ(SluicePidOf("replica-3 pid 12"), std::nullopt);
  const std::string listed = ReplicaHostName() + " pid 4242";
  EXPECT_EQ(SluicePidOf(listed), 4242);

  SourceFacts f = GoodFacts();
  Config c = GoodConfig();
  f.replica_hosts = {{5401, listed}};
  f.replica_ids_settled = false;
  const CheckLine* l = Find(EvaluateServer(f, c), "server_id");  // its process gone
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outcome, CheckOutcome::kWarn) << l->detail;
  f.replica_hosts_running = {listed};
  l = Find(EvaluateServer(f, c), "server_id");
  EXPECT_EQ(l->outcome, CheckOutcome::kFail);
  EXPECT_TRUE(l->fatal);
  EXPECT_EQ(l->detail, "source.server_id 5401 is in use by another sluice run on this machine, still running (" +
                           listed + "): the server drops one of two replicas with the same id");
}

// A JSON lines output cut short (its last line incomplete) behind sluice's back: the check
// fails with the words the run's sink refuses it with (the new-user test: check passed).
TEST(Check, JsonlOutputCutShortFailsAsTheRunDoes) {
  char tmpl[] = "/tmp/sluice-check-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Config c = GoodConfig();
  c.sink.type = SinkType::kJsonl;
  c.sink.path = dir + "/out.jsonl";
  c.sink.checkpoint = c.sink.path + ".checkpoint";
  std::ofstream(c.sink.path) << "{\"a\":1}\n{\"a\":2}\n";
  {
    JsonlSinkOptions o;
    o.path = c.sink.path;
    o.checkpoint_path = c.sink.checkpoint;
    auto s = JsonlSink::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->SaveCheckpoint(Checkpoint().ToJson()).ok());
  }
  SinkFacts whole = CheckSink(c);
  EXPECT_EQ(whole.line.outcome, CheckOutcome::kPass) << whole.line.detail;
  ASSERT_EQ(::truncate(c.sink.path.c_str(), 12), 0);  // 16 bytes written: the second line cut
  SinkFacts cut = CheckSink(c);
  JsonlSinkOptions o;
  o.path = c.sink.path;
  o.checkpoint_path = c.sink.checkpoint;
  auto run = JsonlSink::Open(o);
  ASSERT_FALSE(run.ok()) << "the run's sink refuses the output cut short";
  EXPECT_EQ(cut.line.outcome, CheckOutcome::kFail) << cut.line.detail;
  EXPECT_TRUE(cut.line.fatal);
  EXPECT_EQ(cut.line.detail, run.status().message());
  (void)std::system(("rm -rf " + dir).c_str());
}

// Two source databases mapped onto one PostgreSQL schema (or MySQL database) that both hold a
// table t would write into one destination table: refused as bad configuration, by `check`
// (a FAIL line) and by `run` (kInvalidArgument, exit code 2) in the same words, naming both
// source tables, the shared destination name and the key. Without a shared table name the
// mapping is fine.
TEST(Check, TwoDatabasesMappedOntoOneSchemaWithTheSameTableFail) {
  SourceFacts f = GoodFacts();
  f.tables.clear();
  for (const char* db : {"c1", "c2"}) {
    TableFacts t;
    t.name = {db, "t"};
    t.engine = "InnoDB";
    f.tables.push_back(t);
  }
  std::vector<TableName> names = {f.tables[0].name, f.tables[1].name};
  Config pg = GoodConfig();
  pg.sink.type = SinkType::kPostgres;
  pg.sink.postgres.schemas = {{"c1", "c"}, {"c2", "c"}};
  Config my = GoodConfig();
  my.sink.type = SinkType::kMysql;
  my.sink.mysql.databases = {{"c1", "cc"}, {"c2", "cc"}};
  for (const auto& [config, shared, key] :
       {std::tuple{pg, "c.t", "sink.postgres.schemas"}, std::tuple{my, "cc.t", "sink.mysql.databases"}}) {
    Status st = CheckNameCollisions(names, config.sink);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
    for (const std::string& word : {std::string("`c1`.`t`"), std::string("`c2`.`t`"), std::string(shared), std::string(key)})
      EXPECT_NE(st.message().find(word), std::string::npos) << word << " in " << st.message();
    auto line = EvaluateSinkNames(f, config, SinkFacts{});
    ASSERT_TRUE(line.has_value());
    EXPECT_EQ(line->outcome, CheckOutcome::kFail);
    EXPECT_TRUE(line->fatal);
    EXPECT_EQ(line->detail, st.message());
  }
  // Distinct table names in the two databases: allowed.
  f.tables[1].name.table = "u";
  names[1].table = "u";
  EXPECT_TRUE(CheckNameCollisions(names, pg.sink).ok());
  EXPECT_FALSE(EvaluateSinkNames(f, pg, SinkFacts{}).has_value());
  EXPECT_FALSE(EvaluateSinkNames(f, my, SinkFacts{}).has_value());
}

// A MySQL destination with lower_case_table_names 1 or 2 holds `d`.`T` and `d`.`t` (or `D`.`t`
// and `d`.`t`) as one table: both are refused, by `check` and `run` alike, naming the setting;
// a destination that keeps the case takes them, and so does any other sink but SQLite.
TEST(Check, TablesDifferingOnlyInCaseFailWhereTheMysqlDestinationIgnoresCase) {
  Config my = GoodConfig();
  my.sink.type = SinkType::kMysql;
  for (const auto& names : {std::vector<TableName>{{"d", "T"}, {"d", "t"}}, std::vector<TableName>{{"D", "t"}, {"d", "t"}}}) {
    SourceFacts f = GoodFacts();
    f.tables.clear();
    for (const TableName& n : names) {
      TableFacts t;
      t.name = n;
      t.engine = "InnoDB";
      f.tables.push_back(t);
    }
    EXPECT_TRUE(CheckNameCollisions(names, my.sink, 0).ok());
    EXPECT_FALSE(EvaluateSinkNames(f, my, SinkFacts{}).has_value());
    for (int lower : {1, 2}) {
      Status st = CheckNameCollisions(names, my.sink, lower);
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
      for (const std::string& word : {fmt::format("`{}`.`{}`", names[0].db, names[0].table),
                                     fmt::format("`{}`.`{}`", names[1].db, names[1].table),
                                     fmt::format("lower_case_table_names = {}", lower)})
        EXPECT_NE(st.message().find(word), std::string::npos) << word << " in " << st.message();
      SinkFacts sink;
      sink.lower_case_table_names = lower;
      auto line = EvaluateSinkNames(f, my, sink);
      ASSERT_TRUE(line.has_value());
      EXPECT_EQ(line->outcome, CheckOutcome::kFail);
      EXPECT_EQ(line->detail, st.message());
    }
  }
  Config pg = GoodConfig();
  pg.sink.type = SinkType::kPostgres;
  EXPECT_TRUE(CheckNameCollisions({{"d", "T"}, {"d", "t"}}, pg.sink, 1).ok());
}

// A MySQL destination that is the source server: every database sluice writes there (the
// mapped copy of each captured database, sink.mysql.database) must be outside the patterns,
// and no pattern may name its database with a wildcard (a database created later keeps its
// name, so it would be copied onto itself). The message names the server, the destination
// database, the pattern and the fix.
TEST(Check, AMysqlDestinationOnTheSourceServerMustNotWriteCapturedDatabases) {
  Config c = GoodConfig();
  c.sink.type = SinkType::kMysql;
  c.source.tables = {"a.*", "b.t"};
  c.sink.mysql.database = "meta";
  auto refused = [&](const Config& config, std::vector<std::string> words) {
    Status st = CheckSelfDestination(config, "u@dest:3307", "u@src:3306", "proof");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
    words.push_back("the MySQL destination u@dest:3307 is the source server u@src:3306 (proof), and ");
    words.push_back("or point sink.mysql at another server");
    for (const std::string& w : words) EXPECT_NE(st.message().find(w), std::string::npos) << w << " in " << st.message();
  };
  // The default mapping: a and b are written onto themselves.
  refused(c, {"destination database a (source database a is copied into it)", "pattern 'a.*'",
              "[sink.mysql.databases] a = \"a_copy\""});
  // a mapped onto b, which a pattern captures (only its table t: any table of b counts).
  c.sink.mysql.databases = {{"a", "b"}, {"b", "b2"}};
  refused(c, {"destination database b (source database a is copied into it)", "pattern 'b.t'"});
  // Both mapped away: fine, and the databases written are listed.
  c.sink.mysql.databases = {{"a", "a2"}, {"b", "b2"}};
  EXPECT_TRUE(CheckSelfDestination(c, "u@dest:3307", "u@src:3306", "proof").ok());
  std::vector<std::string> names;
  for (const MysqlSinkDatabase& d : MysqlSinkDatabases(c)) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a2", "b2", "meta"}));
  // The bookkeeping tables in a captured database (case ignored: lower_case_table_names).
  c.sink.mysql.database = "A";
  refused(c, {"destination database A (it is sink.mysql.database", "pattern 'a.*'",
              "set sink.mysql.database to a database no source.tables pattern matches"});
  c.sink.mysql.database = "meta";
  // A wildcard in a pattern's database.
  c.source.tables = {"a.*", "shop?.*"};
  refused(c, {"pattern 'shop?.*' can select any database", "without wildcards"});
  // Wildcards in table names only are fine.
  c.source.tables = {"a.*", "b.t*"};
  EXPECT_TRUE(CheckSelfDestination(c, "u@dest:3307", "u@src:3306", "proof").ok());
}

// Two tables whose names differ only in characters a topic or subject cannot hold (`we ird`
// and we_ird both become ..._we_ird), or split differently at a dot (`a.b`.c and a.`b.c`,
// one Kafka topic a.b.c), would publish to one Kafka topic / NATS subject with equal keys: a
// delete in one sends a tombstone for the other's live row (a new user's probe). Refused as
// bad configuration by `run` (kInvalidArgument, exit code 2) and `check` (a FAIL line) in the
// same words, naming both tables and the topic or subject; the configured topic template
// counts (a template without {db} joins two databases' tables of one name), and a table
// topic that is one of sluice's own (the state topic) is refused too.
TEST(Check, TwoTablesPublishingToOneTopicOrSubjectFail) {
  SourceFacts f = GoodFacts();
  f.tables.clear();
  for (const char* table : {"we ird", "we_ird"}) {
    TableFacts t;
    t.name = {"coll", table};
    t.engine = "InnoDB";
    f.tables.push_back(t);
  }
  std::vector<TableName> names = {f.tables[0].name, f.tables[1].name};
  Config kafka = GoodConfig();
  kafka.sink.type = SinkType::kKafka;
  kafka.sink.kafka.bootstrap_servers = "127.0.0.1:9092";
  Config nats = GoodConfig();
  nats.sink.type = SinkType::kNats;
  nats.sink.nats.subject_prefix = "p";
  for (const auto& [config, dest] : {std::tuple{kafka, "Kafka topic sluice.coll.we_ird"},
                                     std::tuple{nats, "NATS subject p.coll.we_ird"}}) {
    Status st = CheckNameCollisions(names, config.sink);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
    for (const std::string& word : {std::string("`coll`.`we ird`"), std::string("`coll`.`we_ird`"), std::string(dest)})
      EXPECT_NE(st.message().find(word), std::string::npos) << word << " in " << st.message();
    auto line = EvaluateSinkNames(f, config, SinkFacts{});
    ASSERT_TRUE(line.has_value());
    EXPECT_EQ(line->outcome, CheckOutcome::kFail);
    EXPECT_TRUE(line->fatal);
    EXPECT_EQ(line->detail, st.message());
  }
  // One of them alone: fine.
  EXPECT_TRUE(CheckNameCollisions({names[0]}, kafka.sink).ok());
  EXPECT_TRUE(CheckNameCollisions({names[1]}, nats.sink).ok());

  // Kafka keeps '.': `a.b`.c and a.`b.c` share the topic sluice.a.b.c.
  Status dots = CheckNameCollisions({TableName{"a.b", "c"}, TableName{"a", "b.c"}}, kafka.sink);
  EXPECT_EQ(dots.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dots.message().find("Kafka topic sluice.a.b.c"), std::string::npos) << dots.message();

  // A template without {db}: two databases' tables of one name share a topic, and the key
  // that made it so is named.
  Config no_db = kafka;
  no_db.sink.kafka.topic_template = "{prefix}.{table}";
  Status joined = CheckNameCollisions({TableName{"d1", "t"}, TableName{"d2", "t"}}, no_db.sink);
  EXPECT_EQ(joined.code(), StatusCode::kInvalidArgument);
  for (const std::string word : {"Kafka topic sluice.t", "sink.kafka.topic"})
    EXPECT_NE(joined.message().find(word), std::string::npos) << word << " in " << joined.message();
  EXPECT_TRUE(CheckNameCollisions({TableName{"d1", "t"}, TableName{"d1", "u"}}, no_db.sink).ok());
  // ... and a table whose topic is the state topic.
  Status state = CheckNameCollisions({TableName{"d1", "sluice_state"}}, no_db.sink);
  EXPECT_EQ(state.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(state.message().find("sluice.sluice_state"), std::string::npos) << state.message();
  EXPECT_NE(state.message().find("checkpoint"), std::string::npos) << state.message();

  // NATS subjects keep db and table apart (two tokens), but the checkpoint's "db.table"
  // keys would not: refused as for every sink. Case counts on both.
  EXPECT_EQ(CheckNameCollisions({TableName{"a.b", "c"}, TableName{"a", "b.c"}}, nats.sink).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckNameCollisions({TableName{"d", "T"}, TableName{"d", "t"}}, nats.sink).ok());
  EXPECT_TRUE(CheckNameCollisions({TableName{"d", "T"}, TableName{"d", "t"}}, kafka.sink).ok());
}

// Two [table] sections whose globs both match a table: which tables are cdc is unknown, so
// the server_id line must not claim one needs the binlog stream ("source.server_id is
// missing: the binlog stream of the tables in mode cdc needs one", beside the real error:
// new-user test). The "table modes" line says what is wrong, alone.
TEST(Check, UnresolvableModesDoNotClaimACdcTableNeedsAServerId) {
  Config c = GoodConfig();
  c.source.server_id = 0;
  for (const char* p : {"db.t*", "db.*t"}) {
    TableSection s;
    s.pattern = p;
    s.key = fmt::format("table.\"{}\"", p);
    s.mode = TableMode::kFull;
    c.tables.push_back(s);
  }
  auto lines = EvaluateServer(GoodFacts(), c);
  const CheckLine* id = Find(lines, "server_id");
  EXPECT_TRUE(id == nullptr || id->outcome != CheckOutcome::kFail) << id->detail;
  EXPECT_TRUE(RefuseOnFatal(lines).ok());
  // With the sections disjoint and the table cdc, a missing id is still refused.
  c.tables.pop_back();
  c.tables[0].pattern = "db.x*";
  EXPECT_EQ(Find(EvaluateServer(GoodFacts(), c), "server_id")->outcome, CheckOutcome::kFail);
}

// A pipeline read without the binlog whose table was renamed out of its section, or dropped
// (probe13 F5): the server_id line named no table, and its fix would have turned the pipeline
// into a binlog stream. It names the cdc tables, or says that no table matches.
TEST(Check, AMissingServerIdNamesTheCdcTablesOrThatNoTableMatches) {
  Config c = GoodConfig();
  c.source.server_id = 0;
  TableSection s;
  s.pattern = "db.orders";
  s.key = "table.\"db.orders\"";
  s.mode = TableMode::kIncremental;
  c.tables.push_back(s);
  const CheckLine* id = Find(EvaluateServer(GoodFacts(), c), "server_id");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->outcome, CheckOutcome::kFail);
  EXPECT_NE(id->detail.find("needs one: " + GoodFacts().tables[0].name.QualifiedName()), std::string::npos)
      << id->detail;
  EXPECT_NE(id->fix.find("[table] section"), std::string::npos) << id->fix;
  SourceFacts none = GoodFacts();
  none.tables.clear();
  auto lines = EvaluateServer(none, c);
  id = Find(lines, "server_id");
  ASSERT_NE(id, nullptr);
  EXPECT_NE(id->detail.find("source.tables matches no table at the source"), std::string::npos) << id->detail;
}

}  // namespace
}  // namespace sluice::cli
