// GTID resume and failover (issue 11, item 3) against real servers: the test MariaDB as the
// primary, a MariaDB replica of it started here (log_slave_updates, MASTER_USE_GTID), and an
// unrelated MariaDB with its own history. The sink is JSON lines, where a duplicate or a gap
// shows as an extra or a missing line (an SQLite replica would hide duplicates: row events
// are applied idempotently).
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "tcp_proxy.h"

namespace sluice::testing {
namespace {

// A MariaDB started with scripts/mariadb-test-server.sh in its own directory, stopped at
// destruction.
struct ExtraServer {
  TempDir dir;
  ConnectOptions options;
  std::string password_env;
  ~ExtraServer() {
    std::string cmd = std::string(SLUICE_SOURCE_DIR) + "/scripts/mariadb-test-server.sh stop " + dir.path();
    (void)std::system(cmd.c_str());
  }
  std::string StartCommand(int server_id) const {
    return std::string(SLUICE_SOURCE_DIR) + "/scripts/mariadb-test-server.sh start " + dir.path() +
           " --server-id=" + std::to_string(server_id) + " >" + dir.File("start.log") + " 2>&1";
  }
  // Reads DIR/env after the start script ran; the password goes to `env_name`.
  bool Load(const std::string& env_name) {
    auto env = ReadTestServerEnv(dir.path());
    if (!env) return false;
    options = *env;
    password_env = env_name;
    ::setenv(env_name.c_str(), options.password.c_str(), 1);
    return true;
  }
  std::unique_ptr<Connection> Connect() const {
    auto c = Connection::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
};

std::string JsonlConfig(const TempDir& dir, const std::string& name, uint16_t port,
                        const std::string& password_env, const std::string& out) {
  std::ostringstream t;
  t << "[source]\nhost = \"127.0.0.1\"\nport = " << port << "\nuser = \"sluice\"\npassword_env = \""
    << password_env << "\"\nserver_id = 5401\ntables = [\"it_failover.t\"]\n\n[snapshot]\nmode = \"initial\"\n\n"
    << "[sink]\ntype = \"jsonl\"\npath = \"" << out << "\"\n";
  std::string path = dir.File(name);
  std::ofstream(path) << t.str();
  return path;
}

std::string Scalar(Connection& c, const std::string& sql) {
  auto r = c.Query(sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  if (!r.ok() || r->rows.empty() || !r->rows[0][0]) return "";
  return *r->rows[0][0];
}

void Exec(Connection& c, const std::string& sql) {
  Status st = c.Execute(sql);
  EXPECT_TRUE(st.ok()) << sql << ": " << st.ToString();
}

struct Delivered {
  std::map<int, int> created, updated, deleted;  // id -> times (snapshot rows count as created)
  std::map<int, std::string> state;              // the table rebuilt from the events
  size_t lines = 0;
};

Delivered ReadJsonl(const std::string& path) {
  Delivered d;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++d.lines;
    auto j = nlohmann::json::parse(line);
    std::string op = j["op"];
    if (op == "r" || op == "c" || op == "u") {
      int id = std::stoi(j["after"]["id"].dump());
      (op == "u" ? d.updated : d.created)[id]++;
      d.state[id] = j["after"]["v"];
    } else if (op == "d") {
      int id = std::stoi(j["before"]["id"].dump());
      d.deleted[id]++;
      d.state.erase(id);
    }
  }
  return d;
}

std::map<int, std::string> TableState(Connection& c) {
  std::map<int, std::string> out;
  auto r = c.Query("SELECT id, v FROM it_failover.t");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok())
    for (const auto& row : r->rows) out[std::stoi(*row[0])] = row[1].value_or("NULL");
  return out;
}

void Inserts(Connection& c, int from, int to) {
  for (int i = from; i <= to; ++i)
    Exec(c, "INSERT INTO it_failover.t VALUES (" + std::to_string(i) + ", 'v" + std::to_string(i) + "')");
}

// Stream from the primary, switch the config to its replica, continue: every change exactly
// once. Then a server with another history is refused, naming what is missing and the remedy.
TEST(Failover, PrimaryToReplicaContinuesByGtidAndAnotherHistoryIsRefused) {
  ExtraServer replica, other;
  {
    std::string cmd = "(" + replica.StartCommand(2) + ") & (" + other.StartCommand(3) + ") & wait";
    (void)std::system(cmd.c_str());
  }
  ASSERT_TRUE(replica.Load("SLUICE_IT_REPLICA_PASSWORD")) << ReadFile(replica.dir.File("start.log"));
  ASSERT_TRUE(other.Load("SLUICE_IT_OTHER_SERVER_PASSWORD")) << ReadFile(other.dir.File("start.log"));
  auto primary = Connect();
  auto r = replica.Connect();
  auto u = other.Connect();
  ASSERT_TRUE(primary && r && u);

  // The replica follows the primary from its current GTID position on.
  ConnectOptions p = TestServer();
  Exec(*r, "RESET MASTER");
  Exec(*r, "SET GLOBAL gtid_slave_pos = '" + Scalar(*primary, "SELECT @@global.gtid_binlog_pos") + "'");
  Exec(*r, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" + std::to_string(p.port) +
               ", MASTER_USER='" + p.user + "', MASTER_PASSWORD='" + p.password +
               "', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1");
  Exec(*r, "START SLAVE");

  Exec(*primary, "DROP DATABASE IF EXISTS it_failover");
  Exec(*primary, "CREATE DATABASE it_failover");
  Exec(*primary, "CREATE TABLE it_failover.t (id INT PRIMARY KEY, v VARCHAR(20))");
  Inserts(*primary, 1, 50);

  TempDir dir;
  const std::string out = dir.File("out.jsonl");
  const std::string on_primary = JsonlConfig(dir, "primary.toml", p.port, "SLUICE_TEST_MYSQL_PASSWORD", out);
  const std::string on_replica = JsonlConfig(dir, "replica.toml", replica.options.port, replica.password_env, out);
  const std::string on_other = JsonlConfig(dir, "other.toml", other.options.port, other.password_env, out);

  auto first = RunSluice({"run", "--config", on_primary, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  Inserts(*primary, 51, 80);
  Exec(*primary, "UPDATE it_failover.t SET v = 'u' WHERE id <= 10");
  Exec(*primary, "DELETE FROM it_failover.t WHERE id BETWEEN 41 AND 45");
  auto second = RunSluice({"run", "--config", on_primary, "--until-caught-up"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("resuming by position mariadb-bin."), std::string::npos) << second.output;

  // Changes sluice has not read from the primary yet; the replica gets them, then is promoted
  // and written to.
  Inserts(*primary, 81, 110);
  Exec(*primary, "UPDATE it_failover.t SET v = 'u' WHERE id BETWEEN 11 AND 20");
  std::string primary_pos = Scalar(*primary, "SELECT @@global.gtid_binlog_pos");
  ASSERT_EQ(Scalar(*r, "SELECT MASTER_GTID_WAIT('" + primary_pos + "', 30)"), "0")
      << "the replica did not catch up: " << Scalar(*r, "SELECT @@global.gtid_slave_pos");
  Exec(*r, "STOP SLAVE");
  Inserts(*r, 111, 120);
  Exec(*r, "DELETE FROM it_failover.t WHERE id = 50");

  auto third = RunSluice({"run", "--config", on_replica, "--until-caught-up"});
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find("(server_id 2) is not the server this destination was streamed from (server_id 1"),
            std::string::npos) << third.output;
  EXPECT_NE(third.output.find("resuming there by GTID 0-1-"), std::string::npos) << third.output;

  Delivered d = ReadJsonl(out);
  EXPECT_EQ(d.state, TableState(*r));
  for (int id = 1; id <= 120; ++id) EXPECT_EQ(d.created[id], 1) << "id " << id << " created";
  for (int id = 1; id <= 20; ++id) EXPECT_EQ(d.updated[id], 1) << "id " << id << " updated";
  EXPECT_EQ(d.updated.size(), 20u);
  for (int id : {41, 42, 43, 44, 45, 50}) EXPECT_EQ(d.deleted[id], 1) << "id " << id << " deleted";
  EXPECT_EQ(d.deleted.size(), 6u);

  // Now the checkpoint belongs to the replica, with a position there once the stream passed
  // the GTID it started from: a plain resume by position, nothing repeated.
  auto fourth = RunSluice({"run", "--config", on_replica, "--until-caught-up"});
  ASSERT_EQ(fourth.exit_code, 0) << fourth.output;
  EXPECT_NE(fourth.output.find("resuming by position mariadb-bin."), std::string::npos) << fourth.output;
  EXPECT_NE(fourth.output.find("(GTID 0-2-"), std::string::npos) << fourth.output;
  EXPECT_EQ(ReadJsonl(out).lines, d.lines);

  // A server with the same table but its own history (server_id 3): refused, nothing written.
  Exec(*u, "CREATE DATABASE it_failover");
  Exec(*u, "CREATE TABLE it_failover.t (id INT PRIMARY KEY, v VARCHAR(20))");
  Inserts(*u, 1, 200);
  auto refused = RunSluice({"run", "--config", on_other, "--until-caught-up"});
  EXPECT_EQ(refused.exit_code, 3) << refused.output;
  EXPECT_NE(refused.output.find("(server_id 3) is not the server this destination was streamed from (server_id 2"),
            std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("its GTID history does not contain the checkpoint's position: missing 0-2-"),
            std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("(this server has no GTID from server 2 in domain 0)"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("take a new snapshot into a new destination"), std::string::npos) << refused.output;
  EXPECT_EQ(ReadJsonl(out).lines, d.lines);

  Exec(*primary, "DROP DATABASE IF EXISTS it_failover");
}

// A new user's probe (F2, F4). F2: a config switched to a caught-up replica with nothing new
// written there: the dump by GTID skipped everything and `--until-caught-up` never ended. F4:
// a failover behind the address sluice connects to (a proxy here): the reconnect resumed by
// the old server's file/position on the new one and stopped, exit 3, saying the binlog
// history was reset. Now the first ends at once, and the second goes on by GTID; every change
// reaches the JSON lines once.
TEST(Failover, ACaughtUpReplicaEndsTheRunAndAFailoverBehindTheSameAddressGoesOn) {
  ExtraServer replica;
  (void)std::system(replica.StartCommand(2).c_str());
  ASSERT_TRUE(replica.Load("SLUICE_IT_REPLICA_PASSWORD")) << ReadFile(replica.dir.File("start.log"));
  auto primary = Connect();
  auto r = replica.Connect();
  ASSERT_TRUE(primary && r);
  ConnectOptions p = TestServer();
  // One address, one set of credentials: the replica's user gets the primary's password.
  Exec(*r, "SET PASSWORD = PASSWORD('" + p.password + "')");
  ::setenv(replica.password_env.c_str(), p.password.c_str(), 1);
  Exec(*primary, "DROP DATABASE IF EXISTS it_failover");
  Exec(*r, "RESET MASTER");
  Exec(*r, "SET GLOBAL gtid_slave_pos = '" + Scalar(*primary, "SELECT @@global.gtid_binlog_pos") + "'");
  Exec(*r, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" + std::to_string(p.port) + ", MASTER_USER='" +
               p.user + "', MASTER_PASSWORD='" + p.password + "', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1");
  Exec(*r, "START SLAVE");
  Exec(*primary, "CREATE DATABASE it_failover");
  Exec(*primary, "CREATE TABLE it_failover.t (id INT PRIMARY KEY, v VARCHAR(20))");
  Inserts(*primary, 1, 50);
  auto caught_up = [&] {
    const std::string pos = Scalar(*primary, "SELECT @@global.gtid_binlog_pos");
    return Scalar(*r, "SELECT MASTER_GTID_WAIT('" + pos + "', 30)") == "0";
  };

  TcpProxy proxy(p.port);
  TempDir dir;
  const std::string out = dir.File("out.jsonl");
  const std::string via_proxy = JsonlConfig(dir, "proxy.toml", proxy.port(), "SLUICE_TEST_MYSQL_PASSWORD", out);
  const std::string on_replica = JsonlConfig(dir, "replica.toml", replica.options.port, replica.password_env, out);
  auto first = RunSluice({"run", "--config", via_proxy, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  // F2: the replica holds exactly what the destination holds, and nothing is written to it.
  ASSERT_TRUE(caught_up());
  const size_t lines = ReadJsonl(out).lines;
  auto quiet = RunSluice({"run", "--config", on_replica, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_NE(quiet.output.find("resuming there by GTID 0-1-"), std::string::npos) << quiet.output;
  EXPECT_EQ(ReadJsonl(out).lines, lines);

  // probe20 F1: the first transaction read after that switch is an XA PREPARE, held until its
  // XA COMMIT, so the checkpoint's position is its group's start. The dump by GTID had skipped
  // the file's earlier transactions, and that start was the end of the file's header events:
  // the next run refused it as a reset history (exit 3), every run after too.
  Exec(*primary, "XA START 'it_fo_xa'");
  Exec(*primary, "INSERT INTO it_failover.t VALUES (500, 'xa')");
  Exec(*primary, "XA END 'it_fo_xa'");
  Exec(*primary, "XA PREPARE 'it_fo_xa'");
  ASSERT_TRUE(caught_up());
  for (int i = 0; i < 2; ++i) {
    auto held = RunSluice({"run", "--config", on_replica, "--until-caught-up"}, std::chrono::seconds(60));
    EXPECT_EQ(held.exit_code, 0) << held.output;
  }
  Exec(*primary, "XA COMMIT 'it_fo_xa'");
  ASSERT_TRUE(caught_up());
  auto committed = RunSluice({"run", "--config", on_replica, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(committed.exit_code, 0) << committed.output;
  EXPECT_EQ(ReadJsonl(out).created[500], 1);

  // F4: streaming through the proxy from the primary; the replica is promoted and the proxy
  // sends new connections to it, cutting the old ones.
  const std::string log = dir.File("run.log");
  pid_t pid = StartSluice({"run", "--config", via_proxy}, log);
  KillAtExit guard{&pid};
  ASSERT_TRUE(WaitForLog(log, "streaming from", pid, std::chrono::seconds(60))) << ReadFile(log);
  Exec(*r, "STOP SLAVE");
  Inserts(*primary, 51, 60);
  for (int i = 0; i < 200 && ReadJsonl(out).created.size() < 61; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(ReadJsonl(out).created.size(), 61u) << ReadFile(log);
  proxy.set_target(replica.options.port);
  EXPECT_GT(proxy.ResetAll(), 0);
  // probe20 F3: the replica has not applied 51..60 yet (behind the destination). The run waits
  // for it, reconnecting; it stopped with exit 3 ("take a new snapshot").
  for (int i = 0; i < 100 && ReadFile(log).find("waiting for it to catch up") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the run stopped:\n" << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("waiting for it to catch up"), std::string::npos) << ReadFile(log);
  Exec(*r, "START SLAVE");
  ASSERT_TRUE(caught_up());
  Exec(*r, "STOP SLAVE");
  Inserts(*r, 61, 70);
  for (int i = 0; i < 300 && ReadJsonl(out).created.size() < 71; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid), 0) << ReadFile(log);
  pid = 0;
  EXPECT_NE(ReadFile(log).find("the source address leads to another server now"), std::string::npos) << ReadFile(log);
  Delivered d = ReadJsonl(out);
  EXPECT_EQ(d.state, TableState(*r));
  for (int id = 1; id <= 70; ++id) EXPECT_EQ(d.created[id], 1) << "id " << id << " created";
  EXPECT_EQ(d.created[500], 1);
  Exec(*primary, "DROP DATABASE IF EXISTS it_failover");
}

}  // namespace
}  // namespace sluice::testing
