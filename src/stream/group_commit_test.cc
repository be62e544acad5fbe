// Group commit never ends a sink transaction inside a source transaction (issue 8): synthetic
// MariaDB binlog events (an XA transaction prepared and committed around others, a transaction
// spanning a ROTATE, a transaction larger than the memory cap applied in parts, one of those
// rolled back) go through the real TransactionAssembler and the Streamer's sink writer
// (WriteGroups) into a sink that records every commit; each commit must hold whole source
// transactions only, and its checkpoint must be a transaction boundary.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "checkpoint/checkpoint.h"
#include "stream/streamer.h"
#include "stream/transaction_assembler.h"

namespace sluice {

class StreamerTestPeer {
 public:
  static Status WriteGroups(Streamer& s, Sink& sink, BoundedQueue<Streamer::SinkItem>& q) {
    return s.WriteGroups(sink, q);
  }
  using Item = Streamer::SinkItem;
};

namespace {

using binlog::Event;

// A sink that keeps the rows of open parts and records each commit: the row ids it made
// durable and the checkpoint position it recorded.
class RecordingSink : public Sink {
 public:
  struct Commit {
    std::vector<int64_t> ids;
    BinlogPosition checkpoint;
  };
  std::vector<Commit> commits;
  std::vector<int64_t> open;  // rows of parts not committed yet
  int aborts = 0;
  bool each = true;  // CheckpointsEachTransaction: false as SQLite and JSON lines say

  bool CheckpointsEachTransaction() const override { return each; }

  Result<std::optional<std::string>> LoadCheckpoint() override { return std::optional<std::string>(); }
  Status PrepareTable(const TableSchema&) override { return Status::Ok(); }
  Status Apply(const Transaction& t) override { return ApplyGroup({t}); }
  Status ApplyGroup(const std::vector<Transaction>& group) override {
    Commit c;
    c.ids = std::move(open);
    open.clear();
    std::string cp;
    for (const Transaction& t : group) {
      for (const RowChange& r : t.changes) c.ids.push_back(r.after.at(0).i);
      if (!t.checkpoint.empty()) cp = WholeCheckpoint(t);
    }
    auto parsed = Checkpoint::FromJson(cp);
    if (!parsed.ok()) return parsed.status();
    c.checkpoint = parsed->stream_start;
    commits.push_back(std::move(c));
    return Status::Ok();
  }
  bool SupportsParts() const override { return true; }
  Status ApplyPart(const Transaction& part) override {
    for (const RowChange& r : part.changes) open.push_back(r.after.at(0).i);
    return Status::Ok();
  }
  void AbortParts() override {
    open.clear();
    ++aborts;
  }
  Status ResetTable(const TableSchema&, const std::string&) override { return Status::Ok(); }
  Status SaveCheckpoint(const std::string&) override { return Status::Ok(); }
  Status Flush() override { return Status::Ok(); }
};

// Builds a MariaDB event sequence with known positions.
class Binlog {
 public:
  Binlog() {
    map_ = std::make_shared<binlog::TableMap>();
    map_->table_id = 7;
    map_->db = "shop";
    map_->table = "t";
    map_->column_types = {binlog::ColumnType::MYSQL_TYPE_LONG};
    map_->column_meta = {0};
    map_->nullable = {false};
    auto t = std::make_shared<TableSchema>();
    t->db = "shop";
    t->table = "t";
    ColumnDesc c;
    c.name = "id";
    c.SetType("int");
    t->columns.push_back(c);
    t->primary_key = {0};
    schema_ = t;
  }
  TableSchemaPtr schema() const { return schema_; }

  void Gtid(uint64_t seq, uint8_t flags = 0) {
    binlog::MariadbGtidEvent g;
    g.seq_no = seq;
    g.server_id = 1;
    g.flags = flags;
    Add(std::move(g));
  }
  void Query(std::string q) {
    binlog::QueryEvent e;
    e.schema = "shop";
    e.query = std::move(q);
    Add(std::move(e));
  }
  void Rows(std::vector<int64_t> ids) {
    Add(binlog::TableMapEvent{map_});
    std::string& body = bodies_.emplace_back();
    for (int64_t id : ids) {
      body.push_back('\0');  // null bitmap: the one column is not NULL
      for (int k = 0; k < 4; ++k) body.push_back(static_cast<char>((id >> (8 * k)) & 0xff));
    }
    binlog::RowsEvent r;
    r.kind = binlog::RowsKind::kWrite;
    r.table_id = 7;
    r.flags = 1;
    r.column_count = 1;
    r.present_after = {true};
    r.body = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    Add(std::move(r));
  }
  // Returns the end position of the XID event (the boundary after the transaction).
  BinlogPosition Xid() {
    Add(binlog::XidEvent{1});
    return {file_, pos_};
  }
  // A ROTATE to `next` (what a server sends when it switches files, here inside a group).
  void Rotate(std::string next) {
    binlog::RotateEvent r;
    r.next_file = next;
    r.position = 4;
    Add(std::move(r));
    file_ = std::move(next);
    pos_ = 4;
  }
  BinlogPosition here() const { return {file_, pos_}; }
  std::deque<Event>& events() { return events_; }

