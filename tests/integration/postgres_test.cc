// PostgreSQL as the destination (issue 10): Sakila plus mixed DML and schema changes compare
// equal, every MySQL type round-trips, a reader never sees part of a source transaction, and
// SIGKILL during a large transaction or a PostgreSQL restart mid-stream lose and repeat
// nothing. The PostgreSQL server: SLUICE_TEST_PG_* from scripts/postgres-test-server.sh when
// set (scripts/run-tests.sh starts one), else one started here for the whole binary. Each
// test writes into its own PostgreSQL database.
#include <libpq-fe.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "cli/compare.h"
#include "harness.h"
#include "types_fixture.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;


// The PostgreSQL server of this test binary.
class PgServer {
 public:
  static PgServer& Get() {
    static PgServer server;
    return server;
  }
  const std::string& error() const { return error_; }
  std::string conninfo(const std::string& db) const {
    return fmt::format("host={} port={} user={} dbname={}", host_, port_, user_, db);
  }
  // Runs SQL on database `db`; "" when it worked, else the error.
  std::string Exec(const std::string& db, const std::string& sql) const {
    PGconn* c = Connect(db);
    std::string err;
    if (PQstatus(c) != CONNECTION_OK) {
      err = PQerrorMessage(c);
    } else {
      PGresult* r = PQexec(c, sql.c_str());
      if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) err = PQresultErrorMessage(r);
      PQclear(r);
    }
    PQfinish(c);
    return err;
  }
  PGconn* Connect(const std::string& db) const {
    const std::string ci = conninfo(db) + " password=" + password_;
    PGconn* c = PQconnectdb(ci.c_str());
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    return c;
  }
  // A fresh database for one test.
  std::string NewDatabase(const std::string& name) const {
    EXPECT_EQ(Exec(database_, "DROP DATABASE IF EXISTS " + name), "");
    EXPECT_EQ(Exec(database_, "CREATE DATABASE " + name), "");
    return name;
  }
  // Stops and starts the server (the same data and port); false when it is not ours to restart.
  bool Restart() const {
    if (dir_.empty()) return false;
    return std::system(("scripts/postgres-test-server.sh restart " + dir_ + " >/dev/null").c_str()) == 0;
  }
  PostgresSinkOptions Options(const std::string& db) const {
    PostgresSinkOptions o;
    o.conninfo = conninfo(db);
    o.password = password_;
    return o;
  }

 private:
  PgServer() {
    if (const char* ci = std::getenv("SLUICE_TEST_PG_PORT"); ci == nullptr) {
      own_dir_ = std::filesystem::temp_directory_path() / ("sluice-pg-" + std::to_string(getpid()));
      const std::string cmd = std::string(SLUICE_SOURCE_DIR) + "/scripts/postgres-test-server.sh start " + own_dir_ +
                              " >/dev/null";
      if (std::system(cmd.c_str()) != 0) {
        error_ = "scripts/postgres-test-server.sh start failed";
        return;
      }
      std::ifstream env(own_dir_ + "/env");
      std::string line;
      while (std::getline(env, line)) {
        const size_t eq = line.find('=');
        if (line.rfind("export ", 0) != 0 || eq == std::string::npos) continue;
        std::string value = line.substr(eq + 1);
        if (!value.empty() && value.front() == '"') value = value.substr(1, value.size() - 2);
        setenv(line.substr(7, eq - 7).c_str(), value.c_str(), 1);
      }
      // The handler runs after this object's destructor (it is registered while the object
      // is being constructed), so it keeps its own copy of the directory.
      static const std::string* dir_to_stop = new std::string(own_dir_);
      std::atexit([] {
        (void)std::system(
            (std::string(SLUICE_SOURCE_DIR) + "/scripts/postgres-test-server.sh stop " + *dir_to_stop).c_str());
        std::filesystem::remove_all(*dir_to_stop);
      });
    }
    auto env = [](const char* k) { const char* v = std::getenv(k); return std::string(v ? v : ""); };
    host_ = env("SLUICE_TEST_PG_HOST");
    port_ = env("SLUICE_TEST_PG_PORT");
    user_ = env("SLUICE_TEST_PG_USER");
    password_ = env("SLUICE_TEST_PG_PASSWORD");
    database_ = env("SLUICE_TEST_PG_DATABASE");
    dir_ = env("SLUICE_TEST_PG_DIR");
    if (port_.empty()) error_ = "SLUICE_TEST_PG_PORT is not set";
  }

  std::string own_dir_;
  std::string host_, port_, user_, password_, database_, dir_;
  std::string error_;
};

// A config for `sluice run` into PostgreSQL database `pgdb`.
std::string WritePgConfig(const TempDir& dir, SluiceConfigSpec spec, const std::string& pgdb) {
  spec.sink_type = "postgres";
  spec.sink_path = "unused";
  const std::string path = WriteConfig(dir, spec);
  std::ofstream(path, std::ios::app) << "\n[sink.postgres]\nconninfo = \"" << PgServer::Get().conninfo(pgdb)
                                     << "\"\npassword_env = \"SLUICE_TEST_PG_PASSWORD\"\n";
  return path;
}

void ExpectPgEqualsSource(const std::vector<std::string>& tables, const std::string& pgdb) {
  auto result = cli::CompareTablesPostgres(TestServer(), TableFilter{tables, {}}, PgServer::Get().Options(pgdb));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_FALSE(result->empty());
  for (const auto& t : *result) {
    std::string examples;
    for (const auto& e : t.examples) examples += "\n    " + e;
    EXPECT_TRUE(t.equal()) << "PostgreSQL " << pgdb << " " << t.table << ": source " << t.source_rows
                           << " rows, replica " << t.replica_rows << ", missing " << t.missing << ", extra " << t.extra
                           << ", differing " << t.differing << examples;
  }
}

// Polls (every 200 ms, up to `timeout`) until every selected table equals the source.
bool WaitForPgToMatch(const std::vector<std::string>& tables, const std::string& pgdb, seconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < deadline;) {
    auto cmp = cli::CompareTablesPostgres(TestServer(), TableFilter{tables, {}}, PgServer::Get().Options(pgdb));
    bool all = cmp.ok() && !cmp->empty();
    for (size_t i = 0; all && i < cmp->size(); ++i) all = (*cmp)[i].equal();
    if (all) return true;
    std::this_thread::sleep_for(milliseconds(200));
  }
  return false;
}

// Rows 101-105: copies of rows 1-5 made through the binlog; then row 101 takes row 103's
// values, row 103 becomes all NULL, a key change and a delete (as types_test.cc does).
const char* kTypesBinlogCopies =
    "SET SESSION sql_mode = ''; INSERT INTO it_types.t SELECT id + 100, ti, tiu, si, siu, mi, miu, i, iu, bi, biu,"
    " dec1, dec2, dec3, dec4, f, d, b1, b13, b64, y, dt, tm, tm6, tm2, dtm, dtm3, dtm6, ts, ts6,"
    " c, c255, vc, c_latin1, c_utf8mb3, bin, vbin, tt, tx, mt, lt, tb, bl, mb, lb, e, s, j, g, pt"
    " FROM it_types.t WHERE id <= 5";
const char* kTypesUpdates =
    "SET SESSION sql_mode = '';"
    "UPDATE it_types.t a JOIN it_types.t b ON b.id = 103 SET a.ti = b.ti, a.biu = b.biu, a.dec1 = b.dec1,"
    " a.f = b.f, a.d = b.d, a.b64 = b.b64, a.tm6 = b.tm6, a.dtm6 = b.dtm6, a.ts6 = b.ts6, a.vc = b.vc,"
    " a.vbin = b.vbin, a.lt = b.lt, a.lb = b.lb, a.e = b.e, a.s = b.s, a.j = b.j, a.g = b.g WHERE a.id = 101;"
    "UPDATE it_types.t SET ti = NULL, vc = NULL, lb = NULL, j = NULL, g = NULL WHERE id = 103;"
    "UPDATE it_types.t SET id = 1000 WHERE id = 104;"
    "DELETE FROM it_types.t WHERE id = 102;";

// Polls (every 100 ms, up to `timeout`) until `sql` on PostgreSQL database `pgdb` returns `want`.
bool WaitForPgValue(const std::string& pgdb, const std::string& sql, const std::string& want, seconds timeout) {
  PGconn* c = PgServer::Get().Connect(pgdb);
  bool got = false;
  for (auto deadline = std::chrono::steady_clock::now() + timeout; !got && std::chrono::steady_clock::now() < deadline;) {
    if (PQstatus(c) != CONNECTION_OK) PQreset(c);
    PGresult* res = PQexec(c, sql.c_str());
    got = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && want == PQgetvalue(res, 0, 0);
    PQclear(res);
    if (!got) std::this_thread::sleep_for(milliseconds(100));
  }
  PQfinish(c);
  return got;
}

#define REQUIRE_PG() ASSERT_EQ(PgServer::Get().error(), "")

TEST(Postgres, SakilaSnapshotMixedLoadAndSchemaChangesCompareEqual) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_sakila");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS sakila"), 0);
  ASSERT_EQ(RunSqlFile(FixturesDir() + "/sakila/sakila-schema.sql"), 0);
  ASSERT_EQ(RunSqlFile(FixturesDir() + "/sakila/sakila-data.sql"), 0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"sakila.*"};
  spec.chunk_rows = 2000;
  spec.server_id = 5501;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "snapshot of Sakila into PostgreSQL:\n" << r.output;
  ExpectPgEqualsSource({"sakila.*"}, pgdb);

  // Mixed load: the demo load (inserts, updates, deletes, a key change, a multi-statement and
  // a rolled-back transaction), more of each, then schema changes with rows around them.
  ASSERT_EQ(RunSqlFile(std::string(SLUICE_SOURCE_DIR) + "/scripts/demo-load.sql", "sakila"), 0);
  ASSERT_EQ(RunSqlText(R"(
    START TRANSACTION;
    INSERT INTO actor (first_name, last_name) VALUES ('Ünïcødé', '€ three-byte');
    UPDATE film SET description = NULL, original_language_id = 2 WHERE film_id BETWEEN 200 AND 210;
    DELETE FROM film_category WHERE film_id BETWEEN 300 AND 305;
    UPDATE address SET address2 = 'moved', postal_code = '' WHERE address_id < 20;
    COMMIT;
    UPDATE film_actor SET actor_id = 1 WHERE actor_id = 2 AND film_id NOT IN (SELECT film_id FROM (SELECT film_id FROM film_actor WHERE actor_id = 1) x);
    UPDATE film_text SET film_id = film_id + 5000 WHERE film_id = 7;
    START TRANSACTION;
    UPDATE payment SET amount = 0 WHERE payment_id < 100;
    ROLLBACK;
    ALTER TABLE language ADD COLUMN iso CHAR(2) NOT NULL DEFAULT 'xx';
    UPDATE language SET iso = 'en' WHERE language_id = 1;
    ALTER TABLE language DROP COLUMN last_update;
    INSERT INTO language (name, iso) VALUES ('Latin', 'la');
    CREATE TABLE note (id INT PRIMARY KEY, body TEXT, at DATETIME(3));
    INSERT INTO note VALUES (1, 'first', '2024-01-02 03:04:05.678'), (2, NULL, NULL);
    RENAME TABLE note TO notes;
    INSERT INTO notes VALUES (3, 'after rename', '2025-12-31 23:59:59.999');
    CREATE TABLE loose (k INT, v VARCHAR(10));
    INSERT INTO loose VALUES (1, 'a'), (1, 'a'), (2, NULL);
    UPDATE loose SET v = 'b' WHERE k = 1 LIMIT 1;
    DELETE FROM loose WHERE v IS NULL;
  )", "sakila"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "streaming the mixed load into PostgreSQL:\n" << r.output;
  ExpectPgEqualsSource({"sakila.*"}, pgdb);
}

