// Live tests of Connection and the server probe against the MariaDB started by
// scripts/mariadb-test-server.sh (fail, never skip, when SLUICE_TEST_MYSQL_* is unset).
#include "mysql/connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mysql/server_probe.h"
#include "mysql/testing_env.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ConnectionTest, QueryReturnsRowsColumnsAndNulls) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  Result<QueryResult> r = c->Query("SELECT 1 AS a, NULL AS b, 'x''y' AS c, X'00FF' AS d");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->columns, (std::vector<std::string>{"a", "b", "c", "d"}));
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0][0], "1");
  EXPECT_EQ(r->rows[0][1], std::nullopt);
  EXPECT_EQ(r->rows[0][2], "x'y");
  EXPECT_EQ(r->rows[0][3], std::string("\x00\xff", 2));
  EXPECT_EQ(r->ColumnIndex("c"), 2);
}

TEST(ConnectionTest, ExecuteAndAffectedRows) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Execute("CREATE DATABASE IF NOT EXISTS conn_test").ok());
  ASSERT_TRUE(c->Execute("DROP TABLE IF EXISTS conn_test.t").ok());
  ASSERT_TRUE(c->Execute("CREATE TABLE conn_test.t (id INT PRIMARY KEY, s VARCHAR(20))").ok());
  Result<QueryResult> r = c->Query("INSERT INTO conn_test.t VALUES (1,'a'),(2,'b'),(3,NULL)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->affected_rows, 3u);
  EXPECT_TRUE(r->columns.empty());
}

TEST(ConnectionTest, EscapeRoundTripsAwkwardBytes) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  std::string nasty = std::string("a'b\"c\\d\0e\n\x1a", 12) + "\xF0\x9F\x98\x80";
  Result<QueryResult> r = c->Query("SELECT " + c->Quote(nasty));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rows[0][0], nasty);
}

TEST(ConnectionTest, StreamedRowsArriveInOrderAndCallbackErrorStops) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  std::vector<std::string> cols;
  std::vector<std::string> seen;
  Status st = c->QueryStream(
      "SELECT seq, IF(seq = 3, NULL, 'v') AS v FROM mysql.seq_1_to_5",
      [&](const std::vector<TextCellView>& row) {
        seen.push_back(std::string(*row[0]) + (row[1] ? "v" : "N"));
        return Status::Ok();
      },
      &cols);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cols, (std::vector<std::string>{"seq", "v"}));
  EXPECT_EQ(seen, (std::vector<std::string>{"1v", "2v", "3N", "4v", "5v"}));

  int n = 0;
  st = c->QueryStream("SELECT seq FROM mysql.seq_1_to_100000", [&](const std::vector<TextCellView>&) {
    return ++n == 10 ? Status::Cancelled("enough") : Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(n, 10);
  // The connection is still usable after the early stop.
  Result<QueryResult> r = c->Query("SELECT 42");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rows[0][0], "42");
}

TEST(ConnectionTest, SyntaxErrorIsInvalidArgumentWithSqlAndNoPassword) {
  ConnectOptions o;
  ASSERT_TRUE(testing::TestServerOptions(&o));
  auto c = Connection::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::string sql = "SELEC 1 /* " + o.password + " */";
  Status st = (*c)->Execute(sql);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("1064"));
  EXPECT_THAT(st.message(), HasSubstr("SQL: SELEC 1"));
  EXPECT_THAT(st.message(), Not(HasSubstr(o.password)));
  EXPECT_THAT(st.message(), HasSubstr("***"));

  Status nf = (*c)->Execute("SELECT * FROM no_such_db_x.no_such_table");
  EXPECT_EQ(nf.code(), StatusCode::kNotFound) << nf.ToString();
}

TEST(ConnectionTest, LongSqlIsTruncatedInMessages) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  std::string sql = "SELEC " + std::string(1000, 'x');
  Status st = c->Execute(sql);
  ASSERT_FALSE(st.ok());
  EXPECT_LT(st.message().size(), 800u);
  EXPECT_THAT(st.message(), HasSubstr("..."));
}

TEST(ConnectionTest, WrongPasswordIsFailedPreconditionWithoutPassword) {
  ConnectOptions o;
  ASSERT_TRUE(testing::TestServerOptions(&o));
  o.password = "definitely-wrong-" + o.password;
  auto c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition) << c.status().ToString();
  EXPECT_THAT(c.status().message(), HasSubstr("1045"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr(o.password)));
}

// A password read from an environment variable that is set but empty: the server's refusal
// is kept and the variable and its config key are named (the server only says "Access
// denied ... (using password: NO)").
TEST(ConnectionTest, RefusedEmptyPasswordFromEnvironmentNamesTheVariable) {
  auto admin = testing::ConnectTestServer();
  ASSERT_NE(admin, nullptr);
  ASSERT_TRUE(admin->Execute("CREATE OR REPLACE USER 'conn_emptypw'@'127.0.0.1' IDENTIFIED BY 'pwE'").ok());
  ConnectOptions o;
  ASSERT_TRUE(testing::TestServerOptions(&o));
  o.user = "conn_emptypw";
  o.password = "";
  o.password_env = "SLUICE_EMPTY_PW";
  o.password_env_key = "source.password_env";
  auto c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition) << c.status().ToString();
  EXPECT_THAT(c.status().message(), HasSubstr("[1045] Access denied for user 'conn_emptypw'"));
  EXPECT_THAT(c.status().message(),
              HasSubstr("the environment variable SLUICE_EMPTY_PW (source.password_env) is set but empty"));
  // A wrong, non-empty password from the same variable gets no such hint.
  o.password = "wrong";
  c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("1045"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("SLUICE_EMPTY_PW")));
  ASSERT_TRUE(admin->Execute("DROP USER 'conn_emptypw'@'127.0.0.1'").ok());
}

