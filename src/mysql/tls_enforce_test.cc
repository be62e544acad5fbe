// TLS is enforced before the login (probe7 F1, F6): when the config demands TLS (required,
// verify_ca, verify_identity) and the server's handshake does not offer it (CLIENT_SSL unset,
// which is also what a man in the middle that strips TLS sends), nothing that holds a login
// may go out: no user name, no scramble response, and never a clear-text password after an
// auth switch to mysql_clear_password or dialog. `preferred` still falls back to plain text.
//
// The fake server on loopback speaks just enough of the protocol: a Handshake v10 (seq 0)
// without CLIENT_SSL, then, if the client answers with a handshake response (seq 1), either an
// OK (seq 2) or an AuthSwitchRequest (seq 2) to a clear-text plugin whose answer (seq 3) it
// reads before sending OK (seq 4). It records every byte the client sends.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "mysql/connection.h"
#include "mysql/fake_server_test_util.h"

// Its own namespace: the unity build puts this file next to cleartext_auth_test.cc.
namespace sluice::tls_enforce_test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using fake_server::Packet;
using fake_server::PutLe;
using fake_server::ReadPacket;
using fake_server::Send;

constexpr const char* kUser = "tls-enforce-user";
constexpr const char* kPassword = "Pl41n-t3xt-secret!";

// A MariaDB 10.11 greeting with every usual capability except CLIENT_SSL (0x800).
std::string HandshakeWithoutTls() {
  // LONG_PASSWORD|FOUND_ROWS|LONG_FLAG|CONNECT_WITH_DB|NO_SCHEMA|COMPRESS|ODBC|LOCAL_FILES|
  // IGNORE_SPACE|PROTOCOL_41|INTERACTIVE|TRANSACTIONS|SECURE_CONNECTION|MULTI_STATEMENTS|
  // MULTI_RESULTS|PS_MULTI_RESULTS|PLUGIN_AUTH|CONNECT_ATTRS|PLUGIN_AUTH_LENENC_DATA|
  // SESSION_TRACK|DEPRECATE_EOF.
  const uint32_t caps = 0xf7ff & ~0x800u;
  const uint32_t caps_high = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x20 | 0x80 | 0x100;
  std::string b;
  b.push_back(10);
  b += std::string("5.5.5-10.11.19-MariaDB-fake") + '\0';
  PutLe(&b, 42, 4);   // connection id
  b += "abcdefgh";    // scramble, first 8 bytes
  b.push_back(0);
  PutLe(&b, caps & 0xffff, 2);
  b.push_back(45);    // utf8mb4_general_ci
  PutLe(&b, 2, 2);    // SERVER_STATUS_AUTOCOMMIT
  PutLe(&b, caps_high, 2);
  b.push_back(21);    // scramble length
  b += std::string(6, '\0');
  PutLe(&b, 0, 4);    // MariaDB extended capabilities
  b += std::string("ijklmnopqrst") + '\0';
  b += std::string("mysql_native_password") + '\0';
  return Packet(0, b);
}

// One connection on 127.0.0.1: greets without TLS and accepts whatever login it gets, after
// an auth switch to `switch_plugin` unless that is empty. With `chunk` > 0 the greeting goes
// out in pieces of that many bytes, a few milliseconds apart.
class NoTlsServer {
 public:
  explicit NoTlsServer(std::string switch_plugin, size_t chunk = 0)
      : server_([sw = std::move(switch_plugin), chunk](int fd, std::string* received) { Serve(fd, sw, chunk, received); }) {}
  uint16_t port() const { return server_.port(); }
  // Every byte the client sent; waits until the fake is done.
  std::string Received() { return server_.Received(); }

 private:
  static void Serve(int fd, const std::string& switch_plugin, size_t chunk, std::string* received) {
    std::string greeting = HandshakeWithoutTls();
    if (chunk == 0) {
      Send(fd, greeting);
    } else {
      for (size_t i = 0; i < greeting.size(); i += chunk) {
        Send(fd, greeting.substr(i, chunk));
        ::usleep(5 * 1000);
      }
    }
    std::string login = ReadPacket(fd, 3000);
    *received += login;
    if (login.size() >= 4) {
      uint8_t seq = static_cast<uint8_t>(login[3]) + 1;
      if (!switch_plugin.empty()) {
        std::string sw;
        sw.push_back(static_cast<char>(0xfe));
        sw += switch_plugin + '\0';
        // dialog asks a question: type 4 = "last question, a password", then the prompt.
        if (switch_plugin == "dialog") sw += "\x04Password: ";
        else sw += std::string("abcdefghijklmnopqrst") + '\0';
        Send(fd, Packet(seq, sw));
        std::string answer = ReadPacket(fd, 3000);
        *received += answer;
        seq = answer.size() >= 4 ? static_cast<uint8_t>(answer[3]) + 1 : seq + 2;
      }
      Send(fd, Packet(seq, std::string("\x00\x00\x00\x02\x00\x00\x00", 7)));
      // Whatever follows (queries, COM_QUIT) is recorded too.
      *received += ReadPacket(fd, 500);
    }
    ::usleep(50 * 1000);
  }

