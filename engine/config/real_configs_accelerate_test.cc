// Accelerate YAMLs the resolver once mishandled (tests/config/, see its README): an mpirun
// MULTI_CPU config is read with a warning, a SageMaker config is refused in one line, and
// repeated keys are reported with a file's other problems.
#include <string>
#include <utility>

#include "engine/config/test_util.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using testing::HasWarning;
using testing::PlanMatches;
using testing::ResolveFile;
using testing::ResolveText;

TEST(RealConfigsAccelerateTest, MpirunMultiCpuRunsWithAWarningThatMpirunDoesNothing) {
  // Accelerate would prefix the launch with `mpirun -f hostfile -n 16 -ppn 4`; the training
  // settings of the file (MULTI_CPU, 16 processes on 4 machines, bf16) are what the plan keeps.
  auto plan = ResolveFile("tests/config/accelerate_mpirun_multi_cpu.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(PlanMatches(*plan, R"({"distributed_type": "MULTI_CPU", "num_processes": 16,
      "num_machines": 4, "strategy": "no_shard", "mixed_precision": {"mode": "bf16",
      "param_dtype": "bf16", "reduce_dtype": "fp32", "master_dtype": "fp32",
      "optimizer_dtype": "fp32"}})", /*complete=*/false));
  EXPECT_TRUE(HasWarning(*plan, "accelerate_mpirun_multi_cpu.yaml:14:1: mpirun_config: ignored: "
                                "this engine launches its own processes, so mpirun settings "
                                "(mpirun_hostfile /home/user/hostfile, mpirun_ccl) do nothing "
                                "here"));
}

TEST(RealConfigsAccelerateTest, MpirunConfigKeysAreStillChecked) {
  auto plan = ResolveText(
      "distributed_type: MULTI_CPU\nnum_processes: 2\nmpirun_config:\n  mpirun_hostfle: h\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("test.yaml:4:3: mpirun_config.mpirun_hostfle: unknown "
                                         "key (did you mean \"mpirun_hostfile\"?)"),
            std::string::npos)
      << plan.status();
  // An empty section (what some generated files carry) says nothing.
  plan = ResolveText("distributed_type: MULTI_CPU\nnum_processes: 2\nmpirun_config: {}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(HasWarning(*plan, "mpirun"));
}

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
