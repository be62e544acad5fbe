#include "stream/resume.h"

#include <cstdlib>

#include "binlog/checksum.h"
#include "util/hash.h"
#include "gtid/gtid_set.h"
#include "mysql/server_probe.h"

namespace sluice {
namespace {

constexpr std::string_view kRemedy =
    "If source.host points at the wrong server, point it back; otherwise this destination "
    "cannot be continued from this server: take a new snapshot into a new destination (a new "
    "sink.path, snapshot.mode = \"initial\")";

// The snapshot's read points (copied_at, range segments) are positions on the checkpoint's
// server; the stream uses them to skip changes a copy already holds. Once stream_start is
// at or past all of them they decide nothing any more. Returns the first one it has not
// passed, or empty.
std::string UnpassedSnapshotPoint(const Checkpoint& ckpt) {
  for (const auto& [name, t] : ckpt.tables) {
    if (!t.copied_at.empty() && ComparePositions(t.copied_at, ckpt.stream_start) > 0)
      return fmt::format("{} was copied at {}", name, t.copied_at.ToString());
    for (const auto& r : t.ranges)
      for (const auto& s : r.segments)
        if (!s.point.empty() && ComparePositions(s.point, ckpt.stream_start) > 0)
          return fmt::format("a range of {} was read at {}", name, s.point.ToString());
  }
  return "";
}

// Compares two MariaDB GTID positions domain by domain: empty when every domain of `want`
// has the same GTID in `have`, else what differs.
Result<std::string> MariadbPositionDiffers(const std::string& want, const std::string& have) {
  ASSIGN_OR_RETURN(auto w, gtid::MariadbGtidList::Parse(want));
  ASSIGN_OR_RETURN(auto h, gtid::MariadbGtidList::Parse(have));
  std::string out;
  for (const gtid::MariadbGtid& g : w.entries()) {
    const gtid::MariadbGtid* there = nullptr;
    for (const gtid::MariadbGtid& x : h.entries())
      if (x.domain_id == g.domain_id) there = &x;
    if (there != nullptr && there->server_id == g.server_id && there->seq_no == g.seq_no) continue;
    if (!out.empty()) out += ", ";
    out += there == nullptr ? fmt::format("domain {}: none instead of {}", g.domain_id, g.ToString())
                            : fmt::format("domain {}: {} instead of {}", g.domain_id, there->ToString(), g.ToString());
  }
  return out;
}

}  // namespace

Result<HistoryFacts> ReadHistoryAt(Connection& conn, Flavor flavor, const BinlogPosition& at,
                                   const std::string& gtid, const std::string& gtid_mode,
                                   const std::string& gtid_executed,
                                   const std::vector<std::pair<std::string, uint64_t>>* binlogs) {
  HistoryFacts h;
  h.flavor = flavor;
  h.gtids_on = flavor == Flavor::kMariaDB || gtid_mode == "ON";
  h.gtid_executed = gtid_executed;
  if (binlogs != nullptr) {
    h.binlogs = *binlogs;
    h.binlogs_known = true;
  } else {
    auto logs = ListBinaryLogs(conn);
    if (logs.ok()) {
      h.binlogs = std::move(logs).value();
      h.binlogs_known = true;
    } else if (logs.status().code() == StatusCode::kUnavailable) {
      return logs.status();
    }
  }
  if (flavor != Flavor::kMariaDB || gtid.empty() || at.file.empty() || !h.binlogs_known) return h;
  bool long_enough = false;
  for (const auto& [name, size] : h.binlogs)
    if (name == at.file && size >= at.pos) long_enough = true;
  if (!long_enough) return h;
  auto r = conn.Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})", conn.Quote(at.file), at.pos));
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kUnavailable) return r.status();
    return h;  // refused: unknown
  }
  h.gtid_pos_asked = true;
  if (!r->rows.empty() && !r->rows[0].empty() && r->rows[0][0]) h.gtid_pos = *r->rows[0][0];
  if (!h.gtid_pos) {
    auto p = conn.Query("SELECT @@global.max_allowed_packet");
    if (!p.ok() && p.status().code() == StatusCode::kUnavailable) return p.status();
    if (p.ok() && !p->rows.empty() && !p->rows[0].empty() && p->rows[0][0])
      h.max_allowed_packet = std::strtoull(p->rows[0][0]->c_str(), nullptr, 10);
    if (h.max_allowed_packet > 0 && h.max_allowed_packet < (uint64_t{1} << 30)) {
      // Reading from the offset needs no event before it: an error there means none starts.
      auto e = conn.Query(fmt::format("SHOW BINLOG EVENTS IN {} FROM {} LIMIT 1", conn.Quote(at.file), at.pos));
      if (!e.ok() && e.status().code() == StatusCode::kUnavailable) return e.status();
      if (e.ok()) {
        h.event_starts_there = true;
      } else if (e.status().message().find("Wrong offset") != std::string_view::npos) {
        h.event_starts_there = false;  // [1220] "... SHOW BINLOG EVENTS: Wrong offset or I/O error"
      }
    }
  }
  return h;
}