TEST(ConnectionTest, UnreachableServerIsUnavailable) {
  ConnectOptions o;
  ASSERT_TRUE(testing::TestServerOptions(&o));
  o.port = 1;  // nothing listens there
  o.connect_timeout_s = 2;
  auto c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  EXPECT_THAT(c.status().message(), Not(HasSubstr(o.password)));
}

TEST(ConnectionTest, KilledConnectionIsUnavailable) {
  auto victim = testing::ConnectTestServer();
  auto killer = testing::ConnectTestServer();
  ASSERT_NE(victim, nullptr);
  ASSERT_NE(killer, nullptr);
  ASSERT_TRUE(killer->Execute("KILL " + std::to_string(victim->connection_id())).ok());
  Status st = victim->Execute("SELECT 1");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
}

TEST(ErrorMappingTest, Codes) {
  EXPECT_EQ(MapMysqlErrorCode(2006), StatusCode::kUnavailable);
  EXPECT_EQ(MapMysqlErrorCode(2013), StatusCode::kUnavailable);
  EXPECT_EQ(MapMysqlErrorCode(2002), StatusCode::kUnavailable);
  EXPECT_EQ(MapMysqlErrorCode(2003), StatusCode::kUnavailable);
  EXPECT_EQ(MapMysqlErrorCode(1927), StatusCode::kUnavailable);
  EXPECT_EQ(MapMysqlErrorCode(1045), StatusCode::kFailedPrecondition);
  EXPECT_EQ(MapMysqlErrorCode(1146), StatusCode::kNotFound);
  EXPECT_EQ(MapMysqlErrorCode(1064), StatusCode::kInvalidArgument);
  // TLS: on an open session every 2026 is the network failing; at connect only its words say so.
  EXPECT_TRUE(TlsErrorIsNetworkFailure(2026, "TLS/SSL error: unexpected eof while reading", false));
  EXPECT_TRUE(TlsErrorIsNetworkFailure(2026, "TLS/SSL error: Connection timed out (110)", false));
  EXPECT_TRUE(TlsErrorIsNetworkFailure(2026, "anything", true));
  EXPECT_FALSE(TlsErrorIsNetworkFailure(2026, "TLS/SSL error: certificate verify failed", false));
  EXPECT_FALSE(TlsErrorIsNetworkFailure(2026, "SSL is required, but the server does not support it", false));
  EXPECT_FALSE(TlsErrorIsNetworkFailure(2013, "Lost connection", true));
  EXPECT_EQ(RedactSecret("a pw b pw", "pw"), "a *** b ***");
  EXPECT_EQ(RedactSecret("abc", ""), "abc");
}

TEST(ServerProbeTest, ReadsMariaDbSettings) {
  auto c = testing::ConnectTestServer();
  ASSERT_NE(c, nullptr);
  Result<ServerInfo> info = ProbeServer(*c);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->flavor, Flavor::kMariaDB);
  EXPECT_GE(info->version_major, 10u);
  EXPECT_EQ(info->server_id, 1u);
  EXPECT_TRUE(info->log_bin);
  EXPECT_EQ(info->binlog_format, "ROW");
  EXPECT_EQ(info->binlog_row_image, "FULL");
  EXPECT_EQ(info->binlog_row_metadata, "FULL");
  EXPECT_FALSE(info->binlog_checksum.empty());
  EXPECT_FALSE(info->position.empty());
  EXPECT_THAT(info->position.file, HasSubstr("mariadb-bin."));
  std::vector<std::string> warnings;
  EXPECT_TRUE(CheckReplicationReady(*info, &warnings).ok());
  EXPECT_TRUE(warnings.empty());

  Result<BinlogPosition> pos = ReadBinlogPosition(*c);
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  auto logs = ListBinaryLogs(*c);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  ASSERT_FALSE(logs->empty());
  EXPECT_EQ(logs->back().first, pos->file);
}

TEST(ServerProbeTest, ReadinessErrors) {
  ServerInfo info;
  info.flavor = Flavor::kMariaDB;
  info.log_bin = false;
  Status st = CheckReplicationReady(info);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("log_bin"));
  info.log_bin = true;
  info.binlog_format = "MIXED";
  st = CheckReplicationReady(info);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("MIXED"));
  info.binlog_format = "ROW";
  info.binlog_row_image = "MINIMAL";
  std::vector<std::string> warnings;
  EXPECT_TRUE(CheckReplicationReady(info, &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("MINIMAL"));
}

TEST(ServerProbeTest, ParsesVersions) {
  ServerInfo a;
  ParseServerVersion("10.11.19-MariaDB-0+deb12u1", &a);
  EXPECT_EQ(a.flavor, Flavor::kMariaDB);
  EXPECT_EQ(a.version_major, 10u);
  EXPECT_EQ(a.version_minor, 11u);
  EXPECT_EQ(a.version_patch, 19u);
  ServerInfo b;
  ParseServerVersion("8.0.36-28", &b);
  EXPECT_EQ(b.flavor, Flavor::kMySQL);
  EXPECT_EQ(b.version_major, 8u);
  EXPECT_EQ(b.version_patch, 36u);
  ServerInfo c;
  ParseServerVersion("5.5.5-10.6.4-MariaDB", &c);
  EXPECT_EQ(c.flavor, Flavor::kMariaDB);
  EXPECT_EQ(c.version_major, 10u);
  EXPECT_EQ(c.version_minor, 6u);
}

}  // namespace
}  // namespace sluice