 private:
  template <typename Body>
  void Add(Body body) {
    Event e;
    e.file = file_;
    e.pos = pos_;
    e.end_pos = pos_ + 100;
    e.header.server_id = 1;
    e.header.timestamp = 1700000000;
    e.body = std::move(body);
    if (std::holds_alternative<binlog::RotateEvent>(e.body)) e.end_pos = 0;  // moves by itself
    events_.push_back(std::move(e));
    pos_ += 100;
  }
  std::string file_ = "bin.000001";
  uint64_t pos_ = 4;
  std::deque<Event> events_;
  std::deque<std::string> bodies_;
  std::shared_ptr<binlog::TableMap> map_;
  TableSchemaPtr schema_;
};

struct Source {
  Binlog log;
  std::map<std::string, std::set<int64_t>> txns;  // rows of each committed source transaction
  std::set<int64_t> rolled_back;
  std::vector<BinlogPosition> boundaries;  // resume points a checkpoint may name
};

Source MakeSource() {
  Source s;
  Binlog& b = s.log;
  auto ids = [](int64_t from, int64_t to) {
    std::vector<int64_t> v;
    for (int64_t i = from; i < to; ++i) v.push_back(i);
    return v;
  };
  // T1: two rows.
  b.Gtid(1);
  b.Query("BEGIN");
  b.Rows({1, 2});
  s.boundaries.push_back(b.Xid());
  s.txns["T1"] = {1, 2};
  // T2: spans a binlog rotation (rows in both files, one group).
  b.Gtid(2);
  b.Query("BEGIN");
  b.Rows({3});
  b.Rotate("bin.000002");
  b.Rows({4});
  s.boundaries.push_back(b.Xid());
  s.txns["T2"] = {3, 4};
  // X: an XA transaction prepared now, committed after T3; while held, checkpoints stay at
  // the start of its PREPARE group.
  const BinlogPosition xa_start = b.here();
  b.Gtid(3, binlog::MariadbGtidEvent::kFlPreparedXa);
  b.Query("XA START 'x1'");
  b.Rows(ids(10, 40));
  b.Query("XA END 'x1'");
  b.Query("XA PREPARE 'x1'");
  s.boundaries.push_back(xa_start);
  // T3: larger than the cap used below: applied in parts.
  b.Gtid(4);
  b.Query("BEGIN");
  for (int k = 0; k < 10; ++k) b.Rows(ids(100 + k * 10, 110 + k * 10));
  b.Xid();
  s.txns["T3"] = {};
  for (int64_t i = 100; i < 200; ++i) s.txns["T3"].insert(i);
  b.Gtid(5, binlog::MariadbGtidEvent::kFlStandalone);
  b.Query("XA COMMIT 'x1'");
  s.boundaries.push_back(b.here());
  s.txns["X"] = {};
  for (int64_t i = 10; i < 40; ++i) s.txns["X"].insert(i);
  // T4: as large, rolled back after parts went out: none of it may be committed.
  b.Gtid(6);
  b.Query("BEGIN");
  for (int k = 0; k < 10; ++k) b.Rows(ids(200 + k * 10, 210 + k * 10));
  b.Query("ROLLBACK");
  s.boundaries.push_back(b.here());
  for (int64_t i = 200; i < 300; ++i) s.rolled_back.insert(i);
  // T5.
  b.Gtid(7);
  b.Query("BEGIN");
  b.Rows({5});
  s.boundaries.push_back(b.Xid());
  s.txns["T5"] = {5};
  return s;
}

// The streamer's decoding step in miniature (streamer.cc `handle`): whole transactions, and
// parts of a transaction once it holds part_bytes.
std::vector<StreamerTestPeer::Item> Decode(Source& s, size_t part_bytes, size_t* parts) {
  TableSchemaPtr schema = s.log.schema();
  TransactionAssembler a(
      Flavor::kMariaDB, [&](const binlog::TableMap&) -> Result<TableSchemaPtr> { return schema; },
      StreamPoint{{"bin.000001", 4}, ""});
  std::vector<StreamerTestPeer::Item> items;
  Checkpoint passed;
  passed.flavor = Flavor::kMariaDB;
  for (const Event& ev : s.log.events()) {
    auto committed = a.Feed(ev);
    EXPECT_TRUE(committed.ok()) << committed.status().ToString();
    if (!committed.ok()) return items;
    if (!*committed) {
      if (part_bytes > 0 && a.buffered_bytes() >= part_bytes) {
        if (auto part = a.TakePart()) {
          StreamerTestPeer::Item item;
          item.part = true;
          item.txn.changes = std::move(*part);
          items.push_back(std::move(item));
          ++*parts;
        }
      }
      continue;
    }
    passed.stream_start = (*committed)->end.position;
    passed.gtid = (*committed)->end.gtid;
    StreamerTestPeer::Item item;
    item.stream_start = passed.stream_start;
    item.gtid = passed.gtid;
    item.abort_parts = (*committed)->rolled_back && (*committed)->has_parts;
    item.txn.changes = std::move((*committed)->changes);
    if (!item.txn.changes.empty()) item.txn.checkpoint = passed.ToJson();
    items.push_back(std::move(item));
  }
  return items;
}

void CheckCommits(const Source& s, const RecordingSink& sink, const std::string& what) {
  std::set<int64_t> seen;
  for (size_t k = 0; k < sink.commits.size(); ++k) {
    const auto& c = sink.commits[k];
    std::set<int64_t> ids(c.ids.begin(), c.ids.end());
    EXPECT_EQ(ids.size(), c.ids.size()) << what << ": commit " << k << " holds a row twice";
    for (int64_t id : ids) {
      EXPECT_TRUE(seen.insert(id).second) << what << ": row " << id << " committed twice";
      EXPECT_FALSE(s.rolled_back.count(id)) << what << ": row " << id << " of a rolled-back transaction committed";
    }
    // Every source transaction is in one commit whole, or not in it at all.
    for (const auto& [name, rows] : s.txns) {
      size_t in = 0;
      for (int64_t id : rows) in += ids.count(id);
      EXPECT_TRUE(in == 0 || in == rows.size())
          << what << ": commit " << k << " (checkpoint " << c.checkpoint.ToString() << ") ends inside source transaction "
          << name << " (" << in << " of its " << rows.size() << " rows)";
    }
    bool boundary = false;
    for (const auto& b : s.boundaries) boundary |= b == c.checkpoint;
    EXPECT_TRUE(boundary) << what << ": commit " << k << " records checkpoint " << c.checkpoint.ToString()
                          << ", not a transaction boundary";
  }
  for (const auto& [name, rows] : s.txns)
    for (int64_t id : rows) EXPECT_TRUE(seen.count(id)) << what << ": row " << id << " of " << name << " never committed";
  EXPECT_TRUE(sink.open.empty()) << what << ": parts left open";
}

void RunScenario(size_t group_max_bytes, size_t part_bytes, const std::string& what) {
  Source s = MakeSource();
  size_t parts = 0;
  auto items = Decode(s, part_bytes, &parts);
  if (part_bytes > 0) {
    EXPECT_GE(parts, 4u) << what << ": the large transactions were not split";
  }
  StreamerOptions o;
  o.group_max_bytes = group_max_bytes;
  o.group_max_ms = 60000;
  Streamer streamer(o);
  BoundedQueue<StreamerTestPeer::Item> q(1u << 20, 1u << 30);
  for (auto& item : items) ASSERT_TRUE(q.Push(std::move(item), 64).ok());
  q.Close(Status::Ok());
  RecordingSink sink;
  sink.each = part_bytes == 0;
  Status st = StreamerTestPeer::WriteGroups(streamer, sink, q);
  ASSERT_TRUE(st.ok()) << what << ": " << st.ToString();
  EXPECT_FALSE(sink.commits.empty());
  if (part_bytes > 0) {
    EXPECT_EQ(sink.aborts, 1) << what << ": the rolled-back transaction's parts were not taken back";
  }
  CheckCommits(s, sink, what);
  // T2 spans the rotation: committed with the checkpoint after its XID in the second file,
  // unless an XA transaction is held (then its PREPARE group start).
  EXPECT_EQ(streamer.checkpoint().stream_start, s.boundaries.back()) << what;
}

TEST(GroupCommitTest, EachItemItsOwnGroup) { RunScenario(1, 0, "one transaction per group"); }
TEST(GroupCommitTest, EverythingReadyInOneGroup) { RunScenario(1u << 30, 0, "groups as large as possible"); }
TEST(GroupCommitTest, LargeTransactionsInPartsOneTransactionPerGroup) {
  RunScenario(1, 2000, "parts, one transaction per group");
}
TEST(GroupCommitTest, LargeTransactionsInPartsLargeGroups) { RunScenario(1u << 30, 2000, "parts, large groups"); }

}  // namespace
}  // namespace sluice
