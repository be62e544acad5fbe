// SQLite's own cost of the snapshot benchmark's inserts, without sluice (issue 9): 2 M rows
// shaped like sysbench's sbtest1 (id INTEGER PRIMARY KEY, k INTEGER, c 119 chars, pad 59
// chars), bound and stepped through one prepared upsert, as the SQLite sink does
// (ON CONFLICT(id) DO UPDATE SET ...), WAL, synchronous=FULL, cache_size=-32768, a commit
// every 160,000 rows (16 fetches of 10,000: the snapshot's group commit), 16 KiB pages (the
// sink's SqliteSinkOptions::page_size for a new database).
//   cc -O2 -o /tmp/sqlite_floor bench/sqlite_insert_floor.c -lsqlite3
//   /tmp/sqlite_floor DB [ROWS] [SYNC] [PAGE_SIZE]   # SYNC: FULL (default), NORMAL, OFF
// Prints wall and CPU seconds (user + sys) of the process.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long rows = argc > 2 ? atol(argv[2]) : 2000000;
  const char* sync = argc > 3 ? argv[3] : "FULL";
  const long page_size = argc > 4 ? atol(argv[4]) : 16384;
  char sql[256];
  sqlite3* db;
  check(sqlite3_open(argv[1], &db), db, "open");
  snprintf(sql, sizeof sql, "PRAGMA page_size=%ld", page_size);  // before WAL fixes it
  check(sqlite3_exec(db, sql, 0, 0, 0), db, "page_size");
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL", 0, 0, 0), db, "wal");
  snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", sync);
  check(sqlite3_exec(db, sql, 0, 0, 0), db, "sync");
  check(sqlite3_exec(db, "PRAGMA cache_size=-32768", 0, 0, 0), db, "cache");
  check(sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS t (\"id\" INTEGER, \"k\" INTEGER, \"c\" TEXT, \"pad\" TEXT, "
                         "PRIMARY KEY (\"id\"))", 0, 0, 0), db, "create");
  sqlite3_stmt* s;
  check(sqlite3_prepare_v2(db, "INSERT INTO t (\"id\", \"k\", \"c\", \"pad\") VALUES (?, ?, ?, ?) ON CONFLICT(\"id\") DO "
                               "UPDATE SET \"k\" = excluded.\"k\", \"c\" = excluded.\"c\", \"pad\" = excluded.\"pad\"",
                           -1, &s, 0), db, "prepare");
  char c[120], pad[60];
  memset(c, '7', 119);
  memset(pad, '3', 59);
  for (int i = 11; i < 119; i += 12) c[i] = '-';
  for (int i = 11; i < 59; i += 12) pad[i] = '-';
  const double t0 = now();
  for (long i = 1; i <= rows; ++i) {
    if (i % 160000 == 1) check(sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0), db, "begin");
    sqlite3_bind_int64(s, 1, i);
    sqlite3_bind_int64(s, 2, (i * 7919) % 1000000);
    c[0] = (char)('0' + i % 10);
    sqlite3_bind_text(s, 3, c, 119, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, pad, 59, SQLITE_STATIC);
    check(sqlite3_step(s), db, "step");
    sqlite3_reset(s);
    if (i % 160000 == 0 || i == rows) check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
  }
  sqlite3_finalize(s);
  check(sqlite3_close(db), db, "close");
  const double t1 = now();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%ld rows, synchronous=%s, page_size=%ld: %.2f s wall, %.2f s user + %.2f s sys\n", rows, sync, page_size, t1 - t0,
         ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
  return 0;
}
