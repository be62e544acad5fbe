// `sluice decode FILE...`: prints the events of binlog files as JSON lines (one object per
// event, binlog/events.h EventToJson), or with --rows one object per row change in the
// envelope form (sink/envelope.h), or with --summary counts per event type and table;
// --no-output decodes everything (events and row values) and prints nothing.
// Reads through the same EventStream as live replication; only the byte source differs.
// Errors: the first decoding error, naming the file and offset; events before it are
// printed.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "util/status.h"

namespace sluice::cli {

struct DecodeOptions {
  std::vector<std::string> files;
  bool rows = false;
  bool summary = false;
  // Decode every event and every row value of every rows event, write nothing
  // (benchmarking the decoder; errors are still reported).
  bool no_output = false;
  uint64_t start_position = 0;
  uint64_t stop_position = 0;  // 0: to the end
  // Largest inner event of a TRANSACTION_PAYLOAD decoded (bytes, at most 1 GiB): a larger
  // one, or a crafted payload that inflates to one, stops the decode with kCorruption
  // naming the file and the payload's offset (binlog::EventStreamOptions::max_event_size).
  uint64_t max_event_size = uint64_t{1} << 30;
};

Status RunDecode(const DecodeOptions& options, std::ostream& out);

}  // namespace sluice::cli
