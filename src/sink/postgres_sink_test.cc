// PostgreSQL name limits (probe7 F2): what PostgreSQL keeps of a name, and the refusal of a
// name it would cut.
#include "sink/postgres_sink.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

// PostgreSQL keeps 63 bytes, cut where a UTF-8 character ends (its pg_mbcliplen): a name of
// 32 two-byte characters (64 bytes) keeps 31 of them (62 bytes), one of 21 three-byte
// characters and one more byte 63.
TEST(PostgresNames, KeptBytesCutAtACharacterBoundary) {
  EXPECT_EQ(PostgresKeptNameBytes(""), 0u);
  EXPECT_EQ(PostgresKeptNameBytes(std::string(63, 't')), 63u);
  EXPECT_EQ(PostgresKeptNameBytes(std::string(64, 't')), 63u);
  EXPECT_EQ(PostgresKeptNameBytes(std::string(200, 't')), 63u);
  std::string e32;
  for (int i = 0; i < 32; ++i) e32 += "\xc3\xa9";  // é
  EXPECT_EQ(PostgresKeptNameBytes(e32), 62u);
  EXPECT_EQ(PostgresKeptNameBytes(e32.substr(0, 62)), 62u);
  std::string k21;
  for (int i = 0; i < 21; ++i) k21 += "\xe6\xbc\xa2";  // 漢: 63 bytes, kept whole
  EXPECT_EQ(PostgresKeptNameBytes(k21), 63u);
  EXPECT_EQ(PostgresKeptNameBytes("x" + k21), 61u);  // the 22nd character would end at byte 64
  EXPECT_EQ(PostgresKeptNameBytes(std::string(62, 'x') + "\xf0\x9f\x98\x80"), 62u);  // a 4-byte one at 63
}

// Names PostgreSQL keeps for itself are refused before anything is written, with the remedy:
// a schema starting with pg_ (a source database pg_data, unmapped) and the system columns
// (ctid, xmin, ...). A column "CTID" or "oid" is an ordinary name there (PostgreSQL 12+).
TEST(PostgresNames, SystemSchemasAndColumnsAreRefusedNamingTheRemedy) {
  PostgresSinkOptions o;
  Status st = CheckPostgresNames(o, "pg_data", "t", {"id"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("sink.postgres.schemas.pg_data"), std::string::npos) << st.message();
  o.schemas["pg_data"] = "data";
  EXPECT_TRUE(CheckPostgresNames(o, "pg_data", "t", {"id"}).ok());
  for (const char* c : {"tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"}) {
    st = CheckPostgresNames(o, "d", "t", {"id", c});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c;
    EXPECT_NE(st.message().find(std::string("column ") + c + " is the name of a PostgreSQL system column"),
              std::string::npos)
        << st.message();
  }
  EXPECT_TRUE(CheckPostgresNames(o, "d", "t", {"id", "CTID", "oid", "xmin2"}).ok());
}

// Every name a table becomes is checked: the schema (mapped or not), the table, each
// column; the message names the table, the name, its length, the limit and the remedy.
// Names of up to 63 bytes are fine and mapped as before.
TEST(PostgresNames, ANameLongerThan63BytesIsRefusedNamingItsLengthAndTheLimit) {
  PostgresSinkOptions o;
  const std::string n63(63, 'n'), n64(64, 'n');
  EXPECT_TRUE(CheckPostgresNames(o, n63, n63, {"id", n63}).ok());

  Status st = CheckPostgresNames(o, "d", n64, {"id"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const std::string& word : {"`d`.`" + n64 + "`", std::string("64 bytes"), std::string("first 63 bytes"),
                                 "become " + n63 + ",", std::string("source.exclude")})
    EXPECT_NE(st.message().find(word), std::string::npos) << word << "\n" << st.message();

  st = CheckPostgresNames(o, "d", "t", {"id", n64});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("column " + n64 + " is 64 bytes long"), std::string::npos) << st.message();

  st = CheckPostgresNames(o, n64, "t", {"id"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("schema"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sink.postgres.schemas"), std::string::npos) << st.message();

  // Mapped: the schema's name counts, not the source database's.
  o.schemas[n64] = "short";
  EXPECT_TRUE(CheckPostgresNames(o, n64, "t", {"id"}).ok());
  o.schemas["d"] = n64 + "x";
  st = CheckPostgresNames(o, "d", "t", {"id"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("sink.postgres.schemas.d"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("65 bytes"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice
