#include "stream/resume.h"

#include <gtest/gtest.h>

#include "binlog/checksum.h"

namespace sluice {
namespace {

ServerGtidState MariaServer(uint32_t id, std::string history) {
  ServerGtidState s;
  s.flavor = Flavor::kMariaDB;
  s.identity.server_id = id;
  s.gtids_on = true;
  s.history = std::move(history);
  s.describe = "db:3306";
  return s;
}

Checkpoint Streamed(uint32_t from_server, std::string gtid) {
  Checkpoint c;
  c.flavor = Flavor::kMariaDB;
  c.stream_start = {"mariadb-bin.000002", 900};
  c.gtid = std::move(gtid);
  c.source.server_id = from_server;
  c.snapshot_done = true;
  TableSnapshotProgress t;
  t.done = true;
  t.copied_at = {"mariadb-bin.000001", 500};
  RangeProgress r;
  r.done = true;
  r.segments.push_back(RangeSegment{{}, {"mariadb-bin.000001", 500}});
  t.ranges.push_back(r);
  c.tables["d.t"] = t;
  return c;
}

// A v4 event of `size` bytes: header fields as given, body bytes `fill`.
std::vector<uint8_t> Event(uint8_t type, uint32_t timestamp, uint32_t size, uint32_t log_pos, uint16_t flags = 0,
                           uint8_t fill = 0) {
  std::vector<uint8_t> e(size, fill);
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) e[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  put(0, timestamp);
  e[4] = type;
  put(5, 1);
  put(9, size);
  put(13, log_pos);
  e[17] = static_cast<uint8_t>(flags);
  e[18] = static_cast<uint8_t>(flags >> 8);
  return e;
}

// The dump a resume at mariadb-bin.000002:900 reads when it starts at the witnessed XID event
// (offset 869, 31 bytes): a fake ROTATE, the file's FDE replayed with log_pos 0, the event.
TEST(WitnessCheckTest, TheWitnessedEventIsCheckedAndDropped) {
  const BinlogPosition start{"mariadb-bin.000002", 900};
  const std::vector<uint8_t> xid = Event(16, 1764982900, 31, 900, 0, 7);
  const PositionWitness w{"mariadb-bin.000002", 1764982800, 869, 31, WitnessHash(xid)};
  using A = WitnessCheck::Action;

  WitnessCheck same(w, start);
  EXPECT_EQ(same.dump_start(), (BinlogPosition{"mariadb-bin.000002", 869}));
  EXPECT_EQ(*same.Feed(Event(4, 0, 40, 0, 0x20)), A::kPass);
  EXPECT_EQ(*same.Feed(Event(15, 1764982800, 120, 0)), A::kPass);
  EXPECT_EQ(*same.Feed(xid), A::kDrop);
  EXPECT_TRUE(same.done());
  EXPECT_EQ(*same.Feed(Event(162, 1764983000, 42, 942)), A::kPass);

  // RESET MASTER, then a transaction of the same sizes: the same offsets, other bytes.
  WitnessCheck other_bytes(w, start);
  ASSERT_TRUE(other_bytes.Feed(Event(15, 1764982800, 120, 0)).ok());
  auto r = other_bytes.Feed(Event(16, 1764982900, 31, 900, 0, 8));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("other contents"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("RESET MASTER"), std::string::npos) << r.status().ToString();

  // The file was created at another time (its FDE), whatever follows.
  WitnessCheck other_file(w, start);
  r = other_file.Feed(Event(15, 1764999999, 120, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("created at 1764999999"), std::string::npos) << r.status().ToString();

  // An event of another size ends at the position.
  WitnessCheck other_size(w, start);
  r = other_size.Feed(Event(16, 1764982900, 27, 900));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("27 bytes at offset 873"), std::string::npos) << r.status().ToString();

  // Heartbeats and artificial events before the first real one are passed on unchecked.
  WitnessCheck beats(w, start);
  EXPECT_EQ(*beats.Feed(Event(27, 0, 40, 869)), A::kPass);
  EXPECT_EQ(*beats.Feed(Event(163, 0, 40, 869, 0x20)), A::kPass);
  EXPECT_EQ(*beats.Feed(xid), A::kDrop);
}

// Events with CRC-32 footers (binlog_checksum=CRC32, the default): a CRC-32 over the whole
// event is the same constant for all of them (a new user's probe: 0x2144DF1C, so the check
// compared only offset and size). The witness hash tells them apart.
TEST(WitnessCheckTest, EventsWithChecksumFootersHaveDifferentHashes) {
  auto with_footer = [](uint8_t fill) {
    std::vector<uint8_t> e = Event(16, 1764982900, 31, 900, 0, fill);
    const uint32_t crc = binlog::Crc32(std::span<const uint8_t>(e.data(), e.size() - 4));
    for (int i = 0; i < 4; ++i) e[e.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    return e;
  };
  const std::vector<uint8_t> a = with_footer(7), b = with_footer(8);
  EXPECT_EQ(binlog::Crc32(a), binlog::Crc32(b));  // the residue: why a CRC-32 cannot be the witness
  EXPECT_NE(WitnessHash(a), WitnessHash(b));
  const PositionWitness w{"mariadb-bin.000002", 1764982800, 869, 31, WitnessHash(a)};
  WitnessCheck c(w, {"mariadb-bin.000002", 900});
  auto r = c.Feed(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
}

// A snapshot's point: only the file's creation time was recorded; the dump starts at the
// position and its first event is passed on.
TEST(WitnessCheckTest, WithoutAnEventOnlyTheFilesCreationIsChecked) {
  const BinlogPosition start{"mariadb-bin.000002", 900};
  const PositionWitness w{"mariadb-bin.000002", 1764982800, 0, 0, 0};
  WitnessCheck c(w, start);
  EXPECT_EQ(c.dump_start(), start);
  EXPECT_EQ(*c.Feed(Event(4, 0, 40, 0, 0x20)), WitnessCheck::Action::kPass);
  EXPECT_EQ(*c.Feed(Event(15, 1764982800, 120, 0)), WitnessCheck::Action::kPass);
  EXPECT_EQ(*c.Feed(Event(162, 1764983000, 42, 942)), WitnessCheck::Action::kPass);
  EXPECT_TRUE(c.done());

  // Of another file, or none: nothing is checked.
  for (const PositionWitness& none : {PositionWitness{"mariadb-bin.000001", 1, 869, 31, 5}, PositionWitness{}}) {
    WitnessCheck n(none, start);
    EXPECT_TRUE(n.done());
    EXPECT_EQ(n.dump_start(), start);
    EXPECT_EQ(*n.Feed(Event(15, 99, 120, 0)), WitnessCheck::Action::kPass);
  }
}

// By file/position, which is exact on the server that wrote it; a GTID is not once seq_nos
// go out of order (gtid_strict_mode=OFF), and the server finds the first of two equal ones.
TEST(ResumeTest, SameServerResumesByPositionEvenWithAGtid) {
  Checkpoint c = Streamed(1, "0-1-57");
  auto plan = PlanResume(&c, MariaServer(1, "0-1-80"));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->by_gtid);
  EXPECT_FALSE(plan->server_changed);
  EXPECT_EQ(plan->note, "resuming by position mariadb-bin.000002:900 (GTID 0-1-57)");
  EXPECT_EQ(c.stream_start.ToString(), "mariadb-bin.000002:900");  // kept
  EXPECT_EQ(c.tables["d.t"].copied_at.ToString(), "mariadb-bin.000001:500");

  Checkpoint no_gtid = Streamed(1, "");
  plan = PlanResume(&no_gtid, MariaServer(1, ""));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->by_gtid);
  EXPECT_NE(plan->note.find("by position mariadb-bin.000002:900"), std::string::npos) << plan->note;

  // No position on this server yet (a run after a failover stopped before the stream passed
  // the GTID it started from): by GTID.
  Checkpoint unplaced = Streamed(1, "0-1-57");
  unplaced.stream_start = BinlogPosition{};
  plan = PlanResume(&unplaced, MariaServer(1, "0-1-80"));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->by_gtid);
}

HistoryFacts MariaBinlogs(std::vector<std::pair<std::string, uint64_t>> binlogs) {
  HistoryFacts h;
  h.flavor = Flavor::kMariaDB;
  h.gtids_on = true;
  h.binlogs_known = true;
  h.binlogs = std::move(binlogs);
  return h;
}

// The probe's RESET MASTER: the checkpoint at mariadb-bin.000001:76543 (GTID 0-1-308).
TEST(ResumeTest, HistoryCheckTellsAResetFromAPurgeAndFromOurOwnHistory) {
  Checkpoint c = Streamed(1, "0-1-308");
  c.stream_start = {"mariadb-bin.000001", 76543};

  // Ours: the file holds the offset and BINLOG_GTID_POS there is the checkpoint's.
  HistoryFacts h = MariaBinlogs({{"mariadb-bin.000001", 90000}});
  h.gtid_pos_asked = true;
  h.gtid_pos = "0-1-308";
  EXPECT_EQ(CheckHistoryHolds(c, h).verdict, HistoryVerdict::kHolds);
  // Several servers in the domain, out-of-order seq_nos: the last GTID logged, compared as is.
  Checkpoint mixed = c;
  mixed.gtid = "0-2-28,1-1-4";
  h.gtid_pos = "1-1-4,0-2-28";
  EXPECT_EQ(CheckHistoryHolds(mixed, h).verdict, HistoryVerdict::kHolds);
  h.gtid_pos = "0-1-308";
  EXPECT_EQ(CheckHistoryHolds(mixed, h).verdict, HistoryVerdict::kReset);

  // After RESET MASTER: a short new file of the same name.
  HistoryCheck r = CheckHistoryHolds(c, MariaBinlogs({{"mariadb-bin.000001", 624}}));
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  EXPECT_EQ(r.detail, "the checkpoint's position mariadb-bin.000001:76543 is past the end of mariadb-bin.000001 "
                      "on the server (624 bytes)");
  EXPECT_NE(HistoryResetMessage(r).find("was reset (RESET MASTER) or the server was restored from an older backup"),
            std::string::npos);
  EXPECT_NE(HistoryResetMessage(r).find("take a new snapshot into a new destination"), std::string::npos);

  // ... grown past the offset: another GTID there, or no event starting there.
  h.gtid_pos = "0-1-250";
  r = CheckHistoryHolds(c, h);
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  EXPECT_NE(r.detail.find("holds GTID position 0-1-250, not the checkpoint's 0-1-308 (domain 0: 0-1-250 instead "
                          "of 0-1-308)"),
            std::string::npos) << r.detail;
  h.gtid_pos.reset();
  r = CheckHistoryHolds(c, h);
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  EXPECT_NE(r.detail.find("BINLOG_GTID_POS is NULL"), std::string::npos) << r.detail;
  // NULL under a max_allowed_packet below 1 GiB: an event larger than it before the offset
  // gives NULL too. With a witness of the checkpoint's last event the stream checks that
  // instead (a warning); without, the run cannot tell and asks for a larger value. At 1 GiB
  // no event is larger: a reset.
  h.max_allowed_packet = 1 << 20;
  r = CheckHistoryHolds(c, h);  // whether an event starts at the offset not known: a reset
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  h.event_starts_there = false;  // SHOW BINLOG EVENTS: "Wrong offset"
  EXPECT_EQ(CheckHistoryHolds(c, h).verdict, HistoryVerdict::kReset);
  h.event_starts_there = true;
  r = CheckHistoryHolds(c, h);
  EXPECT_EQ(r.verdict, HistoryVerdict::kCannotTell);
  EXPECT_NE(r.detail.find("larger than the server's max_allowed_packet (1048576 bytes)"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("SET GLOBAL max_allowed_packet = 1073741824"), std::string::npos) << r.detail;
  Checkpoint witnessed = c;
  witnessed.witness = PositionWitness{"mariadb-bin.000001", 1700000000, 76500, 43, 0x1234};
  r = CheckHistoryHolds(witnessed, h);
  EXPECT_EQ(r.verdict, HistoryVerdict::kHolds);
  EXPECT_NE(r.detail.find("the stream checks the checkpoint's last event instead"), std::string::npos) << r.detail;
  h.max_allowed_packet = uint64_t{1} << 30;
  EXPECT_EQ(CheckHistoryHolds(witnessed, h).verdict, HistoryVerdict::kReset);
  h.max_allowed_packet = 0;
  h.event_starts_there.reset();

  // The checkpoint's file after the server's newest: reset. Before its oldest: purged.
  // Between them, or of another name: not this server's files, the GTIDs decide.
  c.stream_start = {"mariadb-bin.000033", 1200};
  r = CheckHistoryHolds(c, MariaBinlogs({{"mariadb-bin.000001", 624}}));
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  EXPECT_EQ(r.detail, "the checkpoint's position mariadb-bin.000033:1200 is in a binlog after the server's newest "
                      "(its only binlog is mariadb-bin.000001 (624 bytes))");
  EXPECT_EQ(CheckHistoryHolds(c, MariaBinlogs({{"mariadb-bin.000040", 9}, {"mariadb-bin.000041", 9}})).verdict,
            HistoryVerdict::kPurged);
  EXPECT_EQ(CheckHistoryHolds(c, MariaBinlogs({{"mariadb-bin.000030", 9}, {"mariadb-bin.000035", 9}})).verdict,
            HistoryVerdict::kOtherFile);
  EXPECT_EQ(CheckHistoryHolds(c, MariaBinlogs({{"mysql-bin.000001", 9}})).verdict, HistoryVerdict::kOtherFile);

  // Nothing to check against.
  EXPECT_EQ(CheckHistoryHolds(c, HistoryFacts{}).verdict, HistoryVerdict::kNotChecked);
}

TEST(ResumeTest, HistoryCheckOnMysqlWantsTheSetWithinGtidExecuted) {
  Checkpoint c;
  c.flavor = Flavor::kMySQL;
  c.stream_start = {"binlog.000004", 1000};
  c.gtid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42";
  HistoryFacts h;
  h.flavor = Flavor::kMySQL;
  h.gtids_on = true;
  h.binlogs_known = true;
  h.binlogs = {{"binlog.000004", 5000}};
  h.gtid_executed = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-50";
  EXPECT_EQ(CheckHistoryHolds(c, h).verdict, HistoryVerdict::kHolds);
  h.gtid_executed = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7";  // RESET MASTER, then 7 more
  HistoryCheck r = CheckHistoryHolds(c, h);
  EXPECT_EQ(r.verdict, HistoryVerdict::kReset);
  EXPECT_NE(r.detail.find("not within the server's @@gtid_executed"), std::string::npos) << r.detail;
}

TEST(ResumeTest, OlderCheckpointWithoutIdentityIsTakenAsThisServer) {
  Checkpoint c = Streamed(0, "0-1-5");
  auto plan = PlanResume(&c, MariaServer(7, "0-1-5"));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->server_changed);
  EXPECT_EQ(c.source.server_id, 7u);
}

// A replica (log_slave_updates) that holds the checkpoint's GTIDs: continue by GTID, with
// the old server's coordinates dropped.
TEST(ResumeTest, OtherServerWithTheHistoryContinuesByGtidAndForgetsOldCoordinates) {
  Checkpoint c = Streamed(1, "0-1-57,1-1-3");
  auto plan = PlanResume(&c, MariaServer(2, "0-2-4,0-1-60,1-1-3"));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->by_gtid);
  EXPECT_TRUE(plan->server_changed);
  EXPECT_TRUE(c.stream_start.empty());
  EXPECT_TRUE(c.tables["d.t"].copied_at.empty());
  EXPECT_TRUE(HandoffPieces(c.tables["d.t"]).empty());
  EXPECT_EQ(c.source.server_id, 2u);
  EXPECT_EQ(c.gtid, "0-1-57,1-1-3");
}

