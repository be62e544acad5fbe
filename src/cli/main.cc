// sluice: change data capture from MySQL and MariaDB. main() only hands over to cli/.
#include "cli/commands.h"

// Read by jemalloc when the binary links it (CMakeLists.txt); unused otherwise. Freed pages
// go back to the kernel over ten seconds (jemalloc's default decay), so that RSS follows the
// bounded queues down after a burst. A one-second decay returned pages the next groups took
// again: the SQLite catch-up of BENCHMARKS.md made 2,300 madvise calls (250 MiB), and purging
// and faulting those pages in again took a fifth of its CPU. Peaks are the same (4 M-row
// transaction: 244 MiB into SQLite, 172 MiB into JSON lines). Its memory
// is offered to transparent huge pages (thp:always, where the kernel's mode is "madvise"): a
// catch-up grows to its queues' bound, and each 4 KiB page touched for the first time was a
// page fault (34,000 in the SQLite catch-up of BENCHMARKS.md, about 10 us each on this guest);
// with 2 MiB pages 5,000, for 10-20 MiB more RSS (fewer arenas, narenas:2, keep that low).
extern "C" {
const char* malloc_conf = "dirty_decay_ms:10000,muzzy_decay_ms:0,thp:always,narenas:2";
}

int main(int argc, char** argv) { return sluice::cli::Main(argc, argv); }
