// Group commit never ends a sink transaction inside a source transaction (issue 8): synthetic
// MariaDB binlog events (an XA transaction prepared and committed around others, a transaction
// spanning a ROTATE, a transaction larger than the memory cap applied in parts, one of those
// rolled back) go through the real TransactionAssembler and the Streamer's sink writer
// (WriteGroups) into a sink that records every commit; each commit must hold whole source
// transactions only, and its checkpoint must be a transaction boundary.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "checkpoint/checkpoint.h"
#include "sink/jsonl_sink.h"
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

// A dump by GTID (MariaDB) starts at the head of the file that holds the start GTID: the fake
// ROTATE names it at position 4, then come its FORMAT_DESCRIPTION, GTID_LIST and
// BINLOG_CHECKPOINT events at their real (early) positions, and the transactions already
// applied are skipped by the server. The resume position stays where the stream started
// (an idle stop saved file:344 and `--until-caught-up` then never returned), and moves on
// with the next transaction; a rotation to the next file still moves it.
TEST(GroupCommitTest, DumpByGtidDoesNotMoveTheResumePositionBack) {
  TableSchemaPtr schema = std::make_shared<TableSchema>();
  TransactionAssembler a(
      Flavor::kMariaDB, [&](const binlog::TableMap&) -> Result<TableSchemaPtr> { return schema; },
      StreamPoint{{"bin.000004", 10070}, "0-1-1296"});
  auto event = [](auto body, uint64_t pos, uint64_t end, uint16_t flags = 0) {
    Event e;
    e.file = "bin.000004";
    e.pos = pos;
    e.end_pos = end;
    e.header.flags = flags;
    e.body = std::move(body);
    return e;
  };
  binlog::RotateEvent fake;
  fake.next_file = "bin.000004";
  fake.position = 4;
  std::vector<Event> head;
  head.push_back(event(fake, 0, 0, binlog::kFlagArtificial));
  head.push_back(event(binlog::FormatDescriptionEvent{}, 4, 256));
  head.push_back(event(binlog::MariadbGtidListEvent{}, 256, 299));
  head.push_back(event(binlog::BinlogCheckpointEvent{"bin.000004"}, 299, 344));
  for (const Event& e : head) {
    auto r = a.Feed(e);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(a.boundary().position.ToString(), "bin.000004:10070") << "after the event at " << e.pos;
    EXPECT_EQ(a.boundary().gtid, "0-1-1296");
  }
  binlog::MariadbGtidEvent g;
  g.seq_no = 1297;
  g.server_id = 1;
  g.flags = binlog::MariadbGtidEvent::kFlStandalone;
  ASSERT_TRUE(a.Feed(event(g, 10070, 10112)).ok());
  binlog::QueryEvent q;
  q.schema = "shop";
  q.query = "FLUSH TABLES";  // a standalone statement of no captured table
  ASSERT_TRUE(a.Feed(event(q, 10112, 10200)).ok());
  EXPECT_EQ(a.boundary().position.ToString(), "bin.000004:10200") << "the next event moves it on";
  binlog::RotateEvent next;
  next.next_file = "bin.000005";
  next.position = 4;
  ASSERT_TRUE(a.Feed(event(next, 10200, 0)).ok());
  EXPECT_EQ(a.boundary().position.ToString(), "bin.000005:4") << "a rotation moves it to the next file";
}