TEST(ResumeTest, OtherServerWithoutTheHistoryIsRefusedSayingWhatIsMissingAndWhatToDo) {
  Checkpoint c = Streamed(1, "0-1-57");
  auto plan = PlanResume(&c, MariaServer(3, "0-3-900"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kDataLoss);
  const std::string& m = plan.status().message();
  EXPECT_NE(m.find("source db:3306 (server_id 3) is not the server this destination was streamed from "
                   "(server_id 1, up to mariadb-bin.000002:900, GTID 0-1-57)"),
            std::string::npos) << m;
  EXPECT_NE(m.find("missing 0-1-57 (this server has no GTID from server 1 in domain 0)"), std::string::npos) << m;
  EXPECT_NE(m.find("take a new snapshot into a new destination"), std::string::npos) << m;
  EXPECT_EQ(c.stream_start.ToString(), "mariadb-bin.000002:900");  // untouched

  Checkpoint behind = Streamed(1, "0-1-57");
  plan = PlanResume(&behind, MariaServer(2, "0-1-50"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("last GTID from server 1 in domain 0 is 0-1-50: it is behind"),
            std::string::npos) << plan.status().message();
}

TEST(ResumeTest, OtherServerRefusedWithoutGtidsOrMidSnapshotOrOtherFlavor) {
  Checkpoint c = Streamed(1, "");
  auto plan = PlanResume(&c, MariaServer(2, "0-1-50"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("the checkpoint has no GTID position"), std::string::npos);

  Checkpoint mid = Streamed(1, "0-1-5");
  mid.snapshot_done = false;
  plan = PlanResume(&mid, MariaServer(2, "0-1-50"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("the initial snapshot is not finished"), std::string::npos);

  Checkpoint unpassed = Streamed(1, "0-1-5");
  unpassed.tables["d.t"].copied_at = {"mariadb-bin.000003", 4};
  plan = PlanResume(&unpassed, MariaServer(2, "0-1-50"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("d.t was copied at mariadb-bin.000003:4"), std::string::npos)
      << plan.status().message();

  Checkpoint maria = Streamed(1, "0-1-5");
  ServerGtidState mysql;
  mysql.flavor = Flavor::kMySQL;
  mysql.identity.server_id = 1;
  plan = PlanResume(&maria, mysql);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("written against a mariadb server"), std::string::npos);
}

TEST(ResumeTest, MysqlUsesTheUuidAndSetContainment) {
  Checkpoint c;
  c.flavor = Flavor::kMySQL;
  c.stream_start = {"binlog.000004", 1000};
  c.gtid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42";
  c.source = {1, "3e11fa47-71ca-11e1-9e33-c80aa9429562"};
  c.snapshot_done = true;
  ServerGtidState s;
  s.flavor = Flavor::kMySQL;
  s.identity = {1, "aaaaaaaa-71ca-11e1-9e33-c80aa9429562"};  // a clone: same server_id
  s.gtids_on = true;
  s.history = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-40";
  auto plan = PlanResume(&c, s);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("missing 3e11fa47"), std::string::npos) << plan.status().message();
  s.history = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-45,aaaaaaaa-71ca-11e1-9e33-c80aa9429562:1-3";
  plan = PlanResume(&c, s);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->server_changed);
  EXPECT_TRUE(plan->by_gtid);
}

// A MySQL replica that has applied a prefix of each source's GTIDs is behind (a reconnect waits
// for it, streamer.cc); one that lacks a GTID below its last, or a whole source, has diverged.
TEST(ResumeTest, MysqlReplicaMissingOnlyTheTailIsBehind) {
  const std::string a = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
  const std::string b = "bbbbbbbb-71ca-11e1-9e33-c80aa9429562";
  Checkpoint c;
  c.flavor = Flavor::kMySQL;
  c.stream_start = {"binlog.000004", 1000};
  c.gtid = a + ":1-42," + b + ":1-7";
  c.source = {1, a};
  c.snapshot_done = true;
  ServerGtidState s;
  s.flavor = Flavor::kMySQL;
  s.identity = {2, "cccccccc-71ca-11e1-9e33-c80aa9429562"};
  s.gtids_on = true;
  auto says = [&](const std::string& history) {
    s.history = history;
    Checkpoint copy = c;
    auto plan = PlanResume(&copy, s);
    EXPECT_FALSE(plan.ok()) << history;
    return plan.ok() ? std::string() : std::string(plan.status().message());
  };
  EXPECT_NE(says(a + ":1-40," + b + ":1-7").find(": it is behind"), std::string::npos);
  EXPECT_NE(says(a + ":1-40," + b + ":1-3").find(": it is behind"), std::string::npos);
  EXPECT_EQ(says(a + ":1-20:22-40," + b + ":1-7").find(": it is behind"), std::string::npos);  // 21 missing below 40
  EXPECT_EQ(says(a + ":1-42").find(": it is behind"), std::string::npos);                       // no GTID of b at all
  EXPECT_EQ(says("").find(": it is behind"), std::string::npos);
}

}  // namespace
}  // namespace sluice
