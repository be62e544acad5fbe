// Resume planning: how a run continues from a stored checkpoint on the server it is
// connected to now, by GTID or by binlog file/position, and whether it may continue at all.
//
// A binlog file/position names a byte in one server's files; it means nothing on another
// server (a failover target, a restored backup, a blue/green switch). A GTID position names
// transactions, which a replica with log_slave_updates keeps under the same ids. So:
//   - same server as the checkpoint (SourceIdentity equal): resume by file/position (below);
//     by GTID only when the checkpoint has no position and the server has GTIDs.
//   - another server: continue only if its GTID history contains the checkpoint's position
//     (every GTID the destination holds was applied there too), and then only by GTID; the
//     old server's coordinates are dropped from the checkpoint (stream_start becomes empty:
//     the stream learns the new server's file/position from the dump's first ROTATE).
//     Refused, naming the reason and the remedy, when the checkpoint has no GTID position,
//     the server has no GTIDs, the flavor differs, the initial snapshot is unfinished (its
//     read points are old-server positions the stream has not passed), or the history does
//     not contain the position (a replica behind the destination, or another history).
// History containment:
//   MariaDB: each domain-server-seq of the checkpoint's position must have an entry of the
//            same domain and server with seq >= it in @@gtid_binlog_state (the last GTID per
//            domain and server the server has binlogged). Like MariaDB itself, this trusts
//            server_ids to be unique: two unrelated servers with one server_id and domain
//            cannot be told apart by GTIDs.
//   MySQL:   the checkpoint's executed set must be a subset of @@gtid_executed.
// Same server: by file/position. A GTID names a transaction only as long as the server
// never logs one twice; with gtid_strict_mode=OFF (MariaDB's default) a session may log a
// lower seq_no (SET gtid_seq_no, a replica's own writes in a domain), the checkpoint's GTID
// position then moves back, and the server looks a GTID up by its first occurrence: a dump
// by GTID sent everything since again (a new user's probe, F2). File/position is exact on the
// server that wrote it. GTIDs are still recorded, for a failover. By GTID only when the
// checkpoint has no position (after a server change, until the stream has one it can trust:
// stream/streamer.h).
// History check (CheckHistoryHolds, before resuming by position on the same server, and
// `sluice check`'s resume position line): the server's binlogs must still hold the place
// the checkpoint names. After RESET MASTER (or a restore from an older backup) a file of
// the same name may exist with another history in it: a run resumed there by position (or by
// GTID, once the new sequence passed the checkpoint's) lost every transaction in between
// and reported success (F1). Evidence of that, each kDataLoss:
//   - the checkpoint's file is not among the server's binlogs and sorts after the newest one
//     (one sorting before the oldest is purged, the older message);
//   - the file is shorter than the checkpoint's offset;
//   - MariaDB, with a GTID position in the checkpoint: BINLOG_GTID_POS(file, pos) is not the
//     checkpoint's position in each of its domains (NULL: the offset is not an event boundary
//     there). Both are the last GTID logged in each domain before that offset (the binlog's
//     order, whatever the seq_nos and server_ids), so on the history that wrote the checkpoint
//     they are equal, out-of-order seq_nos included;
//   - MySQL with GTIDs on: the checkpoint's executed set is not within @@gtid_executed (RESET
//     MASTER clears it).
// Thread safety: pure functions over values.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "mysql/connection.h"
#include "util/status.h"

