#include "sink/jsonl_sink.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_file.h"
#include "sink/envelope.h"
#include "sink/record.h"
#include "sink/sink_test_util.h"

namespace sluice {
namespace {

using sink_test::ShopInsert;
using sink_test::ShopItems;

Transaction Txn(std::vector<RowChange> changes, std::string cp) {
  Transaction t;
  t.changes = std::move(changes);
  t.checkpoint = std::move(cp);
  return t;
}

std::string Line(const RowChange& c) {
  std::string out;
  EXPECT_TRUE(AppendEnvelope(c, 42, &out).ok());
  return out + "\n";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Append(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
}

class JsonlSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-jsonl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/out.jsonl";
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }

  std::unique_ptr<JsonlSink> OpenSink(bool sync = true, std::string path = "") {
    JsonlSinkOptions o;
    o.path = path.empty() ? path_ : path;
    o.sync_every_txn = sync;
    o.now_ms = [] { return int64_t{42}; };
    if (o.path == "-") o.checkpoint_path = dir_ + "/stdout.checkpoint";
    Result<std::unique_ptr<JsonlSink>> s = JsonlSink::Open(std::move(o));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::optional<std::string> Checkpoint(JsonlSink& s) {
    Result<std::optional<std::string>> r = s.LoadCheckpoint();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }

  std::string dir_, path_;
};

TEST_F(JsonlSinkTest, WritesOneLinePerChangeAndCheckpoints) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->checkpoint_path(), path_ + ".checkpoint");
  EXPECT_EQ(Checkpoint(*s), std::nullopt);
  ASSERT_TRUE(s->PrepareTable(*ShopItems()).ok());
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a"), ShopInsert(2, "b")}, "cp1")).ok());
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b")));
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(3, "c\nd")}, "cp2")).ok());
  EXPECT_EQ(Checkpoint(*s), "cp2");
  const std::string want = Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b")) + Line(ShopInsert(3, "c\nd"));
  EXPECT_EQ(ReadAll(path_), want);
  ASSERT_TRUE(s->Close().ok());

  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp2");
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(4, "e")}, "cp3")).ok());
  EXPECT_EQ(ReadAll(path_), want + Line(ShopInsert(4, "e")));
}

// The snapshot's workers format chunks ahead (NewPreformatter) and the sink writes those
// bytes as they are: they must be the bytes Apply formats itself, and the checkpoint must
// still be stored, also when the producer emptied `changes` after formatting.
TEST_F(JsonlSinkTest, PreformattedTransactionsWriteTheSameLines) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  std::unique_ptr<Preformatter> f = s->NewPreformatter();
  ASSERT_NE(f, nullptr);
  Transaction t = Txn({ShopInsert(1, "a"), ShopInsert(2, "b\"q\"")}, "cp1");
  ASSERT_TRUE(f->Format(t).ok());
  ASSERT_TRUE(t.preformatted.has_value());
  EXPECT_EQ(*t.preformatted, Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b\"q\"")));
  t.changes.clear();
  ASSERT_TRUE(s->Apply(t).ok());
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(3, "c")}, "cp2")).ok());
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b\"q\"")) + Line(ShopInsert(3, "c")));
  EXPECT_EQ(Checkpoint(*s), "cp2");
  // A value the sink would refuse is refused by the preformatter too, naming the column.
  Transaction bad = Txn({ShopInsert(4, std::string("\xff", 1))}, "cp3");
  Status st = f->Format(bad);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("name"), std::string::npos) << st.ToString();
  EXPECT_FALSE(bad.preformatted.has_value());
}

