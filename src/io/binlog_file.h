// BinlogFileReader: reads a binlog (or relay log) file from disk and yields its events,
// decoded through an EventStream in file mode.
//
// File format: magic 0xFE 'b' 'i' 'n', then events back to back, each framed by the
// event_size field of its 19-byte header (MySQL sql/binlog.cc, MariaDB sql/log.cc).
// Events of a TRANSACTION_PAYLOAD are yielded after the payload event itself, in order,
// with the payload's position. Memory: one event (plus one inflated payload chunk) at a
// time; the file is read sequentially.
// Ownership: every returned Event owns its bytes (Event::storage), so it stays valid
// after further calls. Errors: kNotFound / kUnavailable when the file cannot be opened
// or read; kCorruption "file <name> at offset N: ..." for a bad magic, truncated or
// damaged event; decoder kNotSupported errors get the same prefix. After an error the
// reader is finished.
// Thread safety: not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "binlog/event_stream.h"
#include "binlog/events.h"
#include "util/status.h"

namespace sluice::io {

class BinlogFileReader {
 public:
  static Result<std::unique_ptr<BinlogFileReader>> Open(const std::string& path,
                                                        binlog::EventStreamOptions options = {});
  ~BinlogFileReader();
  BinlogFileReader(const BinlogFileReader&) = delete;
  BinlogFileReader& operator=(const BinlogFileReader&) = delete;

  // The next event, or nullopt at a clean end of file.
  Result<std::optional<binlog::Event>> Next();

  const std::string& path() const { return path_; }
  // Offset of the next outer event in the file.
  uint64_t offset() const { return offset_; }
  binlog::EventStream& stream() { return stream_; }

 private:
  BinlogFileReader(std::string path, std::FILE* f, binlog::EventStreamOptions options);
  Status Fail(Status st, uint64_t at);

  std::string path_;
  std::string name_;  // base name, used as the binlog file name
  std::FILE* file_ = nullptr;
  binlog::EventStream stream_;
  uint64_t offset_ = 4;
  uint64_t last_at_ = 4;  // offset of the last outer event
  bool done_ = false;
};

}  // namespace sluice::io
