#include "cli/config.h"
#include "cli/run.h"
#include "cli/table_config.h"

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
  EXPECT_FALSE(c->sink.drop_tables);
  auto d = ParseConfig(std::string(kGood) + "drop_tables = \"drop\"\n", "sluice.toml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->sink.drop_tables);
}

void ExpectError(const std::string& text, const std::string& needle) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(text, "sluice.toml");
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().find("s3cret"), std::string::npos);
}

// sink.nats.subject_prefix is the first token(s) of every subject and of the stream's
// "<prefix>.>": a wildcard in it published to subjects no subscriber can address exactly
// ("a.*" gave a.*.vf.nums, although a name never adds a wildcard), an empty one failed at
// stream creation with a bare "Error (code 10052)" (a new user's probe). Refused when the
// config is loaded (exit code 2), naming the key; so is a stream name NATS cannot hold.
TEST(ConfigTest, NatsSubjectPrefixAndStreamMustMakeValidSubjectsAndNames) {
  const std::string nats = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"nats\"\n[sink.nats]\n";
  for (const char* bad : {"a.*", "*", "a.>", ">", "a b", "a\\t", "", ".a", "a.", "a..b"})
    ExpectError(nats + fmt::format("subject_prefix = \"{}\"\n", bad), "sink.nats.subject_prefix");
  ExpectError(nats + "subject_prefix = \"a.*\"\n", "wildcard");
  ExpectError(nats + "subject_prefix = \"\"\n", "empty");
  ExpectError(nats + "subject_prefix = \"a..b\"\n", "empty token");
  for (const char* bad : {"a.b", "A B", "a*", "a>", "a/b", ""})
    ExpectError(nats + fmt::format("stream = \"{}\"\n", bad), "sink.nats.stream");
  for (const char* good : {"sluice", "a.b", "prod-cdc.v1", "a_b"}) {
    auto c = ParseConfig(nats + fmt::format("subject_prefix = \"{}\"\nstream = \"S-1_x\"\n", good), "sluice.toml");
    EXPECT_TRUE(c.ok()) << good << ": " << c.status().ToString();
  }
  // The checkpoint's key-value bucket: letters, digits, '_' and '-' only (JetStream refused it
  // at the first checkpoint otherwise), also the default "<stream>_state".
  for (const char* bad : {"a.b", "a b", "", "a$", "a/b"})
    ExpectError(nats + fmt::format("kv_bucket = \"{}\"\n", bad), "sink.nats.kv_bucket");
  ExpectError(nats + "stream = \"a$b\"\n", "sink.nats.stream: \"a$b\" makes the default kv_bucket \"a$b_state\"");
  EXPECT_TRUE(ParseConfig(nats + "stream = \"a$b\"\nkv_bucket = \"ab_state\"\n", "sluice.toml").ok());
  EXPECT_TRUE(ParseConfig(nats + "kv_bucket = \"My-bucket_1\"\n", "sluice.toml").ok());
}

