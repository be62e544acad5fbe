// Temporal decoders. Byte vectors follow the grammar in temporal.h (MySQL
// sql-common/my_time.cc); several were cross-checked against MariaDB 10.11's binlog
// (rows_test.cc holds the full live-server rows).
#include "binlog/temporal.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace sluice::binlog {
namespace {

struct Case {
  std::vector<uint8_t> bytes;
  int fsp;
  const char* want;
  const char* sql;
};

void RunCases(const char* what, const std::function<Result<std::string>(ByteReader&, int)>& f,
         const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    ByteReader r(c.bytes);
    auto got = f(r, c.fsp);
    ASSERT_TRUE(got.ok()) << what << " " << c.sql << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << what << " " << c.sql;
    EXPECT_TRUE(r.empty()) << what << " " << c.sql << " left bytes";
  }
}

TEST(Temporal, Date) {
  RunCases("DATE", [](ByteReader& r, int) { return ReadDate(r); },
      {{{0x5D, 0xD0, 0x0F}, 0, "2024-02-29", "DATE '2024-02-29'"},
       {{0x00, 0x00, 0x00}, 0, "0000-00-00", "DATE '0000-00-00'"},
       {{0x9F, 0x1F, 0x4E}, 0, "9999-12-31", "DATE '9999-12-31'"}});
}

TEST(Temporal, Time2) {
  RunCases("TIME2", ReadTime2,
      {{{0xB4, 0x6E, 0xFB}, 0, "838:59:59", "TIME '838:59:59'"},
       {{0x4B, 0x91, 0x05}, 0, "-838:59:59", "TIME '-838:59:59'"},
       {{0x80, 0x00, 0x00}, 0, "00:00:00", "TIME '00:00:00'"},
       {{0x7F, 0xFF, 0xFF}, 0, "-00:00:01", "TIME '-00:00:01'"},
       {{0x80, 0x00, 0x01, 0x32}, 1, "00:00:01.5", "TIME(1) '00:00:01.5'"},
       {{0x7F, 0xFF, 0xFE, 0xCE}, 1, "-00:00:01.5", "TIME(1) '-00:00:01.5'"},
       {{0x7F, 0xFF, 0xFE, 0xCE}, 2, "-00:00:01.50", "TIME(2) '-00:00:01.50'"},
       {{0x80, 0x00, 0x01, 0x13, 0x88}, 4, "00:00:01.5000", "TIME(4) '00:00:01.5'"},
       {{0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 6, "-00:00:00.000001", "TIME(6) '-00:00:00.000001'"},
       {{0x80, 0xC8, 0xB8, 0x0C, 0x0A, 0x00}, 5, "12:34:56.78899", "TIME(5) 12:34:56.788992"},
       {{0xB4, 0x6E, 0xFB, 0x00, 0x00, 0x00}, 6, "838:59:59.000000", "TIME(6) '838:59:59'"}});
}

TEST(Temporal, Datetime2) {
  RunCases("DATETIME2", ReadDatetime2,
      {{{0x99, 0xB2, 0xBA, 0xC8, 0xB8}, 0, "2024-02-29 12:34:56", "DATETIME '2024-02-29 12:34:56'"},
       {{0xFE, 0xF3, 0xFF, 0x7E, 0xFB}, 0, "9999-12-31 23:59:59", "DATETIME '9999-12-31 23:59:59'"},
       {{0x80, 0x00, 0x00, 0x00, 0x00}, 0, "0000-00-00 00:00:00", "DATETIME zero"},
       {{0x80, 0x00, 0x00, 0x00, 0x00, 0x00}, 1, "0000-00-00 00:00:00.0", "DATETIME(1) zero"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x46}, 1, "2024-02-29 12:34:56.7", "DATETIME(1) .7"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x46}, 2, "2024-02-29 12:34:56.70", "DATETIME(2) .7"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x00, 0x46}, 3, "2024-02-29 12:34:56.007", "DATETIME(3) .007"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x00, 0x46}, 4, "2024-02-29 12:34:56.0070", "DATETIME(4) .007"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x00, 0x00, 0x07}, 5, "2024-02-29 12:34:56.00000", "DATETIME(5) .000007 truncated"},
       {{0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0x00, 0x00, 0x07}, 6, "2024-02-29 12:34:56.000007", "DATETIME(6) .000007"},
       {{0xFE, 0xF3, 0xFF, 0x7E, 0xFB, 0x0F, 0x42, 0x3F}, 6, "9999-12-31 23:59:59.999999", "DATETIME(6) max"}});
}