// Renames into another database (another PostgreSQL schema): under the same name, which
// stopped every run ("relation "t" already exists": the table was moved, then renamed to the
// name it had; a new user's probe), and under a new name while the other schema holds a table
// of the old one (moved under its old name, it met that table).
TEST(Postgres, RenamesAcrossDatabasesKeepEveryName) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_xren");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgxa; DROP DATABASE IF EXISTS it_pgxb;"
                       "CREATE DATABASE it_pgxa; CREATE DATABASE it_pgxb;"
                       "CREATE TABLE it_pgxa.t (id INT PRIMARY KEY, v INT); INSERT INTO it_pgxa.t VALUES (1, 1);"
                       "CREATE TABLE it_pgxa.s (id INT PRIMARY KEY, v INT); INSERT INTO it_pgxa.s VALUES (1, 10);"
                       "CREATE TABLE it_pgxb.s (id INT PRIMARY KEY, w VARCHAR(5)); INSERT INTO it_pgxb.s VALUES (7, 'b');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgxa.*", "it_pgxb.*"};
  spec.server_id = 5503;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("RENAME TABLE it_pgxa.t TO it_pgxb.t; INSERT INTO it_pgxb.t VALUES (2, 2);"
                       "RENAME TABLE it_pgxa.s TO it_pgxb.u; INSERT INTO it_pgxb.u VALUES (2, 20);"
                       "UPDATE it_pgxb.s SET w = 'still' WHERE id = 7;"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectPgEqualsSource({"it_pgxb.*"}, pgdb);  // it_pgxa has no table left
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// A column's type changed while a run streams (probe14 F1, F2): PostgreSQL fixes a prepared
// statement's parameter types when it is prepared, and the run kept its statements. After
// MODIFY n BIGINT (followed in place), 3000000000 stopped the run ("out of range for type
// integer"); after MODIFY n VARCHAR (the table copied again), '0042' was stored as '42',
// silently. The statements are prepared again after every change of a table.
TEST(Postgres, StatementsPreparedBeforeATypeChangeAreNotUsedAfterIt) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_retype");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgrt; CREATE DATABASE it_pgrt;"
                       "CREATE TABLE it_pgrt.w (id INT PRIMARY KEY, n INT); INSERT INTO it_pgrt.w VALUES (1, 1);"
                       "CREATE TABLE it_pgrt.s (id INT PRIMARY KEY, n INT); INSERT INTO it_pgrt.s VALUES (1, 1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgrt.*"};
  spec.server_id = 5507;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  ASSERT_EQ(RunSluice({"run", "--config", config, "--until-caught-up"}).exit_code, 0);
  // In one run: the upserts are prepared (n an integer), the column widens, a wider value.
  ASSERT_EQ(RunSqlText("INSERT INTO it_pgrt.w VALUES (2, 2); INSERT INTO it_pgrt.s VALUES (2, 2);"
                       "ALTER TABLE it_pgrt.w MODIFY n BIGINT; INSERT INTO it_pgrt.w VALUES (3, 3000000000);"),
            0);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectPgEqualsSource({"it_pgrt.w"}, pgdb);
  // While a run streams: the type changes to text (the table is copied again), then a value
  // that an integer parameter would read as 42.
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  ASSERT_TRUE(WaitForLog(dir.File("log"), "streaming from", pid, seconds(60))) << ReadFile(dir.File("log"));
  ASSERT_EQ(RunSqlText("UPDATE it_pgrt.s SET n = 3 WHERE id = 1; ALTER TABLE it_pgrt.s MODIFY n VARCHAR(20);"), 0);
  const bool copied = WaitForLog(dir.File("log"), "it_pgrt.s copied", pid, seconds(60));
  // One row each (the upsert of one row is the statement prepared before the change).
  ASSERT_EQ(RunSqlText("UPDATE it_pgrt.s SET n = '0042' WHERE id = 1"), 0);
  const bool text = WaitForPgValue(pgdb, "SELECT n FROM it_pgrt.s WHERE id = 1", "0042", seconds(30));
  ASSERT_EQ(RunSqlText("INSERT INTO it_pgrt.s VALUES (3, '1e3')"), 0);
  const bool matched = WaitForPgToMatch({"it_pgrt.*"}, pgdb, seconds(30));
  EXPECT_TRUE(text) << "'0042' stored as it is";
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid), 0) << ReadFile(dir.File("log"));
  EXPECT_TRUE(copied) << ReadFile(dir.File("log"));
  EXPECT_TRUE(matched) << ReadFile(dir.File("log"));
  ExpectPgEqualsSource({"it_pgrt.*"}, pgdb);
}

// A source database named `_sluice` lands on sluice's own schema: its table `checkpoint` was
// merged with the checkpoint (exit 0, the replica holding the checkpoint's JSON). Refused,
// naming the table; the checkpoint stays sluice's.
TEST(Postgres, SourceTablesNeverGoToTheBookkeepingSchema) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_reserved");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS _sluice; CREATE DATABASE _sluice;"
                       "CREATE TABLE _sluice.checkpoint (id INT PRIMARY KEY, state TEXT);"
                       "INSERT INTO _sluice.checkpoint VALUES (1, 'app data');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"_sluice.*"};
  spec.server_id = 5504;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(RunSqlText("DROP DATABASE _sluice"), 0);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("table _sluice.checkpoint would go to _sluice.checkpoint, among sluice's own tables"),
            std::string::npos)
      << r.output;
}

