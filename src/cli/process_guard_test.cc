#include "cli/process_guard.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

// Runs `body` in a forked child (the settings are process-wide) and returns its exit code.
template <typename F>
int InChild(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(ProcessGuardTest, CoreDumpsAreDisabled) {
  int rc = InChild([] {
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1) return 1;  // dumpable before
    if (!DisableCoreDumps().ok()) return 2;
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) return 3;
    struct rlimit r {};
    if (::getrlimit(RLIMIT_CORE, &r) != 0 || r.rlim_cur != 0 || r.rlim_max != 0) return 4;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(ProcessGuardTest, FilesAreCreatedWithTheRestrictedMode) {
  char tmpl[] = "/tmp/sluice-guard-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  for (mode_t mode : {mode_t{0600}, mode_t{0640}}) {
    std::string path = dir + "/f" + std::to_string(mode);
    int rc = InChild([&] {
      ::umask(022);
      RestrictFileMode(mode);
      int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0666);  // what sqlite3/fopen ask for
      return fd >= 0 ? 0 : 1;
    });
    ASSERT_EQ(rc, 0);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, mode);
  }
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace sluice::cli