// A data change logged as a statement goes to the statement filter (the streamer's judge of
// its tables) also behind leading comments, as applications send them ("/* app */ UPDATE"):
// such a statement passed unseen, and its rows were never in the binlog.
TEST(GroupCommitTest, StatementLoggedChangesBehindCommentsReachTheStatementFilter) {
  TableSchemaPtr schema = std::make_shared<TableSchema>();
  TransactionAssembler a(
      Flavor::kMariaDB, [&](const binlog::TableMap&) -> Result<TableSchemaPtr> { return schema; },
      StreamPoint{{"bin.000004", 4}, ""});
  std::vector<std::string> judged;
  a.set_statement_filter([&](std::string_view, std::string_view query, const BinlogPosition&, bool) {
    judged.emplace_back(query);
    return Status::FailedPrecondition("stopped");
  });
  uint64_t pos = 100;
  auto feed = [&](auto body) {
    Event e;
    e.file = "bin.000004";
    e.pos = pos;
    e.end_pos = pos + 50;
    pos += 50;
    e.body = std::move(body);
    return a.Feed(e).status();
  };
  auto query = [](std::string text) {
    binlog::QueryEvent q;
    q.schema = "shop";
    q.query = std::move(text);
    return q;
  };
  const std::vector<std::string> changes = {
      "/* app:checkout */ UPDATE t SET n = n + 1", "  -- batch\n  /* a */ DELETE FROM t WHERE id = 1",
      "# nightly\nINSERT INTO t VALUES (1)", "WITH x AS (SELECT 1) UPDATE t, x SET t.n = 1"};
  for (const std::string& text : changes) {
    binlog::MariadbGtidEvent g;
    g.seq_no = pos;
    g.server_id = 1;
    ASSERT_TRUE(feed(g).ok());
    ASSERT_TRUE(feed(query("BEGIN")).ok());
    EXPECT_EQ(feed(query(text)).code(), StatusCode::kFailedPrecondition) << text;  // the next GTID starts over
  }
  EXPECT_EQ(judged, changes);
  // Not data changes: an executable comment holds SQL of its own, a comment alone is nothing.
  judged.clear();
  binlog::MariadbGtidEvent g;
  g.seq_no = pos;
  g.server_id = 1;
  g.flags = binlog::MariadbGtidEvent::kFlStandalone;
  ASSERT_TRUE(feed(g).ok());
  EXPECT_TRUE(feed(query("/*!40000 ALTER TABLE t DISABLE KEYS */")).ok());
  EXPECT_TRUE(judged.empty());
}

// MySQL: a stream started at a file/position alone (a watermark snapshot's point has no GTID
// set) must not record the set of only the GTIDs it streamed: resumed from by GTID, the
// server would send every older transaction it still holds again. The boundary carries no
// set (a resume goes by position) until the next file's PREVIOUS_GTIDS gives the whole one.
TEST(GroupCommitTest, MysqlStreamWithoutAStartSetRecordsNoPartialGtidSet) {
  const std::string u = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
  TableSchemaPtr schema = std::make_shared<TableSchema>();
  auto resolve = [&](const binlog::TableMap&) -> Result<TableSchemaPtr> { return schema; };
  auto event = [](auto body, const std::string& file, uint64_t pos, uint64_t end) {
    Event e;
    e.file = file;
    e.pos = pos;
    e.end_pos = end;
    e.body = std::move(body);
    return e;
  };
  // One empty transaction (GTID, BEGIN, XID) at `pos` of `file`.
  auto transaction = [&](TransactionAssembler& a, const std::string& file, uint64_t pos, int64_t gno) {
    binlog::GtidEvent g;
    g.uuid = u;
    g.gno = gno;
    binlog::QueryEvent begin;
    begin.query = "BEGIN";
    ASSERT_TRUE(a.Feed(event(g, file, pos, pos + 79)).ok());
    ASSERT_TRUE(a.Feed(event(begin, file, pos + 79, pos + 150)).ok());
    auto r = a.Feed(event(binlog::XidEvent{7}, file, pos + 150, pos + 181));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->has_value()) << "the XID ends the transaction";
  };

  TransactionAssembler known(Flavor::kMySQL, resolve, StreamPoint{{"bin.000007", 5000}, u + ":1-9"});
  transaction(known, "bin.000007", 5000, 10);
  EXPECT_EQ(known.boundary().gtid, u + ":1-10") << "a start set grows with each transaction";

  TransactionAssembler unknown(Flavor::kMySQL, resolve, StreamPoint{{"bin.000007", 5000}, ""});
  transaction(unknown, "bin.000007", 5000, 10);
  EXPECT_EQ(unknown.boundary().gtid, "") << "not " << u << ":10 alone";
  EXPECT_EQ(unknown.boundary().position.ToString(), "bin.000007:5181");
  binlog::RotateEvent rotate;
  rotate.next_file = "bin.000008";
  rotate.position = 4;
  ASSERT_TRUE(unknown.Feed(event(rotate, "bin.000007", 5181, 5225)).ok());
  ASSERT_TRUE(unknown.Feed(event(binlog::FormatDescriptionEvent{}, "bin.000008", 4, 126)).ok());
  auto prev = unknown.Feed(event(binlog::PreviousGtidsEvent{u + ":1-10"}, "bin.000008", 126, 197));
  ASSERT_TRUE(prev.ok());
  ASSERT_TRUE(prev->has_value()) << "a position-only advance, with the set";
  EXPECT_EQ((*prev)->end.gtid, u + ":1-10");
  EXPECT_EQ(unknown.boundary().position.ToString(), "bin.000008:197");
  transaction(unknown, "bin.000008", 197, 11);
  EXPECT_EQ(unknown.boundary().gtid, u + ":1-11") << "the whole set from the file's head on";

  // A set known from the start is not replaced by a later file's PREVIOUS_GTIDS.
  ASSERT_TRUE(known.Feed(event(binlog::PreviousGtidsEvent{u + ":1-3"}, "bin.000008", 126, 197)).ok());
  EXPECT_EQ(known.boundary().gtid, u + ":1-10");
}