  fake_server::LoopbackServer server_;
};

ConnectOptions FakeOptions(uint16_t port, TlsMode mode) {
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.user = kUser;
  o.password = kPassword;
  o.connect_timeout_s = 5;
  o.read_timeout_s = 5;
  o.write_timeout_s = 5;
  o.tls = mode;
  // Never read: the fake offers no TLS, so no TLS session starts.
  if (TlsVerifiesServer(mode)) o.tls_ca = "/nonexistent/sluice-test-ca.pem";
  return o;
}

std::string Name(TlsMode m) { return std::string(TlsModeName(m)); }

TEST(TlsEnforceTest, ModesThatNeedTlsSendNoLoginToAServerWithoutTls) {
  for (TlsMode mode : {TlsMode::kRequired, TlsMode::kVerifyCa, TlsMode::kVerifyIdentity}) {
    for (const char* plugin : {"mysql_clear_password", "dialog", ""}) {
      SCOPED_TRACE(Name(mode) + ", auth switch to '" + plugin + "'");
      NoTlsServer server(plugin);
      Result<std::unique_ptr<Connection>> c = Connection::Connect(FakeOptions(server.port(), mode));
      ASSERT_FALSE(c.ok());
      std::string got = server.Received();
      EXPECT_EQ(got.find(kPassword), std::string::npos) << "the password itself went out";
      EXPECT_EQ(got.find(kUser), std::string::npos) << "the login (user name) went out";
      // Not even a handshake response without a user: the client closes after the greeting.
      EXPECT_THAT(got, IsEmpty());
      EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition) << c.status().ToString();
      EXPECT_THAT(c.status().message(),
                  HasSubstr("source.tls = " + Name(mode) + " needs TLS, but the server does not offer it"));
      EXPECT_THAT(c.status().message(), Not(HasSubstr(kPassword)));
    }
  }
}

// The greeting's capability flags may arrive in several reads.
TEST(TlsEnforceTest, GreetingInPiecesIsStillChecked) {
  for (size_t chunk : {1, 7, 20}) {
    SCOPED_TRACE(chunk);
    NoTlsServer server("mysql_clear_password", chunk);
    Result<std::unique_ptr<Connection>> c =
        Connection::Connect(FakeOptions(server.port(), TlsMode::kRequired));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(server.Received(), IsEmpty());
    EXPECT_THAT(c.status().message(), HasSubstr("needs TLS, but the server does not offer it"));
  }
}

// preferred keeps its documented fallback: plain text when the server offers no TLS...
TEST(TlsEnforceTest, PreferredFallsBackToPlainText) {
  NoTlsServer server("");
  Result<std::unique_ptr<Connection>> c =
      Connection::Connect(FakeOptions(server.port(), TlsMode::kPreferred));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->tls_cipher(), "");
  c->reset();
  EXPECT_THAT(server.Received(), HasSubstr(kUser));
}

// ... but never hands the password itself to a clear-text plugin there.
TEST(TlsEnforceTest, PreferredWithoutTlsRefusesClearTextPlugins) {
  for (const char* plugin : {"mysql_clear_password", "dialog"}) {
    SCOPED_TRACE(plugin);
    NoTlsServer server(plugin);
    Result<std::unique_ptr<Connection>> c =
        Connection::Connect(FakeOptions(server.port(), TlsMode::kPreferred));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(server.Received().find(kPassword), std::string::npos);
    EXPECT_THAT(c.status().message(), HasSubstr("clear text"));
  }
}

// Messages name the config table the options came from (probe7 F8): a MySQL destination's
// refusal speaks of sink.mysql.tls, never of source.tls.
TEST(TlsEnforceTest, MessagesNameTheConfigSection) {
  {
    NoTlsServer server("");
    ConnectOptions o = FakeOptions(server.port(), TlsMode::kVerifyCa);
    o.config_section = "sink.mysql";
    Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(),
                HasSubstr("sink.mysql.tls = verify_ca needs TLS, but the server does not offer it"));
    EXPECT_THAT(c.status().message(), HasSubstr("lower sink.mysql.tls"));
    EXPECT_THAT(c.status().message(), Not(HasSubstr("source.")));
  }
  {
    NoTlsServer server("mysql_clear_password");
    ConnectOptions o = FakeOptions(server.port(), TlsMode::kPreferred);
    o.config_section = "sink.mysql";
    Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr("sink.mysql.allow_cleartext_auth"));
    EXPECT_THAT(c.status().message(), Not(HasSubstr("source.")));
  }
}

}  // namespace
}  // namespace sluice::tls_enforce_test
