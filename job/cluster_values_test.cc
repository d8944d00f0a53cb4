// Slurm time limits and Kubernetes quantities as the clusters read them (cluster_values.h).
#include "job/cluster_values.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::job {
namespace {

using ::testing::HasSubstr;

std::string SlurmError(const std::string& v) {
  const absl::Status s = CheckSlurmTime(v);
  return s.ok() ? "" : std::string(s.message());
}

std::string QuantityError(const std::string& v, QuantityOf what) {
  const absl::Status s = CheckKubernetesQuantity(v, what);
  return s.ok() ? "" : std::string(s.message());
}

TEST(SlurmTimeTest, AcceptsEveryFormSbatchDocuments) {
  for (const char* v : {"0", "30", "90", "30:00", "120:59", "4:00:00", "48:00:00", "1-0", "2-12",
                        "1-02:30", "1-02:30:59", "365-00:00:00", "364-23:59:59", "UNLIMITED",
                        "unlimited", "INFINITE", "Infinite"}) {
    EXPECT_EQ(SlurmError(v), "") << v;
  }
}

TEST(SlurmTimeTest, RefusesMalformedValuesAndFieldsOutOfRange) {
  for (const char* v : {"", "1h", "-1", "1-", "-5", "1--2", "1-2-3", "1:2:3:4", "1::2", ":30",
                        "30:", "1-:30", "1.5", " 30", "1-2:3:4:5", "forever"}) {
    EXPECT_THAT(SlurmError(v), HasSubstr("is not a Slurm time limit")) << v;
  }
  EXPECT_THAT(SlurmError("99999999-99:99:99"), HasSubstr("hours 99 is out of range (0 to 23"));
  EXPECT_THAT(SlurmError("1-24"), HasSubstr("hours 24 is out of range"));
  EXPECT_THAT(SlurmError("10:60"), HasSubstr("seconds 60 is out of range (0 to 59"));
  EXPECT_THAT(SlurmError("1:60:00"), HasSubstr("minutes 60 is out of range"));
  EXPECT_THAT(SlurmError("1-00:00:60"), HasSubstr("seconds 60 is out of range"));
  // Longer than a year: a typo, and past ~24855 days Slurm's int seconds wrap around.
  EXPECT_THAT(SlurmError("99999999-00:00:00"), HasSubstr("is longer than 365 days"));
  EXPECT_THAT(SlurmError("366-00"), HasSubstr("is longer than 365 days"));
  EXPECT_THAT(SlurmError("525601"), HasSubstr("is longer than 365 days"));
  EXPECT_THAT(SlurmError("99999999999999999999"), HasSubstr("is not a Slurm time limit"));
}

TEST(KubernetesQuantityTest, AcceptsWhatResourceParseQuantityAcceptsForARequest) {
  for (const char* v :
       {"1", "2", "0.5", ".5", "1.", "500m", "1500m", "+2", "1e3", "2k", "1.001", "1500000u"}) {
    EXPECT_EQ(QuantityError(v, QuantityOf::kCpu), "") << v;
  }
  for (const char* v : {"1", "512Mi", "4Gi", "1.5Gi", "1.5G", "1e9", "1E9", "128974848", "129M",
                        "123Mi", "1Ti", "2Ei", "1k", "8E"}) {
    EXPECT_EQ(QuantityError(v, QuantityOf::kMemory), "") << v;
  }
}

TEST(KubernetesQuantityTest, RefusesWhatAPodCannotRequest) {
  for (const char* v : {"lots", "", "1 Gi", "1GB", "1K", "1gi", "Gi", ".", "1..5", "1.2.3", "e3",
                        "1e", "1e+", "1ee3", "0x10", "1,5", "1Gi ", "1e9999"}) {
    EXPECT_THAT(QuantityError(v, QuantityOf::kMemory), HasSubstr("is not a Kubernetes quantity"))
        << v;
  }
  EXPECT_THAT(QuantityError("lots", QuantityOf::kCpu),
              HasSubstr("'lots' is not a Kubernetes quantity"));
  EXPECT_THAT(QuantityError("-1Gi", QuantityOf::kMemory), HasSubstr("'-1Gi' must be positive"));
  EXPECT_THAT(QuantityError("0", QuantityOf::kCpu), HasSubstr("must be positive"));
  EXPECT_THAT(QuantityError("-0", QuantityOf::kMemory), HasSubstr("must be positive"));
  EXPECT_THAT(QuantityError("100m", QuantityOf::kMemory),
              HasSubstr("less than one byte (m is milli; did you mean Mi?)"));
  EXPECT_THAT(QuantityError("0.0001", QuantityOf::kCpu), HasSubstr("below 1m"));
  EXPECT_THAT(QuantityError("0.0015", QuantityOf::kCpu), HasSubstr("finer than 1m"));
  EXPECT_THAT(QuantityError("1500u", QuantityOf::kCpu), HasSubstr("finer than 1m"));
  EXPECT_THAT(QuantityError("16Ei", QuantityOf::kMemory), HasSubstr("too large"));
  EXPECT_THAT(QuantityError("1e20", QuantityOf::kCpu), HasSubstr("too large"));
}

}  // namespace
}  // namespace accel::job
