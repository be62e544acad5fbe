// sluice: change data capture from MySQL and MariaDB. main() only hands over to cli/.
#include "cli/commands.h"

// Read by jemalloc when the binary links it (CMakeLists.txt): return freed pages within a
// second, so that RSS follows the bounded queues down (issue 8); unused otherwise.
extern "C" {
const char* malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0";
}

int main(int argc, char** argv) { return sluice::cli::Main(argc, argv); }
