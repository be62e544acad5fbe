// HandoffRule: which stream changes the per-range snapshot copy already holds. The locator
// here stands in for the server (integer keys compared in the test only).
#include "pipeline/handoff_rule.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

BinlogPosition At(uint64_t pos) { return {"bin.000001", pos}; }

std::shared_ptr<const TableSchema> Schema() {
  auto s = std::make_shared<TableSchema>();
  s->db = "d";
  s->table = "t";
  s->columns = {ColumnDesc{.name = "id", .data_type = "int"}, ColumnDesc{.name = "v", .data_type = "int"}};
  s->primary_key = {0};
  return s;
}

Row R(int64_t id, int64_t v) { return {Value::Int(id), Value::Int(v)}; }

RowChange Change(Op op, Row before, Row after, uint64_t pos) {
  RowChange c;
  c.op = op;
  c.table = Schema();
  c.before = std::move(before);
  c.after = std::move(after);
  c.source.file = "bin.000001";
  c.source.pos = pos;
  return c;
}

// Keys <= 100 read at 1000, keys in (100, 200] at 2000, the rest at 1500.
HandoffRule Rule(int* asked) {
  std::map<std::string, std::vector<KeyPointPiece>> pieces;
  pieces["d.t"] = {{{"100"}, At(1000)}, {{"200"}, At(2000)}, {{}, At(1500)}};
  return HandoffRule(pieces, [asked](const TableSchema&, const std::vector<std::string>& key,
                                     const std::vector<std::vector<std::string>>& ends) -> Result<size_t> {
    ++*asked;
    int64_t k = std::stoll(key[0]);
    for (size_t i = 0; i < ends.size(); ++i)
      if (ends[i].empty() || k <= std::stoll(ends[i][0])) return i;
    return Status::Internal("past the end");
  });
}

TEST(HandoffRuleTest, BeforeEarliestDropsAfterLatestAppliesWithoutAsking) {
  int asked = 0;
  HandoffRule rule = Rule(&asked);
  EXPECT_EQ(rule.Quick("d.t", At(999)), HandoffRule::Verdict::kDrop);
  EXPECT_EQ(rule.Quick("d.t", At(1000)), HandoffRule::Verdict::kAskServer);
  EXPECT_EQ(rule.Quick("d.t", At(2000)), HandoffRule::Verdict::kApply);
  EXPECT_EQ(rule.Quick("other.t", At(1)), HandoffRule::Verdict::kApply);
  std::vector<RowChange> changes = {Change(Op::kCreate, {}, R(5, 1), 900),
                                    Change(Op::kCreate, {}, R(150, 1), 2100)};
  ASSERT_TRUE(rule.Filter(&changes).ok());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].after[0], Value::Int(150));
  EXPECT_EQ(asked, 0);
}

TEST(HandoffRuleTest, BetweenPointsEachKeyIsJudgedByItsOwnPiece) {
  int asked = 0;
  HandoffRule rule = Rule(&asked);
  std::vector<RowChange> changes = {
      Change(Op::kCreate, {}, R(50, 1), 1200),    // piece 0 read at 1000: apply
      Change(Op::kCreate, {}, R(150, 1), 1200),   // piece 1 read at 2000: in the copy, drop
      Change(Op::kDelete, R(300, 1), {}, 1200),   // piece 2 read at 1500: drop
      Change(Op::kDelete, R(300, 1), {}, 1600),   // piece 2 at 1600: apply
  };
  ASSERT_TRUE(rule.Filter(&changes).ok());
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].after[0], Value::Int(50));
  EXPECT_EQ(changes[1].op, Op::kDelete);
  EXPECT_EQ(changes[1].source.pos, 1600u);
  EXPECT_EQ(asked, 4);
}

TEST(HandoffRuleTest, KeyChangeIsADeleteAndAnInsertEachJudgedAlone) {
  int asked = 0;
  HandoffRule rule = Rule(&asked);
  std::vector<RowChange> changes = {
      // 50 -> 150 at 1200: old key's piece (1000) applies, new key's (2000) has it: delete 50.
      Change(Op::kUpdate, R(50, 1), R(150, 1), 1200),
      // 150 -> 50 at 1300: old key's piece (2000) does not apply, new key's does: insert 50.
      Change(Op::kUpdate, R(150, 2), R(50, 2), 1300),
      // 150 -> 160 at 1400: neither applies.
      Change(Op::kUpdate, R(150, 3), R(160, 3), 1400),
      // 60 -> 70 at 1400: both apply; stays an update.
      Change(Op::kUpdate, R(60, 4), R(70, 4), 1400),
  };
  ASSERT_TRUE(rule.Filter(&changes).ok());
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].op, Op::kDelete);
  EXPECT_EQ(changes[0].before[0], Value::Int(50));
  EXPECT_TRUE(changes[0].after.empty());
  EXPECT_EQ(changes[1].op, Op::kCreate);
  EXPECT_EQ(changes[1].after[0], Value::Int(50));
  EXPECT_TRUE(changes[1].before.empty());
  EXPECT_EQ(changes[2].op, Op::kUpdate);
}

TEST(HandoffRuleTest, OnePointNeedsNoRuleAndAMissingKeyIsAnError) {
  int asked = 0;
  std::map<std::string, std::vector<KeyPointPiece>> one;
  one["d.t"] = {{{"100"}, At(1000)}, {{}, At(1000)}};
  HandoffRule same(one, [&](auto&, auto&, auto&) -> Result<size_t> { ++asked; return size_t{0}; });
  EXPECT_TRUE(same.empty());

  HandoffRule rule = Rule(&asked);
  std::vector<RowChange> changes = {Change(Op::kCreate, {}, {Value::Absent(), Value::Int(1)}, 1200)};
  Status st = rule.Filter(&changes);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
}

}  // namespace
}  // namespace sluice
