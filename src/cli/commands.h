// Entry point of the sluice command line: parses arguments and runs a subcommand
// (`run`, `decode`). Returns the process exit code: 0 success, 1 runtime error,
// 2 usage/config error.
#pragma once

namespace sluice::cli {

int Main(int argc, char** argv);

}  // namespace sluice::cli