// Snapshot chunks: rows formatted by FormatReads (the shared parts once per chunk) and
// written from the transactions themselves give the lines Apply would write.
TEST_F(JsonlSinkTest, SnapshotChunksFormattedFromRowsWriteTheSameLines) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  std::unique_ptr<Preformatter> f = s->NewPreformatter();
  ASSERT_NE(f, nullptr);
  SourceInfo src;
  src.flavor = Flavor::kMariaDB;
  src.file = "mariadb-bin.000001";
  src.pos = 4;
  src.gtid = "0-1-2";
  src.snapshot = true;
  const auto read = [&](int64_t id, std::string name) {
    RowChange c;
    c.op = Op::kRead;
    c.table = ShopItems();
    c.after = {Value::Int(id), Value::Text(std::move(name))};
    c.source = src;
    return c;
  };
  auto chunk = [&](std::vector<Row> rows, std::string cp) {
    Transaction t;
    t.is_snapshot = true;
    t.checkpoint = std::move(cp);
    Status st = f->FormatReads(ShopItems(), rows, src, t);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(t.changes.empty());
    return t;
  };
  Transaction a = chunk({{Value::Int(1), Value::Text("a")}, {Value::Int(2), Value::Text("b\"q\"")}}, "cp1");
  ASSERT_TRUE(a.preformatted.has_value());
  EXPECT_EQ(*a.preformatted, Line(read(1, "a")) + Line(read(2, "b\"q\"")));
  ASSERT_TRUE(s->Apply(a).ok());
  std::vector<Transaction> group;
  group.push_back(chunk({{Value::Int(3), Value::Text("c")}}, ""));
  group.push_back(chunk({{Value::Int(4), Value::Text("d")}}, "cp2"));
  ASSERT_TRUE(s->ApplyGroup(group).ok());
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(5, "e")}, "cp3")).ok());
  EXPECT_EQ(ReadAll(path_), Line(read(1, "a")) + Line(read(2, "b\"q\"")) + Line(read(3, "c")) +
                                Line(read(4, "d")) + Line(ShopInsert(5, "e")));
  EXPECT_EQ(Checkpoint(*s), "cp3");
}

TEST_F(JsonlSinkTest, TruncatesUnconfirmedOutputOnReopen) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  s.reset();
  const std::string good = ReadAll(path_);
  // A crash after writing the next transaction but before its checkpoint.
  Append(path_, Line(ShopInsert(2, "b")) + "{\"partial");
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(ReadAll(path_), good);
  EXPECT_EQ(Checkpoint(*s), "cp1");
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(2, "b")}, "cp2")).ok());
  EXPECT_EQ(ReadAll(path_), good + Line(ShopInsert(2, "b")));
}

TEST_F(JsonlSinkTest, KeepsExistingContentAndCutsBackBeforeFirstCheckpoint) {
  Append(path_, "earlier run\n");
  auto s = OpenSink();
  ASSERT_TRUE(s);
  s.reset();
  Append(path_, Line(ShopInsert(1, "a")));  // written, then killed before any checkpoint
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(ReadAll(path_), "earlier run\n");
  EXPECT_EQ(Checkpoint(*s), std::nullopt);
}

// Existing content whose last line has no newline: sluice's first line starts on a line of its
// own (it was glued to that last line, which made both unreadable: a new user's probe).
TEST_F(JsonlSinkTest, ExistingContentWithoutAFinalNewlineGetsOneBeforeTheFirstLine) {
  Append(path_, "{\"partial\":1}");
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  s.reset();
  EXPECT_EQ(ReadAll(path_), "{\"partial\":1}\n" + Line(ShopInsert(1, "a")));
  s = OpenSink();  // the state file records the newline: nothing is cut, nothing added
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp1");
  EXPECT_EQ(ReadAll(path_), "{\"partial\":1}\n" + Line(ShopInsert(1, "a")));
}

// An SQLite replica at the path (sink.type changed from "sqlite", the path kept): refused, the
// file untouched. A new user's probe: a whole snapshot of JSON lines was appended to it.
TEST_F(JsonlSinkTest, AnSqliteDatabaseAtThePathIsRefused) {
  const std::string db = std::string("SQLite format 3") + '\0' + std::string(84, 'x');
  Append(path_, db);
  JsonlSinkOptions o;
  o.path = path_;
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("is an SQLite database"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(ReadAll(path_), db);
}

TEST_F(JsonlSinkTest, ShorterOutputIsDataLoss) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  s.reset();
  EXPECT_TRUE(CheckJsonlOutput(path_, path_ + ".checkpoint").ok()) << "as sluice wrote it";
  // The last line cut short (the new-user test: `sluice check` passed, `run` refused).
  struct stat sb {};
  ASSERT_EQ(::stat(path_.c_str(), &sb), 0);
  ASSERT_EQ(truncate(path_.c_str(), sb.st_size - 5), 0);
  Status checked = CheckJsonlOutput(path_, path_ + ".checkpoint");
  ASSERT_EQ(truncate(path_.c_str(), 3), 0);
  Status checked3 = CheckJsonlOutput(path_, path_ + ".checkpoint");
  JsonlSinkOptions o;
  o.path = path_;
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(checked.code(), StatusCode::kDataLoss) << checked.ToString();
  EXPECT_EQ(checked3.ToString(), r.status().ToString()) << "CheckJsonlOutput says what Open says";
  // A missing output is an empty one to Open.
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  EXPECT_EQ(CheckJsonlOutput(path_, path_ + ".checkpoint").code(), StatusCode::kDataLoss);
}

