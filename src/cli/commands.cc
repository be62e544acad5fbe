#include "cli/commands.h"

#include <cstdio>

namespace sluice::cli {

int Main(int, char**) {
  std::fprintf(stderr, "sluice: not built yet\n");
  return 1;
}

}  // namespace sluice::cli