// A PostgreSQL conninfo libpq cannot parse, or a NATS url with another scheme than nats://
// or tls://, was taken for a server that is down: `run` tried 12 times over about 45 s, then
// exited 1 "Unavailable" (a new user's probe). Refused when the config is loaded (exit code
// 2), naming the key and what is wrong.
TEST(ConfigTest, SinkConnectionStringsThatCannotWorkAreRefusedAtLoad) {
  const std::string src = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n";
  const std::string pg = src + "[sink]\ntype=\"postgres\"\n[sink.postgres]\n";
  ExpectError(pg + "conninfo = \"this is = not valid ===\"\n", "sink.postgres.conninfo: ");
  ExpectError(pg + "conninfo = \"this is = not valid ===\"\n", "missing \"=\" after \"this\"");
  ExpectError(pg + "conninfo = \"host=h dbname=d bogus=1\"\n", "invalid connection option \"bogus\"");
  ExpectError(pg + "conninfo = \"host='h dbname=d\"\n", "sink.postgres.conninfo");
  ExpectError(pg + "conninfo = \"postgresql://h/d?bogus=1\"\n", "sink.postgres.conninfo");
  for (const char* good : {"host=h dbname=d", "postgresql://u@h:5433/d", "postgres://h/d", "mydb"}) {
    auto c = ParseConfig(pg + fmt::format("conninfo = \"{}\"\n", good), "sluice.toml");
    EXPECT_TRUE(c.ok()) << good << ": " << c.status().ToString();
  }
  const std::string nats = src + "[sink]\ntype=\"nats\"\n[sink.nats]\n";
  ExpectError(nats + "url = \"http://nope\"\n", "sink.nats.url: \"http://nope\"");
  ExpectError(nats + "url = \"http://nope\"\n", "nats://");
  ExpectError(nats + "url = \"nats://a:4222,https://b:4222\"\n", "\"https://b:4222\"");
  for (const char* good : {"nats://h:4222", "tls://h:4222", "h:4222", "nats://a:1,nats://b:2"}) {
    auto c = ParseConfig(nats + fmt::format("url = \"{}\"\n", good), "sluice.toml");
    EXPECT_TRUE(c.ok()) << good << ": " << c.status().ToString();
  }
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
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"pulsar\"\n", "sink.type");
  const std::string src = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n";
  ExpectError(src + "[sink]\ntype=\"kafka\"\n", "sink.kafka: required");
  ExpectError(src + "[sink]\ntype=\"kafka\"\n[sink.kafka]\n", "sink.kafka.bootstrap_servers: required");
  ExpectError(src + "[sink]\ntype=\"kafka\"\n[sink.kafka]\nbootstrap_servers=\"h:1\"\npartitons=3\n",
              "sink.kafka.partitons: unknown key");
  ExpectError(src + "[sink]\ntype=\"kafka\"\n[sink.kafka]\nbootstrap_servers=\"h:1\"\ntopic=\"x\"\n",
              "sink.kafka.topic");
  ExpectError(src + "[sink]\ntype=\"sqlite\"\n[sink.nats]\nurl=\"nats://h:1\"\n", "sink.nats: set, but");
  ExpectError(src + "[sink]\ntype=\"nats\"\n[sink.nats]\nreplicas=7\n", "sink.nats.replicas");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[snapshot]\nmode=\"sometimes\"\n",
              "snapshot.mode");
  // Every checkpoint of a snapshot holds each range's progress: thousands of ranges are refused.
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[snapshot]\nmax_ranges_per_table = 5000\n",
              "snapshot.max_ranges_per_table");
  ExpectError(base + "drop_tables = \"purge\"\n", "sink.drop_tables");
  // PostgreSQL: a database mapped onto sluice's own schema would merge a source table named
  // `checkpoint` with the checkpoint (a new user's probe: the replica held the checkpoint).
  ExpectError(src + "[sink]\ntype=\"postgres\"\n[sink.postgres]\nconninfo=\"host=h dbname=d\"\nschemas = { meta = \"_sluice\" }\n",
              "sink.postgres.schemas.meta: \"_sluice\" holds sluice's own tables");
  ExpectError("[source\n", "sluice.toml:");
  ExpectError(base + "[log]\ntimestamps = \"yes\"\n", "log.timestamps");
}