// A refused open leaves the destination as it found it: a missing output is not created
// (it was created empty before the refusal, so the next `sluice check` saw a 0-byte file),
// and schema history files beside the state file are not cleared.
TEST_F(JsonlSinkTest, RefusedOpenCreatesAndRemovesNothing) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  ASSERT_TRUE(s->Close().ok());
  s.reset();
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  const std::string stray = path_ + ".checkpoint.schemas-stray";
  Append(stray, "{}");
  JsonlSinkOptions o;
  o.path = path_;
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  EXPECT_EQ(r.status().ToString(), CheckJsonlOutput(path_, path_ + ".checkpoint").ToString());
  struct stat sb {};
  EXPECT_NE(::stat(path_.c_str(), &sb), 0) << "the refused open created the output";
  EXPECT_EQ(::stat(stray.c_str(), &sb), 0) << "the refused open removed a file";
}

// A sink.path that is a symbolic link was followed: rows were appended to the file it named,
// which kept its own mode, where the lock and state files refuse a link (probe7 F8). Refused,
// saying it is a symbolic link, and the file it names is left as it was.
TEST_F(JsonlSinkTest, AnOutputThatIsASymbolicLinkIsRefused) {
  const std::string victim = dir_ + "/victim";
  Append(victim, "precious\n");
  ASSERT_EQ(::symlink(victim.c_str(), path_.c_str()), 0);
  JsonlSinkOptions o;
  o.path = path_;
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path_ + " is a symbolic link"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(r.status().message().find("Too many levels"), std::string::npos) << r.status().ToString();
  std::ifstream in(victim);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "precious\n");
}

TEST_F(JsonlSinkTest, CorruptStateFile) {
  ASSERT_TRUE(WriteFileAtomic(path_ + ".checkpoint", "{nonsense").ok());
  JsonlSinkOptions o;
  o.path = path_;
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(CheckJsonlOutput(path_, path_ + ".checkpoint").ToString(), r.status().ToString());
}

TEST_F(JsonlSinkTest, FailedApplyWritesNothing) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  RowChange bad = ShopInsert(2, "b");
  bad.after.pop_back();  // value count does not match the table
  Status st = s->Apply(Txn({ShopInsert(3, "c"), bad}, "cp2"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")));
  EXPECT_EQ(Checkpoint(*s), "cp1");
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(4, "d")}, "cp3")).ok());  // the sink still works
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")) + Line(ShopInsert(4, "d")));
}

TEST_F(JsonlSinkTest, EmptyCheckpointLeavesStoredOne) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(2, "b")}, "")).ok());
  EXPECT_EQ(Checkpoint(*s), "cp1");
  s.reset();
  // The unconfirmed line goes on reopen: a restart from cp1 emits it again.
  s = OpenSink();
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")));
}

TEST_F(JsonlSinkTest, BatchedModeSavesCheckpointOnFlush) {
  auto s = OpenSink(/*sync=*/false);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(2, "b")}, "cp2")).ok());
  EXPECT_EQ(ReadAll(path_), "");  // still buffered
  Result<std::optional<std::string>> stored = ReadSmallFile(path_ + ".checkpoint");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->find("cp"), std::string::npos) << **stored;
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(ReadAll(path_), Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b")));
  stored = ReadSmallFile(path_ + ".checkpoint");
  EXPECT_NE((*stored)->find("\"cp2\""), std::string::npos) << **stored;
  ASSERT_TRUE(s->SaveCheckpoint("cp3").ok());
  ASSERT_TRUE(s->Close().ok());
  s = OpenSink(false);
  EXPECT_EQ(Checkpoint(*s), "cp3");
}

