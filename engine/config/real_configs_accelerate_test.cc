// Accelerate YAMLs the resolver once mishandled (tests/config/, see its README): repeated keys
// are reported with a file's other problems.
#include <string>

#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::ResolveText;

TEST(RealConfigsAccelerateTest, DuplicateKeysOfALocalConfigAreReportedWithItsOtherProblems) {
  auto plan = ResolveText(
      "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
      "num_processes: 4\nmain_process_prot: 29500\n");
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("test.yaml:4:1: num_processes: key given twice (also at line 3)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("test.yaml:5:1: main_process_prot: unknown key"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace accel::config
