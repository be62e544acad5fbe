// Clear-text authentication is refused (issue 6, item 4): a fake server on loopback greets
// the client asking for mysql_clear_password (or dialog), either in its handshake or in an
// auth-switch request, and records every byte the client sends. The password must never
// reach it unless the config explicitly allows clear-text authentication.
//
// The fake speaks just enough of the protocol: Handshake v10 (seq 0), reads the client's
// handshake response (seq 1), answers with an AuthSwitchRequest (seq 2) naming the plugin,
// reads what follows (seq 3) and ends with an ERR packet. No server installation needed.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "mysql/connection.h"
#include "mysql/fake_server_test_util.h"

namespace sluice {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using fake_server::Packet;
using fake_server::PutLe;
using fake_server::ReadPacket;
using fake_server::Send;

constexpr const char* kPassword = "Sup3r-secret-pw!";

std::string Handshake(const std::string& plugin) {
  // CLIENT_LONG_PASSWORD|FOUND_ROWS|LONG_FLAG|CONNECT_WITH_DB|PROTOCOL_41|TRANSACTIONS|
  // SECURE_CONNECTION|MULTI_STATEMENTS|MULTI_RESULTS|PLUGIN_AUTH|PLUGIN_AUTH_LENENC_DATA.
  // No CLIENT_SSL: the fake offers no TLS.
  const uint32_t caps = 0x1 | 0x2 | 0x4 | 0x8 | 0x200 | 0x2000 | 0x8000 | 0x10000 | 0x20000 |
                        0x80000 | 0x200000;
  std::string b;
  b.push_back(10);
  b += std::string("5.5.5-10.11.0-MariaDB-fake") + '\0';
  PutLe(&b, 7, 4);              // connection id
  b += "abcdefgh";              // scramble part 1
  b.push_back(0);
  PutLe(&b, caps & 0xffff, 2);
  b.push_back(45);              // utf8mb4_general_ci
  PutLe(&b, 2, 2);              // SERVER_STATUS_AUTOCOMMIT
  PutLe(&b, caps >> 16, 2);
  b.push_back(21);              // scramble length
  b += std::string(10, '\0');   // reserved
  b += std::string("ijklmnopqrst") + '\0';  // scramble part 2 (12 bytes + NUL)
  b += plugin + '\0';
  return Packet(0, b);
}

// A one-connection fake server on 127.0.0.1 that asks for `plugin` and records what the
// client sends.
class FakeServer {
 public:
  FakeServer(std::string initial_plugin, std::string switch_plugin)
      : server_([initial = std::move(initial_plugin), sw = std::move(switch_plugin)](int fd, std::string* received) {
          Serve(fd, initial, sw, received);
        }) {}
  uint16_t port() const { return server_.port(); }
  // Everything the client sent; valid after the client is done.
  std::string Received() { return server_.Received(); }

 private:
  static void Serve(int fd, const std::string& initial, const std::string& switch_plugin, std::string* received) {
    Send(fd, Handshake(initial));
    *received += ReadPacket(fd, 3000);  // handshake response
    if (!switch_plugin.empty()) {
      std::string sw;
      sw.push_back(static_cast<char>(0xfe));
      sw += switch_plugin + '\0';
      // dialog asks a question: type 4 = "last question, a password", then the prompt.
      if (switch_plugin == "dialog") sw += "\x04Password: ";
      else sw += std::string("abcdefghijklmnopqrst") + '\0';
      Send(fd, Packet(2, sw));
      *received += ReadPacket(fd, 3000);
    }
    std::string err;
    err.push_back(static_cast<char>(0xff));
    PutLe(&err, 1045, 2);
    err += "#28000Access denied (fake server)";
    Send(fd, Packet(switch_plugin.empty() ? 2 : 4, err));
    ::usleep(100 * 1000);
  }

  fake_server::LoopbackServer server_;
};

ConnectOptions FakeOptions(uint16_t port) {
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.user = "victim";
  o.password = kPassword;
  o.connect_timeout_s = 5;
  o.read_timeout_s = 5;
  o.write_timeout_s = 5;
  return o;
}

struct Case {
  const char* name;
  const char* initial;
  const char* switch_to;
};

class CleartextAuthTest : public ::testing::TestWithParam<Case> {};

TEST_P(CleartextAuthTest, PasswordNeverReachesTheServer) {
  for (TlsMode mode : {TlsMode::kPreferred, TlsMode::kRequired, TlsMode::kDisabled}) {
    FakeServer server(GetParam().initial, GetParam().switch_to);
    ConnectOptions o = FakeOptions(server.port());
    o.tls = mode;
    Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
    ASSERT_FALSE(c.ok()) << TlsModeName(mode);
    std::string got = server.Received();
    EXPECT_EQ(got.find(kPassword), std::string::npos)
        << "the password reached the fake server (tls = " << TlsModeName(mode) << ")";
    EXPECT_EQ(c.status().message().find(kPassword), std::string::npos);
    EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition) << c.status().ToString();
    // required may also refuse this server for offering no TLS, before any login is sent
    // (tls_enforce_test.cc); which check comes first depends on where the plugin is named.
    if (mode == TlsMode::kRequired)
      EXPECT_THAT(c.status().message(),
                  AnyOf(HasSubstr("clear text"), HasSubstr("needs TLS, but the server does not offer it")));
    else
      EXPECT_THAT(c.status().message(), HasSubstr("clear text")) << c.status().ToString();
  }
}

// The control: with the explicit opt-in the same fake server does receive the password,
// so the test above really exercises the clear-text path.
TEST_P(CleartextAuthTest, ExplicitOptInSendsIt) {
  FakeServer server(GetParam().initial, GetParam().switch_to);
  ConnectOptions o = FakeOptions(server.port());
  o.allow_cleartext_auth = true;
  Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
  ASSERT_FALSE(c.ok());  // the fake always ends with "Access denied"
  EXPECT_NE(server.Received().find(kPassword), std::string::npos);
  EXPECT_EQ(c.status().message().find(kPassword), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Plugins, CleartextAuthTest,
    ::testing::Values(Case{"ClearPasswordInHandshake", "mysql_clear_password", "mysql_clear_password"},
                      Case{"SwitchToClearPassword", "mysql_native_password", "mysql_clear_password"},
                      Case{"SwitchToDialog", "mysql_native_password", "dialog"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace sluice