TEST_F(JsonlSinkTest, StdoutNeedsCheckpointPath) {
  JsonlSinkOptions o;
  o.path = "-";
  Result<std::unique_ptr<JsonlSink>> r = JsonlSink::Open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  o.path = "";
  EXPECT_EQ(JsonlSink::Open(o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JsonlSinkTest, Stdout) {
  testing::internal::CaptureStdout();
  auto s = OpenSink(true, "-");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->checkpoint_path(), dir_ + "/stdout.checkpoint");
  Status st = s->Apply(Txn({ShopInsert(1, "a"), ShopInsert(2, "b")}, "cp1"));
  std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out, Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b")));
  s.reset();
  s = OpenSink(true, "-");
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp1");
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

std::shared_ptr<const SchemaHistory> HistoryWith(const std::string& column) {
  auto h = std::make_shared<SchemaHistory>();
  auto t = std::make_shared<TableSchema>(*ShopItems());
  t->columns[1].name = column;
  t->columns[1].SetType("int");
  t->columns[0].SetType("int");
  EXPECT_TRUE(h->Add("shop", "items", {{"binlog.000001", 4}, t, ""}).ok());
  return h;
}

// Issue 8: the state file rewritten at every commit holds the checkpoint without the schema
// history; the history is a file beside it, written once per change before the first state
// file that refers to it, and the old one removed after.
TEST_F(JsonlSinkTest, SchemaHistoryIsAFileWrittenOncePerChange) {
  auto s = OpenSink();
  ASSERT_TRUE(s);
  ::sluice::Checkpoint cp;
  cp.stream_start = {"binlog.000001", 100};
  cp.schemas = HistoryWith("name");
  auto h1 = SchemaHistoryTextOf(*cp.schemas);
  auto txn = [&](int id, uint64_t pos, const std::shared_ptr<const SchemaHistoryText>& h) {
    cp.stream_start.pos = pos;
    Transaction t = Txn({ShopInsert(id, "x")}, cp.ToJsonWithRef(h.get()));
    t.schemas = h;
    return t;
  };
  const std::string h1_path = path_ + ".checkpoint.schemas-" + h1->ref;
  std::vector<Transaction> group{txn(1, 200, h1), txn(2, 300, h1)};
  ASSERT_TRUE(s->ApplyGroup(group).ok());
  ASSERT_TRUE(s->Flush().ok());  // the durability thread has written the files
  EXPECT_EQ(ReadAll(h1_path), h1->json);
  EXPECT_EQ(ReadAll(path_ + ".checkpoint").find("\\\"schemas\\\":"), std::string::npos)
      << "the state file holds the history: " << ReadAll(path_ + ".checkpoint");
  EXPECT_EQ(Checkpoint(*s), cp.ToJson());
  struct stat before;
  ASSERT_EQ(::stat(h1_path.c_str(), &before), 0);
  ::usleep(20000);
  group = {txn(3, 400, h1)};
  ASSERT_TRUE(s->ApplyGroup(group).ok());
  ASSERT_TRUE(s->Flush().ok());
  struct stat after;
  ASSERT_EQ(::stat(h1_path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "the history file was rewritten for an unchanged history";

  // A new history: its file, then the state file; the old file goes.
  cp.schemas = HistoryWith("label");
  auto h2 = SchemaHistoryTextOf(*cp.schemas);
  group = {txn(4, 500, h2)};
  ASSERT_TRUE(s->ApplyGroup(group).ok());
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(ReadAll(path_ + ".checkpoint.schemas-" + h2->ref), h2->json);
  EXPECT_NE(::access(h1_path.c_str(), F_OK), 0) << "old history file kept";
  const std::string whole = cp.ToJson();

  // Restart: the whole checkpoint, from the sink and from ReadJsonlCheckpoint; an orphan
  // history file (a crash after writing it) is removed.
  s.reset();
  ASSERT_TRUE(WriteFileAtomic(h1_path, h1->json).ok());
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), whole);
  EXPECT_NE(::access(h1_path.c_str(), F_OK), 0) << "orphan history file kept";
  auto read = ReadJsonlCheckpoint(path_ + ".checkpoint");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, whole);
  // A whole checkpoint saved directly is split the same way.
  cp.schemas = HistoryWith("title");
  ASSERT_TRUE(s->SaveCheckpoint(cp.ToJson()).ok());
  EXPECT_EQ(Checkpoint(*s), cp.ToJson());
  EXPECT_EQ(ReadAll(path_ + ".checkpoint").find("\\\"schemas\\\":"), std::string::npos);

  // The history file lost: kCorruption naming it.
  s.reset();
  const std::string h3_path = path_ + ".checkpoint.schemas-" + SchemaHistoryTextOf(*cp.schemas)->ref;
  ASSERT_EQ(::unlink(h3_path.c_str()), 0);
  auto bad = JsonlSink::Open(JsonlSinkOptions{path_});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find(h3_path), std::string::npos) << bad.status().ToString();
}

