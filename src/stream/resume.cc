#include "stream/resume.h"

#include "gtid/gtid_set.h"

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

}  // namespace

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

Result<std::string> MissingFromHistory(Flavor flavor, const std::string& position,
                                       const std::string& history) {
  if (flavor == Flavor::kMySQL) {
    ASSIGN_OR_RETURN(auto want, gtid::MysqlGtidSet::Parse(position));
    ASSIGN_OR_RETURN(auto have, gtid::MysqlGtidSet::Parse(history));
    if (have.ContainsAll(want)) return std::string();
    return fmt::format("{} (this server has executed {})", position, history.empty() ? "nothing" : history);
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
    plan.by_gtid = can_gtid;
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
    plan.by_gtid = can_gtid;
    plan.note = plan.by_gtid ? "resuming by GTID " + ckpt->gtid
                             : "resuming by position " + ckpt->stream_start.ToString() +
                                   (ckpt->gtid.empty() ? " (the checkpoint has no GTID position)"
                                                       : " (the server has GTIDs off)");
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