TEST(GroupCommitTest, EachItemItsOwnGroup) { RunScenario(1, 0, "one transaction per group"); }
TEST(GroupCommitTest, EverythingReadyInOneGroup) { RunScenario(1u << 30, 0, "groups as large as possible"); }
TEST(GroupCommitTest, LargeTransactionsInPartsOneTransactionPerGroup) {
  RunScenario(1, 2000, "parts, one transaction per group");
}
TEST(GroupCommitTest, LargeTransactionsInPartsLargeGroups) { RunScenario(1u << 30, 2000, "parts, large groups"); }

}  // namespace
}  // namespace sluice


namespace sluice {
namespace {

// Rows formatted straight from the row image by the decoding thread (issue 8,
// TransactionAssembler::set_direct_formatter) give the text the formatting thread gives for
// the same transactions decoded to Values (JsonlSink's Preformatter::Format), part by part
// and transaction by transaction: whole source transactions with parts and a rollback, an XA
// transaction, a transaction that mixes rows the direct path takes with rows it leaves
// (a MINIMAL before image: its *_absent list), and one that starts with such rows.
TEST(DirectRowsTest, SameTextAsValuesFormattedAfterwards) {
  auto extra_map = std::make_shared<binlog::TableMap>();
  extra_map->table_id = 8;
  extra_map->db = "shop";
  extra_map->table = "m";
  extra_map->column_types = {binlog::ColumnType::MYSQL_TYPE_LONG, binlog::ColumnType::MYSQL_TYPE_LONG};
  extra_map->column_meta = {0, 0};
  extra_map->nullable = {false, true};
  auto m = std::make_shared<TableSchema>();
  m->db = "shop";
  m->table = "m";
  for (const char* n : {"id", "v"}) {
    ColumnDesc c;
    c.name = n;
    c.SetType("int");
    m->columns.push_back(c);
  }
  m->primary_key = {0};
  std::deque<std::string> bodies;
  Source s = MakeSource();
  std::deque<Event>& events = s.log.events();
  // A MINIMAL update of shop.m (before image: id only), inserted after the first rows event
  // of T1 (a transaction the direct path started) and as the first rows event of T5 (a
  // transaction that then keeps Values).
  auto minimal_update = [&](uint64_t pos) {
    std::string& body = bodies.emplace_back();
    body = std::string("\0\x05\0\0\0\0\x05\0\0\0\x07\0\0\0", 14);  // before {5}, after {5, 7}
    binlog::RowsEvent r;
    r.kind = binlog::RowsKind::kUpdate;
    r.table_id = 8;
    r.flags = 1;
    r.column_count = 2;
    r.present_before = {true, false};
    r.present_after = {true, true};
    r.body = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    std::vector<Event> out(2);
    for (Event& e : out) {
      e.file = "bin.000001";
      e.pos = pos;
      e.end_pos = pos;
      e.header.server_id = 1;
      e.header.timestamp = 1700000001;
    }
    out[0].body = binlog::TableMapEvent{extra_map};
    out[1].body = std::move(r);
    return out;
  };
  size_t rows_seen = 0, inserted = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!std::holds_alternative<binlog::RowsEvent>(events[i].body)) continue;
    ++rows_seen;
    const bool first_of_t1 = rows_seen == 1;
    const bool t5 = i + 1 < events.size() && std::holds_alternative<binlog::XidEvent>(events[i + 1].body) &&
                    std::get<binlog::RowsEvent>(events[i].body).body.size() == 5 && rows_seen > 10;
    if (first_of_t1) {
      auto add = minimal_update(events[i].pos);
      events.insert(events.begin() + static_cast<long>(i) + 1, add.begin(), add.end());
      i += 2;
      ++inserted;
    } else if (t5) {
      auto add = minimal_update(events[i].pos);
      events.insert(events.begin() + static_cast<long>(i) - 1, add.begin(), add.end());  // before its TABLE_MAP
      i += 2;
      ++inserted;
    }
  }
  ASSERT_EQ(inserted, 2u) << "the scenario's T1 and T5 were not found";

