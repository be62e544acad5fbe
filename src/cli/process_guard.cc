#include "cli/process_guard.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace sluice::cli {

Status DisableCoreDumps() {
  struct rlimit none {0, 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0)
    return Status::Internal(fmt::format("setrlimit(RLIMIT_CORE, 0): {}", std::strerror(errno)));
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    return Status::Internal(fmt::format("prctl(PR_SET_DUMPABLE, 0): {}", std::strerror(errno)));
  return Status::Ok();
}

void RestrictFileMode(mode_t mode) { ::umask(static_cast<mode_t>(0777 & ~mode)); }

}  // namespace sluice::cli