TEST(Postgres, EveryTypeThroughSnapshotAndBinlogComparesEqual) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_types");
  ASSERT_EQ(RunSqlText(kCreate), 0);
  ASSERT_EQ(RunSqlText(kRows), 0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_types.t"};
  spec.server_id = 5502;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "snapshot of every type into PostgreSQL:\n" << r.output;
  ExpectPgEqualsSource({"it_types.t"}, pgdb);
  ASSERT_EQ(RunSqlText(kTypesBinlogCopies), 0);
  ASSERT_EQ(RunSqlText(kTypesUpdates), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "every type through the binlog into PostgreSQL:\n" << r.output;
  ExpectPgEqualsSource({"it_types.t"}, pgdb);
  // A few stored forms (docs/sinks.md "PostgreSQL").
  PGconn* c = PgServer::Get().Connect(pgdb);
  PGresult* res = PQexec(c, "SELECT biu::text, dt::text, tm::text, s::text, b13::text FROM it_types.t WHERE id = 4");
  ASSERT_EQ(PQntuples(res), 1) << PQresultErrorMessage(res);
  EXPECT_STREQ(PQgetvalue(res, 0, 0), "9223372036854775808");
  EXPECT_STREQ(PQgetvalue(res, 0, 1), "-infinity") << "the zero DATE";
  EXPECT_STREQ(PQgetvalue(res, 0, 2), "00:00:00");
  EXPECT_STREQ(PQgetvalue(res, 0, 3), "{}") << "the empty SET";
  EXPECT_STREQ(PQgetvalue(res, 0, 4), "1010101010101");
  PQclear(res);
  PQfinish(c);
}

// Each source transaction moves an amount between two rows; a reader polling PostgreSQL must
// always see the same sum (never half of a transaction, never half of a group).
TEST(Postgres, ReaderNeverSeesPartOfASourceTransaction) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_atomic");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pg_atomic; CREATE DATABASE it_pg_atomic;"
                       "CREATE TABLE it_pg_atomic.acct (id INT PRIMARY KEY, bal BIGINT NOT NULL);"
                       "INSERT INTO it_pg_atomic.acct VALUES (1, 1000000), (2, 1000000);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pg_atomic.*"};
  spec.server_id = 5503;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string log = dir.File("sluice.log");
  pid_t pid = StartSluice({"run", "--config", config}, log);
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0}, bad{0};
  std::string bad_sum;
  std::thread reader([&] {
    PGconn* c = PgServer::Get().Connect(pgdb);
    while (!stop) {
      PGresult* res = PQexec(c, "SELECT sum(bal)::text, count(*) FROM it_pg_atomic.acct");
      if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        ++polls;
        if (std::string(PQgetvalue(res, 0, 0)) != "2000000" || std::string(PQgetvalue(res, 0, 1)) != "2") {
          if (bad++ == 0) bad_sum = PQgetvalue(res, 0, 0);
        }
      }
      PQclear(res);
    }
    PQfinish(c);
  });
  // 300 transfers, each one source transaction of two updates, in batches so that the
  // streamer groups several into one PostgreSQL transaction.
  std::string sql;
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    const int amount = static_cast<int>(rng() % 1000);
    sql += fmt::format("START TRANSACTION; UPDATE it_pg_atomic.acct SET bal = bal - {0} WHERE id = 1;"
                       "UPDATE it_pg_atomic.acct SET bal = bal + {0} WHERE id = 2; COMMIT;", amount);
    if (i % 50 == 49) {
      ASSERT_EQ(RunSqlText(sql), 0);
      sql.clear();
    }
  }
  EXPECT_TRUE(WaitForPgToMatch({"it_pg_atomic.*"}, pgdb, seconds(60))) << ReadFile(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, seconds(30)), 0) << ReadFile(log);
  stop = true;
  reader.join();
  EXPECT_GT(polls.load(), 20) << "the reader hardly polled";
  EXPECT_EQ(bad.load(), 0) << "a reader saw sum " << bad_sum << " instead of 2000000";
  ExpectPgEqualsSource({"it_pg_atomic.*"}, pgdb);
}

// A 100,000-row source transaction killed while PostgreSQL applies it, then a PostgreSQL restart
// while the stream runs: the destination equals the source and no transaction is applied twice
// (table k has no key, so a repeated insert would leave a duplicate row that compare reports).
TEST(Postgres, SigkillMidLargeTransactionAndRestartMidStreamLoseAndRepeatNothing) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_crash");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pg_crash; CREATE DATABASE it_pg_crash;"
                       "CREATE TABLE it_pg_crash.big (id INT PRIMARY KEY, v VARCHAR(40));"
                       "CREATE TABLE it_pg_crash.k (n INT, v VARCHAR(20));"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pg_crash.*"};
  spec.server_id = 5504;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int rows = SluiceSanitized() ? 40000 : 100000;
  ASSERT_EQ(RunSqlText(fmt::format("INSERT INTO it_pg_crash.k VALUES (1, 'before');"
                                   "INSERT INTO it_pg_crash.big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{};"
                                   "INSERT INTO it_pg_crash.k VALUES (2, 'after');",
                                   rows),
                       "it_pg_crash"),
            0);

  // Kill while the big transaction is being written, half-way through it: a trigger on the
  // destination table stops the insert of row rows / 2 on an advisory lock this test holds, so
  // sluice's PostgreSQL transaction stays open with rows / 2 - 1 rows written until the kill
  // (watching for the INSERT instead had a window that polls missed under load).
  const std::string hold_err = PgServer::Get().Exec(
      pgdb, fmt::format("CREATE FUNCTION it_pg_crash.hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                        "IF NEW.id = {} THEN PERFORM pg_advisory_xact_lock_shared(5504); END IF; RETURN NEW; END $$;"
                        "CREATE TRIGGER hold BEFORE INSERT ON it_pg_crash.big FOR EACH ROW "
                        "EXECUTE FUNCTION it_pg_crash.hold()",
                        rows / 2));
  ASSERT_EQ(hold_err, "");
  PGconn* holder = PgServer::Get().Connect(pgdb);
  PGresult* held = PQexec(holder, "SELECT pg_advisory_lock(5504)");
  ASSERT_EQ(PQresultStatus(held), PGRES_TUPLES_OK) << PQerrorMessage(holder);
  PQclear(held);
  const std::string log = dir.File("sluice.log");
  pid_t pid = StartSluice({"run", "--config", config}, log);
  bool seen = false;
  PGconn* watch = PgServer::Get().Connect(pgdb);
  for (auto deadline = std::chrono::steady_clock::now() + seconds(120); !seen && std::chrono::steady_clock::now() < deadline;) {
    PGresult* res = PQexec(watch, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice' "
                                  "AND wait_event_type = 'Lock' AND wait_event = 'advisory'");
    seen = PQntuples(res) == 1 && std::string(PQgetvalue(res, 0, 0)) != "0";
    PQclear(res);
    if (!seen) std::this_thread::sleep_for(milliseconds(20));
  }
  PQfinish(watch);
  kill(pid, SIGKILL);
  EXPECT_EQ(WaitChild(pid, seconds(30)), -SIGKILL) << ReadFile(log);
  // The killed run's backend finishes its statement once the lock is free, then finds its
  // client gone and rolls back.
  PQfinish(holder);
  ASSERT_TRUE(seen) << "sluice never got half-way through the large transaction\n" << ReadFile(log);

  // Streaming again; PostgreSQL restarted in the middle of a run of small transactions.
  pid = StartSluice({"run", "--config", config}, log);
  std::string load;
  for (int i = 0; i < 200; ++i) load += fmt::format("INSERT INTO it_pg_crash.k VALUES ({}, 'txn');", 100 + i);
  ASSERT_EQ(RunSqlText(load), 0);
  // Restart once the run applies the small transactions (its start-up under ASan on a loaded
  // machine can take seconds; a restart during it tests the start, not the stream).
  bool applying = false;
  for (auto deadline = std::chrono::steady_clock::now() + seconds(60);
       !applying && std::chrono::steady_clock::now() < deadline;) {
    PGconn* c = PgServer::Get().Connect(pgdb);
    PGresult* res = PQexec(c, "SELECT count(*) FROM it_pg_crash.k");
    applying = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && std::stoi(PQgetvalue(res, 0, 0)) > 2;
    PQclear(res);
    PQfinish(c);
    if (!applying) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(applying) << "the run never applied the small transactions\n" << ReadFile(log);
  ASSERT_TRUE(PgServer::Get().Restart()) << "could not restart PostgreSQL";
  ASSERT_EQ(RunSqlText(load + "UPDATE it_pg_crash.big SET v = 'changed' WHERE id % 1000 = 0;"), 0);
  // 2 + 400 rows in k, and the last transaction's update: then compare once.
  EXPECT_TRUE(WaitForPgValue(pgdb, "SELECT (SELECT count(*) FROM it_pg_crash.k) || '/' || "
                             "(SELECT count(*) FROM it_pg_crash.big WHERE v = 'changed')",
                             fmt::format("402/{}", rows / 1000), seconds(90)))
      << ReadFile(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, seconds(60)), 0) << ReadFile(log);
  ExpectPgEqualsSource({"it_pg_crash.*"}, pgdb);
  EXPECT_NE(ReadFile(log).find("retrying the same transaction"), std::string::npos)
      << "the restart never reached the running sluice\n" << ReadFile(log);
}