HistoryCheck CheckHistoryHolds(const Checkpoint& ckpt, const HistoryFacts& server) {
  HistoryCheck out;
  const BinlogPosition& at = ckpt.stream_start;
  if (at.file.empty() || !server.binlogs_known || server.binlogs.empty()) return out;
  const auto& newest = server.binlogs.back();
  const std::string has =
      server.binlogs.size() == 1
          ? fmt::format("its only binlog is {} ({} bytes)", newest.first, newest.second)
          : fmt::format("its binlogs are {} .. {} ({} bytes)", server.binlogs.front().first, newest.first,
                        newest.second);
  const std::pair<std::string, uint64_t>* file = nullptr;
  for (const auto& b : server.binlogs)
    if (b.first == at.file) file = &b;
  if (file == nullptr) {
    const auto want = SplitBinlogFileName(at.file);
    const auto oldest = SplitBinlogFileName(server.binlogs.front().first);
    const auto last = SplitBinlogFileName(newest.first);
    if (want.seq >= 0 && want.base == oldest.base && want.seq < oldest.seq) {
      out.verdict = HistoryVerdict::kPurged;
    } else if (want.seq >= 0 && want.base == last.base && want.seq > last.seq) {
      out.verdict = HistoryVerdict::kReset;
      out.detail = fmt::format("the checkpoint's position {} is in a binlog after the server's newest ({})",
                               at.ToString(), has);
    } else {
      out.verdict = HistoryVerdict::kOtherFile;
    }
    return out;
  }
  if (file->second < at.pos) {
    out.verdict = HistoryVerdict::kReset;
    out.detail = fmt::format("the checkpoint's position {} is past the end of {} on the server ({} bytes)",
                             at.ToString(), at.file, file->second);
    return out;
  }
  out.verdict = HistoryVerdict::kHolds;
  if (ckpt.gtid.empty()) return out;
  if (server.flavor == Flavor::kMariaDB && server.gtid_pos_asked) {
    // 1 GiB: the largest max_allowed_packet, so no event is larger.
    constexpr uint64_t kLargestPacket = uint64_t{1} << 30;
    if (!server.gtid_pos && server.max_allowed_packet > 0 && server.max_allowed_packet < kLargestPacket &&
        server.event_starts_there.value_or(false)) {
      // MariaDB reads the file up to the position under the global max_allowed_packet, and an
      // event larger than that makes the answer NULL too (a new user's probe: a 3 MB event and
      // max_allowed_packet = 1 MB stopped every start and reconnect with exit 3, advising a
      // new destination; raised, the same replica resumed equal to the source).
      const std::string both = fmt::format(
          "BINLOG_GTID_POS({}, {}) is NULL: the server's binlog history was reset, or {} holds, before that "
          "offset, an event larger than the server's max_allowed_packet ({} bytes), which makes the server "
          "answer NULL as well",
          at.file, at.pos, at.file, server.max_allowed_packet);
      if (ckpt.witness.HasEventEndingAt(at)) {
        // The dump checks the checkpoint's last event itself (WitnessCheck): a reset shows there.
        out.detail = both + "; the stream checks the checkpoint's last event instead";
        return out;
      }
      out.verdict = HistoryVerdict::kCannotTell;
      out.detail = both + ". Raise it (SET GLOBAL max_allowed_packet = 1073741824, and in the server's "
                          "configuration) and run again; if BINLOG_GTID_POS stays NULL, the history was reset";
      return out;
    }
    if (!server.gtid_pos) {
      out.verdict = HistoryVerdict::kReset;
      out.detail = fmt::format(
          "the checkpoint's position {} (GTID {}) is not where an event starts in the server's {} "
          "(BINLOG_GTID_POS is NULL): that file holds another history",
          at.ToString(), ckpt.gtid, at.file);
      return out;
    }
    auto differs = MariadbPositionDiffers(ckpt.gtid, *server.gtid_pos);
    if (differs.ok() && !differs->empty()) {
      out.verdict = HistoryVerdict::kReset;
      out.detail = fmt::format(
          "at the checkpoint's position {} the server's binlog holds GTID position {}, not the checkpoint's {} "
          "({}): that file holds another history",
          at.ToString(), server.gtid_pos->empty() ? "(none)" : *server.gtid_pos, ckpt.gtid, *differs);
    }
    return out;
  }
  if (server.flavor == Flavor::kMySQL && server.gtids_on) {
    auto missing = MissingFromHistory(Flavor::kMySQL, ckpt.gtid, server.gtid_executed);
    if (missing.ok() && !missing->empty()) {
      out.verdict = HistoryVerdict::kReset;
      out.detail = fmt::format("the checkpoint's GTID set at {} is not within the server's @@gtid_executed: {}",
                               at.ToString(), *missing);
    }
  }
  return out;
}

