// Issue 7's acceptance matrix (docs/schema-changes.md): every DDL kind the issue lists, in two
// modes (applied while sluice streams; applied while it is stopped, rows written before and
// after) under binlog_row_metadata FULL, MINIMAL and NO_LOG. One script of all kinds, with
// rows between the statements, runs over several tables per (mode x metadata), and the
// result is compared once at the end: the SQLite replica equals the source value by value,
// and the JSON lines stream holds the schema-change records (and the rows around them) in
// the order of the script.
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace sluice::testing {
namespace {

void CreateMatrixSource() {
  ASSERT_EQ(RunSqlText(
                "DROP DATABASE IF EXISTS it_mx; DROP DATABASE IF EXISTS it_mx_out; CREATE DATABASE it_mx;"
                "CREATE DATABASE it_mx_out;"
                // a: every kind that rewrites existing rows (re-read)
                "CREATE TABLE it_mx.a (id INT PRIMARY KEY, a INT, p DECIMAL(6,2), w DECIMAL(6,2), s VARCHAR(10), "
                "dt DATETIME(6), e ENUM('x','y','z'), u INT UNSIGNED, txt VARCHAR(10)) DEFAULT CHARSET=utf8mb4;"
                "INSERT INTO it_mx.a VALUES (1, 1000, 3.75, 3.75, 'abcdefgh', '2020-01-01 10:00:00.654321', 'z', "
                "4294967295, 'ñandú');"
                // b: followed in place, then renamed (both names captured)
                "CREATE TABLE it_mx.b (id INT PRIMARY KEY, v INT); INSERT INTO it_mx.b VALUES (1, 1);"
                // c: renamed out of the captured set and back
                "CREATE TABLE it_mx.c (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO it_mx.c VALUES (1, 'c1'), (2, 'c2');"
                // d: dropped and created again
                "CREATE TABLE it_mx.d (id INT PRIMARY KEY, v INT); INSERT INTO it_mx.d VALUES (1, 1), (2, 2);"
                // o: an online schema change swaps in a table with an extra column
                "CREATE TABLE it_mx.o (id INT PRIMARY KEY, v INT); INSERT INTO it_mx.o VALUES (1, 10), (2, 20);"),
            0);
}

// The script: every DDL kind at the top of issue 7, rows between the statements. `n` is
// created by it (while sluice is stopped, in the catch-up mode).
std::vector<std::string> MatrixScript() {
  auto a_row = [](int id) {
    return "INSERT INTO it_mx.a (id, a, p, w, s, dt, e, u, txt) VALUES (" + std::to_string(id) + ", " +
           std::to_string(id * 100) + ", " + std::to_string(id) + ".75, " + std::to_string(id) + ".25, 'row" +
           std::to_string(id) + "long', '2021-02-03 04:05:06.7" + std::to_string(id) + "', 'z', " +
           std::to_string(4294967295u - id) + ", 'señal" + std::to_string(id) + "');";
  };
  std::vector<std::string> s;
  s.push_back("SET SESSION sql_mode = ''; " + a_row(2) + " UPDATE it_mx.b SET v = 2 WHERE id = 1;");
  // The kinds that rewrite a's existing rows (each one re-reads the table; whether a clause
  // alone is followed or re-read is checked clause by clause in schema/ddl_apply_test.cc),
  // in three statements so that a streaming run re-reads three times, not eleven; then a
  // widening that is followed in place. Rows of a and b between every statement.
  int next_id = 3;
  auto between = [&] {
    const int id = next_id++;
    return "SET SESSION sql_mode = ''; " + a_row(id) + " UPDATE it_mx.a SET a = a + 1, txt = 'ñ' WHERE id = 1;" +
           " INSERT INTO it_mx.b VALUES (" + std::to_string(id) + ", 0);";
  };
  for (const char* ddl :
       {"ALTER TABLE it_mx.a ADD COLUMN nn INT NOT NULL, ADD COLUMN ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
        "ADD COLUMN uu VARCHAR(36) DEFAULT (UUID()), ADD COLUMN seq INT NOT NULL AUTO_INCREMENT UNIQUE, "
        "ADD COLUMN g BIGINT AS (a * 2) STORED",
        "ALTER TABLE it_mx.a MODIFY p DECIMAL(6,0), MODIFY a TINYINT, MODIFY s VARCHAR(3), MODIFY dt DATETIME, "
        "MODIFY w DECIMAL(8,4), MODIFY e ENUM('z','y','x')",
        "ALTER TABLE it_mx.a CONVERT TO CHARACTER SET latin1",
        "ALTER TABLE it_mx.a MODIFY u BIGINT"}) {
    s.push_back(between());
    s.push_back("SET SESSION sql_mode = ''; " + std::string(ddl) + ";");
  }
  s.push_back(between());
  // Followed in place on b, then renamed.
  s.push_back("ALTER TABLE it_mx.b ADD COLUMN k INT NOT NULL DEFAULT 5;");
  s.push_back("INSERT INTO it_mx.b (id, v) VALUES (100, 100); UPDATE it_mx.b SET k = 6 WHERE id = 1;");
  s.push_back("RENAME TABLE it_mx.b TO it_mx.b2;");
  s.push_back("INSERT INTO it_mx.b2 (id, v) VALUES (101, 101); UPDATE it_mx.b2 SET v = 3 WHERE id = 1;");
  // c out of the captured set and back: the change made while it was out reaches the replica.
  s.push_back("RENAME TABLE it_mx.c TO it_mx_out.c;");
  s.push_back("UPDATE it_mx_out.c SET v = 'out' WHERE id = 1; INSERT INTO it_mx_out.c VALUES (3, 'c3');");
  s.push_back("RENAME TABLE it_mx_out.c TO it_mx.c;");
  s.push_back("INSERT INTO it_mx.c VALUES (4, 'back'); UPDATE it_mx.c SET v = 'back2' WHERE id = 2;");
  // d dropped and created again: its old rows do not stay.
  s.push_back("DROP TABLE it_mx.d;");
  s.push_back("CREATE TABLE it_mx.d (id INT PRIMARY KEY, z VARCHAR(5));");
  s.push_back("INSERT INTO it_mx.d VALUES (7, 'new');");
  // The online schema change (pt-online-schema-change's order), rows flowing into o throughout.
  s.push_back("CREATE TABLE it_mx._o_new LIKE it_mx.o;");
  s.push_back("ALTER TABLE it_mx._o_new ADD COLUMN extra INT NOT NULL DEFAULT 3;");
  s.push_back("INSERT INTO it_mx.o VALUES (3, 30); INSERT INTO it_mx._o_new (id, v) SELECT id, v FROM it_mx.o;"
              "UPDATE it_mx._o_new SET extra = id * 7;");
  s.push_back("RENAME TABLE it_mx.o TO it_mx._o_old, it_mx._o_new TO it_mx.o;");
  s.push_back("DROP TABLE it_mx._o_old;");
  s.push_back("INSERT INTO it_mx.o VALUES (4, 40, 4); UPDATE it_mx.o SET v = 11 WHERE id = 1;");
  // n created (while sluice is stopped, in the catch-up mode): read from its CREATE.
  s.push_back("CREATE TABLE it_mx.n (id INT PRIMARY KEY, v VARCHAR(10));");
  s.push_back("INSERT INTO it_mx.n VALUES (1, 'first'); UPDATE it_mx.n SET v = 'second' WHERE id = 1;"
              "INSERT INTO it_mx.n VALUES (2, 'gone'); DELETE FROM it_mx.n WHERE id = 2;");
  s.push_back("INSERT INTO it_mx.b2 (id, v) VALUES (999, 999);");  // the end marker
  return s;
}

// The JSON lines stream as a list of short descriptions, in order: "ddl <statement>" for
// schema-change records, "<table> <op> <id>" for rows, "truncate <table>".
std::vector<std::string> Events(const std::string& jsonl) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < jsonl.size()) {
    size_t end = jsonl.find('\n', at);
    if (end == std::string::npos) end = jsonl.size();
    auto j = nlohmann::json::parse(jsonl.substr(at, end - at), nullptr, false);
    at = end + 1;
    if (!j.is_object()) continue;
    if (j.contains("ddl")) {
      out.push_back("ddl " + (j["ddl"].is_string() ? j["ddl"].get<std::string>() : std::string("null")));
    } else if (j.contains("op") && j["op"].is_string()) {
      const std::string op = j["op"];
      std::string table = j.contains("source") && j["source"].contains("table") ? j["source"]["table"].get<std::string>() : "?";
      const nlohmann::json& row = op == "d" ? j["before"] : j["after"];
      std::string id = row.is_object() && row.contains("id") ? row["id"].dump() : "-";
      out.push_back(table + " " + op + " " + id);
    }
  }
  return out;
}

