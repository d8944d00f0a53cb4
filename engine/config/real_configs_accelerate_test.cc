// Accelerate YAMLs the resolver once mishandled (tests/config/, see its README): a SageMaker
// config is refused in one line; repeated keys are reported with a file's other problems.
#include <string>
#include <utility>

#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::ResolveFile;
using testing::ResolveText;

TEST(RealConfigsAccelerateTest, SageMakerIsRefusedInOneLineNamingComputeEnvironment) {
  // The questionnaire's file, and the same with the docs' later snippets appended, which repeat
  // ec2_instance_type and additional_args: either way the one problem that matters is named,
  // not SageMaker's own keys nor the repeats.
  const std::pair<const char*, int> kFiles[] = {{"accelerate_sagemaker.yaml", 4},
                                                {"accelerate_sagemaker_advanced.yaml", 5}};
  for (const auto& [file, line] : kFiles) {
    auto plan = ResolveFile(std::string("tests/config/") + file);
    ASSERT_FALSE(plan.ok()) << file;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(plan.status().message());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    const std::string want = std::string(file) + ":" + std::to_string(line) +
                             ":1: compute_environment: \"AMAZON_SAGEMAKER\" is not supported by "
                             "this engine: it does not launch SageMaker training jobs";
    EXPECT_NE(message.find(want), std::string::npos) << message;
  }
}

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
