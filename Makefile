# sluice: the two commands a new user needs are `make demo` and `make test` (README.md).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= 2

.PHONY: bench-replica bench-pg-snapshot bench-mysql-snapshot bench-sql-catchup bench-live-lag stream-bigtxn all setup build build-asan test unit-test asan-test integration-test demo fuzz fuzz-long bench clean publish-stress snapshot-stress catchup-stress

all: build

# A new build directory is configured with clang, as the ASan and fuzz builds are: it compiles the
# optimised build with a quarter less CPU than gcc (368 against 478 CPU seconds for sluice; make
# test builds it beside the ASan tests) and the binary is as fast (BENCHMARKS.md, "Build and test
# time"). A directory already configured keeps its compiler; CC/CXX on the command line win.
new_dir_cc := $(if $(filter default,$(origin CC)),clang,$(CC))
new_dir_cxx := $(if $(filter default,$(origin CXX)),clang++,$(CXX))
new_dir_compiler = $(if $(wildcard $(1)/CMakeCache.txt),,-DCMAKE_C_COMPILER=$(new_dir_cc) -DCMAKE_CXX_COMPILER=$(new_dir_cxx))

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(call new_dir_compiler,$(BUILD)) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# clang (installed by setup for the fuzz targets): it compiles the ASan+UBSan build about a
# quarter faster than gcc (BENCHMARKS.md, "Build and test time").
build-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_INTEGRATION_TESTS=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

# The whole suite (docs/testing.md): the unit tests under ASan+UBSan; the integration tests
# against the ASan+UBSan sluice binary in SLUICE_TEST_SHARDS (2) shards side by side, each with
# its own throwaway MariaDB; the long and timing-sensitive ones against the optimised binary, with 90 s of fuzzing beside them at nice 19.
# Everything is compiled once: the ASan build holds every test binary and the fuzz targets;
# the optimised build compiles only sluice, at nice 19 while the ASan tests run.
test: setup build-asan
	@cmake -S . -B $(BUILD) $(call new_dir_compiler,$(BUILD)) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@REL_PREBUILD=1 FUZZ_SECONDS=90 JOBS=$(JOBS) bash scripts/run-tests.sh $(BUILD) $(ASAN_BUILD)

unit-test: build
	@cd $(BUILD) && ctest --output-on-failure

demo: build
	@bash scripts/demo.sh $(BUILD)

# libFuzzer targets of fuzz/ under ASan+UBSan (clang, optimised, build-fuzz): seconds split
# across targets. (make test fuzzes the targets of its unoptimised ASan build instead.)
fuzz:
	@bash scripts/fuzz.sh 90

# The publishing tests with 10 SIGKILLs each instead of make test's 2 (docs/testing.md).
publish-stress: build
	@bash scripts/publish-stress.sh $(BUILD) 10

fuzz-long:
	@bash scripts/fuzz.sh 600

# Issue 8 benchmarks (BENCHMARKS.md, "Streaming apply"): sluice against a native MariaDB
# replica on a 50,000-transaction sysbench backlog, and the lag under a 4-thread load.
bench-replica: build
	@bash bench/replica-bench.sh $(BUILD)

# Issue 10 (BENCHMARKS.md, "SQL destinations"): the 2 M-row sysbench snapshot into PostgreSQL
# vs psql \copy, into MariaDB vs mydumper + myloader; the 200,000-change backlog into
# PostgreSQL and MariaDB vs a native replica.
bench-pg-snapshot: build
	@bash bench/pg-snapshot-bench.sh $(BUILD)
bench-mysql-snapshot: build
	@bash bench/mysql-snapshot-bench.sh $(BUILD)
bench-sql-catchup: build
	@SINKS="mysql postgres" bash bench/replica-bench.sh $(BUILD)

bench-live-lag: build
	@bash bench/live-lag.sh $(BUILD) sqlite
	@bash bench/live-lag.sh $(BUILD) jsonl

# One 4 M-row transaction (over 1 GB of binlog) into each sink under the memory cap, peak RSS
# (make test runs a 100k-row sample with a 4 MiB cap: tests/integration/big_txn_test.cc).
stream-bigtxn: build
	@bash bench/stream-bigtxn.sh $(BUILD)

# SIGKILL 20 times during a parallel snapshot under load, plus the connection-reset tests
# (make test runs the kill test with 3 kills).
snapshot-stress: build
	@bash scripts/snapshot-stress.sh $(BUILD) 20

# Issue 7's catch-up test at 10x (100,000 transactions, 500 DDL; make test runs 10,000).
catchup-stress: build
	@bash scripts/catchup-stress.sh $(BUILD) 100000

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
