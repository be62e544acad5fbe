// CheckPrivileges against the live test server (issue 6, item 11), with users that lack one
// privilege each. Fails, never skips, when SLUICE_TEST_MYSQL_* is unset.
#include "mysql/server_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mysql/testing_env.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

const ServerCheck* Find(const std::vector<ServerCheck>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

class PrivilegeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = testing::ConnectTestServer();
    ASSERT_NE(admin_, nullptr);
    for (const char* sql : {
             "CREATE DATABASE IF NOT EXISTS probe_db",
             "CREATE TABLE IF NOT EXISTS probe_db.t (id INT PRIMARY KEY)",
             "CREATE TABLE IF NOT EXISTS probe_db.u (id INT PRIMARY KEY)",
             "CREATE OR REPLACE USER 'probe_norepl'@'127.0.0.1' IDENTIFIED BY 'pw1'",
             "GRANT SELECT ON probe_db.* TO 'probe_norepl'@'127.0.0.1'",
             "CREATE OR REPLACE USER 'probe_nosel'@'127.0.0.1' IDENTIFIED BY 'pw2'",
             "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'probe_nosel'@'127.0.0.1'",
             "CREATE OR REPLACE USER 'probe_insert'@'127.0.0.1' IDENTIFIED BY 'pw3'",
             "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'probe_insert'@'127.0.0.1'",
             "GRANT INSERT ON probe_db.u TO 'probe_insert'@'127.0.0.1'",
             "GRANT SELECT ON probe_db.t TO 'probe_insert'@'127.0.0.1'",
         })
      ASSERT_TRUE(admin_->Execute(sql).ok()) << sql;
  }
  std::vector<ServerCheck> Checks(const std::string& user, const std::string& pw,
                                  const std::vector<std::string>& patterns) {
    ConnectOptions o;
    EXPECT_TRUE(testing::TestServerOptions(&o));
    o.user = user;
    o.password = pw;
    auto c = Connection::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {};
    auto r = CheckPrivileges(**c, patterns);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<ServerCheck>{};
  }
  std::unique_ptr<Connection> admin_;
};

TEST_F(PrivilegeCheckTest, TheTestUserHasEverything) {
  ConnectOptions o;
  ASSERT_TRUE(testing::TestServerOptions(&o));
  auto r = CheckPrivileges(*admin_, {"probe_db.*"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  for (const auto& c : *r) EXPECT_TRUE(c.passed) << c.name << ": " << c.detail;
  EXPECT_TRUE(FailedChecks(*r).ok());
}

TEST_F(PrivilegeCheckTest, MissingReplicationPrivilegesAreNamedWithTheFix) {
  auto checks = Checks("probe_norepl", "pw1", {"probe_db.*"});
  const ServerCheck* slave = Find(checks, "REPLICATION SLAVE privilege");
  ASSERT_NE(slave, nullptr);
  EXPECT_FALSE(slave->passed);
  EXPECT_EQ(slave->fix, "GRANT REPLICATION SLAVE ON *.* TO 'probe_norepl'@'127.0.0.1'");
  const ServerCheck* client = Find(checks, "REPLICATION CLIENT privilege");
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->passed);
  EXPECT_THAT(client->fix, HasSubstr("BINLOG MONITOR"));
  const ServerCheck* sel = Find(checks, "SELECT on probe_db.*");
  ASSERT_NE(sel, nullptr);
  EXPECT_TRUE(sel->passed) << sel->detail;
  Status st = FailedChecks(checks);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("REPLICATION SLAVE privilege"));
  EXPECT_THAT(st.message(), ::testing::Not(HasSubstr("pw1")));
}

TEST_F(PrivilegeCheckTest, NoSelectIsNamedNotNoTable) {
  auto checks = Checks("probe_nosel", "pw2", {"probe_db.*", "probe_db.t"});
  EXPECT_TRUE(Find(checks, "REPLICATION SLAVE privilege")->passed);
  EXPECT_TRUE(Find(checks, "REPLICATION CLIENT privilege")->passed);
  const ServerCheck* all = Find(checks, "SELECT on probe_db.*");
  ASSERT_NE(all, nullptr);
  EXPECT_FALSE(all->passed);
  EXPECT_THAT(all->detail, HasSubstr("no privilege on database probe_db"));
  EXPECT_EQ(all->fix, "GRANT SELECT ON `probe_db`.* TO 'probe_nosel'@'127.0.0.1'");
  EXPECT_FALSE(Find(checks, "SELECT on probe_db.t")->passed);
}

TEST_F(PrivilegeCheckTest, VisibleTableWithoutSelectIsListed) {
  auto checks = Checks("probe_insert", "pw3", {"probe_db.*"});
  const ServerCheck* sel = Find(checks, "SELECT on probe_db.*");
  ASSERT_NE(sel, nullptr);
  EXPECT_FALSE(sel->passed);
  EXPECT_THAT(sel->detail, HasSubstr("no SELECT privilege on 1 of 2 table(s): probe_db.u"));
}

}  // namespace
}  // namespace sluice