// Durability off the writer's path (issue 8, live lag): ApplyGroup writes its lines and
// returns while the durability thread is still making earlier ones durable; the state file
// never records more than was made durable before it, so a crash at that moment (the files
// copied as they are) reopens at the last recorded group, and later groups are emitted again.
TEST_F(JsonlSinkTest, GroupsAreWrittenWhileTheDurabilityThreadSyncs) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int syncs_started = 0;
  JsonlSinkOptions o;
  o.path = path_;
  o.now_ms = [] { return int64_t{42}; };
  o.before_durable_sync = [&] {
    std::unique_lock<std::mutex> lock(mu);
    ++syncs_started;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  auto opened = JsonlSink::Open(std::move(o));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<JsonlSink> s = std::move(opened).value();
  std::vector<Transaction> g1{Txn({ShopInsert(1, "a")}, "cp1")};
  ASSERT_TRUE(s->ApplyGroup(g1).ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return syncs_started == 1; }))
        << "the durability thread never started to sync the first group";
  }
  // The thread is held inside its fdatasync: the writer goes on.
  auto more = std::async(std::launch::async, [&] {
    std::vector<Transaction> g2{Txn({ShopInsert(2, "b")}, "cp2")};
    std::vector<Transaction> g3{Txn({ShopInsert(3, "c")}, "cp3")};
    return s->ApplyGroup(g2).ok() && s->ApplyGroup(g3).ok();
  });
  ASSERT_EQ(more.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "ApplyGroup waited for the durability thread's fdatasync";
  EXPECT_TRUE(more.get());
  const std::string all = Line(ShopInsert(1, "a")) + Line(ShopInsert(2, "b")) + Line(ShopInsert(3, "c"));
  EXPECT_EQ(ReadAll(path_), all) << "lines are in the file as soon as ApplyGroup returns";
  EXPECT_EQ(Checkpoint(*s), "cp3");
  const std::string state_now = ReadAll(path_ + ".checkpoint");
  EXPECT_EQ(state_now.find("cp"), std::string::npos)
      << "the state file records a group before it was made durable: " << state_now;

  // A crash now: the copy reopens at the recorded state (nothing yet), cutting all three back.
  const std::string crash = dir_ + "/crash.jsonl";
  Append(crash, ReadAll(path_));
  Append(crash + ".checkpoint", state_now);
  {
    auto c = OpenSink(true, crash);
    ASSERT_TRUE(c);
    EXPECT_EQ(ReadAll(crash), "");
    EXPECT_EQ(Checkpoint(*c), std::nullopt);
  }

  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(s->Flush().ok());  // waits until every group handed off is recorded
  EXPECT_NE(ReadAll(path_ + ".checkpoint").find("\"cp3\""), std::string::npos) << ReadAll(path_ + ".checkpoint");
  EXPECT_LE(syncs_started, 2) << "one fdatasync should cover the groups written during the first";
  ASSERT_TRUE(s->Close().ok());
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(ReadAll(path_), all);
  EXPECT_EQ(Checkpoint(*s), "cp3");
}