  const std::string dir = testing::TempDir() + "/direct_rows_test";
  std::filesystem::create_directories(dir);
  JsonlSinkOptions o;
  o.path = dir + "/out.jsonl";
  o.now_ms = [] { return int64_t{42}; };
  auto sink = JsonlSink::Open(o);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  for (size_t part_bytes : {size_t{0}, size_t{600}}) {
    // Text per whole source transaction in commit order; parts of a rolled-back one dropped.
    auto run = [&](bool direct, size_t* direct_txns, size_t* direct_rows, size_t* value_rows) {
      std::unique_ptr<Preformatter> fmt = (*sink)->NewPreformatter();
      std::unique_ptr<Preformatter> direct_fmt = (*sink)->NewPreformatter();
      TransactionAssembler a(
          Flavor::kMariaDB,
          [&](const binlog::TableMap& map) -> Result<TableSchemaPtr> { return map.table == "m" ? m : s.log.schema(); },
          StreamPoint{{"bin.000001", 4}, ""});
      if (direct) a.set_direct_formatter(direct_fmt.get());
      std::vector<std::string> out;
      std::string pending;
      auto text_of = [&](std::vector<RowChange> changes, std::optional<std::string> text, const ChangeCounts& counted) {
        if (text) {
          // Formatted from the row image: the changes are counted, not kept.
          EXPECT_TRUE(changes.empty()) << "a transaction with text also kept " << changes.size() << " changes";
          EXPECT_FALSE(counted.empty()) << "a transaction with text counted no changes";
          ++*direct_txns;
          *direct_rows += counted.rows;
          return *text;
        }
        EXPECT_TRUE(counted.empty()) << "a transaction without text counted " << counted.rows << " changes";
        if (changes.empty()) return std::string();
        *value_rows += changes.size();
        Transaction t;
        t.changes = std::move(changes);
        Status st = fmt->Format(t);
        EXPECT_TRUE(st.ok()) << st.ToString();
        return t.preformatted.value_or("");
      };
      for (const Event& ev : events) {
        auto committed = a.Feed(ev);
        EXPECT_TRUE(committed.ok()) << committed.status().ToString();
        if (!committed.ok()) return out;
        if (!*committed) {
          if (part_bytes > 0 && a.buffered_bytes() >= part_bytes) {
            std::optional<std::string> text;
            ChangeCounts counted;
            if (auto part = a.TakePart(&text, &counted)) pending += text_of(std::move(*part), std::move(text), counted);
          }
          continue;
        }
        std::string whole = std::move(pending) + text_of(std::move((*committed)->changes), std::move((*committed)->text),
                                                         (*committed)->counted);
        pending.clear();
        if (!(*committed)->rolled_back && !whole.empty()) out.push_back(std::move(whole));
      }
      return out;
    };
    size_t direct_txns = 0, none = 0, want_rows = 0, got_direct_rows = 0, got_value_rows = 0, none_rows = 0;
    const std::vector<std::string> want = run(false, &none, &none_rows, &want_rows);
    const std::vector<std::string> got = run(true, &direct_txns, &got_direct_rows, &got_value_rows);
    EXPECT_EQ(none, 0u);
    // Every row change is delivered once, kept or counted (rolled-back ones included: the
    // count is of what the assembler handed on).
    EXPECT_EQ(got_direct_rows + got_value_rows, want_rows) << "part_bytes " << part_bytes;
    EXPECT_GE(direct_txns, 3u) << "part_bytes " << part_bytes << ": too few transactions formatted directly (T1, T2, T3)";
    ASSERT_EQ(got.size(), want.size()) << "part_bytes " << part_bytes;
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_EQ(got[k], want[k]) << "part_bytes " << part_bytes << ", source transaction " << k;
    // The mixed transaction (T1) and the one that kept Values (T5) are in there.
    EXPECT_NE(want.front().find("\"before_absent\":[\"v\"]"), std::string::npos) << want.front();
    EXPECT_NE(want.back().find("\"before_absent\":[\"v\"]"), std::string::npos) << want.back();
  }
}

}  // namespace
}  // namespace sluice