// The snapshot sends the fetches ready together as one destination transaction and one COPY
// stream (an INSERT when the group is small), committed with the checkpoint. SIGKILL while
// such a transaction is open, after some commits, then a resume: the destination equals the source and no row is there twice (table kl has no
// key: a row copied twice would be an extra row that compare reports; its interrupted pass
// starts over).
TEST(Postgres, SigkillMidSnapshotCopyResumesExactly) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_merge");
  const int rows = SluiceSanitized() ? 50000 : 150000;
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pg_merge; CREATE DATABASE it_pg_merge;"
                       "CREATE TABLE it_pg_merge.big (id INT PRIMARY KEY, v VARCHAR(40));"
                       "CREATE TABLE it_pg_merge.kl (n INT, v VARCHAR(40));"),
            0);
  ASSERT_EQ(RunSqlText(fmt::format("INSERT INTO it_pg_merge.big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{};"
                                   "INSERT INTO it_pg_merge.kl SELECT seq % 100, 'same' FROM seq_1_to_{};",
                                   rows, rows / 4),
                       "it_pg_merge"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pg_merge.*"};
  spec.server_id = 5505;
  spec.chunk_rows = rows / 4;
  spec.snapshot_extra = "workers = 2\nfetch_rows = 500\n";
  const std::string config = WritePgConfig(dir, spec, pgdb);
  // Kill once some rows are committed and a later destination transaction waits: the tables
  // exist in PostgreSQL as sluice would create them (they are used as they are; a table created
  // in the waiting transaction would be invisible here), and big's last key is inserted by a
  // transaction left open, so the statement that carries that key (a COPY, or an INSERT when
  // its group is small) waits on it until the kill. Polling for a running COPY alone had a
  // window that polls missed under load.
  ASSERT_EQ(PgServer::Get().Exec(pgdb, "CREATE SCHEMA it_pg_merge; "
                                       "CREATE TABLE it_pg_merge.big (id integer PRIMARY KEY, v text); "
                                       "CREATE TABLE it_pg_merge.kl (n integer, v text)"),
            "");
  PGconn* holder = PgServer::Get().Connect(pgdb);
  PGresult* held = PQexec(holder, fmt::format("BEGIN; INSERT INTO it_pg_merge.big VALUES ({}, 'held')", rows).c_str());
  ASSERT_EQ(PQresultStatus(held), PGRES_COMMAND_OK) << PQerrorMessage(holder);
  PQclear(held);
  const std::string log = dir.File("sluice.log");
  pid_t pid = StartSluice({"run", "--config", config}, log);
  int committed = 0;
  bool copying = false;
  PGconn* watch = PgServer::Get().Connect(pgdb);
  for (auto deadline = std::chrono::steady_clock::now() + seconds(120);
       !(committed > 0 && copying) && std::chrono::steady_clock::now() < deadline;) {
    PGresult* res = PQexec(watch, "SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice' "
                                  "AND wait_event_type = 'Lock' AND (query LIKE 'COPY \"it_pg_merge\".%' "
                                  "OR query LIKE 'INSERT INTO \"it_pg_merge\".%')), "
                                  "(SELECT count(*) FROM it_pg_merge.big) + (SELECT count(*) FROM it_pg_merge.kl)");
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
      copying = std::string(PQgetvalue(res, 0, 0)) != "0";
      committed = std::stoi(PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    if (!(committed > 0 && copying)) std::this_thread::sleep_for(milliseconds(20));
  }
  std::string activity;
  if (!(committed > 0 && copying)) {
    PGresult* res = PQexec(watch, "SELECT state || ' ' || coalesce(wait_event_type, '-') || ' ' || coalesce(wait_event, '-') "
                                  "|| ' ' || left(query, 120) FROM pg_stat_activity WHERE application_name = 'sluice'");
    for (int i = 0; PQresultStatus(res) == PGRES_TUPLES_OK && i < PQntuples(res); ++i)
      activity += std::string(PQgetvalue(res, i, 0)) + "\n";
    PQclear(res);
  }
  PQfinish(watch);
  kill(pid, SIGKILL);
  EXPECT_EQ(WaitChild(pid, seconds(30)), -SIGKILL) << ReadFile(log);
  PQfinish(holder);  // rolls the held key back
  ASSERT_TRUE(committed > 0 && copying) << "never saw a COPY or INSERT waiting after a commit (waiting: " << copying
                                         << ", rows committed: " << committed << ")\nsluice's sessions:\n"
                                         << activity << ReadFile(log);
  EXPECT_LT(committed, rows + rows / 4) << "the snapshot had finished before the kill";

  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("continuing the snapshot"), std::string::npos)
      << "the second run did not resume the snapshot\n" << r.output;
  ExpectPgEqualsSource({"it_pg_merge.*"}, pgdb);
}

// Tables whose columns are all integers, strings or bytes go through COPY's binary format:
// the edges of every integer width (signed and unsigned, mapped one size up), NULLs, empty
// strings, text with the bytes the text format escapes, ENUM, binary strings and BLOBs.
TEST(Postgres, BinaryCopyKeepsEdgeValues) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_bin");
  ASSERT_EQ(RunSqlText(
                "DROP DATABASE IF EXISTS it_pg_bin; CREATE DATABASE it_pg_bin;"
                "CREATE TABLE it_pg_bin.t (id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT,"
                " siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT,"
                " c CHAR(3), v VARCHAR(20), t TEXT, e ENUM('a','b c'), vb VARBINARY(10), bl BLOB,"
                " cb VARCHAR(5) CHARACTER SET binary);"
                "INSERT INTO it_pg_bin.t VALUES"
                " (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, '', '', '', 'a',"
                " '', '', ''),"
                " (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807,"
                " 'abc', 'tab\\there\\nnl\\\\bs', CONCAT('\\r', REPEAT('x', 3000)), 'b c', 0x00FF0A5C09, 0x000102,"
                " 0x5C4E),"
                " (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
                " NULL),"
                " (4, 0, 1, -1, 2, -3, 4, -5, 6, -7, 'é', '\\\\N', 'üñí', NULL, 0x5C4E, NULL, '')"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pg_bin.*"};
  spec.server_id = 5506;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectPgEqualsSource({"it_pg_bin.*"}, pgdb);
  // The rows went through the binary format (compare alone would pass with the text one).
  PGconn* c = PgServer::Get().Connect(pgdb);
  PGresult* res = PQexec(c, "SELECT v, length(t), encode(vb, 'hex') FROM it_pg_bin.t WHERE id = 2");
  ASSERT_EQ(PQresultStatus(res), PGRES_TUPLES_OK) << PQresultErrorMessage(res);
  EXPECT_EQ(std::string(PQgetvalue(res, 0, 0)), "tab\there\nnl\\bs");
  EXPECT_EQ(std::string(PQgetvalue(res, 0, 1)), "3001");
  EXPECT_EQ(std::string(PQgetvalue(res, 0, 2)), "00ff0a5c09");
  PQclear(res);
  PQfinish(c);
}

// PostgreSQL restarted while the snapshot streams a COPY: the restart rolls the open
// transaction back, the coordinator applies the same group again, and the copy ends equal to
// the source (the keyless table would show a fetch applied twice, or lost, as extra or
// missing rows). The COPY is held open on purpose: the test inserts the last key in a
// transaction it keeps open, so the COPY reaching that key waits on it. Waiting for a COPY by
// polling alone raced: the snapshot's transactions are short and all of them can end between
// two polls (CI, under ASan).
TEST(Postgres, RestartDuringSnapshotCopyIsWaitedOut) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_snaprestart");
  const int rows = SluiceSanitized() ? 30000 : 40000;
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pg_snaprestart; CREATE DATABASE it_pg_snaprestart;"
                       "CREATE TABLE it_pg_snaprestart.t (id INT PRIMARY KEY, v VARCHAR(40));"
                       "CREATE TABLE it_pg_snaprestart.nokey (id INT, v VARCHAR(40));"),
            0);
  ASSERT_EQ(RunSqlText(fmt::format("INSERT INTO it_pg_snaprestart.t SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{};"
                                   "INSERT INTO it_pg_snaprestart.nokey SELECT seq, 'x' FROM seq_1_to_3000;",
                                   rows),
                       "it_pg_snaprestart"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pg_snaprestart.*"};
  spec.server_id = 5507;
  spec.chunk_rows = rows / 2;
  spec.snapshot_extra = "workers = 2\nfetch_rows = 100\n";
  const std::string config = WritePgConfig(dir, spec, pgdb);
  const std::string log = dir.File("sluice.log");
  // The table as sluice creates it (an existing table of the same shape is used as it is),
  // and the last key inserted by a transaction left open.
  PGconn* blocker = PgServer::Get().Connect(pgdb);
  for (const char* sql : {"CREATE SCHEMA \"it_pg_snaprestart\"",
                          "CREATE TABLE \"it_pg_snaprestart\".\"t\" (id integer PRIMARY KEY, v text)", "BEGIN"}) {
    PGresult* res = PQexec(blocker, sql);
    ASSERT_EQ(PQresultStatus(res), PGRES_COMMAND_OK) << sql << ": " << PQresultErrorMessage(res);
    PQclear(res);
  }
  {
    const std::string insert = fmt::format("INSERT INTO \"it_pg_snaprestart\".\"t\" VALUES ({}, 'held')", rows);
    PGresult* res = PQexec(blocker, insert.c_str());
    ASSERT_EQ(PQresultStatus(res), PGRES_COMMAND_OK) << insert << ": " << PQresultErrorMessage(res);
    PQclear(res);
  }
  pid_t pid = StartSluice({"run", "--config", config}, log);
  // Restart once the COPY waits on the open insert: fetches are in its open transaction.
  EXPECT_TRUE(WaitForPgValue(pgdb,
                             "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'sluice' "
                             "AND state = 'active' AND wait_event_type = 'Lock' "
                             "AND query LIKE 'COPY \"it_pg_snaprestart\".%'",
                             "t", seconds(60)))
      << ReadFile(log);
  ASSERT_TRUE(PgServer::Get().Restart()) << "could not restart PostgreSQL";
  PQfinish(blocker);  // its transaction ended with the restart
  const bool equal = WaitForPgToMatch({"it_pg_snaprestart.*"}, pgdb, seconds(90));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, seconds(60)), 0) << ReadFile(log);
  EXPECT_TRUE(equal) << ReadFile(log);
  ExpectPgEqualsSource({"it_pg_snaprestart.*"}, pgdb);
  EXPECT_NE(ReadFile(log).find("retrying the same chunk"), std::string::npos)
      << "the restart happened while the snapshot applied chunks, and was waited out\n" << ReadFile(log);
}