// Index of the first event at or after `from` that starts with `prefix`, or -1.
long Find(const std::vector<std::string>& ev, const std::string& prefix, long from = 0) {
  for (size_t i = static_cast<size_t>(std::max(0L, from)); i < ev.size(); ++i)
    if (ev[i].rfind(prefix, 0) == 0) return static_cast<long>(i);
  return -1;
}

std::string Dump(const std::vector<std::string>& ev) {
  std::string s;
  for (const std::string& e : ev) s += e.substr(0, 120) + "\n";
  return s;
}

// The JSON lines stream holds the schema-change records in the order of the script, each
// after the rows written before its statement and before the rows written after it. A table
// re-read from the source is copied beside the stream (docs/design.md, "Online re-reads of one
// table"): its re-read record and copied rows are in order with that table's own records, not
// with the other tables' later ones, which keep streaming meanwhile.
void ExpectJsonOrder(const std::string& jsonl, const std::string& what) {
  const std::vector<std::string> ev = Events(jsonl);
  SCOPED_TRACE(what + ": the JSON lines stream, one line per record:\n" + Dump(ev));
  // Chains of steps: each a prefix (or prefixes separated by |) that must appear after the
  // previous step's match in its chain.
  const std::vector<std::vector<std::string>> chains = {
      {
          "ddl ALTER TABLE it_mx.b ADD COLUMN k",   // followed in place
          "b c 100",
          "ddl RENAME TABLE it_mx.b TO it_mx.b2",
          "b2 c 101",
          "ddl RENAME TABLE it_mx.c TO it_mx_out.c",  // out: a DROP record
          "ddl DROP TABLE `it_mx`.`d`",
          "ddl CREATE TABLE it_mx.d",
          "d c 7",
          "ddl CREATE TABLE it_mx._o_new LIKE it_mx.o",
          "ddl ALTER TABLE it_mx._o_new ADD COLUMN extra",
          "ddl RENAME TABLE it_mx.o TO it_mx._o_old",
          "o c 4",
          "ddl CREATE TABLE it_mx.n",
          "n c 1",                                   // created while stopped: its rows from the CREATE, not 'r'
          "n u 1",
          "n d 2",
          "b2 c 999",
      },
      {
          "a c 2",                                   // row written before the first DDL on a
          "ddl -- sluice: re-read of it_mx.a",       // a re-read (replaces the sink table)
          "a r 1",                                   // a's rows as the copy read them
      },
      {
          "ddl RENAME TABLE it_mx.c TO it_mx_out.c",  // out: a DROP record
          "ddl -- sluice: re-read of it_mx.c",        // back: re-read under its name
          "c r 1",
          "c c 4|c r 4",                              // streamed, or in the copy (catching up)
      },
  };
  for (const auto& steps : chains) {
    long at = 0;
    for (const std::string& step : steps) {
      long found = -1;
      for (size_t from = 0, bar; found < 0 && from <= step.size(); from = bar + 1) {
        bar = step.find('|', from);
        if (bar == std::string::npos) bar = step.size();
        found = Find(ev, step.substr(from, bar - from), at);
      }
      EXPECT_GE(found, 0) << what << ": \"" << step << "\" not found after event " << at;
      if (found < 0) return;
      at = found + 1;
    }
  }
  // The row written before the first ALTER on a, decoded with the definition it was written
  // under (NO_LOG and MINIMAL: from the schema history, not from today's definition, where
  // 'z' is the first ENUM label, u is signed and txt latin1).
  for (size_t at = 0, end; at < jsonl.size(); at = end + 1) {
    end = jsonl.find('\n', at);
    if (end == std::string::npos) end = jsonl.size();
    auto j = nlohmann::json::parse(jsonl.substr(at, end - at), nullptr, false);
    if (!j.is_object() || j.value("op", "") != "c" || !j["after"].is_object() || j["after"].value("id", 0) != 2 ||
        !j.contains("source") || j["source"].value("table", "") != "a")
      continue;
    EXPECT_EQ(j["after"]["e"], "z") << what << ": " << j.dump();
    EXPECT_EQ(j["after"]["u"], 4294967293u) << what << ": " << j.dump();
    EXPECT_EQ(j["after"]["txt"], "señal2") << what << ": " << j.dump();
    EXPECT_EQ(j["after"]["dt"], "2021-02-03 04:05:06.720000") << what << ": " << j.dump();
    break;
  }
  EXPECT_EQ(Find(ev, "n r "), -1) << what << ": n was created after the stream's position; it is not snapshotted";
}