TEST(ConfigTest, TextLogLinesCarryTheTimeUnlessTurnedOff) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(kGood, "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->log.timestamps);
  c = ParseConfig(std::string(kGood) + "[log]\ntimestamps = false\n", "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->log.timestamps);
}

TEST(ConfigTest, TlsDefaultsToPreferredAndParsesEveryMode) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(kGood, "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->source.tls, TlsMode::kPreferred);
  EXPECT_FALSE(c->source.allow_cleartext_auth);
  const std::string ca = std::string(SLUICE_SOURCE_DIR) + "/README.md";  // any readable file
  for (auto [name, mode] : {std::pair{"disabled", TlsMode::kDisabled},
                            std::pair{"preferred", TlsMode::kPreferred},
                            std::pair{"required", TlsMode::kRequired},
                            std::pair{"verify_ca", TlsMode::kVerifyCa},
                            std::pair{"verify_identity", TlsMode::kVerifyIdentity}}) {
    std::string text = "[source]\nserver_id = 1\ntables=[\"a.*\"]\ntls = \"" + std::string(name) + "\"\n";
    if (mode != TlsMode::kDisabled) text += "ca = \"" + ca + "\"\ncert = \"" + ca + "\"\nkey = \"" + ca + "\"\n";
    auto p = ParseConfig(text, "sluice.toml");
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    EXPECT_EQ(p->source.tls, mode);
    auto o = SourceConnectOptions(p->source);
    EXPECT_EQ(o.tls, mode);
    if (mode != TlsMode::kDisabled) {
      EXPECT_EQ(o.tls_ca, ca);
    }
  }
  auto allow = ParseConfig("[source]\nserver_id = 1\ntables=[\"a.*\"]\nallow_cleartext_auth = true\n", "x");
  ASSERT_TRUE(allow.ok()) << allow.status().ToString();
  EXPECT_TRUE(allow->source.allow_cleartext_auth);
}

// Connection messages name the keys of the table the options came from (probe7 F8: a
// [sink.mysql] TLS refusal said "source.tls").
TEST(ConfigTest, ConnectOptionsKnowTheirConfigSection) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  auto c = ParseConfig(std::string("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype = \"mysql\"\n"
                                   "path = \"/tmp/x\"\n[sink.mysql]\nhost = \"h\"\nuser = \"u\"\n"
                                   "database = \"d\"\n"),
                       "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(SourceConnectOptions(c->source).config_section, "source");
  EXPECT_EQ(c->sink.mysql.connect.config_section, "sink.mysql");
}

TEST(ConfigTest, RejectsInconsistentTlsSettings) {
  const std::string head = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n";
  const std::string file = std::string(SLUICE_SOURCE_DIR) + "/README.md";
  ExpectError(head + "tls = \"on\"\n", "source.tls: 'on' is not one of: disabled, preferred");
  ExpectError(head + "tls = \"verify_ca\"\n", "source.ca: required with tls = \"verify_ca\"");
  ExpectError(head + "tls = \"disabled\"\nca = \"" + file + "\"\n", "ca/cert/key are set");
  ExpectError(head + "cert = \"" + file + "\"\n", "source.key: cert and key go together");
  ExpectError(head + "ca = \"/nonexistent/ca.pem\"\n", "source.ca: cannot read /nonexistent/ca.pem");
  ExpectError(head + "allow_cleartext_auth = \"yes\"\n", "source.allow_cleartext_auth: expected true or false");
}

TEST(ConfigTest, PublishingSinks) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  const std::string src = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n";
  auto k = ParseConfig(src + R"([sink]
type = "kafka"
[sink.kafka]
bootstrap_servers = "b1:9092,b2:9092"
topic_prefix = "app"
transactional_id = "sluice-1"
tombstones = false
schemas = true
partitions = 6
[sink.kafka.properties]
"security.protocol" = "ssl"
)", "sluice.toml");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->sink.type, SinkType::kKafka);
  EXPECT_EQ(k->sink.kafka.bootstrap_servers, "b1:9092,b2:9092");
  EXPECT_EQ(k->sink.kafka.transactional_id, "sluice-1");
  EXPECT_FALSE(k->sink.kafka.records.tombstones);
  EXPECT_TRUE(k->sink.kafka.records.schemas);
  EXPECT_FALSE(k->sink.kafka.records_defaults);
  EXPECT_EQ(k->sink.kafka.partitions, 6);
  ASSERT_EQ(k->sink.kafka.properties.size(), 1u);
  EXPECT_EQ(k->sink.kafka.properties[0].second, "ssl");
  EXPECT_EQ(KafkaTopicFor(k->sink.kafka, "my db", "t$1"), "app.my_db.t_1");
  auto n = ParseConfig(src + "[sink]\ntype=\"nats\"\n[sink.nats]\nurl=\"nats://a:1,nats://b:2\"\nreplicas=3\n",
                       "sluice.toml");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->sink.nats.replicas, 3);
  EXPECT_TRUE(n->sink.nats.records.tombstones);
  EXPECT_EQ(NatsSubjectFor(n->sink.nats, "shop", "a.b*"), "sluice.shop.a_b_");
}

