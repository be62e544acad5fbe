// Configuration of the publishing sinks: the [sink.kafka] and [sink.nats] tables of the
// TOML config (docs/config.md). Unknown keys and wrong types are kInvalidArgument naming the
// key ("sink.kafka.partitions: expected an integer in 1..100000").
// Thread safety: pure functions.
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "sink/kafka_sink.h"
#include "sink/nats_sink.h"
#include "util/status.h"

namespace sluice::cli {

[[nodiscard]] Status ParseKafkaConfig(const toml::table& t, std::string_view origin, KafkaSinkOptions* out);
[[nodiscard]] Status ParseNatsConfig(const toml::table& t, std::string_view origin, NatsSinkOptions* out);

}  // namespace sluice::cli
