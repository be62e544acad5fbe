// Live tests of ReplicationSession against the MariaDB started by
// scripts/mariadb-test-server.sh (fail, never skip, when SLUICE_TEST_MYSQL_* is unset).
#include "mysql/replication.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "mysql/server_probe.h"
#include "mysql/testing_env.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

struct Ev {
  uint8_t type;
  uint32_t server_id;
  uint32_t event_size;
  uint32_t log_pos;
  std::vector<uint8_t> bytes;
};

uint32_t Le32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

Ev Parse(std::span<const uint8_t> b) {
  Ev e;
  e.type = b[4];
  e.server_id = Le32(&b[5]);
  e.event_size = Le32(&b[9]);
  e.log_pos = Le32(&b[13]);
  e.bytes.assign(b.begin(), b.end());
  return e;
}

// Reads until the server's EOF (non_blocking sessions). Fails the test on error.
std::vector<Ev> ReadAll(ReplicationSession& s) {
  std::vector<Ev> out;
  for (int i = 0; i < 100000; ++i) {
    auto r = s.Fetch();
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      break;
    }
    if (r->empty()) break;
    out.push_back(Parse(*r));
  }
  return out;
}

bool Contains(const std::vector<uint8_t>& hay, std::string_view needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

class ReplicationLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::TestServerOptions(&opts_));
    c_ = testing::ConnectTestServer();
    ASSERT_NE(c_, nullptr);
    for (const char* sql : {"CREATE DATABASE IF NOT EXISTS repl_test",
                            "DROP TABLE IF EXISTS repl_test.t",
                            "CREATE TABLE repl_test.t (id INT PRIMARY KEY, c CHAR(5))",
                            // A new binlog file, so reading from its start does not depend on
                            // how much earlier tests wrote to this server.
                            "FLUSH BINARY LOGS"}) {
      Status st = c_->Execute(sql);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    auto g = c_->Query("SELECT @@gtid_binlog_pos");
    ASSERT_TRUE(g.ok());
    gtid_before_ = g->rows[0][0].value_or("");
    auto p = ReadBinlogPosition(*c_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pos_before_ = *p;
    Status st = c_->Execute("INSERT INTO repl_test.t VALUES (1,'a'),(2,'bb'),(3,'ccc')");
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto p2 = ReadBinlogPosition(*c_);
    ASSERT_TRUE(p2.ok());
    pos_after_ = *p2;
  }

  void CheckInsertTransaction(const std::vector<Ev>& evs) {
    std::set<uint8_t> types;
    for (const Ev& e : evs) {
      types.insert(e.type);
      EXPECT_EQ(e.event_size, e.bytes.size()) << "type " << int(e.type);
    }
    EXPECT_TRUE(types.count(15)) << "no FORMAT_DESCRIPTION";
    EXPECT_TRUE(types.count(162)) << "no MariaDB GTID";
    EXPECT_TRUE(types.count(19)) << "no TABLE_MAP";
    EXPECT_TRUE(types.count(23) || types.count(30)) << "no WRITE_ROWS";
    EXPECT_TRUE(types.count(16)) << "no XID";
    // The last event is our insert's XID and ends where SHOW MASTER STATUS said. MariaDB
    // writes the BINLOG_CHECKPOINT (161) that follows FLUSH BINARY LOGS once the old file's
    // transactions are durable in the engine, asynchronously: it may land after the insert.
    std::vector<const Ev*> rest;
    for (const Ev& e : evs)
      if (e.type != 161) rest.push_back(&e);
    ASSERT_FALSE(rest.empty());
    EXPECT_EQ(rest.back()->type, 16);
    // SHOW MASTER STATUS, read after the insert, ends at the XID or at a checkpoint after it.
    bool pos_matches = false;
    for (const Ev* e = rest.back(); e <= &evs.back(); ++e) pos_matches |= e->log_pos == pos_after_.pos;
    EXPECT_TRUE(pos_matches) << "no event ends at " << pos_after_.pos << "; the XID ends at " << rest.back()->log_pos;
    bool saw_table = false;
    for (const Ev& e : evs)
      if (e.type == 19 && Contains(e.bytes, "repl_test")) saw_table = true;
    EXPECT_TRUE(saw_table);
    // Checksums are on by default in MariaDB 10.11: the FDE's last 5 bytes are alg + CRC.
    for (const Ev& e : evs)
      if (e.type == 15) {
        ASSERT_GT(e.bytes.size(), 5u);
        EXPECT_EQ(e.bytes[e.bytes.size() - 5], 1) << "checksum algorithm is not CRC32";
      }
  }

  ConnectOptions opts_;
  std::unique_ptr<Connection> c_;
  std::string gtid_before_;
  BinlogPosition pos_before_, pos_after_;
};