std::string HistoryResetMessage(const HistoryCheck& check) {
  return fmt::format(
      "{}. The server's binlog history was reset (RESET MASTER) or the server was restored from an "
      "older backup since this destination was written: the changes after the checkpoint cannot be "
      "read from it. This replica cannot be continued: take a new snapshot into a new destination "
      "(a new sink.path, snapshot.mode = \"initial\")",
      check.detail);
}

uint64_t WitnessHash(std::span<const uint8_t> event) {
  return Fnv1a64(std::string_view(reinterpret_cast<const char*>(event.data()), event.size()));
}

WitnessCheck::WitnessCheck(const PositionWitness& witness, const BinlogPosition& start)
    : witness_(witness), start_(start) {
  check_created_ = witness.AppliesTo(start) && witness.created != 0;
  check_event_ = witness.HasEventEndingAt(start);
  done_ = !check_created_ && !check_event_;
}

BinlogPosition WitnessCheck::dump_start() const {
  return check_event_ ? BinlogPosition{start_.file, witness_.event_pos} : start_;
}

Result<WitnessCheck::Action> WitnessCheck::Feed(std::span<const uint8_t> event) {
  if (done_ || event.size() < 19) return Action::kPass;  // a short event: the decoder names it
  auto u32 = [&](size_t at) {
    return static_cast<uint32_t>(event[at]) | static_cast<uint32_t>(event[at + 1]) << 8 |
           static_cast<uint32_t>(event[at + 2]) << 16 | static_cast<uint32_t>(event[at + 3]) << 24;
  };
  // The v4 header (binlog/event_header.h): timestamp, type, server_id, event_size, log_pos, flags.
  const uint32_t timestamp = u32(0), size = u32(9), log_pos = u32(13);
  const uint8_t type = event[4];
  const uint16_t flags = static_cast<uint16_t>(event[17] | event[18] << 8);
  constexpr uint8_t kRotate = 4, kFde = 15, kHeartbeat = 27, kHeartbeatV2 = 41;
  constexpr uint16_t kArtificial = 0x20;
  auto reset = [&](std::string what) {
    HistoryCheck c;
    c.verdict = HistoryVerdict::kReset;
    c.detail = fmt::format("the server's binlog {} is not the one the checkpoint's position {} was read from: {}",
                           start_.file, start_.ToString(), what);
    return Status::DataLoss(HistoryResetMessage(c));
  };
  if (type == kFde) {
    if (check_created_) {
      check_created_ = false;
      if (timestamp != witness_.created)
        return reset(fmt::format("it was created at {} (unix time), the checkpoint's at {}", timestamp,
                                 witness_.created));
    }
    return Action::kPass;
  }
  if (type == kRotate || type == kHeartbeat || type == kHeartbeatV2 || log_pos == 0 || (flags & kArtificial) != 0)
    return Action::kPass;
  done_ = true;
  if (!check_event_) return Action::kPass;
  const uint64_t at = log_pos >= size ? log_pos - size : 0;
  if (at != witness_.event_pos || size != witness_.event_size)
    return reset(fmt::format("the event the checkpoint ends with was {} bytes at offset {}, the server's there is {} "
                             "bytes at offset {}",
                             witness_.event_size, witness_.event_pos, size, at));
  if (WitnessHash(event) != witness_.event_hash)
    return reset(fmt::format("the event the checkpoint ends with (offset {}, {} bytes) has other contents there",
                             witness_.event_pos, witness_.event_size));
  return Action::kDrop;
}

