// kafka_mock: a librdkafka mock cluster (rd_kafka_mock_cluster_new) in its own process, so
// that sluice runs can be killed and restarted against the same "brokers". Tests and
// benchmarks only: production uses a real Kafka cluster; sluice's client code is the same.
//
//   kafka_mock [--brokers N] [--partitions N]
// Prints "bootstrap <host:port,...>" on stdout, then reads commands from stdin, one a line,
// answering "ok" or "error <why>" to each:
//   topic NAME PARTITIONS REPLICATION   create a topic
//   errors APIKEY CODE [COUNT]          the next COUNT (default 1) requests of Kafka API
//                                       APIKEY (0 Produce, 1 Fetch, 3 Metadata, 22 InitProducerId,
//                                       24 AddPartitionsToTxn, 26 EndTxn) fail with error CODE
//                                       (e.g. 7 REQUEST_TIMED_OUT, 6 NOT_LEADER_OR_FOLLOWER)
//   leader TOPIC PARTITION BROKER       move a partition's leader (broker ids are 1..N)
//   rtt BROKER MS                       add round-trip delay to a broker
//   down BROKER / up BROKER             take a broker's listener down or up
// Exits at end of input.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  int brokers = 3;
  std::string partitions = "4";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--brokers") == 0) brokers = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--partitions") == 0) partitions = argv[i + 1];
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr) {
    std::fprintf(stderr, "kafka_mock: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (mc == nullptr) {
    std::fprintf(stderr, "kafka_mock: cannot create the mock cluster\n");
    return 1;
  }
  (void)partitions;
  std::cout << "bootstrap " << rd_kafka_mock_cluster_bootstraps(mc) << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (cmd == "topic") {
      std::string name;
      int parts = 1, rf = 1;
      in >> name >> parts >> rf;
      e = rd_kafka_mock_topic_create(mc, name.c_str(), parts, rf);
    } else if (cmd == "errors") {
      int api = 0, code = 0, count = 1;
      in >> api >> code;
      if (!(in >> count)) count = 1;
      for (int i = 0; i < count; ++i) {
        rd_kafka_mock_push_request_errors(mc, api, 1, static_cast<rd_kafka_resp_err_t>(code));
      }
    } else if (cmd == "leader") {
      std::string topic;
      int part = 0, broker = 1;
      in >> topic >> part >> broker;
      e = rd_kafka_mock_partition_set_leader(mc, topic.c_str(), part, broker);
    } else if (cmd == "rtt") {
      int broker = 1, ms = 0;
      in >> broker >> ms;
      e = rd_kafka_mock_broker_set_rtt(mc, broker, ms);
    } else if (cmd == "down" || cmd == "up") {
      int broker = 1;
      in >> broker;
      e = cmd == "down" ? rd_kafka_mock_broker_set_down(mc, broker) : rd_kafka_mock_broker_set_up(mc, broker);
    } else if (cmd.empty()) {
      continue;
    } else {
      std::cout << "error unknown command " << cmd << std::endl;
      continue;
    }
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::cout << "ok" << std::endl;
    } else {
      std::cout << "error " << rd_kafka_err2str(e) << std::endl;
    }
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