class DdlMatrix : public ::testing::TestWithParam<std::tuple<bool, const char*>> {};

TEST_P(DdlMatrix, ReplicaEqualsSourceAndJsonHoldsTheChangesInOrder) {
  const bool streaming = std::get<0>(GetParam());
  const std::string metadata = std::get<1>(GetParam());
  const std::string what = std::string(streaming ? "applied while streaming" : "applied while stopped") +
                           ", binlog_row_metadata=" + metadata;
  SCOPED_TRACE(what);
  CreateMatrixSource();
  const std::vector<std::string> tables = {"it_mx.*"};
  TempDir dir, jdir;
  SluiceConfigSpec spec;
  spec.tables = tables;
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  SluiceConfigSpec jspec = spec;
  jspec.sink_type = "jsonl";
  jspec.sink_path = jdir.File("out.jsonl");
  jspec.server_id = 5402;
  const std::string jconfig = WriteConfig(jdir, jspec);
  // The SQLite and the JSON lines runs side by side (each has its own server_id).
  auto both_until_caught_up = [&](const std::string& step) {
    pid_t p = StartSluice({"run", "--config", config, "--until-caught-up"}, dir.File("log"));
    pid_t j = StartSluice({"run", "--config", jconfig, "--until-caught-up"}, jdir.File("log"));
    EXPECT_EQ(WaitChild(p), 0) << what << ", " << step << ": " << ReadFile(dir.File("log"));
    EXPECT_EQ(WaitChild(j), 0) << what << ", " << step << ": " << ReadFile(jdir.File("log"));
  };
  both_until_caught_up("the first run");
  if (::testing::Test::HasFailure()) return;

  RowMetadata mode(metadata);
  std::string script;
  for (const std::string& step : MatrixScript()) script += step + "\n";
  if (streaming) {
    pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
    pid_t jpid = StartSluice({"run", "--config", jconfig}, jdir.File("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(RunSqlText(script), 0) << script;
    bool equal = WaitForReplicaToMatch(tables, spec.sink_path, /*expected_tables=*/6, std::chrono::seconds(40));
    // The JSON lines run has caught up once it wrote the end marker and no re-read is left:
    // a table re-read beside the stream may still be copied after the marker.
    auto json_settled = [&] {
      if (ReadFile(jspec.sink_path).find("\"id\":999") == std::string::npos) return false;
      auto state = nlohmann::json::parse(ReadFile(jspec.sink_path + ".checkpoint"), nullptr, false);
      if (!state.is_object() || !state["checkpoint"].is_string()) return false;
      const std::string cp = state["checkpoint"];
      return cp.find("\"snapshot\":{\"done\":true") != std::string::npos && cp.find("\"ahead\"") == std::string::npos;
    };
    for (int i = 0; i < 400 && !json_settled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pid, SIGTERM);
    kill(jpid, SIGTERM);
    EXPECT_EQ(WaitChild(pid, std::chrono::seconds(20)), 0) << ReadFile(dir.File("log"));
    EXPECT_EQ(WaitChild(jpid, std::chrono::seconds(20)), 0) << ReadFile(jdir.File("log"));
    EXPECT_TRUE(equal) << what << ": the replica never matched the source; " << ReadFile(dir.File("log"));
  } else {
    ASSERT_EQ(RunSqlText(script), 0) << script;
    both_until_caught_up("catching up over the script");
  }
  ExpectReplicaEqualsSource(tables, spec.sink_path);
  ExpectJsonOrder(ReadFile(jspec.sink_path), what);
}

INSTANTIATE_TEST_SUITE_P(ModesAndMetadata, DdlMatrix,
                         ::testing::Combine(::testing::Bool(), ::testing::Values("FULL", "MINIMAL", "NO_LOG")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Streaming" : "Stopped") + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace sluice::testing