// The JSON lines preformatter writes envelopes straight into the text when the options add
// nothing to them (no keys, tombstones, transaction records, split updates, schemas): those
// lines must be byte for byte the values the record serializer gives, and the other option
// sets (which take the serializer) must still give theirs.
TEST_F(JsonlSinkTest, PreformatterLinesAreTheSerializerValues) {
  RowChange upd = ShopInsert(5, "x\ty\"\\");
  upd.op = Op::kUpdate;
  upd.before = {Value::Int(5), Value::Null()};
  upd.after = {Value::Int(6), Value::Absent()};
  upd.source.gtid = "0-1-7";
  upd.source.row = 1;
  RowChange del = ShopInsert(7, std::string("\xc3\xa9\x01", 3));
  del.op = Op::kDelete;
  del.before = del.after;
  del.after.clear();
  RowChange bytes = ShopInsert(8, "");
  bytes.after[1] = Value::Bytes(std::string("\0\xff", 2));
  const std::vector<RowChange> changes = {ShopInsert(1, "a"), upd, del, bytes};
  RecordOptions tomb;
  tomb.tombstones = true;
  RecordOptions meta;
  meta.transaction_metadata = true;
  RecordOptions split;
  split.split_key_changes = true;
  for (const RecordOptions& ro : {RecordOptions{}, tomb, meta, split}) {
    JsonlSinkOptions o;
    o.path = path_;
    o.now_ms = [] { return int64_t{42}; };
    o.records = ro;
    auto s = JsonlSink::Open(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    std::unique_ptr<Preformatter> f = (*s)->NewPreformatter();
    Transaction t = Txn(changes, "cp");
    ASSERT_TRUE(f->Format(t).ok());
    RecordSerializer ser(ro);
    RecordBatch batch;
    ASSERT_TRUE(ser.AppendTransaction(Txn(changes, "cp"), 42, &batch).ok());
    std::string want;
    for (const Record& r : batch.records)
      if (r.has_value) want += std::string(batch.value(r)) + "\n";
    ASSERT_TRUE(t.preformatted.has_value());
    EXPECT_EQ(*t.preformatted, want) << "tombstones " << ro.tombstones << " metadata "
                                     << ro.transaction_metadata << " split " << ro.split_key_changes;
    ASSERT_TRUE((*s)->Close().ok());
    std::remove(path_.c_str());
    std::remove((path_ + ".checkpoint").c_str());
  }
}

// A group of many preformatted transactions is written from their own text, a few hundred
// pieces per writev: the file holds every line once, in order.
TEST_F(JsonlSinkTest, GroupWrittenInPlaceInManyPiecesKeepsOrder) {
  auto s = OpenSink(/*sync=*/true);
  ASSERT_TRUE(s);
  std::unique_ptr<Preformatter> f = s->NewPreformatter();
  std::vector<Transaction> group;
  std::string want;
  for (int64_t i = 0; i < 1300; ++i) {
    Transaction t = Txn({ShopInsert(i, std::string(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26)))},
                        i == 1299 ? "cp-last" : "");
    want += Line(t.changes[0]);
    ASSERT_TRUE(f->Format(t).ok());
    group.push_back(std::move(t));
  }
  ASSERT_TRUE(s->ApplyGroup(group).ok());
  EXPECT_EQ(ReadAll(path_), want);
  EXPECT_EQ(Checkpoint(*s), "cp-last");
}

// Stdout a pipe: a checkpoint is recorded only once the reader has read every line before it.
// Recorded as soon as write() put the lines in the pipe, the lines a reader had not read when
// it died were never written again (a new user's probe: 245 of 300 changes, the next run exit 0).
TEST_F(JsonlSinkTest, StdoutPipeCheckpointsOnlyWhatTheReaderRead) {
  ::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const int saved = ::dup(STDOUT_FILENO);
  ASSERT_GE(::dup2(p[1], STDOUT_FILENO), 0);
  ::close(p[1]);
  auto s = OpenSink(true, "-");
  ASSERT_TRUE(s);
  // A reader that takes everything: the checkpoint follows.
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    const size_t want = Line(ShopInsert(1, "a")).size();
    while (got.size() < want) {
      ssize_t n = ::read(p[0], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
  });
  Status st = s->Apply(Txn({ShopInsert(1, "a")}, "cp1"));
  reader.join();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, Line(ShopInsert(1, "a")));
  // A reader that dies with lines unread: the run stops and the checkpoint stays at cp1.
  std::thread dying([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::close(p[0]);
  });
  st = s->Apply(Txn({ShopInsert(2, "b")}, "cp2"));
  dying.join();
  ASSERT_GE(::dup2(saved, STDOUT_FILENO), 0);
  ::close(saved);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the reader of standard output went away with"), std::string::npos) << st.ToString();
  s.reset();
  s = OpenSink(true, "-");
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp1");
}


