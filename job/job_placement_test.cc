#include "job/job_placement.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "job/job_file.h"

namespace accel::job {
namespace {

using accel::v1::ResourceSpec;

std::string ErrorOf(const ResourceSpec& r, int num_processes) {
  absl::Status s = ValidatePlacement(r, num_processes);
  return s.ok() ? "" : std::string(s.message());
}

TEST(JobPlacementTest, AcceptsEveryLauncherAndNodesThatDivideTheRanks) {
  for (const char* launcher : {"", "local", "slurm", "kubernetes"}) {
    ResourceSpec r;
    r.set_launcher(launcher);
    EXPECT_EQ(ErrorOf(r, 4), "") << launcher;
  }
  ResourceSpec r;
  r.set_launcher("slurm");
  r.set_nodes(2);
  (*r.mutable_slurm())["partition"] = "debug";
  (*r.mutable_slurm())["time"] = "1-02:00:00";
  EXPECT_EQ(ErrorOf(r, 4), "");
  EXPECT_EQ(NodesOf(r), 2);
  EXPECT_EQ(NodesOf(ResourceSpec()), 1);
}

TEST(JobPlacementTest, NamesTheKeyOfEachMistake) {
  struct Case {
    const char* what;
    ResourceSpec r;
    int ranks;
    const char* error;
  };
  auto with = [](auto f) {
    ResourceSpec r;
    f(r);
    return r;
  };
  std::vector<Case> cases = {
      {"unknown launcher", with([](ResourceSpec& r) { r.set_launcher("mpi"); }), 2,
       "resources.launcher: must be local, slurm or kubernetes, got 'mpi'"},
      {"nodes do not divide", with([](ResourceSpec& r) { r.set_launcher("slurm"), r.set_nodes(3); }),
       4, "resources.nodes: 4 processes do not divide evenly over 3 nodes"},
      {"negative nodes", with([](ResourceSpec& r) { r.set_nodes(-1); }), 4,
       "resources.nodes: must be an integer from 1 to 65536, got -1"},
      {"local on two nodes", with([](ResourceSpec& r) { r.set_launcher("local"), r.set_nodes(2); }),
       4, "resources.nodes: 2 nodes need launcher slurm or kubernetes"},
      {"bad time", with([](ResourceSpec& r) { (*r.mutable_slurm())["time"] = "1h"; }), 1,
       "resources.slurm.time: '1h' is not a Slurm time limit"},
      {"injection", with([](ResourceSpec& r) { (*r.mutable_slurm())["partition"] = "a\n#SBATCH x"; }),
       1, "resources.slurm.partition: printable ASCII without whitespace"},
      {"unknown setting", with([](ResourceSpec& r) { (*r.mutable_slurm())["qos"] = "high"; }), 1,
       "resources.slurm.qos: unknown key; known: partition, account, time, constraint"},
      {"namespace", with([](ResourceSpec& r) { (*r.mutable_kubernetes())["namespace"] = "Team_A"; }),
       1, "resources.kubernetes.namespace: 'Team_A' is not a Kubernetes namespace"},
      {"mount", with([](ResourceSpec& r) { (*r.mutable_kubernetes())["mount"] = "data"; }), 1,
       "resources.kubernetes.mount: 'data' is not an absolute path"},
      {"settings of another launcher",
       with([](ResourceSpec& r) {
         r.set_launcher("kubernetes");
         (*r.mutable_slurm())["partition"] = "debug";
       }),
       1, "resources.slurm: given, but the job's launcher is kubernetes"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.r, c.ranks);
    EXPECT_TRUE(absl::StartsWith(error, c.error)) << c.what << ": " << error;
  }
}

TEST(JobPlacementTest, TheJobFileReadsTheLauncherKeysAndRefusesUnknownOnes) {
  absl::StatusOr<accel::v1::JobSpec> spec = ParseJobYaml(
      "data: {path: /tmp/x.txt}\nresources:\n  num_processes: 4\n  launcher: slurm\n  nodes: 2\n"
      "  slurm: {partition: debug, time: \"00:10:00\"}\n",
      "job.yaml", "/tmp");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->resources().launcher(), "slurm");
  EXPECT_EQ(spec->resources().nodes(), 2);
  EXPECT_EQ(spec->resources().slurm().at("partition"), "debug");
  EXPECT_EQ(spec->resources().slurm().at("time"), "00:10:00");

  absl::StatusOr<accel::v1::JobSpec> bad = ParseJobYaml(
      "data: {path: /tmp/x.txt}\nresources:\n  kubernetes: {imag: foo}\n", "job.yaml", "/tmp");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "resources.kubernetes.imag: unknown key"))
      << bad.status();
}

}  // namespace
}  // namespace accel::job