// Per-table modes: every key parsed, defaults, strict keys and values named, keys that do not
// apply to the mode refused, and a table matched by two sections named with both.
TEST(ConfigTest, TableModes) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  std::string text = std::string(kGood) + R"(
[table."shop.orders"]
mode = "incremental"
write = "append"
cursor = "changed"
lookback = "10m"
max_rows = 500

[table."shop.log_*"]
mode = "full"

[table."shop.ref"]
mode = "snapshot_only"
write = "upsert"
)";
  auto c = ParseConfig(text, "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->tables.size(), 3u);
  const TableSection* orders = nullptr;
  for (const auto& t : c->tables)
    if (t.pattern == "shop.orders") orders = &t;
  ASSERT_NE(orders, nullptr);
  EXPECT_EQ(orders->mode, TableMode::kIncremental);
  EXPECT_EQ(orders->write, WritePolicy::kAppend);
  EXPECT_EQ(orders->cursor, "changed");
  EXPECT_EQ(orders->lookback_seconds, 600u);
  EXPECT_EQ(orders->max_rows, 500u);

  auto modes = ModesForTables(*c, {{"shop", "orders"}, {"shop", "log_2024"}, {"shop", "ref"}, {"shop", "users"}});
  ASSERT_TRUE(modes.ok()) << modes.status().ToString();
  ASSERT_EQ(modes->cdc.size(), 1u);
  EXPECT_EQ(modes->cdc[0].table, "users");  // no section: cdc, as before
  ASSERT_EQ(modes->other.size(), 3u);
  EXPECT_EQ(modes->other[1].mode, TableMode::kFull);
  EXPECT_EQ(modes->other[1].write, WritePolicy::kUpsert);  // the default
  EXPECT_EQ(modes->other[0].config_key, "table.\"shop.orders\"");
  EXPECT_TRUE(modes->unmatched.empty());
  // A section whose pattern matches no listed table (a typo) is named, not silently ignored.
  auto typo = ModesForTables(*c, {{"shop", "orders"}, {"shop", "ref"}});
  ASSERT_TRUE(typo.ok()) << typo.status().ToString();
  EXPECT_EQ(typo->unmatched, std::vector<std::string>{"table.\"shop.log_*\""});
  EXPECT_EQ(UnmatchedSectionMessage(typo->unmatched[0]),
            "[table.\"shop.log_*\"] matches no table selected by source.tables/source.exclude: it has no effect");

  auto twice = ParseConfig(std::string(kGood) + "[table.\"shop.*\"]\nmode = \"full\"\n[table.\"shop.o*\"]\nmode = \"full\"\n",
                           "sluice.toml");
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  auto clash = ModesForTables(*twice, {{"shop", "orders"}});
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("shop.orders matches both"), std::string::npos) << clash.status().ToString();

  auto with = [](const std::string& body) { return std::string(kGood) + "[table.\"shop.t\"]\n" + body; };
  ExpectError(with("mode = \"incremantal\"\n"), "table.\"shop.t\".mode: 'incremantal' is not one of");
  ExpectError(with("mode = \"incremental\"\nwrite = \"merge\"\n"), "table.\"shop.t\".write: 'merge'");
  ExpectError(with("mode = \"incremental\"\ncursr = \"x\"\n"), "table.\"shop.t\".cursr: unknown key");
  ExpectError(with("mode = \"incremental\"\nlookback = \"ten\"\n"), "table.\"shop.t\".lookback: expected seconds");
  ExpectError(with("mode = \"incremental\"\nlookback = -1\n"), "table.\"shop.t\".lookback");
  ExpectError(with("mode = \"incremental\"\nmax_rows = -5\n"), "table.\"shop.t\".max_rows");
  ExpectError(with("mode = \"incremental\"\ncursor = \"\"\n"), "table.\"shop.t\".cursor: must not be empty");
  // The same key gets the same text whichever mode it is wrong for.
  ExpectError(with("cursor = \"u\"\n"), "table.\"shop.t\".cursor: applies to mode incremental only, not cdc");
  ExpectError(with("mode = \"full\"\ncursor = \"u\"\n"),
              "table.\"shop.t\".cursor: applies to mode incremental only, not full");
  ExpectError(with("write = \"append\"\n"),
              "table.\"shop.t\".write: applies to modes incremental, full and snapshot_only, not cdc");
  ExpectError(with("mode = \"full\"\nlookback = 5\n"), "table.\"shop.t\".lookback: applies to mode incremental only");
  ExpectError(std::string(kGood) + "[table.\"nodot\"]\nmode = \"full\"\n", "table.\"nodot\": not a db.table pattern");
  ExpectError(with("mode = \"incremental\"\ncursor_time_zone = \"\"\n"),
              "table.\"shop.t\".cursor_time_zone: must not be empty");
  ExpectError(with("mode = \"full\"\ncursor_time_zone = \"+00:00\"\n"),
              "table.\"shop.t\".cursor_time_zone: applies to mode incremental only, not full");
  auto n = ParseConfig(with("mode = \"incremental\"\nlookback = 90\ncursor_time_zone = \"+00:00\"\n"), "sluice.toml");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->tables[0].lookback_seconds, 90u);
  EXPECT_EQ(n->tables[0].cursor_time_zone, "+00:00");
}

