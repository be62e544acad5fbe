// TLS to the source (issue 6, item 3): every `source.tls` mode against a MariaDB of its own
// that this suite starts with a test CA and server certificate (scripts/make-test-certs.sh,
// scripts/mariadb-test-server.sh), a certificate for the wrong host name (swapped in with
// FLUSH SSL), an unrelated CA, require_secure_transport=ON, a client certificate, the plain
// test server (no TLS) for the modes that insist on TLS, and `sluice run` end to end with
// tls = "verify_identity" while the server refuses any connection without TLS.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <sqlite3.h>

#include <gmock/gmock.h>

#include "harness.h"
#include "tcp_proxy.h"

namespace sluice::testing {
namespace {

const std::string kScripts = std::string(SLUICE_SOURCE_DIR) + "/scripts";

int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    certs_ = dir_->File("certs");
    ASSERT_EQ(Shell(kScripts + "/make-test-certs.sh " + certs_), 0);
    std::filesystem::copy_file(certs_ + "/server.pem", certs_ + "/live.pem");
    std::filesystem::copy_file(certs_ + "/server.key", certs_ + "/live.key");
    ASSERT_EQ(Shell(kScripts + "/mariadb-test-server.sh start " + dir_->File("srv") +
                    " --ssl-ca=" + certs_ + "/ca.pem --ssl-cert=" + certs_ +
                    "/live.pem --ssl-key=" + certs_ + "/live.key >/dev/null"),
              0);
    auto env = ReadEnvFile(dir_->File("srv/env"));
    server_ = new ConnectOptions();
    server_->host = "127.0.0.1";
    server_->port = static_cast<uint16_t>(std::stoi(env["SLUICE_TEST_MYSQL_PORT"]));
    server_->user = env["SLUICE_TEST_MYSQL_USER"];
    server_->password = env["SLUICE_TEST_MYSQL_PASSWORD"];
    server_->connect_timeout_s = 5;
    socket_ = env["SLUICE_TEST_MYSQL_SOCKET"];
  }
  static void TearDownTestSuite() {
    if (dir_) Shell(kScripts + "/mariadb-test-server.sh stop " + dir_->File("srv"));
    delete server_;
    delete dir_;
    server_ = nullptr;
    dir_ = nullptr;
  }

  static ConnectOptions With(TlsMode mode, const std::string& ca = "") {
    ConnectOptions o = *server_;
    o.tls = mode;
    o.tls_ca = ca;
    return o;
  }
  static std::string Cert(const std::string& name) { return certs_ + "/" + name; }
  // Runs SQL as root over the unix socket (administration the tests need, no TLS involved).
  static int AdminSql(const std::string& sql) {
    return Shell("mariadb --no-defaults -uroot -S " + socket_ + " -e \"" + sql + "\"");
  }

  static TempDir* dir_;
  static std::string certs_;
  static std::string socket_;
  static ConnectOptions* server_;
};

TempDir* TlsTest::dir_ = nullptr;
std::string TlsTest::certs_;
std::string TlsTest::socket_;
ConnectOptions* TlsTest::server_ = nullptr;

// The server's own view of the session's encryption.
std::string ServerSslVersion(Connection& c) {
  auto r = c.Query("SHOW SESSION STATUS LIKE 'Ssl_version'");
  if (!r.ok() || r->rows.empty() || !r->rows[0][1]) return "?";
  return *r->rows[0][1];
}

TEST_F(TlsTest, EveryModeAgainstATlsServer) {
  struct Case {
    TlsMode mode;
    std::string ca;
    bool encrypted;
  };
  for (const Case& c : {Case{TlsMode::kDisabled, "", false}, Case{TlsMode::kPreferred, "", true},
                        Case{TlsMode::kRequired, "", true},
                        Case{TlsMode::kVerifyCa, Cert("ca.pem"), true},
                        Case{TlsMode::kVerifyIdentity, Cert("ca.pem"), true}}) {
    SCOPED_TRACE(std::string(TlsModeName(c.mode)));
    auto conn = Connection::Connect(With(c.mode, c.ca));
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    Connection& k = **conn;
    if (c.encrypted) {
      EXPECT_FALSE(k.tls_cipher().empty());
      EXPECT_EQ(k.tls_version(), ServerSslVersion(k));
      EXPECT_THAT(k.DescribeTls(), ::testing::StartsWith("TLSv1."));
    } else {
      EXPECT_EQ(k.tls_cipher(), "");
      EXPECT_EQ(ServerSslVersion(k), "");
      EXPECT_EQ(k.DescribeTls(), "no TLS");
    }
  }
}

