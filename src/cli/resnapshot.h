// `sluice resnapshot --config FILE TABLE...`: re-read chosen tables of an existing pipeline
// from the source (snapshot/reread.h) without starting over.
//
// When no run holds the sink (its "<sink>.lock" is free), the tables are marked in the sink's
// checkpoint at once and the next run copies them before it streams on. When a run holds it,
// the request goes to "<sink>.resnapshot" (one "db.table" per line); the running stream picks
// it up within about a second (between two source transactions), stores the mark with its
// position, copies the tables and continues; a run that starts finds leftover requests there
// too. MySQL and PostgreSQL destinations have no local file: the tables are marked in the
// destination's checkpoint, which needs the run stopped (a running run holds the
// destination's one-writer lock: the sink's kFailedPrecondition). Kafka and NATS sinks:
// refused (kInvalidArgument).
// Errors: kInvalidArgument for a pattern (`*`, `?`), a table the configuration does not select,
// a name that is no table at the source (asked when the source answers), or a sink without a
// checkpoint (the first run copies every table anyway); the sink's errors otherwise.
#pragma once

#include <string>
#include <vector>

#include "cli/config.h"
#include "util/status.h"

namespace sluice::cli {

// Marks `tables` for a re-read (see above); `outcome` says which of the two ways was taken.
Status RequestResnapshot(const Config& config, const std::vector<std::string>& tables, std::string* outcome);

// The run's side: the requested tables, taken out of "<sink>.resnapshot" (moved to
// "<sink>.resnapshot.claimed" so that a request written meanwhile is not lost); empty when
// there is none. ClearResnapshotClaim removes the claim once the marks are in the sink.
std::vector<std::string> ClaimResnapshotRequests(const SinkConfig& sink);
void ClearResnapshotClaim(const SinkConfig& sink);

}  // namespace sluice::cli
