#include "schema/column_type.h"

#include <gtest/gtest.h>

#include "schema/table_schema.h"

namespace sluice {
namespace {

TEST(SqlType, CanonicalNamesRoundTrip) {
  for (int i = 1; i <= static_cast<int>(SqlType::kVector); ++i) {
    SqlType t = static_cast<SqlType>(i);
    EXPECT_EQ(SqlTypeFromName(SqlTypeName(t)), t) << SqlTypeName(t);
  }
  EXPECT_EQ(SqlTypeName(SqlType::kUnknown), "unknown");
}

TEST(SqlType, DdlAliasesAndCase) {
  EXPECT_EQ(SqlTypeFromName("INTEGER"), SqlType::kInt);
  EXPECT_EQ(SqlTypeFromName("Double  Precision"), SqlType::kDouble);
  EXPECT_EQ(SqlTypeFromName("REAL"), SqlType::kDouble);
  EXPECT_EQ(SqlTypeFromName("bool"), SqlType::kTinyInt);
  EXPECT_EQ(SqlTypeFromName("NUMERIC"), SqlType::kDecimal);
  EXPECT_EQ(SqlTypeFromName("fixed"), SqlType::kDecimal);
  EXPECT_EQ(SqlTypeFromName("character varying"), SqlType::kVarChar);
  EXPECT_EQ(SqlTypeFromName("NATIONAL CHAR"), SqlType::kChar);
  EXPECT_EQ(SqlTypeFromName("long varchar"), SqlType::kMediumText);
  EXPECT_EQ(SqlTypeFromName("geomcollection"), SqlType::kGeometryCollection);
  EXPECT_EQ(SqlTypeFromName("serial"), SqlType::kBigInt);
  EXPECT_EQ(SqlTypeFromName("int8"), SqlType::kBigInt);
  EXPECT_EQ(SqlTypeFromName("money"), SqlType::kUnknown);
  EXPECT_EQ(SqlTypeFromName(""), SqlType::kUnknown);
}

TEST(SqlType, Families) {
  EXPECT_EQ(FamilyOf(SqlType::kMediumInt), TypeFamily::kInteger);
  EXPECT_EQ(FamilyOf(SqlType::kYear), TypeFamily::kYear);
  EXPECT_EQ(FamilyOf(SqlType::kTimestamp), TypeFamily::kTemporal);
  EXPECT_EQ(FamilyOf(SqlType::kEnum), TypeFamily::kString);
  EXPECT_EQ(FamilyOf(SqlType::kInet6), TypeFamily::kString);
  EXPECT_EQ(FamilyOf(SqlType::kLongBlob), TypeFamily::kString);
  EXPECT_EQ(FamilyOf(SqlType::kPoint), TypeFamily::kGeometry);
  EXPECT_EQ(FamilyOf(SqlType::kJson), TypeFamily::kJson);
  EXPECT_EQ(FamilyOf(SqlType::kUnknown), TypeFamily::kUnknown);
  EXPECT_TRUE(HasCharset(SqlType::kSet));
  EXPECT_FALSE(HasCharset(SqlType::kBlob));
}

TEST(SqlType, SetTypeKeepsNameAndTypeTogether) {
  ColumnDesc c;
  c.SetType("INTEGER");
  EXPECT_EQ(c.type, SqlType::kInt);
  EXPECT_EQ(c.data_type, "int");
  c.SetType("hyperloglog");
  EXPECT_EQ(c.type, SqlType::kUnknown);
  EXPECT_EQ(c.data_type, "hyperloglog");
}

}  // namespace
}  // namespace sluice