Result<ServerGtidState> ReadServerGtidState(Connection& conn, Flavor flavor, uint32_t server_id,
                                            const std::string& gtid_mode,
                                            const std::string& gtid_executed) {
  ServerGtidState s;
  s.flavor = flavor;
  s.identity.server_id = server_id;
  s.describe = conn.options().Describe();
  if (flavor == Flavor::kMariaDB) {
    ASSIGN_OR_RETURN(QueryResult r, conn.Query("SELECT @@global.gtid_binlog_state"));
    if (!r.rows.empty() && !r.rows[0].empty()) s.history = r.rows[0][0].value_or("");
    s.gtids_on = true;
  } else if (flavor == Flavor::kMySQL) {
    ASSIGN_OR_RETURN(QueryResult r, conn.Query("SELECT @@server_uuid"));
    if (!r.rows.empty() && !r.rows[0].empty()) s.identity.server_uuid = r.rows[0][0].value_or("");
    s.history = gtid_executed;
    s.gtids_on = gtid_mode == "ON";
  }
  return s;
}

Result<ServerGtidState> ReadServerGtidState(Connection& conn, Flavor flavor) {
  ASSIGN_OR_RETURN(QueryResult id, conn.Query("SELECT @@server_id"));
  uint32_t server_id = 0;
  if (!id.rows.empty() && !id.rows[0].empty() && id.rows[0][0])
    server_id = static_cast<uint32_t>(std::strtoul(id.rows[0][0]->c_str(), nullptr, 10));
  std::string gtid_mode, gtid_executed;
  if (flavor == Flavor::kMySQL) {
    ASSIGN_OR_RETURN(QueryResult g, conn.Query("SELECT @@GLOBAL.gtid_mode, @@GLOBAL.gtid_executed"));
    if (!g.rows.empty() && g.rows[0].size() > 1) {
      gtid_mode = g.rows[0][0].value_or("");
      gtid_executed = g.rows[0][1].value_or("");
    }
  }
  return ReadServerGtidState(conn, flavor, server_id, gtid_mode, gtid_executed);
}

Result<std::string> MissingFromHistory(Flavor flavor, const std::string& position,
                                       const std::string& history) {
  if (flavor == Flavor::kMySQL) {
    ASSIGN_OR_RETURN(auto want, gtid::MysqlGtidSet::Parse(position));
    ASSIGN_OR_RETURN(auto have, gtid::MysqlGtidSet::Parse(history));
    if (have.ContainsAll(want)) return std::string();
    // Behind, not diverged: every source (uuid, tag) of the position is known here, and what is
    // missing of it all lies after the last GTID this server has from that source (a replica
    // that has not applied them yet), as MariaDB's "behind" below.
    bool behind = true;
    for (const auto& [key, wanted] : want.intervals()) {
      auto it = have.intervals().find(key);
      if (it == have.intervals().end() || it->second.empty()) {
        behind = false;
        break;
      }
      const uint64_t last_here = it->second.back().last;
      for (const gtid::GnoInterval& iv : wanted) {
        if (iv.first > last_here) continue;
        const uint64_t to = std::min(iv.last, last_here);
        // A set's intervals are merged, so a covered range lies within one of them.
        behind = behind && std::any_of(it->second.begin(), it->second.end(), [&](const gtid::GnoInterval& h) {
                   return h.first <= iv.first && to <= h.last;
                 });
      }
      if (!behind) break;
    }
    return fmt::format("{} (this server has executed {}{})", position, history.empty() ? "nothing" : history,
                       behind ? ": it is behind" : "");
  }
  ASSIGN_OR_RETURN(auto want, gtid::MariadbGtidList::Parse(position));
  // @@gtid_binlog_state holds one GTID per (domain, server), so a domain may repeat: list
  // semantics, not a position.
  gtid::MariadbGtidList have;
  for (size_t start = 0; start < history.size();) {
    size_t comma = history.find(',', start);
    std::string_view item = std::string_view(history).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\n')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\n')) item.remove_suffix(1);
    if (!item.empty()) {
      ASSIGN_OR_RETURN(gtid::MariadbGtid g, gtid::MariadbGtid::Parse(item));
      have.AddRaw(g);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string missing;
  for (const gtid::MariadbGtid& g : want.entries()) {
    const gtid::MariadbGtid* same = nullptr;
    for (const gtid::MariadbGtid& h : have.entries())
      if (h.domain_id == g.domain_id && h.server_id == g.server_id) same = &h;
    if (same != nullptr && same->seq_no >= g.seq_no) continue;
    if (!missing.empty()) missing += "; ";
    missing += same != nullptr
                   ? fmt::format("{} (this server's last GTID from server {} in domain {} is {}: it is behind)",
                                 g.ToString(), g.server_id, g.domain_id, same->ToString())
                   : fmt::format("{} (this server has no GTID from server {} in domain {})", g.ToString(),
                                 g.server_id, g.domain_id);
  }
  return missing;
}