// source.server_id is the binlog stream's replica id: a config whose sections read some
// tables without the binlog may leave it out (sluice check / run refuse it once a selected
// table turns out to be cdc); one that can only be cdc may not.
TEST(ConfigTest, ServerIdOnlyRequiredWhenEveryTableCanOnlyBeCdc) {
  const std::string src = "[source]\ntables = [\"shop.*\"]\n[sink]\npath = \"r.db\"\n";
  auto no_id = ParseConfig(src + "[table.\"shop.*\"]\nmode = \"incremental\"\n", "sluice.toml");
  ASSERT_TRUE(no_id.ok()) << no_id.status().ToString();
  EXPECT_EQ(no_id->source.server_id, 0u);
  ExpectError(src, "source.server_id: missing");
  ExpectError(src + "[table.\"shop.*\"]\nmode = \"cdc\"\n", "source.server_id: missing");
}

}  // namespace
}  // namespace sluice::cli

namespace sluice::cli {
namespace {

TEST(ConfigTest, AllowInconsistentReadIsAListOfTablePatterns) {
  const std::string src = "[source]\nserver_id = 1\ntables = [\"shop.*\"]\n[sink]\npath = \"r.db\"\n";
  auto c = ParseConfig(src + "[snapshot]\nallow_inconsistent_read = [\"shop.legacy_*\"]\n", "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->snapshot.allow_inconsistent_read, std::vector<std::string>{"shop.legacy_*"});
  ExpectError(src + "[snapshot]\nallow_inconsistent_read = [\"nodot\"]\n", "snapshot.allow_inconsistent_read");
  ExpectError(src + "[snapshot]\nallow_inconsistent_read = true\n", "snapshot.allow_inconsistent_read");
}

TEST(ConfigTest, WatermarkConsistencyExcludesItsSignalTableAndTakesItsOwnReplicaId) {
  const std::string src = "[source]\nserver_id = 7\ntables = [\"shop.*\", \"sluice.*\"]\n[sink]\npath = \"r.db\"\n";
  auto exact = ParseConfig(src, "sluice.toml");
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_FALSE(exact->snapshot.watermark);
  EXPECT_TRUE(exact->source.exclude.empty());
  auto c = ParseConfig(src + "[snapshot]\nconsistency = \"watermark\"\n", "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->snapshot.watermark);
  EXPECT_EQ(c->snapshot.watermark_table, "sluice.watermarks");
  EXPECT_EQ(c->snapshot.watermark_server_id, 8u) << "source.server_id + 1";
  EXPECT_EQ(c->source.exclude, std::vector<std::string>{"sluice.watermarks"}) << "never captured, even by sluice.*";
  auto named = ParseConfig(src + "[snapshot]\nconsistency = \"watermark\"\nwatermark_table = \"ops.marks\"\n"
                                 "watermark_server_id = 99\n", "sluice.toml");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->snapshot.watermark_server_id, 99u);
  EXPECT_EQ(named->source.exclude, std::vector<std::string>{"ops.marks"});
  ExpectError(src + "[snapshot]\nconsistency = \"watermark\"\nwatermark_server_id = 7\n", "snapshot.watermark_server_id");
  ExpectError(src + "[snapshot]\nwatermark_table = \"ops.*\"\n", "snapshot.watermark_table");
  ExpectError(src + "[snapshot]\nwatermark_table = \"nodot\"\n", "snapshot.watermark_table");
  ExpectError(src + "[snapshot]\nconsistency = \"dblog\"\n", "snapshot.consistency");
}

// A section naming one table literally whose name another section's glob matches: the overlap
// is plain from the config, so loading it fails (exit code 2) with the words the run gave only
// after connecting, and before the missing server_id (no cdc table is known) is mentioned.
// A literal not selected by source.tables is no overlap (that section matches nothing).
TEST(ConfigTest, ALiteralSectionMatchedByAnotherSectionsGlobIsRefusedAtLoad) {
  setenv("SLUICE_TEST_PW", "s3cret", 1);
  const std::string source =
      "[source]\npassword_env = \"SLUICE_TEST_PW\"\ntables = [\"inc.o\"]\n[sink]\npath = \"r.db\"\n";
  const std::string sections = "[table.\"inc.o\"]\nmode = \"incremental\"\n[table.\"inc.*\"]\nmode = \"full\"\n";
  ExpectError(source + sections, "sluice.toml: table inc.o matches both [table.\"inc.*\"] and [table.\"inc.o\"]; "
                                 "make the patterns disjoint");
  auto c = ParseConfig(source + sections, "sluice.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().find("server_id"), std::string::npos) << c.status().message();
  // Not selected: the literal section has no effect, which run and check warn about.
  auto ok = ParseConfig("[source]\nserver_id = 7\npassword_env = \"SLUICE_TEST_PW\"\ntables = [\"inc.p\"]\n"
                        "[sink]\npath = \"r.db\"\n" + sections,
                        "sluice.toml");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// The error of a config that must not load, for tests that look at more than one needle.
std::string LoadError(const std::string& text) {
  auto c = ParseConfig(text, "sluice.toml");
  EXPECT_FALSE(c.ok()) << text;
  return c.ok() ? "" : c.status().message();
}

// The key=value `password=` and the URI `?password=` forms were refused, but a URI with the
// password in its userinfo loaded, and `sluice check` printed it on its sink line (probe7 F4).
// Every form libpq reads a password from is refused at load, naming the key and password_env,
// and the message does not repeat the password.
TEST(ConfigTest, PostgresConninfoNeverHoldsThePassword) {
  const std::string pg = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"postgres\"\n[sink.postgres]\n";
  for (const char* bad : {"postgresql://sluice:UriS3cret@127.0.0.1:5432/sluice", "postgres://sluice:UriS3cret@h/d",
                          "postgresql://sluice:UriS3cret@h1:1,h2:2/d?sslmode=require",
                          "host=h user=u password=UriS3cret dbname=d", "postgresql://h/d?password=UriS3cret"}) {
    const std::string e = LoadError(pg + fmt::format("conninfo = \"{}\"\n", bad));
    EXPECT_NE(e.find("sink.postgres.conninfo: must not hold the password"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("password_env"), std::string::npos) << e;
    EXPECT_EQ(e.find("UriS3cret"), std::string::npos) << e;
  }
  auto ok = ParseConfig(pg + "conninfo = \"postgresql://sluice@h:5433/d\"\n", "sluice.toml");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// [sink.nats] had no password_env: user/password could only sit in the url, which check and
// every sink warning print (probe7 F4). The url must not hold credentials (user:password@ or a
// token@); user with password_env, or token_env, take them from the environment.
TEST(ConfigTest, NatsCredentialsComeFromTheEnvironmentNotTheUrl) {
  const std::string nats = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"nats\"\n[sink.nats]\n";
  for (const char* bad : {"nats://natsuser:NatsS3cret@127.0.0.1:4222", "nats://a:1,tls://natsuser:NatsS3cret@b:2",
                          "nats://NatsS3cret@h:4222"}) {
    const std::string e = LoadError(nats + fmt::format("url = \"{}\"\n", bad));
    EXPECT_NE(e.find("sink.nats.url: holds credentials"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("password_env"), std::string::npos) << e;
    EXPECT_EQ(e.find("NatsS3cret"), std::string::npos) << e;
  }
  setenv("SLUICE_TEST_NATS_PW", "NatsS3cret", 1);
  setenv("SLUICE_TEST_NATS_TOKEN", "t0ken", 1);
  auto c = ParseConfig(nats + "url = \"nats://h:4222\"\nuser = \"natsuser\"\npassword_env = \"SLUICE_TEST_NATS_PW\"\n",
                       "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sink.nats.user, "natsuser");
  EXPECT_EQ(c->sink.nats.password, "NatsS3cret");
  auto t = ParseConfig(nats + "token_env = \"SLUICE_TEST_NATS_TOKEN\"\n", "sluice.toml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->sink.nats.token, "t0ken");
  ExpectError(nats + "password_env = \"SLUICE_TEST_NATS_PW\"\n", "sink.nats.user: required with password_env");
  ExpectError(nats + "user = \"u\"\n", "sink.nats.password_env: required with user");
  ExpectError(nats + "user = \"u\"\npassword_env = \"SLUICE_NOPE_UNSET\"\n",
              "sink.nats.password_env: environment variable SLUICE_NOPE_UNSET is not set");
  ExpectError(nats + "user = \"u\"\npassword_env = \"SLUICE_TEST_NATS_PW\"\ntoken_env = \"SLUICE_TEST_NATS_TOKEN\"\n",
              "sink.nats.token_env: ");
}

// `sasl.password` could only sit in the file ([sink.kafka.properties]), against "the password
// never sits in the file" (probe7 F4). A secret property (a name holding "password" or
// "secret", or ssl.key.pem) is refused there; [sink.kafka.properties_env] names the
// environment variable each one is read from.
TEST(ConfigTest, KafkaSecretPropertiesComeFromTheEnvironment) {
  const std::string kafka =
      "[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"kafka\"\n[sink.kafka]\nbootstrap_servers=\"b:9092\"\n";
  for (const char* key : {"sasl.password", "ssl.key.password", "ssl.keystore.password",
                          "sasl.oauthbearer.client.secret", "ssl.key.pem"}) {
    const std::string e = LoadError(kafka + fmt::format("[sink.kafka.properties]\n\"{}\" = \"KafkaS3cret\"\n", key));
    EXPECT_NE(e.find(fmt::format("sink.kafka.properties.{}: a secret", key)), std::string::npos) << e;
    EXPECT_NE(e.find("sink.kafka.properties_env"), std::string::npos) << e;
    EXPECT_EQ(e.find("KafkaS3cret"), std::string::npos) << e;
  }
  setenv("SLUICE_TEST_KAFKA_PW", "KafkaS3cret", 1);
  auto c = ParseConfig(kafka + "[sink.kafka.properties]\n\"sasl.username\" = \"sluice\"\n"
                               "[sink.kafka.properties_env]\n\"sasl.password\" = \"SLUICE_TEST_KAFKA_PW\"\n",
                       "sluice.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->sink.kafka.properties.size(), 2u);
  EXPECT_EQ(c->sink.kafka.properties[1], (std::pair<std::string, std::string>{"sasl.password", "KafkaS3cret"}));
  ExpectError(kafka + "[sink.kafka.properties_env]\n\"sasl.password\" = \"SLUICE_NOPE_UNSET\"\n",
              "sink.kafka.properties_env.sasl.password: environment variable SLUICE_NOPE_UNSET is not set");
  ExpectError(kafka + "[sink.kafka.properties_env]\n\"sasl.password\" = \"\"\n",
              "sink.kafka.properties_env.sasl.password: must not be empty");
  ExpectError(kafka + "[sink.kafka.properties]\n\"sasl.username\" = \"u\"\n[sink.kafka.properties_env]\n"
                      "\"sasl.username\" = \"SLUICE_TEST_KAFKA_PW\"\n",
              "sink.kafka.properties_env.sasl.username: also set in [sink.kafka.properties]");
}

// TOML lets a string hold U+0000; sluice hands strings to C libraries, which stop at it:
// host = "127.0.0.1\u0000evil" connected to 127.0.0.1, user = "slu\u0000ice" logged in as
// "slu" (probe7 F8). Refused at load, naming the key, wherever the string is.
TEST(ConfigTest, ANulCharacterInAStringIsRefusedNamingTheKey) {
  std::string base = kGood;
  ExpectError(base + "[metrics]\nlisten = \"127.0.0.1:9\\u0000x\"\n", "metrics.listen: holds a NUL character");
  ExpectError("[source]\nserver_id = 1\nhost = \"127.0.0.1\\u0000evil\"\ntables=[\"a.*\"]\n",
              "source.host: holds a NUL character");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\", \"b.\\u0000\"]\n", "source.tables: holds a NUL character");
  ExpectError("[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\ntype=\"postgres\"\n[sink.postgres]\n"
              "conninfo=\"host=h\"\nschemas = { a = \"x\\u0000y\" }\n",
              "sink.postgres.schemas.a: holds a NUL character");
}

// password_env = "" was taken as "no password", and the server's "Access denied (using
// password: NO)" did not say why (probe7 F8). An empty variable name is refused, naming the key.
TEST(ConfigTest, AnEmptyPasswordEnvIsRefusedNamingTheKey) {
  const std::string src = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n";
  ExpectError(src + "password_env = \"\"\n", "source.password_env: must not be empty");
  ExpectError(src + "[sink]\ntype=\"mysql\"\n[sink.mysql]\nuser=\"u\"\ndatabase=\"d\"\npassword_env = \"\"\n",
              "sink.mysql.password_env: must not be empty");
  ExpectError(src + "[sink]\ntype=\"postgres\"\n[sink.postgres]\nconninfo=\"host=h\"\npassword_env = \"\"\n",
              "sink.postgres.password_env: must not be empty");
  ExpectError(src + "[sink]\ntype=\"nats\"\n[sink.nats]\nuser=\"u\"\npassword_env = \"\"\n",
              "sink.nats.password_env: must not be empty");
}

// The replica and the checkpoint hold the source's rows and position: a file_mode that lets
// the group or others write them ("0666", "0622") was accepted silently (probe7 F8).
TEST(ConfigTest, AFileModeThatLetsOthersWriteIsRefused) {
  const std::string src = "[source]\nserver_id = 1\ntables=[\"a.*\"]\n[sink]\n";
  for (const char* bad : {"0666", "0622", "0660", "0602", "0620"})
    ExpectError(src + fmt::format("file_mode = \"{}\"\n", bad), "sink.file_mode: ");
  const std::string e = LoadError(src + "file_mode = \"0666\"\n");
  EXPECT_NE(e.find("write"), std::string::npos) << e;
  for (const char* good : {"0600", "0640", "0644", "600"}) {
    auto c = ParseConfig(src + fmt::format("file_mode = \"{}\"\n", good), "sluice.toml");
    EXPECT_TRUE(c.ok()) << good << ": " << c.status().ToString();
  }
}

}  // namespace
}  // namespace sluice::cli