TEST_F(ReplicationLiveTest, StreamsFromFileStart) {
  auto logs = ListBinaryLogs(*c_);
  ASSERT_TRUE(logs.ok());
  ReplicationOptions ro;
  ro.server_id = 4242;
  ro.start = {logs->back().first, 4};
  ro.non_blocking = true;
  ro.heartbeat_period_s = 0;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->flavor(), Flavor::kMariaDB);
  EXPECT_EQ((*s)->source_server_id(), 1u);
  EXPECT_EQ((*s)->binlog_checksum(), "CRC32");
  std::vector<Ev> evs = ReadAll(**s);
  CheckInsertTransaction(evs);
  // The first events are the (fake) ROTATE and the FORMAT_DESCRIPTION.
  ASSERT_GE(evs.size(), 2u);
  EXPECT_EQ(evs[0].type, 4);
  EXPECT_EQ(evs[1].type, 15);
  // After EOF, Fetch keeps returning the empty span.
  auto again = (*s)->Fetch();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST_F(ReplicationLiveTest, StreamsFromMidFilePosition) {
  ReplicationOptions ro;
  ro.server_id = 4243;
  ro.start = pos_before_;
  ro.non_blocking = true;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<Ev> evs = ReadAll(**s);
  CheckInsertTransaction(evs);
  // Rotate + FDE, then exactly one transaction: GTID ... XID.
  int gtids = 0;
  for (const Ev& e : evs) gtids += e.type == 162;
  EXPECT_EQ(gtids, 1);
}

TEST_F(ReplicationLiveTest, StreamsFromGtidPosition) {
  ASSERT_FALSE(gtid_before_.empty());
  ReplicationOptions ro;
  ro.server_id = 4244;
  ro.gtid = gtid_before_;
  ro.non_blocking = true;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<Ev> evs = ReadAll(**s);
  CheckInsertTransaction(evs);
  // Only the insert's transaction follows the GTID position: one GTID event, whose
  // sequence number is the next one after gtid_before_ ("0-1-N").
  std::vector<const Ev*> gtid_events;
  for (const Ev& e : evs)
    if (e.type == 162) gtid_events.push_back(&e);
  ASSERT_EQ(gtid_events.size(), 1u);
  uint64_t seq = 0;
  for (int i = 7; i >= 0; --i) seq = (seq << 8) | gtid_events[0]->bytes[19 + i];
  uint64_t before = std::stoull(gtid_before_.substr(gtid_before_.rfind('-') + 1));
  EXPECT_EQ(seq, before + 1);
}

TEST_F(ReplicationLiveTest, RegistersAsReplica) {
  ReplicationOptions ro;
  ro.server_id = 4245;
  ro.start = pos_after_;
  ro.replica_host = "sluice-test";
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto hosts = c_->Query("SHOW SLAVE HOSTS");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  bool found = false;
  for (const auto& row : hosts->rows)
    if (row[0] == "4245" && row[1] == "sluice-test") found = true;
  EXPECT_TRUE(found);
}