Result<ResumePlan> PlanResume(Checkpoint* ckpt, const ServerGtidState& server) {
  ResumePlan plan;
  if (ckpt->flavor != Flavor::kUnknown && server.flavor != Flavor::kUnknown && ckpt->flavor != server.flavor) {
    return Status::DataLoss(fmt::format(
        "the checkpoint was written against a {} server, but source {} is {}: binlog positions "
        "and GTIDs do not carry over between them. {}",
        FlavorName(ckpt->flavor), server.describe, FlavorName(server.flavor), kRemedy));
  }
  const bool can_gtid = server.gtids_on && !ckpt->gtid.empty();
  if (!ckpt->source.known()) {
    // Written by a sluice that did not record the server: assume it is this one.
    ckpt->source = server.identity;
    plan.by_gtid = can_gtid && ckpt->stream_start.empty();
    plan.note = fmt::format("the checkpoint does not name its server (older sluice): taking it to be "
                            "source {} ({}); resuming by {}",
                            server.describe, server.identity.ToString(),
                            plan.by_gtid ? "GTID " + ckpt->gtid : "position " + ckpt->stream_start.ToString());
    return plan;
  }
  // MySQL: the uuid decides when both are known (a clone keeps server_id, not server_uuid).
  const bool same = !ckpt->source.server_uuid.empty() && !server.identity.server_uuid.empty()
                        ? ckpt->source.server_uuid == server.identity.server_uuid
                        : ckpt->source.server_id == server.identity.server_id;
  if (same) {
    // By position (see the header): exact on this server, whatever order the GTIDs have.
    plan.by_gtid = can_gtid && ckpt->stream_start.empty();
    plan.note = plan.by_gtid ? "resuming by GTID " + ckpt->gtid + " (the checkpoint has no binlog position on this server yet)"
                             : "resuming by position " + ckpt->stream_start.ToString() +
                                   (ckpt->gtid.empty() ? "" : " (GTID " + ckpt->gtid + ")");
    return plan;
  }

  const std::string what = fmt::format(
      "source {} ({}) is not the server this destination was streamed from ({}, up to {}{})",
      server.describe, server.identity.ToString(), ckpt->source.ToString(),
      ckpt->stream_start.empty() ? "an unknown position" : ckpt->stream_start.ToString(),
      ckpt->gtid.empty() ? "" : ", GTID " + ckpt->gtid);
  if (ckpt->gtid.empty()) {
    return Status::DataLoss(fmt::format(
        "{}, and the checkpoint has no GTID position: a binlog file/position means nothing on "
        "another server, so there is no way to find where to continue. {}",
        what, kRemedy));
  }
  if (!server.gtids_on) {
    return Status::DataLoss(fmt::format(
        "{}, and this server has GTIDs off (gtid_mode is not ON), so the checkpoint's GTID "
        "position cannot be found on it. Turn GTIDs on, or: {}",
        what, kRemedy));
  }
  if (!ckpt->snapshot_done) {
    return Status::DataLoss(fmt::format(
        "{}, and the initial snapshot is not finished: the points its copies were read at are "
        "positions on the old server. Finish the run against the old server, or: {}",
        what, kRemedy));
  }
  if (std::string p = UnpassedSnapshotPoint(*ckpt); !p.empty()) {
    return Status::DataLoss(fmt::format(
        "{}, and the stream has not yet passed a snapshot read point ({}, an old-server position). "
        "Stream against the old server a little longer, or: {}",
        what, p, kRemedy));
  }
  auto missing = MissingFromHistory(server.flavor, ckpt->gtid, server.history);
  if (!missing.ok())
    return Status::DataLoss(fmt::format("{}; cannot compare GTID positions: {}. {}", what,
                                        missing.status().message(), kRemedy));
  if (!missing->empty()) {
    return Status::DataLoss(fmt::format(
        "{}, and its GTID history does not contain the checkpoint's position: missing {}. Either it "
        "has not yet applied everything this destination holds (a replica catching up: wait and "
        "run again) or it has a different history. {}",
        what, *missing, kRemedy));
  }
  plan.by_gtid = true;
  plan.server_changed = true;
  plan.note = fmt::format("{}; its GTID history contains the checkpoint's position, so resuming there by GTID {}",
                          what, ckpt->gtid);
  // The old server's coordinates: the stream learns the new ones from the dump's ROTATE.
  ckpt->stream_start = BinlogPosition{};
  for (auto& [name, t] : ckpt->tables) {
    t.copied_at = BinlogPosition{};
    for (auto& r : t.ranges) r.segments.clear();
  }
  ckpt->source = server.identity;
  return plan;
}

}  // namespace sluice
