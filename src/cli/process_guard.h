// Process hardening for commands that hold passwords in memory (every command that loads a
// config: run, check, compare, verify, resnapshot, tail).
//
// DisableCoreDumps: prctl(PR_SET_DUMPABLE, 0) (no core file, no ptrace attach by other
// processes of the same user, /proc/<pid>/mem closed to them) and RLIMIT_CORE 0 (soft and
// hard). Skipped when the user asks for core dumps (`--allow-core-dumps`).
// RestrictFileMode: sets the umask so that every file sluice creates (replica, WAL/journal,
// JSON lines output, checkpoint, lock and temporary files) gets at most `mode` (default 0600,
// config sink.file_mode). Existing files keep their mode.
// Errors: kInternal naming the failed system call.
// Thread safety: process-wide; call from main() before any thread or file is created.
#pragma once

#include <sys/types.h>

#include "util/status.h"

namespace sluice::cli {

[[nodiscard]] Status DisableCoreDumps();
void RestrictFileMode(mode_t mode);

}  // namespace sluice::cli
