#include "gtid/gtid_set.h"

#include <gtest/gtest.h>

namespace sluice::gtid {
namespace {

constexpr char kU1[] = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
constexpr char kU2[] = "b9b88c66-0755-11f1-9899-4a9da94c4d71";

TEST(UuidTest, RoundTrip) {
  auto u = Uuid::Parse("3E11FA47-71CA-11E1-9E33-C80AA9429562");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->ToString(), kU1);
  EXPECT_FALSE(Uuid::Parse("3e11fa47-71ca-11e1-9e33").ok());
  EXPECT_FALSE(Uuid::Parse("3e11fa4771ca-11e1-9e33-c80aa9429562-").ok());
}

TEST(MysqlGtidSetTest, ParseFormatMerge) {
  auto s = MysqlGtidSet::Parse(std::string(kU2) + ":1-2:3:7,\n" + kU1 + ":5");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->ToString(), std::string(kU1) + ":5," + kU2 + ":1-3:7");
  EXPECT_TRUE(s->Contains(Uuid::Parse(kU2).value(), "", 3));
  EXPECT_FALSE(s->Contains(Uuid::Parse(kU2).value(), "", 4));
}

TEST(MysqlGtidSetTest, Tags) {
  auto s = MysqlGtidSet::Parse(std::string(kU1) + ":1-5:Alpha:1-3:beta:9,"  + kU1 + ":alpha:4");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->ToString(), std::string(kU1) + ":1-5:alpha:1-4:beta:9");
  auto u = Uuid::Parse(kU1).value();
  EXPECT_TRUE(s->Contains(u, "ALPHA", 4));
  EXPECT_FALSE(s->Contains(u, "beta", 4));
  EXPECT_FALSE(MysqlGtidSet::Parse(std::string(kU1) + ":1tag:1").ok());
  EXPECT_FALSE(MysqlGtidSet::Parse(std::string(kU1) + ":5-3").ok());
  EXPECT_FALSE(MysqlGtidSet::Parse(std::string(kU1) + ":0").ok());
}

TEST(MysqlGtidSetTest, AddAndContainsAll) {
  MysqlGtidSet a;
  auto u = Uuid::Parse(kU1).value();
  a.Add(u, "", 1);
  a.Add(u, "", 3);
  EXPECT_EQ(a.ToString(), std::string(kU1) + ":1:3");
  a.Add(u, "", 2);
  EXPECT_EQ(a.ToString(), std::string(kU1) + ":1-3");
  auto b = MysqlGtidSet::Parse(std::string(kU1) + ":2-3").value();
  EXPECT_TRUE(a.ContainsAll(b));
  EXPECT_FALSE(b.ContainsAll(a));
  EXPECT_TRUE(MysqlGtidSet::Parse("").value().empty());
}

TEST(MariadbGtidListTest, ParseFormatAddContains) {
  auto l = MariadbGtidList::Parse("1-2-7, 0-1-42");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ToString(), "0-1-42,1-2-7");
  l->Add(MariadbGtid{0, 3, 43});
  EXPECT_EQ(l->ToString(), "0-3-43,1-2-7");
  EXPECT_TRUE(l->Contains(MariadbGtid{1, 9, 7}));
  EXPECT_FALSE(l->Contains(MariadbGtid{1, 2, 8}));
  EXPECT_FALSE(l->Contains(MariadbGtid{5, 2, 1}));
  EXPECT_FALSE(MariadbGtidList::Parse("0-1").ok());
  EXPECT_FALSE(MariadbGtidList::Parse("0-1-2,0-2-3").ok());
  EXPECT_TRUE(MariadbGtidList::Parse("").value().empty());
}

// The text is made per transaction while streaming, by AppendTo (to_chars, no fmt): the
// largest values of each field, and appending after text already there.
TEST(MariadbGtidListTest, AppendToLargestValues) {
  const MariadbGtid g{4294967295u, 4294967295u, 18446744073709551615ull};
  EXPECT_EQ(g.ToString(), "4294967295-4294967295-18446744073709551615");
  auto l = MariadbGtidList::Parse("4294967295-1-18446744073709551615,0-0-0");
  ASSERT_TRUE(l.ok());
  std::string out = "x";
  l->AppendTo(&out);
  EXPECT_EQ(out, "x0-0-0,4294967295-1-18446744073709551615");
  out.clear();
  MariadbGtidList().AppendTo(&out);
  EXPECT_EQ(out, "") << "an empty list appends nothing";
}

}  // namespace
}  // namespace sluice::gtid
