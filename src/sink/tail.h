// Tail: reads back what the Kafka and NATS sinks published, as JSON lines, so that users and
// tests can check it (`sluice tail --config FILE`).
//
// Kafka: every topic named "<prefix>" or starting with "<prefix>." except the state topic,
// all partitions from the beginning, isolation.level=read_committed. One line per record:
//   {"topic":"...","partition":N,"offset":N,"key":<key>|null,"value":<value>|null}
// NATS: the stream's messages from the first, one line per message:
//   {"subject":"...","seq":N,"key":<Sluice-Key header>|null,"value":<payload>|null}
// (null value: a tombstone). Keys and values that are JSON text are embedded as they are;
// anything else is embedded as a JSON string. Without `follow` the reader stops at the end
// of what was there when it started (Kafka: each partition's end; NATS: the stream's last
// sequence); with it, it waits for more until `stop` is set.
// Errors: kUnavailable (cannot connect or read), kInvalidArgument (bad options).
// Thread safety: one call at a time per output.
#pragma once

#include <atomic>
#include <cstdio>

#include "sink/kafka_sink.h"
#include "sink/nats_sink.h"
#include "util/status.h"

namespace sluice {

[[nodiscard]] Status TailKafka(const KafkaSinkOptions& options, bool follow, const std::atomic<bool>* stop,
                               std::FILE* out);
[[nodiscard]] Status TailNats(const NatsSinkOptions& options, bool follow, const std::atomic<bool>* stop,
                              std::FILE* out);

}  // namespace sluice
