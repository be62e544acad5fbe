// Resume planning: how a run continues from a stored checkpoint on the server it is
// connected to now, by GTID or by binlog file/position, and whether it may continue at all.
//
// A binlog file/position names a byte in one server's files; it means nothing on another
// server (a failover target, a restored backup, a blue/green switch). A GTID position names
// transactions, which a replica with log_slave_updates keeps under the same ids. So:
//   - same server as the checkpoint (SourceIdentity equal): resume by GTID when the server
//     has GTIDs and the checkpoint holds a GTID position, else by file/position.
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
// Thread safety: pure functions over values.
#pragma once

#include <string>

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
