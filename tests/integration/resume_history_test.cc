// Resuming on the same server after its binlog history changed under the checkpoint (a new
// user's probe, findings F1-F3), each test on a MariaDB of its own (RESET MASTER and
// gtid_seq_no would disturb the shared test server's other users):
//   - RESET MASTER on the source: the checkpoint's position is gone although a file of the
//     same name exists. Every run must stop with exit code 3 saying so, and `check` must
//     FAIL, before and after the new GTID sequence passes the checkpoint's; never exit 0 with
//     the rows written after the reset missing.
//   - a transaction logged with a lower seq_no (MariaDB's default gtid_strict_mode=OFF,
//     `SET SESSION gtid_seq_no`): the next run resumes where the last one stopped, with every
//     transaction exactly once in a JSON lines file, whether it arrived while sluice streamed
//     or while it was stopped (no false "purged", exit code 3).
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "harness.h"

namespace sluice::testing::resume_history {
namespace {

// A MariaDB started with scripts/mariadb-test-server.sh in its own directory, stopped at
// destruction. The password is exported as SLUICE_IT_OWN_SERVER_PASSWORD for the configs.
struct OwnServer {
  TempDir dir;
  ConnectOptions options;
  bool Start() {
    std::string cmd = TestServerScript() + " start " + dir.path() + " >" + dir.File("start.log") + " 2>&1";
    if (std::system(cmd.c_str()) != 0) return false;
    auto env = ReadTestServerEnv(dir.path());
    if (!env) return false;
    options = *env;
    ::setenv("SLUICE_IT_OWN_SERVER_PASSWORD", options.password.c_str(), 1);
    return true;
  }
  ~OwnServer() {
    std::string cmd = TestServerScript() + " stop " + dir.path() + " >/dev/null 2>&1";
    (void)std::system(cmd.c_str());
  }
  std::unique_ptr<Connection> Connect() const {
    auto c = Connection::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
};

std::string Config(const TempDir& dir, const OwnServer& s, const std::string& sink_type, const std::string& sink_path) {
  std::ostringstream t;
  t << "[source]\nhost = \"127.0.0.1\"\nport = " << s.options.port
    << "\nuser = \"sluice\"\npassword_env = \"SLUICE_IT_OWN_SERVER_PASSWORD\"\nserver_id = 5501\ntls = \"disabled\"\n"
    << "tables = [\"app.t\"]\n\n[sink]\ntype = \"" << sink_type << "\"\npath = \"" << sink_path << "\"\n";
  std::string path = dir.File("sluice.toml");
  std::ofstream(path) << t.str();
  return path;
}

void Exec(Connection& c, const std::string& sql) {
  Status st = c.Execute(sql);
  EXPECT_TRUE(st.ok()) << sql << ": " << st.ToString();
}

// Starts `s` and creates app.t (id INT PRIMARY KEY, n INT) there; a connection to it, or null.
std::unique_ptr<Connection> StartWithTableT(OwnServer& s) {
  if (!s.Start()) return nullptr;
  auto c = s.Connect();
  if (!c) return nullptr;
  Exec(*c, "CREATE DATABASE app");
  Exec(*c, "CREATE TABLE app.t (id INT PRIMARY KEY, n INT)");
  return c;
}

std::string Scalar(Connection& c, const std::string& sql) {
  auto r = c.Query(sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  if (!r.ok() || r->rows.empty() || !r->rows[0][0]) return "";
  return *r->rows[0][0];
}

// The seq_no of the server's last GTID in domain 0.
uint64_t LastSeq(Connection& c) {
  std::string pos = Scalar(c, "SELECT @@global.gtid_binlog_pos");
  return std::stoull(pos.substr(pos.rfind('-') + 1));
}

// The stream records of a JSON lines file by (file, pos, row), and the last value of n seen
// for each id (snapshot rows included).
struct Records {
  std::map<std::string, int> times;
  std::map<int, int64_t> n;
  size_t lines = 0;
};

Records ReadRecords(const std::string& path) {
  Records r;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++r.lines;
    auto j = nlohmann::json::parse(line);
    const auto& s = j["source"];
    if (!s.value("snapshot", false))
      r.times[s["file"].get<std::string>() + ":" + std::to_string(s["pos"].get<uint64_t>()) + "#" +
              std::to_string(s["row"].get<int>())]++;
    if (j["after"].is_object()) r.n[j["after"]["id"].get<int>()] = j["after"]["n"].get<int64_t>();
  }
  return r;
}

std::string Duplicates(const Records& r) {
  std::string out;
  for (const auto& [k, v] : r.times)
    if (v > 1) out += k + " x" + std::to_string(v) + " ";
  return out;
}

// F1: RESET MASTER on the source (same server, same server_id). The checkpoint names
// mariadb-bin.000001 at an offset past the new, short mariadb-bin.000001; later the new file
// grows past that offset and the new GTID sequence past the checkpoint's. Every run stops
// with exit code 3 naming the reset, and `check` fails the resume position line.
TEST(ResumeHistory, ResetMasterStopsEveryRunWithExit3AndCheckFails) {
  OwnServer s;
  ASSERT_TRUE(s.Start()) << ReadFile(s.dir.File("start.log"));
  auto c = s.Connect();
  ASSERT_TRUE(c);
  Exec(*c, "CREATE DATABASE app");
  Exec(*c, "CREATE TABLE app.t (id INT PRIMARY KEY AUTO_INCREMENT, n INT)");
  Exec(*c, "CREATE TABLE app.other (id INT PRIMARY KEY, x INT)");
  Exec(*c, "INSERT INTO app.other VALUES (1, 0)");
  for (int i = 0; i < 300; ++i) Exec(*c, "INSERT INTO app.t (n) VALUES (" + std::to_string(i) + ")");
  TempDir dir;
  const std::string replica = dir.File("replica.db");
  const std::string config = Config(dir, s, "sqlite", replica);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  Exec(*c, "RESET MASTER");
  Exec(*c, "INSERT INTO app.t (n) VALUES (-1), (-2)");
  auto checked = RunSluice({"check", "--config", config});
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  std::string line = CheckLine(checked.output, "binlog retention: resume position");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << checked.output;
  EXPECT_NE(line.find("RESET MASTER"), std::string::npos) << line;
  EXPECT_NE(line.find("mariadb-bin.000001:"), std::string::npos) << line;

  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("RESET MASTER"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("take a new snapshot into a new destination"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("is past the end of mariadb-bin.000001 on the server"), std::string::npos)
      << second.output;

  // The new history passes the checkpoint's GTID sequence and its offset.
  for (int i = 0; i < 400; ++i) Exec(*c, "UPDATE app.other SET x = x + 1");
  Exec(*c, "INSERT INTO app.t (n) VALUES (-3)");
  ASSERT_GT(LastSeq(*c), 310u);
  auto third = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(third.exit_code, 3) << third.output;
  EXPECT_NE(third.output.find("RESET MASTER"), std::string::npos) << third.output;
  EXPECT_NE(third.output.find("that file holds another history"), std::string::npos) << third.output;
  checked = RunSluice({"check", "--config", config});
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  line = CheckLine(checked.output, "binlog retention: resume position");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << checked.output;
  EXPECT_NE(line.find("RESET MASTER"), std::string::npos) << line;

  // F8: RESET MASTER while a run streams (into a new destination). The server drops the dump
  // once writes follow; the run stops with exit code 3 naming the last committed checkpoint's
  // position (not where the run started) and the reset.
  TempDir live;
  const std::string out = live.File("out.jsonl");
  const std::string live_config = Config(live, s, "jsonl", out);
  pid_t running = StartSluice({"run", "--config", live_config}, live.File("run.log"));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (int i = 0; i < 3; ++i) Exec(*c, "INSERT INTO app.t (n) VALUES (1000)");
  // The binlog's end after the inserts: the checkpoint is there once the state file records
  // them (the lines reach the file before the state file that confirms them).
  auto master = c->Query("SHOW MASTER STATUS");
  ASSERT_TRUE(master.ok() && !master->rows.empty() && master->rows[0][0] && master->rows[0][1]);
  const std::string end = *master->rows[0][0] + ":" + *master->rows[0][1];
  std::string at;
  for (int i = 0; i < 200 && at != end; ++i) {
    std::string state = ReadFile(out + ".checkpoint");
    if (ReadRecords(out).n.size() >= 306 && !state.empty()) {
      auto cp = nlohmann::json::parse(nlohmann::json::parse(state)["checkpoint"].get<std::string>());
      at = cp["stream_start"]["file"].get<std::string>() + ":" + std::to_string(cp["stream_start"]["pos"].get<uint64_t>());
    }
    if (at != end) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(at, end) << ReadFile(live.File("run.log"));
  Exec(*c, "RESET MASTER");
  int exit_code = 0;
  for (int i = 0; i < 60; ++i) {
    Exec(*c, "INSERT INTO app.t (n) VALUES (2000)");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    int status = 0;
    if (waitpid(running, &status, WNOHANG) == running) {
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      running = 0;
      break;
    }
  }
  if (running != 0) {
    kill(running, SIGTERM);
    exit_code = WaitChild(running);
  }
  const std::string log = ReadFile(live.File("run.log"));
  EXPECT_EQ(exit_code, 3) << log;
  EXPECT_NE(log.find("the checkpoint's position " + at), std::string::npos) << at << "\n" << log;
  EXPECT_NE(log.find("RESET MASTER"), std::string::npos) << log;
}

// Rows of app.t in a SQLite replica as "id:n" in id order.
std::string ReplicaRows(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT id, n FROM \"app.t\" ORDER BY id", -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW)
        out += std::to_string(sqlite3_column_int64(st, 0)) + ":" + std::to_string(sqlite3_column_int64(st, 1)) + " ";
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// Rewrites the stored checkpoint's witness with `edit` (the checkpoint row, split form kept).
void EditWitness(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT state FROM _sluice_checkpoint", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  auto cp = nlohmann::ordered_json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  ASSERT_TRUE(cp.contains("witness")) << cp.dump();
  nlohmann::json w = cp["witness"];
  edit(w);
  cp["witness"] = w;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE _sluice_checkpoint SET state = ?", -1, &st, nullptr), SQLITE_OK);
  const std::string text = cp.dump();
  sqlite3_bind_text(st, 1, text.c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// probe16 F4: RESET MASTER, and the new history lines up with the checkpoint: the same file
// name, the checkpoint's offset an event boundary in it, the same GTID there. The file,
// length and BINLOG_GTID_POS checks all pass; the run skipped the first insert after the
// reset and exited 0. The checkpoint now records when its file was created and the event it
// ends with (checkpoint.h PositionWitness), and the run refuses with exit code 3.
TEST(ResumeHistory, AResetWhoseNewHistoryLinesUpWithTheCheckpointIsRefused) {
  OwnServer s;
  auto c = StartWithTableT(s);
  ASSERT_TRUE(c) << ReadFile(s.dir.File("start.log"));
  TempDir dir;
  const std::string replica = dir.File("replica.db");
  const std::string config = Config(dir, s, "sqlite", replica);

  // At the snapshot's point: only the file's creation time tells the histories apart.
  Exec(*c, "RESET MASTER");
  Exec(*c, "INSERT INTO app.t VALUES (2, 20)");
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the creation time is in seconds
  Exec(*c, "RESET MASTER");
  Exec(*c, "INSERT INTO app.t VALUES (3, 30)");
  Exec(*c, "INSERT INTO app.t VALUES (4, 40)");
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("RESET MASTER"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("was created at"), std::string::npos) << second.output;
  EXPECT_EQ(ReplicaRows(replica), "2:20 ");

  // Streamed: the checkpoint ends with an event, checked byte for byte (and dropped: a run that
  // resumes there applies each transaction once).
  TempDir dir2;
  const std::string replica2 = dir2.File("replica.db");
  const std::string config2 = Config(dir2, s, "sqlite", replica2);
  first = RunSluice({"run", "--config", config2, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  Exec(*c, "INSERT INTO app.t VALUES (5, 50)");
  auto streamed = RunSluice({"run", "--config", config2, "--until-caught-up"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
  Exec(*c, "UPDATE app.t SET n = n + 1");
  streamed = RunSluice({"run", "--config", config2, "--until-caught-up"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
  EXPECT_EQ(ReplicaRows(replica2), "2:21 3:31 4:41 5:51 ");
  auto cp = nlohmann::json::parse(ReadSqliteCheckpoint(replica2));
  ASSERT_TRUE(cp.contains("witness")) << cp.dump();
  EXPECT_EQ(cp["witness"]["file"], cp["stream_start"]["file"]);
  EXPECT_EQ(cp["witness"]["event_pos"].get<uint64_t>() + cp["witness"]["event_size"].get<uint64_t>(),
            cp["stream_start"]["pos"].get<uint64_t>());
  EXPECT_GT(cp["witness"]["created"].get<uint64_t>(), 0u);
  // The same offsets and sizes with other bytes there: what a reset within the file's second
  // of creation, or a restored backup written again, would leave.
  EditWitness(replica2, [](nlohmann::json& w) { w["event_hash"] = w["event_hash"].get<uint64_t>() ^ 1u; });
  Exec(*c, "UPDATE app.t SET n = n + 1 WHERE id = 5");
  auto tampered = RunSluice({"run", "--config", config2, "--until-caught-up"});
  EXPECT_EQ(tampered.exit_code, 3) << tampered.output;
  EXPECT_NE(tampered.output.find("has other contents there"), std::string::npos) << tampered.output;
  EXPECT_EQ(ReplicaRows(replica2), "2:21 3:31 4:41 5:51 ");
  EditWitness(replica2, [](nlohmann::json& w) { w["event_hash"] = w["event_hash"].get<uint64_t>() ^ 1u; });
  streamed = RunSluice({"run", "--config", config2, "--until-caught-up"});
  EXPECT_EQ(streamed.exit_code, 0) << streamed.output;
  EXPECT_EQ(ReplicaRows(replica2), "2:21 3:31 4:41 5:52 ");
}

// MariaDB answers BINLOG_GTID_POS with NULL past an event larger than max_allowed_packet, as
// for a reset history. A new user's probe: a 1.5 MB row written under a larger value, then
// max_allowed_packet lowered to 1 MB: every start (and reconnect) stopped with exit 3 and the
// advice to rebuild the destination, though the same replica resumed fine once it was raised.
// The checkpoint's witness (its last event, checked by the stream) decides instead; a real
// reset is still refused by it.
TEST(ResumeHistory, ANullGtidPosUnderASmallMaxAllowedPacketIsNotTakenForAReset) {
  OwnServer s;
  auto c = StartWithTableT(s);
  ASSERT_TRUE(c) << ReadFile(s.dir.File("start.log"));
  Exec(*c, "CREATE TABLE app.big (id INT PRIMARY KEY, b MEDIUMTEXT)");
  TempDir dir;
  const std::string replica = dir.File("replica.db");
  const std::string config = Config(dir, s, "sqlite", replica);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Exec(*c, "INSERT INTO app.big VALUES (1, REPEAT('x', 1500000))");
  Exec(*c, "INSERT INTO app.t VALUES (1, 10)");
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Exec(*c, "SET GLOBAL max_allowed_packet = 1048576");
  Exec(*c, "INSERT INTO app.t VALUES (2, 20)");
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the stream checks the checkpoint's last event instead"), std::string::npos) << r.output;
  EXPECT_EQ(ReplicaRows(replica), "1:10 2:20 ");
  // A reset under the same small max_allowed_packet: the witness refuses it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the creation time is in seconds
  Exec(*c, "RESET MASTER");
  Exec(*c, "INSERT INTO app.t VALUES (3, 30)");
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(ReplicaRows(replica), "1:10 2:20 ");
}

// REPLICATION SLAVE revoked while streaming: the reconnect's dump is refused, and Connector/C
// reports it as "[1045] Unknown or undefined error code" (a new user's probe). The run stops
// naming the missing privilege and the GRANT that restores it.
TEST(ResumeHistory, ALostReplicationPrivilegeIsNamedWhenTheDumpIsRefused) {
  OwnServer s;
  auto c = StartWithTableT(s);
  ASSERT_TRUE(c) << ReadFile(s.dir.File("start.log"));
  Exec(*c, "CREATE USER rp@'127.0.0.1' IDENTIFIED BY 'rp-secret'");
  Exec(*c, "GRANT SELECT, RELOAD, REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO rp@'127.0.0.1'");
  TempDir dir;
  std::string text = ReadFile(Config(dir, s, "sqlite", dir.File("replica.db")));
  text.replace(text.find("user = \"sluice\""), 15, "user = \"rp\"");
  text.replace(text.find("SLUICE_IT_OWN_SERVER_PASSWORD"), 29, "SLUICE_IT_RP_PASSWORD");
  const std::string config = dir.File("rp.toml");
  std::ofstream(config) << text;
  ::setenv("SLUICE_IT_RP_PASSWORD", "rp-secret", 1);
  const std::string log = dir.File("log");
  pid_t pid = StartSluice({"run", "--config", config}, log);
  KillAtExit guard{&pid};
  ASSERT_TRUE(WaitForLog(log, "streaming from", pid, std::chrono::seconds(60))) << ReadFile(log);
  Exec(*c, "REVOKE REPLICATION SLAVE ON *.* FROM rp@'127.0.0.1'");
  // "streaming from" is logged before the server lists the dump (later under ASan).
  std::string dump;
  for (int i = 0; i < 200 && dump.empty(); ++i) {
    dump = Scalar(*c, "SELECT id FROM information_schema.PROCESSLIST WHERE USER = 'rp' AND COMMAND LIKE 'Binlog Dump%'");
    if (dump.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(dump.empty()) << ReadFile(log);
  Exec(*c, "KILL " + dump);
  const int code = WaitChild(pid, std::chrono::seconds(60));
  pid = 0;
  const std::string out = ReadFile(log);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("the server refused it: SHOW GRANTS lists no global REPLICATION SLAVE"), std::string::npos) << out;
  EXPECT_NE(out.find("GRANT REPLICATION SLAVE ON *.* TO 'rp'@'127.0.0.1'"), std::string::npos) << out;
}

// F2 and F3: a transaction logged with a lower seq_no than the one before it, once while
// sluice is stopped (the next run must resume: exit 0, not "purged") and once while it
// streams (the restart must not send anything again). Every stream record is in the JSON
// lines file exactly once, and the file ends with the source's values.
TEST(ResumeHistory, OutOfOrderGtidsNeitherDuplicateNorStopTheRun) {
  OwnServer s;
  auto c = StartWithTableT(s);
  ASSERT_TRUE(c) << ReadFile(s.dir.File("start.log"));
  Exec(*c, "INSERT INTO app.t VALUES (1, 0), (2, 0)");
  for (int i = 0; i < 50; ++i) Exec(*c, "UPDATE app.t SET n = n + 1 WHERE id = 1");
  TempDir dir;
  const std::string out = dir.File("out.jsonl");
  const std::string config = Config(dir, s, "jsonl", out);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  // Stopped: the newest transaction on the server has a lower seq_no than the checkpoint's.
  Exec(*c, "SET SESSION gtid_seq_no = " + std::to_string(LastSeq(*c) - 20));
  Exec(*c, "UPDATE app.t SET n = n + 100 WHERE id = 2");
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(second.exit_code, 0) << second.output;
  Exec(*c, "UPDATE app.t SET n = n + 1 WHERE id = 1");
  auto third = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(third.exit_code, 0) << third.output;
  Records r = ReadRecords(out);
  EXPECT_EQ(Duplicates(r), "");
  EXPECT_EQ(r.n[1], 51);
  EXPECT_EQ(r.n[2], 100);

  // Streaming: the lower seq_no arrives while the run is connected; then it is stopped.
  pid_t running = StartSluice({"run", "--config", config}, dir.File("run.log"));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Exec(*c, "SET SESSION gtid_seq_no = " + std::to_string(LastSeq(*c) - 30));
  Exec(*c, "UPDATE app.t SET n = n + 1000 WHERE id = 2");
  for (int i = 0; i < 100 && ReadRecords(out).n[2] != 1100; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ReadRecords(out).n[2], 1100) << ReadFile(dir.File("run.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(running, SIGTERM);
  WaitChild(running);
  Exec(*c, "UPDATE app.t SET n = n + 1 WHERE id = 1");
  const size_t before = ReadRecords(out).lines;
  auto fourth = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(fourth.exit_code, 0) << fourth.output;
  r = ReadRecords(out);
  EXPECT_EQ(r.lines, before + 1) << fourth.output;
  EXPECT_EQ(Duplicates(r), "");
  EXPECT_EQ(r.n[1], 52);
  EXPECT_EQ(r.n[2], 1100);
}

}  // namespace
}  // namespace sluice::testing::resume_history