// `sluice check` judges a PostgreSQL sink by connecting to it (an unreachable one fails the
// sink line with the connection error), and reads the checkpoint from the destination: the
// state of tables read without the binlog, and the resume position of cdc tables.
// Two source databases mapped onto one PostgreSQL schema that both hold a table t: `run`
// refuses the configuration (exit code 2) naming both source tables, the shared destination
// table and the key, and `check` fails in the same words (it said READY WITH WARNINGS and the
// run stopped with exit 1 on "its definition changed ... re-snapshot the table": new-user
// test). With no table name in common the mapping is fine.
TEST(Postgres, TwoDatabasesMappedOntoOneSchemaWithOneTableNameAreRefused) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_onto");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgm1; DROP DATABASE IF EXISTS it_pgm2;"
                       "CREATE DATABASE it_pgm1; CREATE DATABASE it_pgm2;"
                       "CREATE TABLE it_pgm1.t (id INT PRIMARY KEY, v INT); INSERT INTO it_pgm1.t VALUES (1, 1);"
                       "CREATE TABLE it_pgm2.t (id INT PRIMARY KEY, v INT); INSERT INTO it_pgm2.t VALUES (2, 2);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgm1.*", "it_pgm2.*"};
  spec.server_id = 5503;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  std::ofstream(config, std::ios::app) << "schemas = { it_pgm1 = \"m\", it_pgm2 = \"m\" }\n";
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* word : {"`it_pgm1`.`t`", "`it_pgm2`.`t`", "m.t", "sink.postgres.schemas"})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_EQ(r.output.find("definition changed"), std::string::npos) << r.output;
  r = RunSluice({"check", "--config", config});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = CheckLine(r.output, "sink table names");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  for (const char* word : {"`it_pgm1`.`t`", "`it_pgm2`.`t`", "m.t", "sink.postgres.schemas"})
    EXPECT_NE(line.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_NE(r.output.find("NOT READY"), std::string::npos) << r.output;

  ASSERT_EQ(RunSqlText("RENAME TABLE it_pgm2.t TO it_pgm2.u"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(WaitForPgValue(pgdb, "SELECT count(*) FROM m.t", "1", seconds(5)));
  EXPECT_TRUE(WaitForPgValue(pgdb, "SELECT count(*) FROM m.u", "1", seconds(5)));
}

// PostgreSQL keeps only the first 63 bytes of a name (probe7 F2): two source tables whose
// 64-character names share the first 63 became ONE PostgreSQL table (`check` passed, the run
// merged their rows, a delete in one deleted the other's row), and a 64-character column
// stopped the run with "existing postgres column ... does not match". Now such a name is
// refused at start (`run` exit 2, a `check` FAIL line) naming it, its length and the limit,
// with nothing created; one that comes while streaming (a table created or renamed to it, a
// column added with it) stops the run (exit 1) before it is applied.
TEST(Postgres, NamesLongerThan63BytesAreRefusedNotTruncated) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_long");
  const std::string n63(63, 't');
  ASSERT_EQ(RunSqlText(fmt::format("DROP DATABASE IF EXISTS it_pgl; CREATE DATABASE it_pgl;"
                                   "CREATE TABLE it_pgl.{0}1 (id INT PRIMARY KEY, v VARCHAR(10));"
                                   "CREATE TABLE it_pgl.{0}2 (id INT PRIMARY KEY, v VARCHAR(10));"
                                   "INSERT INTO it_pgl.{0}1 VALUES (1, 'from1'), (2, 'from1');"
                                   "INSERT INTO it_pgl.{0}2 VALUES (1, 'from2'), (3, 'from2');",
                                   n63)),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgl.*"};
  spec.server_id = 5505;
  std::string config = WritePgConfig(dir, spec, pgdb);
  const std::string none = "SELECT count(*) FROM pg_tables WHERE schemaname = 'it_pgl'";
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& word : {"`it_pgl`.`" + n63 + "1`", std::string("64 bytes"), std::string("63 bytes"),
                                 std::string("source.exclude")})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_TRUE(WaitForPgValue(pgdb, none, "0", seconds(1)));
  r = RunSluice({"check", "--config", config});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::string line = CheckLine(r.output, "sink name lengths");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  EXPECT_NE(line.find("`it_pgl`.`" + n63 + "1`"), std::string::npos) << r.output;

  // A column name of 64 bytes (32 two-byte characters): refused the same way at start.
  const std::string e32 = [] { std::string s; for (int i = 0; i < 32; ++i) s += "\xc3\xa9"; return s; }();
  ASSERT_EQ(RunSqlText(fmt::format("DROP DATABASE IF EXISTS it_pgl; CREATE DATABASE it_pgl;"
                                   "CREATE TABLE it_pgl.t (id INT PRIMARY KEY, `{0}` INT);"
                                   "INSERT INTO it_pgl.t VALUES (1, 1);",
                                   e32)),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& word :
       {"column " + e32, std::string("`it_pgl`.`t`"), std::string("64 bytes"), std::string("63 bytes")})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_TRUE(WaitForPgValue(pgdb, none, "0", seconds(1)));
  r = RunSluice({"check", "--config", config});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  line = CheckLine(r.output, "sink name lengths");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  EXPECT_NE(line.find("column " + e32), std::string::npos) << r.output;

  // While streaming: the long names come and go before the next run starts (the start sees
  // none), so the stream meets them and stops before applying them.
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgl; CREATE DATABASE it_pgl;"
                       "CREATE TABLE it_pgl.t (id INT PRIMARY KEY, v INT); INSERT INTO it_pgl.t VALUES (1, 1);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const struct {
    std::string ddl, word, tables;
  } cases[] = {
      {fmt::format("CREATE TABLE it_pgl.{0}1 (id INT PRIMARY KEY); INSERT INTO it_pgl.{0}1 VALUES (5);"
                   "DROP TABLE it_pgl.{0}1;",
                   n63),
       "`it_pgl`.`" + n63 + "1`", "t"},
      {fmt::format("CREATE TABLE it_pgl.u (id INT PRIMARY KEY); RENAME TABLE it_pgl.u TO it_pgl.{0}2;"
                   "DROP TABLE it_pgl.{0}2;",
                   n63),
       "`it_pgl`.`" + n63 + "2`", "t,u"},
      {fmt::format("ALTER TABLE it_pgl.t ADD COLUMN c{0} INT; INSERT INTO it_pgl.t VALUES (2, 2, 2);"
                   "ALTER TABLE it_pgl.t DROP COLUMN c{0};",
                   n63),
       "column c" + n63, "t"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.word);
    ASSERT_EQ(RunSqlText(c.ddl), 0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    for (const std::string& word : {c.word, std::string("64 bytes"), std::string("63 bytes")})
      EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
    EXPECT_TRUE(WaitForPgValue(pgdb, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables "
                               "WHERE schemaname = 'it_pgl'",
                               c.tables, seconds(1)));
    EXPECT_TRUE(WaitForPgValue(pgdb, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'it_pgl' "
                               "AND table_name = 't'",
                               "2", seconds(1)));
    // Past it: start over from the source's state as it is now.
    ASSERT_EQ(PgServer::Get().Exec(pgdb, "DROP SCHEMA it_pgl CASCADE; DROP SCHEMA _sluice CASCADE"), "");
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
}

// A NUL byte in a text column stops the run (PostgreSQL text cannot hold it); the message
// says the way forward, and it works: fix the source row, `sluice resnapshot` the table, run
// again (the message gave none: new-user test).
TEST(Postgres, NulByteInTextSaysHowToGetPastItAndThatWorks) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_nul");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgnul; CREATE DATABASE it_pgnul;"
                       "CREATE TABLE it_pgnul.t (id INT PRIMARY KEY, t TEXT); INSERT INTO it_pgnul.t VALUES (1, 'a');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgnul.t"};
  spec.server_id = 5504;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("INSERT INTO it_pgnul.t VALUES (2, CONCAT('b', CHAR(0), 'c')), (3, 'd')"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << "a value the destination cannot hold is a run-time stop, not bad configuration (it "
                               "exited 2):\n"
                            << r.output;
  EXPECT_NE(r.output.find("NUL byte"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sluice resnapshot --config FILE it_pgnul.t`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bytea"), std::string::npos) << r.output;

  ASSERT_EQ(RunSqlText("UPDATE it_pgnul.t SET t = REPLACE(t, CHAR(0), '') WHERE id = 2"), 0);
  r = RunSluice({"resnapshot", "--config", config, "it_pgnul.t"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectPgEqualsSource({"it_pgnul.t"}, pgdb);
}

// A date with a zero month or day (allowed by a lax sql_mode) stops the run: PostgreSQL's date
// cannot hold it. The message says the way forward, as for a NUL byte, and it works (it gave
// none: a new user's probe).
TEST(Postgres, ZeroInDateSaysHowToGetPastItAndThatWorks) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_zd");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgzd; CREATE DATABASE it_pgzd;"
                       "CREATE TABLE it_pgzd.t (id INT PRIMARY KEY, d DATE, ts DATETIME(6));"
                       "INSERT INTO it_pgzd.t VALUES (1, '2020-01-02', '2020-01-02 03:04:05');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgzd.t"};
  spec.server_id = 5505;
  const std::string config = WritePgConfig(dir, spec, pgdb);
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("SET SESSION sql_mode = '';"
                       "INSERT INTO it_pgzd.t VALUES (2, '2020-00-15', '2020-01-02 00:00:00'), (3, '2021-02-03', NULL)"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'2020-00-15' has a zero year, month or day"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sluice resnapshot --config FILE it_pgzd.t`"), std::string::npos) << r.output;

  ASSERT_EQ(RunSqlText("UPDATE it_pgzd.t SET d = NULL WHERE id = 2"), 0);
  r = RunSluice({"resnapshot", "--config", config, "it_pgzd.t"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectPgEqualsSource({"it_pgzd.t"}, pgdb);
}

TEST(Postgres, CheckConnectsToTheSinkAndReadsItsCheckpoint) {
  REQUIRE_PG();
  const std::string pgdb = PgServer::Get().NewDatabase("it_pg_check");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pgchk; CREATE DATABASE it_pgchk; USE it_pgchk;"
                       "CREATE TABLE it_pgchk.copied (id INT PRIMARY KEY, v INT NOT NULL);"
                       "INSERT INTO it_pgchk.copied SELECT seq, seq FROM seq_1_to_20;"
                       "CREATE TABLE it_pgchk.streamed (id INT PRIMARY KEY, v INT NOT NULL);"
                       "INSERT INTO it_pgchk.streamed SELECT seq, seq FROM seq_1_to_20;"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pgchk.copied"};
  spec.server_id = 5502;
  const std::string full = "\n[table.\"it_pgchk.copied\"]\nmode = \"full\"\n";

  // Nothing listens on port 1.
  SluiceConfigSpec refused_spec = spec;
  refused_spec.sink_type = "postgres";
  refused_spec.sink_path = "unused";
  const std::string refused = WriteConfig(dir, refused_spec);
  std::ofstream(refused, std::ios::app) << "\n[sink.postgres]\nconninfo = \"host=127.0.0.1 port=1 dbname=" << pgdb
                                        << "\"\npassword_env = \"SLUICE_TEST_PG_PASSWORD\"\n" << full;
  ProcessResult r = RunSluice({"check", "--config", refused});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::string line = CheckLine(r.output, "sink reachable and writable");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  EXPECT_NE(line.find("port=1"), std::string::npos) << r.output;
  EXPECT_NE(line.find("cannot connect"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NOT READY"), std::string::npos) << r.output;

  // Only a table of mode full: the checkpoint holds its state and no binlog position.
  const std::string config = WritePgConfig(dir, spec, pgdb);
  std::ofstream(config, std::ios::app) << full;
  r = RunSluice({"check", "--config", config});
  line = CheckLine(r.output, "sink reachable and writable");
  EXPECT_EQ(line.rfind("PASS", 0), 0u) << r.output;
  EXPECT_NE(line.find("PostgreSQL destination"), std::string::npos) << r.output;
  EXPECT_NE(line.find("no checkpoint yet"), std::string::npos) << r.output;
  EXPECT_EQ(line.find("JSON lines"), std::string::npos) << r.output;
  r = RunSluice({"run", "--config", config});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"check", "--config", config});
  line = CheckLine(r.output, "sink reachable and writable");
  EXPECT_EQ(line.rfind("PASS", 0), 0u) << r.output;
  EXPECT_NE(line.find("checkpoint without a binlog position, with the state of 1 table(s) read without the binlog"),
            std::string::npos)
      << r.output;

  // With a cdc table: the resume position is the destination's.
  SluiceConfigSpec both = spec;
  both.tables = {"it_pgchk.*"};
  const std::string mixed = WritePgConfig(dir, both, pgdb);
  std::ofstream(mixed, std::ios::app) << full;
  r = RunSluice({"run", "--config", mixed, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"check", "--config", mixed});
  line = CheckLine(r.output, "sink reachable and writable");
  EXPECT_NE(line.find("checkpoint at "), std::string::npos) << r.output;
  line = CheckLine(r.output, "binlog retention: resume position");
  EXPECT_EQ(line.find("no checkpoint yet"), std::string::npos) << r.output;
  EXPECT_NE(line.find("is on the server"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sluice::testing