TEST_F(ReplicationLiveTest, HeartbeatsArriveWhenIdle) {
  ReplicationOptions ro;
  ro.server_id = 4246;
  ro.start = pos_after_;
  ro.heartbeat_period_s = 0.5;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto start = std::chrono::steady_clock::now();
  bool heartbeat = false;
  for (int i = 0; i < 20 && !heartbeat; ++i) {
    auto r = (*s)->Fetch();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->empty());
    Ev e = Parse(*r);
    EXPECT_EQ(e.event_size, r->size());
    heartbeat = e.type == 27;
  }
  EXPECT_TRUE(heartbeat);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(ReplicationLiveTest, MissingFileIsDataLoss) {
  ReplicationOptions ro;
  ro.server_id = 4247;
  ro.start = {"mariadb-bin.999999", 4};
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("Could not find first log file name"));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr(opts_.password)));
  // Issue 6, item 11: which position, that it is gone, the oldest binlog, the remedy.
  EXPECT_THAT(r.status().message(), HasSubstr("the resume position mariadb-bin.999999:4 is no "
                                              "longer on the server"));
  EXPECT_THAT(r.status().message(), HasSubstr("the oldest binlog it has is mariadb-bin."));
  EXPECT_THAT(r.status().message(), HasSubstr("take a new snapshot into a new destination"));
}

TEST_F(ReplicationLiveTest, UnknownGtidIsDataLoss) {
  ReplicationOptions ro;
  ro.server_id = 4248;
  ro.gtid = "0-1-999999999";
  ro.non_blocking = true;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Status st;
  for (int i = 0; i < 100 && st.ok(); ++i) {
    auto r = (*s)->Fetch();
    if (!r.ok()) st = r.status();
    else if (r->empty()) break;
  }
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("the resume position GTID 0-1-999999999 is no longer on the server"));
  EXPECT_THAT(st.message(), HasSubstr("the oldest binlog it has is mariadb-bin."));
}

TEST_F(ReplicationLiveTest, KilledSessionIsUnavailable) {
  ReplicationOptions ro;
  ro.server_id = 4249;
  ro.start = pos_after_;
  ro.heartbeat_period_s = 1;
  auto s = ReplicationSession::Start(opts_, ro);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Read the initial ROTATE so the dump is known to be running.
  auto first = (*s)->Fetch();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Status kill = c_->Execute("KILL " + std::to_string((*s)->connection_id()));
  ASSERT_TRUE(kill.ok()) << kill.ToString();
  Status st;
  for (int i = 0; i < 1000 && st.ok(); ++i) {
    auto r = (*s)->Fetch();
    if (!r.ok()) st = r.status();
  }
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST_F(ReplicationLiveTest, RejectsBadServerIds) {
  ReplicationOptions ro;
  ro.start = pos_after_;
  ro.server_id = 0;
  EXPECT_EQ(ReplicationSession::Start(opts_, ro).status().code(), StatusCode::kInvalidArgument);
  ro.server_id = 1;  // the test server's own id
  auto s = ReplicationSession::Start(opts_, ro);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("server_id"));
  ro.server_id = 7;
  ro.start = {};
  EXPECT_EQ(ReplicationSession::Start(opts_, ro).status().code(), StatusCode::kInvalidArgument);
}

TEST(MysqlGtidEncodingTest, EncodesSidBlock) {
  auto e = EncodeMysqlGtidSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  std::string want;
  auto le = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) want.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  le(1);
  want += std::string("\x3E\x11\xFA\x47\x71\xCA\x11\xE1\x9E\x33\xC8\x0A\xA9\x42\x95\x62", 16);
  le(2);
  le(1);
  le(6);
  le(7);
  le(8);
  EXPECT_EQ(*e, want);

  auto empty = EncodeMysqlGtidSet("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, std::string(8, '\0'));
  EXPECT_EQ(EncodeMysqlGtidSet("nonsense").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeMysqlGtidSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:5-1").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeMysqlGtidSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:tag:1-5").status().code(),
            StatusCode::kNotSupported);
}

}  // namespace
}  // namespace sluice
