#include <gtest/gtest.h>

#include "sink/postgres_sink.h"

namespace sluice {
namespace {

// A conninfo is printed on check lines and in sink errors. The config refuses one holding a
// password, but the conninfo as printed masks it anyway, in whichever form libpq reads it
// from (probe7 F4: `check` showed postgresql://sluice:<password>@...).
TEST(PostgresConninfo, ThePasswordIsMaskedWhereverItIsPrinted) {
  for (const char* ci : {"postgresql://sluice:S3cretPg@127.0.0.1:5432/sluice", "postgres://sluice:S3cretPg@h/d",
                         "host=h user=u password=S3cretPg dbname=d", "host=h password='S3cret Pg' dbname=d",
                         "postgresql://h/d?password=S3cretPg", "postgresql://sluice:S3cretPg@h1:1,h2:2/d",
                         "password=S3cretPg"}) {
    const std::string shown = PostgresConninfoForDisplay(ci);
    EXPECT_EQ(shown.find("S3cret"), std::string::npos) << ci << " -> " << shown;
    EXPECT_NE(shown.find("***"), std::string::npos) << ci << " -> " << shown;
  }
  EXPECT_EQ(PostgresConninfoForDisplay("postgresql://sluice:S3cretPg@127.0.0.1:5432/sluice"),
            "postgresql://sluice:***@127.0.0.1:5432/sluice");
  // Without a password it is printed as written.
  for (const char* ci : {"host=h port=5 dbname=d", "postgresql://sluice@h:5/d", "mydb"})
    EXPECT_EQ(PostgresConninfoForDisplay(ci), ci);
}

}  // namespace
}  // namespace sluice