// Direct groups (direct_min_bytes): lines of `bytes` bytes in all, preformatted, with `cp`.
Transaction Lines(size_t bytes, char fill, std::string cp) {
  Transaction t;
  std::string text(bytes, fill);
  for (size_t k = 99; k < bytes; k += 100) text[k] = '\n';
  if (bytes > 0) text.back() = '\n';
  t.preformatted = std::move(text);
  t.checkpoint = std::move(cp);
  return t;
}

JsonlSinkOptions DirectOptions(const std::string& path, size_t min_bytes) {
  JsonlSinkOptions o;
  o.path = path;
  o.now_ms = [] { return int64_t{42}; };
  o.direct_min_bytes = min_bytes;
  return o;
}

std::string StateText(const std::string& path) { return ReadAll(path + ".checkpoint"); }

// Groups written around the page cache, at every alignment the output's end can have, one
// stage or several, mixed with groups and records written through it: the file holds every
// byte once, in order, and the state file its length and the last checkpoint.
TEST_F(JsonlSinkTest, DirectGroupsWriteEveryByteInOrderAtEveryAlignment) {
  std::atomic<int> direct_writes{0};
  JsonlSinkOptions o = DirectOptions(path_, 4096);
  o.before_direct_write = [&] {
    ++direct_writes;
    return 0;
  };
  auto opened = JsonlSink::Open(std::move(o));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<JsonlSink> s = std::move(opened).value();
  std::string want;
  // Sizes around the block (4096) and stage (8 MiB) boundaries, and small ones (through the
  // page cache: under direct_min_bytes, or without a checkpoint) between them. Stages are 4 MiB.
  const size_t sizes[] = {4095, 4096, 4097, 10, 100000, (size_t{4} << 20) - 1, 1, size_t{4} << 20,
                          (size_t{4} << 20) + 4097, 3, 20000, (size_t{17} << 20) + 5, 4096, 77};
  int n = 0;
  for (size_t bytes : sizes) {
    ++n;
    const std::string cp = n % 5 == 0 ? "" : "cp" + std::to_string(n);
    std::vector<Transaction> g;
    g.push_back(Lines(bytes / 2, static_cast<char>('a' + n), ""));
    g.push_back(Lines(bytes - bytes / 2, static_cast<char>('A' + n), cp));
    for (const Transaction& t : g) want += *t.preformatted;
    ASSERT_TRUE(s->ApplyGroup(g).ok()) << "group " << n;
    if (n == 7) {
      ASSERT_TRUE(s->SaveCheckpoint("saved").ok());
      ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "between")}, "row")).ok());
      want += Line(ShopInsert(1, "between"));
    }
  }
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_GT(direct_writes.load(), 5) << "no group was written around the page cache";
  EXPECT_TRUE(ReadAll(path_) == want) << "the output differs from the groups written (" << ReadAll(path_).size()
                                      << " bytes against " << want.size() << ")";
  EXPECT_NE(StateText(path_).find(fmt::format("\"output_bytes\":{}", want.size())), std::string::npos)
      << StateText(path_);
  EXPECT_EQ(Checkpoint(*s), "cp14");
  ASSERT_TRUE(s->Close().ok());
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp14");
  EXPECT_EQ(ReadAll(path_).size(), want.size());
}

// A crash while direct groups wait to be written: the state file records none of them, and
// the output reopened is cut back to what it records.
TEST_F(JsonlSinkTest, DirectGroupsAreRecordedOnlyOnceWritten) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int entered = 0;
  JsonlSinkOptions o = DirectOptions(path_, 4096);
  o.before_direct_write = [&] {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return 0;
  };
  auto opened = JsonlSink::Open(std::move(o));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<JsonlSink> s = std::move(opened).value();
  ASSERT_TRUE(s->Apply(Txn({ShopInsert(1, "a")}, "cp1")).ok());  // small: through the page cache
  ASSERT_TRUE(s->Flush().ok());
  const std::string first = ReadAll(path_);
  std::vector<Transaction> g{Lines(3 << 20, 'x', "cp2")};
  ASSERT_TRUE(s->ApplyGroup(g).ok()) << "the writer waited for the disk";
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered == 1; }));
  }
  EXPECT_EQ(Checkpoint(*s), "cp2");  // the resume point of this process
  const std::string crash = dir_ + "/crash.jsonl";
  Append(crash, ReadAll(path_));
  Append(crash + ".checkpoint", StateText(path_));
  EXPECT_EQ(StateText(path_).find("cp2"), std::string::npos) << StateText(path_);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  {
    auto c = OpenSink(true, crash);
    ASSERT_TRUE(c);
    EXPECT_EQ(ReadAll(crash), first);
    EXPECT_EQ(Checkpoint(*c), "cp1");
  }
  ASSERT_TRUE(s->Flush().ok());
  EXPECT_EQ(ReadAll(path_), first + *g[0].preformatted);
  EXPECT_NE(StateText(path_).find("cp2"), std::string::npos) << StateText(path_);
}