namespace sluice {

// What the server the run is connected to says about itself.
struct ServerGtidState {
  Flavor flavor = Flavor::kUnknown;
  SourceIdentity identity;
  bool gtids_on = false;  // MariaDB: always; MySQL: gtid_mode = ON
  std::string history;    // MariaDB @@gtid_binlog_state; MySQL @@gtid_executed
  std::string describe;   // "host:port", for messages
};

// Reads ServerGtidState from `conn` (MySQL: also @@server_uuid). kUnavailable on network errors.
Result<ServerGtidState> ReadServerGtidState(Connection& conn, Flavor flavor, uint32_t server_id,
                                            const std::string& gtid_mode,
                                            const std::string& gtid_executed);

// The same, asking the server for @@server_id (and MySQL's gtid_mode and gtid_executed) itself:
// for a reconnect, which has no server probe at hand.
Result<ServerGtidState> ReadServerGtidState(Connection& conn, Flavor flavor);

// What the server says about the place a checkpoint names (ReadHistoryAt).
struct HistoryFacts {
  Flavor flavor = Flavor::kUnknown;
  bool binlogs_known = false;
  std::vector<std::pair<std::string, uint64_t>> binlogs;  // SHOW BINARY LOGS: name, size
  // MariaDB: whether BINLOG_GTID_POS(file, pos) was asked (only when the file is there and
  // long enough, and the checkpoint has a GTID position), and its answer (nullopt: NULL).
  bool gtid_pos_asked = false;
  std::optional<std::string> gtid_pos;
  // MariaDB, asked when gtid_pos is NULL: @@global.max_allowed_packet (0: unknown). The server
  // answers NULL as well when the file holds, before the position, an event larger than it.
  uint64_t max_allowed_packet = 0;
  // Then (max_allowed_packet below 1 GiB): whether SHOW BINLOG EVENTS reads an event starting
  // at the position (true), refuses the offset (false: no event starts there), or was not
  // asked or refused for another reason (nullopt).
  std::optional<bool> event_starts_there;
  bool gtids_on = false;       // MySQL: gtid_mode = ON
  std::string gtid_executed;   // MySQL
};

// Asks the server what HistoryFacts needs for `at` and `gtid` (the checkpoint's). `binlogs`:
// SHOW BINARY LOGS when the caller has it already (else asked here).
// kUnavailable on network errors; a refused query leaves that fact unknown.
Result<HistoryFacts> ReadHistoryAt(Connection& conn, Flavor flavor, const BinlogPosition& at,
                                   const std::string& gtid, const std::string& gtid_mode,
                                   const std::string& gtid_executed,
                                   const std::vector<std::pair<std::string, uint64_t>>* binlogs);

enum class HistoryVerdict {
  kHolds,       // the server still has the place, and (where it can be told) its history is ours
  kNotChecked,  // no position, or the binlog list is unknown
  kPurged,      // the file sorts before the server's oldest binlog
  kOtherFile,   // a file of another name series, between the oldest and the newest: unknown
  kReset,       // the history was reset (RESET MASTER) or restored from an older backup
  // MariaDB's BINLOG_GTID_POS is NULL under a max_allowed_packet below the largest possible
  // event, and the checkpoint has no witness of its last event for the stream to check
  // instead: a reset, or an event larger than max_allowed_packet before the position.
  kCannotTell,
};
struct HistoryCheck {
  HistoryVerdict verdict = HistoryVerdict::kNotChecked;
  // kReset: what shows it, naming the position and what the server has; kCannotTell: both
  // causes and the remedy; kHolds: a warning, when the check was left to the stream's witness.
  std::string detail;
};
// Whether the server the checkpoint was written against still holds its position (rules
// above). Call it only for the same server: on another one the position means nothing.
HistoryCheck CheckHistoryHolds(const Checkpoint& ckpt, const HistoryFacts& server);

// The kDataLoss message for a kReset verdict: the detail, what it means and the remedy.
std::string HistoryResetMessage(const HistoryCheck& check);

// The run's own check of a checkpoint's PositionWitness (checkpoint.h), on the dump that
// resumes from it: what the checks above cannot see, because the server's file has the
// checkpoint's name, length and GTIDs, but another history (RESET MASTER followed by
// transactions of the same sizes, or a backup restored and written again; a new user's probe:
// the transactions in between were skipped, exit 0). The dump starts at dump_start(): at the
// witnessed event (the last one the sink holds) when there is one, else at the position. Every
// raw event of the dump is fed in order:
//   - the file's FORMAT_DESCRIPTION_EVENT (a dump sends it first, replayed when it starts past
//     offset 4) must carry the recorded creation time;
//   - the first event the dump reads from the file (not the fake ROTATE, a replayed or fake
//     event with log_pos 0 or the artificial flag, or a heartbeat) must be the witnessed one:
//     the same offset, size and hash of its bytes (WitnessHash). It is dropped (kDrop): the stream resumes
//     after it.
// A mismatch is kDataLoss with HistoryResetMessage's wording, naming the file and what
// differs. A witness that does not apply to the position (another file; checkpoints written
// before it existed) checks nothing. Not used for a dump by GTID (no position to trust).
// Thread safety: one thread (the replication reader).
// The witness hash of one whole event (header, body and checksum footer): 64-bit FNV-1a.
uint64_t WitnessHash(std::span<const uint8_t> event);

class WitnessCheck {
 public:
  WitnessCheck(const PositionWitness& witness, const BinlogPosition& start);
  BinlogPosition dump_start() const;
  enum class Action { kPass, kDrop };
  Result<Action> Feed(std::span<const uint8_t> event);
  bool done() const { return done_; }

 private:
  PositionWitness witness_;
  BinlogPosition start_;
  bool check_created_ = false;
  bool check_event_ = false;
  bool done_ = false;
};

struct ResumePlan {
  bool by_gtid = false;         // stream from ckpt.gtid instead of ckpt.stream_start
  bool server_changed = false;  // the checkpoint was written against another server
  std::string note;             // one line for the log: how and why
};

// Decides how `*ckpt` (a stored checkpoint) continues on `server`, and updates it: records
// the server's identity, and on a server change forgets the old server's coordinates.
// Refusals are kDataLoss (exit code 3: this destination cannot be continued from this
// server) with the reason and what to do.
Result<ResumePlan> PlanResume(Checkpoint* ckpt, const ServerGtidState& server);

// Empty when `history` contains every GTID of `position` (rules above); otherwise what is
// missing, e.g. "0-1-57 (this server's last GTID from server 1 in domain 0 is 0-1-50)".
// kInvalidArgument when either text does not parse.
Result<std::string> MissingFromHistory(Flavor flavor, const std::string& position,
                                       const std::string& history);

}  // namespace sluice
