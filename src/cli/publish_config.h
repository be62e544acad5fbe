// Configuration of the publishing sinks: the [sink.kafka] and [sink.nats] tables of the
// TOML config (docs/config.md). Unknown keys and wrong types are kInvalidArgument naming the
// key ("sink.kafka.partitions: expected an integer in 1..100000"). Secrets come from the
// environment: [sink.kafka.properties_env] (property = variable; a secret property in
// [sink.kafka.properties] is refused, KafkaPropertyIsSecret), [sink.nats] user + password_env
// or token_env (credentials inside the url are refused); an unset variable is an error naming
// the key.
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