TEST(Temporal, Timestamp2) {
  RunCases("TIMESTAMP2", ReadTimestamp2,
      {{{0x7F, 0xFF, 0xFF, 0xFF}, 0, "2038-01-19 03:14:07", "TIMESTAMP max"},
       {{0x65, 0xE0, 0x79, 0xF0}, 0, "2024-02-29 12:34:56", "TIMESTAMP '2024-02-29 12:34:56' UTC"},
       {{0x00, 0x00, 0x00, 0x00}, 0, "0000-00-00 00:00:00", "TIMESTAMP zero"},
       {{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, 6, "0000-00-00 00:00:00.000000", "TIMESTAMP(6) zero"},
       {{0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01}, 6, "1970-01-01 00:00:01.000001", "TIMESTAMP(6)"},
       {{0x7F, 0xFF, 0xFF, 0xFF, 0x0F, 0x42, 0x3F}, 6, "2038-01-19 03:14:07.999999", "TIMESTAMP(6) max"},
       {{0x00, 0x00, 0x00, 0x01, 0x32}, 2, "1970-01-01 00:00:01.50", "TIMESTAMP(2)"}});
}

TEST(Temporal, OldFormats) {
  {
    std::vector<uint8_t> b = {0x38, 0x30, 0x00};  // 12344 -> 01:23:44
    ByteReader r(b);
    EXPECT_EQ(*ReadOldTime(r), "01:23:44");
  }
  {
    std::vector<uint8_t> b = {0xC8, 0xCF, 0xFF};  // -12344
    ByteReader r(b);
    EXPECT_EQ(*ReadOldTime(r), "-01:23:44");
  }
  {
    uint64_t v = 20240229123456ULL;
    std::vector<uint8_t> b;
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    ByteReader r(b);
    EXPECT_EQ(*ReadOldDatetime(r), "2024-02-29 12:34:56");
  }
  {
    std::vector<uint8_t> b = {0xF0, 0x79, 0xE0, 0x65};
    ByteReader r(b);
    EXPECT_EQ(*ReadOldTimestamp(r), "2024-02-29 12:34:56");
  }
}

TEST(Temporal, PackedForJson) {
  EXPECT_EQ(FormatPackedDatetime(0x1995'1F76'1907'A120LL, 6), "2015-01-15 23:24:25.500000");
  EXPECT_EQ(FormatPackedDate(0x1995'1E00'0000'0000LL), "2015-01-15");
  EXPECT_EQ(FormatPackedTime(static_cast<int64_t>(0xFFFF'FF37'47FF'FE0CULL), 6), "-12:34:56.000500");
}

TEST(Temporal, Errors) {
  std::vector<uint8_t> b = {0x80, 0x00};
  ByteReader r(b, 77, "row image");
  auto st = ReadTime2(r, 0).status();
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("offset 77"), std::string::npos) << st.ToString();
  ByteReader r2(b);
  EXPECT_EQ(ReadDatetime2(r2, 7).status().code(), StatusCode::kCorruption);
  std::vector<uint8_t> frac = {0x99, 0xB2, 0xBA, 0xC8, 0xB8, 0xFF, 0xFF, 0xFF};  // frac > 999999
  ByteReader r3(frac);
  EXPECT_EQ(ReadDatetime2(r3, 6).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice::binlog