// A full disk under a direct group: the group's call has returned, so the thread writes it
// again until space is freed; meanwhile calls are refused as transient without writing, and
// the same call applied again afterwards is written once.
TEST_F(JsonlSinkTest, DirectWriteOnAFullDiskIsWrittenAgainOnceSpaceIsFreed) {
  std::atomic<bool> full{true};
  std::atomic<int> refused{0};
  JsonlSinkOptions o = DirectOptions(path_, 4096);
  o.before_direct_write = [&] {
    if (!full) return 0;
    ++refused;
    return ENOSPC;
  };
  auto opened = JsonlSink::Open(std::move(o));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<JsonlSink> s = std::move(opened).value();
  std::vector<Transaction> g1{Lines(3 << 20, 'a', "cp1")};  // one stage each
  std::vector<Transaction> g2{Lines(3 << 20, 'b', "cp2")};
  ASSERT_TRUE(s->ApplyGroup(g1).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (refused < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(refused.load(), 2) << "the failed write was not tried again";
  Status st = s->ApplyGroup(g2);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("disk full"), std::string::npos) << st.ToString();
  EXPECT_EQ(s->Flush().code(), StatusCode::kUnavailable);
  full = false;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(st = s->ApplyGroup(g2)).ok() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(s->Close().ok());
  EXPECT_TRUE(ReadAll(path_) == *g1[0].preformatted + *g2[0].preformatted);
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp2");
}

// A full disk while a group larger than the stages is still being handed over: the group is
// taken back, what was written of it cut, and its call refused as transient; applied again
// once space is freed, it is in the file once.
TEST_F(JsonlSinkTest, DiskFullInsideALargeDirectGroupTakesItBack) {
  std::atomic<int> writes_left{1 << 30};
  JsonlSinkOptions o = DirectOptions(path_, 4096);
  o.before_direct_write = [&] { return writes_left.fetch_sub(1) > 0 ? 0 : ENOSPC; };
  auto opened = JsonlSink::Open(std::move(o));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<JsonlSink> s = std::move(opened).value();
  std::vector<Transaction> g1{Lines((1 << 20) + 123, 'a', "cp1")};
  ASSERT_TRUE(s->ApplyGroup(g1).ok());
  ASSERT_TRUE(s->Flush().ok());
  const std::string first = ReadAll(path_);
  writes_left = 1;  // the group's first stage is written, then the disk is full
  std::vector<Transaction> g2{Lines(size_t{40} << 20, 'b', "cp2")};  // 10 stages: more than exist
  Status st = s->ApplyGroup(g2);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("disk full"), std::string::npos) << st.ToString();
  EXPECT_TRUE(ReadAll(path_) == first) << "what was written of the group taken back is still in the file ("
                                        << ReadAll(path_).size() << " bytes, " << first.size() << " before it)";
  EXPECT_EQ(Checkpoint(*s), "cp1");
  writes_left = 1 << 30;  // space freed
  ASSERT_TRUE(s->ApplyGroup(g2).ok());
  std::vector<Transaction> g3{Lines(5000, 'c', "cp3")};  // through the page cache: lands after g2
  ASSERT_TRUE(s->ApplyGroup(g3).ok());
  ASSERT_TRUE(s->Close().ok());
  EXPECT_TRUE(ReadAll(path_) == first + *g2[0].preformatted + *g3[0].preformatted);
  s = OpenSink();
  ASSERT_TRUE(s);
  EXPECT_EQ(Checkpoint(*s), "cp3");
}

}  // namespace
}  // namespace sluice
