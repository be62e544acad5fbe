// Small durable files: atomic replace and whole-file read.
//
// WriteFileAtomic(path, contents) writes `contents` to "<path>.tmp", fsyncs it, renames it
// over `path` and fsyncs the directory, so after a crash `path` holds either the old or the
// new contents, whole (LevelDB SetCurrentFile; ClickHouse MaterializeMetadata::transaction).
// A stale "<path>.tmp" from a crash is removed by the next write and never read; the new
// temporary is created with O_CREAT | O_EXCL | O_NOFOLLOW and mode 0600 (further narrowed by
// the umask), so a symlink planted at "<path>.tmp" is never followed.
// ReadSmallFile reads a file of at most kMaxSmallFileBytes; a missing file gives nullopt.
//
// Errors: I/O failures are kUnavailable ("<op> <path>: <strerror>"), a file larger than the
// limit is kCorruption. The checkpoint helpers add Checkpoint::FromJson's errors.
// Thread safety: functions; concurrent writers of one path must be serialised by the caller.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint.h"
#include "util/status.h"

namespace sluice {

inline constexpr size_t kMaxSmallFileBytes = 64u << 20;

[[nodiscard]] Status WriteFileAtomic(const std::string& path, std::string_view contents);
[[nodiscard]] Result<std::optional<std::string>> ReadSmallFile(const std::string& path);

// fsync of a file's directory (after creating, renaming or removing an entry in it).
[[nodiscard]] Status SyncParentDirectory(const std::string& path);

// Checkpoint::ToJson() through WriteFileAtomic, and back; nullopt when the file is missing.
[[nodiscard]] Status SaveCheckpointFile(const std::string& path, const Checkpoint& cp);
[[nodiscard]] Result<std::optional<Checkpoint>> LoadCheckpointFile(const std::string& path);

}  // namespace sluice
