#include "cli/config.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

constexpr const char* kGood = R"(
[source]
host = "127.0.0.1"
port = 3307
user = "sluice"
password_env = "SLUICE_TEST_PW"
server_id = 5401
tables = ["sakila.*"]
exclude = ["sakila.film_text"]

[snapshot]
mode = "initial"

[sink]
type = "sqlite"
path = "replica.db"
)";

TEST(ConfigTest, ParsesTheDocumentedExample) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(kGood, "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->source.port, 3307);
  EXPECT_EQ(c->source.password, "s3cret");
  EXPECT_EQ(c->source.server_id, 5401u);
  EXPECT_EQ(c->source.tables, std::vector<std::string>{"sakila.*"});
  EXPECT_EQ(c->sink.type, SinkType::kSqlite);
}

void ExpectError(const std::string& text, const std::string& needle) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(text, "sluice.toml");
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().find("s3cret"), std::string::npos);
}

TEST(ConfigTest, RejectsBadInputNamingTheKey) {
  std::string base = kGood;
  ExpectError(base + "\n[extra]\n", "extra: unknown key");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\nprt = 1\n", "source.prt: unknown key");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\nport = 99999\n", "source.port");
  ExpectError("[source]\ntables=[\"a.*\"]\n", "source.server_id");
  ExpectError("[source]\nserver_id = 1\n", "source.tables");
  ExpectError("[source]\nserver_id = 1\ntables=[\"nodot\"]\n", "not a db.table pattern");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\nhost=\"/run/mysqld/mysqld.sock\"\n",
              "unix socket");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\npassword_env=\"SLUICE_NOPE_UNSET\"\n",
              "SLUICE_NOPE_UNSET is not set");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"kafka\"\n", "sink.type");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[snapshot]\nmode=\"sometimes\"\n",
              "snapshot.mode");
  ExpectError("[source\n", "sluice.toml:");
}

}  // namespace
}  // namespace sluice::cli
