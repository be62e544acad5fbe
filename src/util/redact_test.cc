#include "util/redact.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

// A NATS server list or a postgresql:// URI is printed in check lines and sink errors: the
// password in its userinfo never is (a probe saw nats://natsuser:NatsS3cret@... in `check`).
TEST(Redact, UrlUserinfoIsMasked) {
  EXPECT_EQ(RedactUrlCredentials("nats://natsuser:NatsS3cret@127.0.0.1:4222"), "nats://natsuser:***@127.0.0.1:4222");
  EXPECT_EQ(RedactUrlCredentials("nats://tok3n@h:1,tls://u:p@w@h2:2,h3:3"), "nats://***@h:1,tls://u:***@h2:2,h3:3");
  EXPECT_EQ(RedactUrlCredentials("postgresql://sluice:S3cr3t@127.0.0.1:5432/db?sslmode=require"),
            "postgresql://sluice:***@127.0.0.1:5432/db?sslmode=require");
  EXPECT_EQ(RedactUrlCredentials("postgres://sluice@h/db"), "postgres://***@h/db");
  // An '@' after the host is not userinfo.
  EXPECT_EQ(RedactUrlCredentials("postgresql://h/db?user=a@b"), "postgresql://h/db?user=a@b");
  EXPECT_EQ(RedactUrlCredentials("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  EXPECT_EQ(RedactUrlCredentials(""), "");
}

TEST(Redact, UrlHasCredentials) {
  EXPECT_TRUE(UrlHasCredentials("nats://u:p@h"));
  EXPECT_TRUE(UrlHasCredentials("nats://a:1,nats://token@b:2"));
  EXPECT_FALSE(UrlHasCredentials("nats://a:1,b:2"));
  EXPECT_FALSE(UrlHasCredentials("postgresql://h/db?user=a@b"));
}

}  // namespace
}  // namespace sluice
