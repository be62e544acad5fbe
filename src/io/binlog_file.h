// BinlogFileReader: reads a binlog (or relay log) file from disk and yields its events,
// decoded through an EventStream in file mode.
//
// File format: magic 0xFE 'b' 'i' 'n', then events back to back, each framed by the
// event_size field of its 19-byte header (MySQL sql/binlog.cc, MariaDB sql/log.cc).
// Events of a TRANSACTION_PAYLOAD are yielded after the payload event itself, in order,
// with the payload's position. Memory: the file is read sequentially in chunks of
// kChunkSize bytes (larger when one event is larger), plus one inflated payload chunk.
// Ownership: every returned Event shares ownership of the chunk its bytes sit in
// (Event::storage), so it stays valid after further calls without a copy per event; a
// chunk no event holds any more is reused for the next read. Errors: kNotFound / kUnavailable when the file cannot be opened
// or read; kCorruption "file <path> at offset N: ..." for a bad magic, truncated or
// damaged event, with the path as given to Open (two directories can hold files of one
// base name); decoder kNotSupported errors get the same prefix. After an error the reader
// is finished. Events carry the base name as their binlog file name (Event::file).
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
  // kMapIfPossible maps a regular file (mmap) so events view the page cache; other files,
  // or kChunked, are read in chunks. Both give the same events and errors.
  enum class ReadMode { kMapIfPossible, kChunked };

  static Result<std::unique_ptr<BinlogFileReader>> Open(const std::string& path,
                                                        binlog::EventStreamOptions options = {},
                                                        ReadMode mode = ReadMode::kMapIfPossible);
  ~BinlogFileReader();
  BinlogFileReader(const BinlogFileReader&) = delete;
  BinlogFileReader& operator=(const BinlogFileReader&) = delete;

  // The next event, or nullopt at a clean end of file.
  Result<std::optional<binlog::Event>> Next();
  // The same without moving the event out: a pointer to an Event the reader owns and
  // reuses (its allocations too), valid until the next call; nullptr at a clean end.
  Result<const binlog::Event*> NextRef();

  const std::string& path() const { return path_; }
  // Offset of the next outer event in the file.
  uint64_t offset() const { return offset_; }
  binlog::EventStream& stream() { return stream_; }

 private:
  static constexpr size_t kChunkSize = size_t{8} << 20;

  BinlogFileReader(std::string path, std::FILE* f, binlog::EventStreamOptions options);
  Status Fail(Status st, uint64_t at);
  Status ReadMapped(binlog::Event* ev, bool* end, uint64_t at);
  // Checks the header at `header` (`avail` bytes readable) and gives its event_size.
  Status EventSize(const uint8_t* header, size_t avail, uint64_t at, uint32_t* size);
  // Makes at least `n` unread bytes available at chunk_pos_ unless the file ends first;
  // kUnavailable on a read error. The bytes available are chunk_len_ - chunk_pos_.
  Status Fill(size_t n);
  // Reads the next event into *ev, or sets *end at a clean end of file.
  Status ReadInto(binlog::Event* ev, bool* end);

  std::string path_;
  std::string name_;  // base name, used as the binlog file name (errors name path_)
  std::FILE* file_ = nullptr;
  binlog::EventStream stream_;
  uint64_t offset_ = 4;
  uint64_t last_at_ = 4;  // offset of the last outer event
  bool done_ = false;
  // The whole file mapped read-only (mmap), when that works: events view into it and no
  // byte is copied. Otherwise the file is read in chunks.
  std::shared_ptr<const void> map_owner_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  std::shared_ptr<std::string> chunk_;  // a window of the file; events view into it
  size_t chunk_pos_ = 0;                // next unread byte of chunk_
  size_t chunk_len_ = 0;                // bytes of chunk_ holding file data
  bool eof_ = false;                    // the file has no more bytes to read
  binlog::Event current_;               // the event NextRef returns
};

}  // namespace sluice::io