TEST_F(TlsTest, CertificateFromAnotherCaFailsVerificationClearly) {
  for (TlsMode mode : {TlsMode::kVerifyCa, TlsMode::kVerifyIdentity}) {
    SCOPED_TRACE(std::string(TlsModeName(mode)));
    auto conn = Connection::Connect(With(mode, Cert("other-ca.pem")));
    ASSERT_FALSE(conn.ok());
    EXPECT_EQ(conn.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(conn.status().message(), ::testing::HasSubstr("could not be verified against " +
                                                              Cert("other-ca.pem")));
    EXPECT_THAT(conn.status().message(), ::testing::HasSubstr(std::string(TlsModeName(mode))));
  }
}

TEST_F(TlsTest, WrongHostNameFailsVerifyIdentityOnly) {
  std::filesystem::copy_file(Cert("wronghost.pem"), Cert("live.pem"),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(Cert("wronghost.key"), Cert("live.key"),
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(AdminSql("FLUSH SSL"), 0);

  auto identity = Connection::Connect(With(TlsMode::kVerifyIdentity, Cert("ca.pem")));
  auto ca_only = Connection::Connect(With(TlsMode::kVerifyCa, Cert("ca.pem")));

  std::filesystem::copy_file(Cert("server.pem"), Cert("live.pem"),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(Cert("server.key"), Cert("live.key"),
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(AdminSql("FLUSH SSL"), 0);

  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(identity.status().message(),
              ::testing::HasSubstr("the server certificate is not issued for host '127.0.0.1'"));
  EXPECT_TRUE(ca_only.ok()) << ca_only.status().ToString();  // the chain itself is fine
}

TEST_F(TlsTest, RequireSecureTransportWorksWithTlsAndExplainsWithout) {
  ASSERT_EQ(AdminSql("SET GLOBAL require_secure_transport=ON"), 0);
  auto plain = Connection::Connect(With(TlsMode::kDisabled));
  auto tls = Connection::Connect(With(TlsMode::kPreferred));
  ASSERT_EQ(AdminSql("SET GLOBAL require_secure_transport=OFF"), 0);

  ASSERT_FALSE(plain.ok());
  EXPECT_THAT(plain.status().message(), ::testing::HasSubstr("require_secure_transport=ON"));
  EXPECT_THAT(plain.status().message(), ::testing::HasSubstr("source.tls = \"disabled\""));
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_FALSE((*tls)->tls_cipher().empty());
}

TEST_F(TlsTest, ClientCertificateForAUserThatRequiresX509) {
  ASSERT_EQ(AdminSql("CREATE OR REPLACE USER 'x509user'@'127.0.0.1' IDENTIFIED BY 'x509pw' "
                     "REQUIRE X509"),
            0);
  ConnectOptions o = With(TlsMode::kVerifyIdentity, Cert("ca.pem"));
  o.user = "x509user";
  o.password = "x509pw";
  auto without = Connection::Connect(o);
  EXPECT_FALSE(without.ok());
  o.tls_cert = Cert("client.pem");
  o.tls_key = Cert("client.key");
  auto with = Connection::Connect(o);
  EXPECT_TRUE(with.ok()) << with.status().ToString();
}

// The shared test server has no TLS: modes that insist on TLS refuse it, "preferred" goes on
// in plain text.
TEST(TlsPlainServer, ModesThatNeedTlsRefuseAServerWithout) {
  ConnectOptions base = TestServer();
  for (TlsMode mode : {TlsMode::kRequired, TlsMode::kVerifyIdentity}) {
    SCOPED_TRACE(std::string(TlsModeName(mode)));
    ConnectOptions o = base;
    o.tls = mode;
    auto c = Connection::Connect(o);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(c.status().message(), ::testing::HasSubstr("needs TLS, but the server does not offer it"));
  }
  ConnectOptions o = base;
  o.tls = TlsMode::kPreferred;
  auto c = Connection::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->tls_cipher(), "");
}

int64_t SqliteCount(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    std::string sql = "SELECT COUNT(*) FROM \"" + table + "\"";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return n;
}

// Snapshot and streaming over TLS, with the server refusing anything else: the metadata,
// snapshot and replication connections all must be encrypted and verified.
TEST_F(TlsTest, SluiceRunStreamsOverVerifiedTls) {
  auto admin = Connection::Connect(With(TlsMode::kVerifyIdentity, Cert("ca.pem")));
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  Connection& a = **admin;
  ASSERT_TRUE(a.Execute("CREATE DATABASE IF NOT EXISTS tls_e2e").ok());
  ASSERT_TRUE(a.Execute("CREATE OR REPLACE TABLE tls_e2e.t (id INT PRIMARY KEY, v VARCHAR(20))").ok());
  ASSERT_TRUE(a.Execute("INSERT INTO tls_e2e.t VALUES (1,'a'),(2,'b'),(3,'c')").ok());
  ASSERT_EQ(AdminSql("SET GLOBAL require_secure_transport=ON"), 0);

  TempDir dir;
  std::string replica = dir.File("replica.db");
  std::string config = dir.File("sluice.toml");
  ::setenv("SLUICE_TLS_TEST_PASSWORD", server_->password.c_str(), 1);
  std::ofstream(config) << "[source]\nhost = \"127.0.0.1\"\nport = " << server_->port
                        << "\nuser = \"" << server_->user
                        << "\"\npassword_env = \"SLUICE_TLS_TEST_PASSWORD\"\nserver_id = 5470\n"
                        << "tables = [\"tls_e2e.*\"]\ntls = \"verify_identity\"\nca = \""
                        << Cert("ca.pem") << "\"\n\n[sink]\ntype = \"sqlite\"\npath = \"" << replica
                        << "\"\n";
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, ::testing::HasSubstr("TLS: TLSv1."));
  EXPECT_THAT(first.output, ::testing::HasSubstr("server certificate verified"));
  EXPECT_EQ(SqliteCount(replica, "tls_e2e.t"), 3);

  // Changes after the snapshot reach the replica through the (TLS) replication connection.
  ASSERT_TRUE(a.Execute("INSERT INTO tls_e2e.t VALUES (4,'d'),(5,'e')").ok());
  ASSERT_TRUE(a.Execute("UPDATE tls_e2e.t SET v = 'z' WHERE id = 1").ok());
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(AdminSql("SET GLOBAL require_secure_transport=OFF"), 0);
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_THAT(second.output, ::testing::HasSubstr("streamed 2 transactions"));
  EXPECT_EQ(SqliteCount(replica, "tls_e2e.t"), 5);
}

// A new user's probe (F3): a network cut under TLS stopped the run (exit 1; exit 2 during a
// snapshot) with "[2026] TLS/SSL error: unexpected eof while reading", where the same cut
// without TLS reconnects. Every connection is cut while the run streams over verified TLS:
// it reconnects and the replica gets the rows written after the cut.
TEST_F(TlsTest, ACutUnderTlsReconnects) {
  auto admin = Connection::Connect(With(TlsMode::kVerifyIdentity, Cert("ca.pem")));
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  Connection& a = **admin;
  ASSERT_TRUE(a.Execute("CREATE DATABASE IF NOT EXISTS tls_cut").ok());
  ASSERT_TRUE(a.Execute("CREATE OR REPLACE TABLE tls_cut.t (id INT PRIMARY KEY, v VARCHAR(20))").ok());
  ASSERT_TRUE(a.Execute("INSERT INTO tls_cut.t VALUES (1,'a'),(2,'b')").ok());
  TcpProxy proxy(server_->port);
  TempDir dir;
  const std::string replica = dir.File("replica.db");
  const std::string config = dir.File("sluice.toml");
  ::setenv("SLUICE_TLS_TEST_PASSWORD", server_->password.c_str(), 1);
  std::ofstream(config) << "[source]\nhost = \"127.0.0.1\"\nport = " << proxy.port() << "\nuser = \"" << server_->user
                        << "\"\npassword_env = \"SLUICE_TLS_TEST_PASSWORD\"\nserver_id = 5471\n"
                        << "tables = [\"tls_cut.*\"]\ntls = \"verify_identity\"\nca = \"" << Cert("ca.pem")
                        << "\"\nheartbeat_seconds = 1\n\n[sink]\ntype = \"sqlite\"\npath = \"" << replica << "\"\n";
  const std::string log = dir.File("run.log");
  pid_t pid = StartSluice({"run", "--config", config}, log);
  KillAtExit guard{&pid};
  ASSERT_TRUE(WaitForLog(log, "streaming from", pid, std::chrono::seconds(60))) << ReadFile(log);
  ASSERT_TRUE(a.Execute("INSERT INTO tls_cut.t VALUES (3,'c')").ok());
  for (int i = 0; i < 100 && SqliteCount(replica, "tls_cut.t") < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GT(proxy.ResetAll(), 0);
  ASSERT_TRUE(a.Execute("INSERT INTO tls_cut.t VALUES (4,'d'),(5,'e')").ok());
  for (int i = 0; i < 300 && SqliteCount(replica, "tls_cut.t") < 5; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(SqliteCount(replica, "tls_cut.t"), 5) << ReadFile(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid), 0) << ReadFile(log);
  pid = 0;
  EXPECT_THAT(ReadFile(log), ::testing::HasSubstr("reconnected"));
}

}  // namespace
}  // namespace sluice::testing
