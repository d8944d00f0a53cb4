#include "job/job_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "job/job_options.h"
#include "gtest/gtest.h"

namespace accel::job {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

TEST(JobFileTest, IssueExampleParsesWithPathsResolvedAgainstTheFilesFolder) {
  auto spec = ParseJobYaml(R"(
name: tiny-fsdp
model: {preset: gpt2-tiny}
data: {path: data/train.bin}
train: {steps: 50, micro_batch: 4, grad_accum: 1, seq_len: 64, lr: 3.0e-4, schedule: cosine, warmup: 5,
        weight_decay: 0.1, beta1: 0.9, beta2: 0.95, eps: 1.0e-8, grad_clip: 1.0, seed: 1,
        log_every: 1}
checkpoint: {dir: ckpt/, every_n_steps: 20, keep_last: 2}
resources: {num_processes: 2, device: cpu, threads_per_process: 1}
sharding: {strategy: full_shard}
max_restarts: 3
priority: 0
)",
                           "job.yaml", "/jobs/tiny");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "tiny-fsdp");
  EXPECT_EQ(spec->model().preset(), "gpt2-tiny");
  EXPECT_EQ(spec->data().path(), "/jobs/tiny/data/train.bin");
  EXPECT_EQ(spec->checkpoint().dir(), "/jobs/tiny/ckpt/");
  EXPECT_EQ(spec->train().steps(), 50);
  EXPECT_DOUBLE_EQ(spec->train().beta2(), 0.95);
  EXPECT_DOUBLE_EQ(spec->train().lr(), 3e-4);
  EXPECT_EQ(spec->resources().num_processes(), 2);
  EXPECT_EQ(spec->sharding().strategy(), "full_shard");
  EXPECT_EQ(spec->max_restarts(), 3);
  EXPECT_FALSE(spec->data().has_shuffle_seed());
  EXPECT_TRUE(ValidateJobSpec(*spec, /*check_files=*/false).ok());
}

TEST(JobFileTest, AbsentKeysTakeTheDocumentedDefaults) {
  auto spec = ParseJobYaml("data: {path: /d.txt}\nmodel: gpt2-tiny\n", "j.yaml", "/");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().preset(), "gpt2-tiny");
  EXPECT_EQ(spec->train().steps(), 100);
  EXPECT_EQ(spec->train().log_every(), 10);
  // Unset: the config's num_processes, else 1 (acceld stores the count it runs).
  EXPECT_FALSE(spec->resources().has_num_processes());
  EXPECT_EQ(spec->sharding().strategy(), "no_shard");
  EXPECT_DOUBLE_EQ(spec->stop_grace_s(), 10);
  EXPECT_TRUE(ValidateJobSpec(*spec, false).ok());
}

TEST(JobFileTest, ErrorsNameTheFileLineAndKeyPath) {
  auto bad_type = ParseJobYaml("data: {path: /d}\ntrain:\n  steps: many\n", "job.yaml", "/");
  EXPECT_EQ(bad_type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(bad_type.status()), HasSubstr("job.yaml:3:10: train.steps: must be an integer"));

  auto unknown = ParseJobYaml("data: {path: /d}\ntrain: {stpes: 3}\n", "job.yaml", "/");
  EXPECT_THAT(Msg(unknown.status()), HasSubstr("train.stpes: unknown key (did you mean train.steps?)"));

  auto top = ParseJobYaml("data: {path: /d}\nmax_restart: 3\n", "job.yaml", "/");
  EXPECT_THAT(Msg(top.status()), HasSubstr("max_restart: unknown key (did you mean max_restarts?)"));

  auto malformed = ParseJobYaml("train: {steps: [1,\n", "job.yaml", "/");
  EXPECT_THAT(Msg(malformed.status()), HasSubstr("malformed YAML"));

  auto no_data = ParseJobYaml("name: x\n", "job.yaml", "/");
  EXPECT_THAT(Msg(no_data.status()), HasSubstr("data.path: required"));

  auto section = ParseJobYaml("data: {path: /d}\ntrain: 5\n", "job.yaml", "/");
  EXPECT_THAT(Msg(section.status()), HasSubstr("train: must be a mapping"));
}

// Probes of issue 16: 64-bit values in 32-bit fields are refused, never truncated
// (num_processes 4294967297 once ran on 1 rank), and infinite reals are refused.
TEST(JobFileTest, OutOfRangeIntegersAndNonFiniteRealsNameTheKey) {
  auto parse = [](const std::string& body) {
    return Msg(ParseJobYaml("data: {path: /d}\n" + body, "job.yaml", "/").status());
  };
  EXPECT_THAT(parse("resources: {num_processes: 4294967297}\n"),
              HasSubstr("resources.num_processes: must be an integer from -2147483648 to "
                        "2147483647, got '4294967297'"));
  EXPECT_THAT(parse("max_restarts: 4294967296\n"), HasSubstr("max_restarts: must be an integer"));
  EXPECT_THAT(parse("priority: 4294967301\n"), HasSubstr("priority: must be an integer"));
  EXPECT_THAT(parse("checkpoint: {keep_last: 4294967295}\n"), HasSubstr("checkpoint.keep_last"));
  for (const char* key : {"lr", "eps", "weight_decay"}) {
    EXPECT_THAT(parse(absl::StrCat("train: {", key, ": .inf}\n")),
                HasSubstr(absl::StrCat("train.", key, ": must be a finite number")));
  }
  EXPECT_THAT(parse("comm_timeout_s: .nan\n"), HasSubstr("comm_timeout_s: must be a finite"));
}

TEST(JobFileTest, DuplicateKeysAreRefusedNamingBothLines) {
  auto top = ParseJobYaml("data: {path: /d}\nmax_restarts: 1\nmax_restarts: 2\n", "job.yaml", "/");
  EXPECT_THAT(Msg(top.status()),
              HasSubstr("job.yaml:3:1: max_restarts: duplicate key (first given on line 2)"));
  auto nested = ParseJobYaml("data: {path: /d}\ntrain:\n  lr: 0.1\n  steps: 3\n  lr: 0.2\n",
                             "job.yaml", "/");
  EXPECT_THAT(Msg(nested.status()), HasSubstr("train.lr: duplicate key (first given on line 3)"));
}

// Issue 28: micro_batch or grad_accum 2e9 were accepted at submit and the worker's memory
// planner spun on them for minutes. Both are bounded at 2^20, naming the key.
TEST(JobFileTest, MicroBatchAndAccumulationAreBoundedAtSubmit) {
  auto validate = [](const std::string& train) {
    auto spec = ParseJobYaml("data: {path: /d}\nmodel: gpt2-tiny\ntrain: {" + train + "}\n",
                             "job.yaml", "/");
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? Msg(ValidateJobSpec(*spec, /*check_files=*/false)) : "";
  };
  EXPECT_EQ(validate("micro_batch: 2000000000"),
            "train.micro_batch: must be at most 1048576 (2^20), got 2000000000");
  EXPECT_EQ(validate("grad_accum: 2000000000"),
            "train.grad_accum: must be at most 1048576 (2^20), got 2000000000");
  EXPECT_EQ(validate("micro_batch: 1048576, grad_accum: 1048576"), "");
  EXPECT_THAT(validate("grad_accum: 1048577"), HasSubstr("train.grad_accum: must be at most"));
}

TEST(JobFileTest, ValidationNamesTheKey) {
  auto check = [](const std::function<void(accel::v1::JobSpec&)>& edit) {
    accel::v1::JobSpec s = DefaultJobSpec();
    s.mutable_data()->set_path("/d");
    edit(s);
    return Msg(ValidateJobSpec(s, false));
  };
  EXPECT_THAT(check([](auto& s) { s.mutable_train()->set_steps(0); }), HasSubstr("train.steps: must be"));
  EXPECT_THAT(check([](auto& s) { s.mutable_train()->set_schedule("step"); }), HasSubstr("train.schedule"));
  EXPECT_THAT(check([](auto& s) { s.mutable_model()->set_preset("gpt5"); }), HasSubstr("model.preset: unknown preset 'gpt5'"));
  EXPECT_THAT(check([](auto& s) { s.mutable_sharding()->set_strategy("zero9"); }), HasSubstr("sharding.strategy"));
  EXPECT_THAT(check([](auto& s) { s.mutable_resources()->set_device("tpu"); }), HasSubstr("resources.device"));
  EXPECT_THAT(check([](auto& s) {
                s.mutable_sharding()->set_strategy("hybrid_shard");
                s.mutable_resources()->set_num_processes(4);
                s.mutable_sharding()->set_hybrid_group_size(3);
              }),
              HasSubstr("sharding.hybrid_group_size"));
  EXPECT_THAT(check([](auto& s) { s.mutable_checkpoint()->set_every_n_steps(5); }), HasSubstr("checkpoint.dir"));
  EXPECT_THAT(check([](auto& s) { s.mutable_train()->set_beta1(1.0); }), HasSubstr("train.beta1"));
  // What a client other than accelctl might send.
  EXPECT_THAT(check([](auto& s) { s.mutable_train()->set_lr(INFINITY); }),
              HasSubstr("train.lr: must be a finite number"));
  EXPECT_THAT(check([](auto& s) { s.set_comm_timeout_s(INFINITY); }),
              HasSubstr("comm_timeout_s: must be a finite number"));
  EXPECT_THAT(check([](auto& s) { s.mutable_resources()->set_threads_per_process(100000); }),
              HasSubstr("resources.threads_per_process: must be at most 1024"));
  EXPECT_EQ(check([](auto&) {}), "");
  accel::v1::JobSpec s = DefaultJobSpec();
  s.mutable_data()->set_path("/no/such/data.txt");
  EXPECT_THAT(Msg(ValidateJobSpec(s, /*check_files=*/true)), HasSubstr("data.path: no such file"));
  EXPECT_THAT(check([](auto& s) { s.mutable_train()->set_min_lr(1.0); }),
              HasSubstr("train.min_lr: must be at most train.lr"));
  EXPECT_THAT(check([](auto& s) { s.set_comm_timeout_s(1e-300); }),
              HasSubstr("comm_timeout_s: must be at least 0.001"));
}

// Probes of issue 16: a FIFO as data.path hung the job forever; a directory as data.path or
// model.config, and a checkpoint dir that is a file or read-only, were found only at run time.
TEST(JobFileTest, FilesAreCheckedForTheirKindAtTheDoor) {
  const std::string dir = ::testing::TempDir() + "/job_file_kinds_" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/ro");
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir + "/data.txt") << "text";
  auto with = [&](const std::function<void(accel::v1::JobSpec&)>& edit) {
    accel::v1::JobSpec s = DefaultJobSpec();
    s.mutable_data()->set_path(dir + "/data.txt");
    edit(s);
    return Msg(ValidateJobSpec(s, /*check_files=*/true));
  };
  EXPECT_EQ(with([](auto&) {}), "");
  EXPECT_THAT(with([&](auto& s) { s.mutable_data()->set_path(fifo); }),
              HasSubstr("data.path: " + fifo + " is a FIFO, not a regular file"));
  EXPECT_THAT(with([&](auto& s) { s.mutable_data()->set_path(dir); }),
              HasSubstr("is a directory, not a regular file"));
  EXPECT_THAT(with([&](auto& s) { s.mutable_model()->set_config(dir); }),
              HasSubstr("model.config: " + dir + " is a directory"));
  EXPECT_THAT(with([&](auto& s) { s.mutable_checkpoint()->set_dir(dir + "/data.txt"); }),
              HasSubstr("checkpoint.dir: " + dir + "/data.txt is not a directory"));
  EXPECT_EQ(with([&](auto& s) { s.mutable_checkpoint()->set_dir(dir + "/new/ckpt"); }), "");
  if (geteuid() != 0) {  // root writes anywhere
    chmod((dir + "/ro").c_str(), 0500);
    EXPECT_THAT(with([&](auto& s) { s.mutable_checkpoint()->set_dir(dir + "/ro"); }),
                HasSubstr("is not writable"));
  }
  std::filesystem::remove_all(dir);
}

// Issue 28: acceld parses job files for RPC clients, who may have no right to read them. Under
// Echo::kPositionsOnly an error names the file, the position and what was expected, never a
// value, an unknown key or yaml-cpp's excerpt; accelctl (kContent) keeps quoting.
TEST(JobFileTest, ForAClientNoErrorQuotesTheFile) {
  const FileAccess client{Echo::kPositionsOnly, {}};
  const std::pair<const char*, const char*> cases[] = {
      {"root:*:20228:0:99999:7:::\n", "j.yaml:1:1: the job file: "},  // yaml-cpp: a mapping
      {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln\n",
       "j.yaml:1:1: the job file: must be a mapping"},
      {"password: hunter2\n", "j.yaml:1:1: the job file: unknown key"},
      {"train:\n  passwrd: hunter2\n", "j.yaml:2:3: train: unknown key"},
      {"train:\n  steps: hunter2\n", "j.yaml:2:10: train.steps: must be an integer"},
      {"train:\n  steps: 3000000000000000000000\n", "j.yaml:2:10: train.steps: must be an integer"},
      {"train: {lr: .nan}\n", "train.lr: must be a finite number"},
      {"name: \"hunter2\\q\"\n", "malformed YAML"},
      {"train:\n  steps: [hunter2]\n", "train.steps: must be an integer, got a list"}};
  for (const auto& [text, want] : cases) {
    const absl::Status s = ParseJobYaml(text, "j.yaml", "/", client).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(Msg(s), HasSubstr(want)) << text;
    for (const char* secret : {"root", "20228", "eyJ", "hunter2", "password", "passwrd", "nan",
                               "3000000000000000000000", "escape"}) {
      EXPECT_THAT(Msg(s), Not(HasSubstr(secret))) << Msg(s);
    }
  }
  // A preset, schedule or device the file gives is a value: not quoted either.
  auto spec = ParseJobYaml("model: hunter2\ndata: {path: /d}\ntrain: {schedule: hunter2}\n",
                           "j.yaml", "/", client);
  ASSERT_TRUE(spec.ok());
  EXPECT_THAT(Msg(ValidateJobSpec(*spec, false, Echo::kPositionsOnly)),
              AllOf(HasSubstr("model.preset: unknown preset; known:"), Not(HasSubstr("hunter2"))));
  spec->mutable_model()->set_preset("gpt2-tiny");
  EXPECT_THAT(Msg(ValidateJobSpec(*spec, false, Echo::kPositionsOnly)),
              AllOf(HasSubstr("train.schedule: must be constant"), Not(HasSubstr("hunter2"))));
  // accelctl on the user's own file still quotes and suggests.
  EXPECT_THAT(Msg(ParseJobYaml("train:\n  steps: many\n", "j.yaml", "/").status()),
              HasSubstr("got 'many'"));
}

// `acceld --data-root`: the job file and every config it names is checked before it is read;
// a path that climbs out with ".." or a symlink is outside.
TEST(JobFileTest, DataRootsAreCheckedBeforeEachFileIsRead) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("accel_job_file_roots_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "root" / "cfg");
  std::ofstream(dir / "root" / "cfg" / "fsdp.yaml") << "distributed_type: FSDP\n";
  std::ofstream(dir / "outside.yaml") << "distributed_type: FSDP\n";
  std::ofstream(dir / "root" / "job.yaml")
      << "data: {path: d.txt}\naccelerate_config: cfg/fsdp.yaml\n";
  std::ofstream(dir / "root" / "escape.yaml")
      << "data: {path: d.txt}\naccelerate_config: ../outside.yaml\n";
  std::filesystem::create_symlink(dir / "outside.yaml", dir / "root" / "link.yaml");
  std::ofstream(dir / "root" / "linked.yaml")
      << "data: {path: d.txt}\naccelerate_config: link.yaml\n";
  absl::StatusOr<std::vector<std::string>> roots = rpc::DataRoots({(dir / "root").string()});
  ASSERT_TRUE(roots.ok()) << roots.status();
  const FileAccess access{Echo::kPositionsOnly, *roots};
  EXPECT_TRUE(ParseJobFile((dir / "root" / "job.yaml").string(), "", "", access).ok());
  for (const char* job : {"escape.yaml", "linked.yaml"}) {
    const absl::Status s = ParseJobFile((dir / "root" / job).string(), "", "", access).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << job;
    EXPECT_THAT(Msg(s), HasSubstr("accelerate_config: ")) << job;
    EXPECT_THAT(Msg(s), HasSubstr(" is outside --data-root (" + (*roots)[0] + ")")) << job;
  }
  EXPECT_EQ(ParseJobFile((dir / "outside.yaml").string(), "", "", access).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ParseJobFile((dir / "root" / "job.yaml").string(), (dir / "outside.yaml").string(), "",
                         access)
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
  // A path not there yet is judged by its nearest existing ancestor.
  EXPECT_TRUE(access.Check("checkpoint.dir", (dir / "root" / "new" / "ckpt").string()).ok());
  EXPECT_FALSE(
      access.Check("checkpoint.dir", (dir / "root" / "new" / ".." / ".." / "x").string()).ok());
  EXPECT_TRUE(FileAccess{}.Check("data.path", "/anywhere").ok());  // no roots: any path
  EXPECT_THAT(Msg(rpc::DataRoots({(dir / "missing").string()}).status()), HasSubstr("--data-root"));
  std::filesystem::remove_all(dir);
}

TEST(JobFileTest, ReadsTheAccelerateConfigNextToTheJobFile) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "accel_job_file_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "fsdp.yaml") << "distributed_type: FSDP\n";
  std::ofstream(dir / "job.yaml") << "data: {path: d.txt}\naccelerate_config: fsdp.yaml\n";
  auto spec = ParseJobFile((dir / "job.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->accelerate_config_path(), (dir / "fsdp.yaml").string());
  EXPECT_EQ(spec->accelerate_config_text(), "distributed_type: FSDP\n");
  EXPECT_EQ(ParseJobFile((dir / "nope.yaml").string()).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(dir / "job2.yaml") << "data: {path: d.txt}\naccelerate_config: missing.yaml\n";
  EXPECT_THAT(Msg(ParseJobFile((dir / "job2.yaml").string()).status()),
              HasSubstr("accelerate_config: cannot read"));
}

// Found by fuzz/job_file_fuzz.cc: text fields other than `name` were not checked, so a spec with
// a byte 0xff in data.path validated and then could not be sent (protobuf refuses to parse it).
TEST(JobFileTest, EveryTextFieldMustBeUtf8AsProtobufChecksIt) {
  accel::v1::JobSpec s = DefaultJobSpec();
  s.mutable_data()->set_path("/d");
  ASSERT_TRUE(ValidateJobSpec(s, false).ok());
  for (const std::string bad : {"/d\xff", "/d\xc0\x80", "/d\xed\xa0\x80", "/d\xf4\x90\x80\x80",
                                "/d\xe2\x82"}) {
    s.mutable_data()->set_path(bad);
    EXPECT_THAT(Msg(ValidateJobSpec(s, false)), HasSubstr("data.path: not valid UTF-8"));
  }
  s.mutable_data()->set_path("/d/\xc3\xa9t\xc3\xa9/\xf0\x9f\x98\x80");  // été, an emoji
  EXPECT_TRUE(ValidateJobSpec(s, false).ok());
  s.set_deepspeed_config_text("{\"a\": \"\xff\"}");
  EXPECT_THAT(Msg(ValidateJobSpec(s, false)),
              HasSubstr("deepspeed_config (its text): not valid UTF-8"));
}

TEST(JobFileTest, NamedConfigsMustBeSmallRegularFiles) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "accel_job_file_kind_test";
  std::filesystem::create_directories(dir);
  // /dev/zero as a config used to read until memory ran out; a FIFO blocked forever.
  auto zero = ParseJobYaml("data: {path: /d}\naccelerate_config: /dev/zero\n", "j.yaml", "/");
  EXPECT_THAT(Msg(zero.status()), HasSubstr("accelerate_config: cannot read /dev/zero: not a "
                                            "regular file"));
  const std::string fifo = (dir / "fifo").string();
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = ParseJobYaml("data: {path: /d}\ndeepspeed_config: " + fifo + "\n", "j.yaml", "/");
  EXPECT_THAT(Msg(from_fifo.status()), HasSubstr("not a regular file"));
  std::ofstream(dir / "big.yaml") << std::string((1 << 20) + 1, '#');
  auto big = ParseJobYaml("data: {path: /d}\naccelerate_config: big.yaml\n", "j.yaml",
                          dir.string());
  EXPECT_THAT(Msg(big.status()), HasSubstr("1048577 bytes; a job's files are at most 1048576"));
  std::filesystem::remove_all(dir);
}

TEST(JobFileTest, CarriesTheDeepSpeedJsonFromTheJobFileTheFlagOrTheAccelerateConfig) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "accel_job_file_ds_test";
  std::filesystem::create_directories(dir / "cfg");
  std::ofstream(dir / "cfg" / "ds.yaml")
      << "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: z3.json\n";
  std::ofstream(dir / "cfg" / "z3.json") << "{\"zero_optimization\": {\"stage\": 3}}";
  std::ofstream(dir / "other.json") << "{}";
  // Named only by the Accelerate config: read from beside the YAML.
  std::ofstream(dir / "job.yaml") << "data: {path: d.txt}\naccelerate_config: cfg/ds.yaml\n";
  auto spec = ParseJobFile((dir / "job.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->deepspeed_config_path(), (dir / "cfg" / "z3.json").string());
  EXPECT_EQ(spec->deepspeed_config_text(), "{\"zero_optimization\": {\"stage\": 3}}");
  // The job file's key, then the command line, win over it.
  std::ofstream(dir / "job2.yaml")
      << "data: {path: d.txt}\naccelerate_config: cfg/ds.yaml\ndeepspeed_config: other.json\n";
  spec = ParseJobFile((dir / "job2.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->deepspeed_config_text(), "{}");
  spec = ParseJobFile((dir / "job.yaml").string(), "", (dir / "cfg" / "z3.json").string());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->deepspeed_config_path(), (dir / "cfg" / "z3.json").string());
  EXPECT_THAT(Msg(ParseJobFile((dir / "job.yaml").string(), "", "/no/such.json").status()),
              HasSubstr("--deepspeed-config: cannot read /no/such.json"));
  std::ofstream(dir / "job3.yaml") << "data: {path: d.txt}\ndeepspeed_config: gone.json\n";
  EXPECT_THAT(Msg(ParseJobFile((dir / "job3.yaml").string()).status()),
              HasSubstr("deepspeed_config: cannot read"));
}

TEST(JobFileTest, JsonRoundTripKeepsEveryField) {
  accel::v1::JobSpec s = DefaultJobSpec();
  s.mutable_data()->set_path("/d");
  s.mutable_data()->set_shuffle_seed(7);
  s.mutable_sharding()->set_reshard_after_forward(false);
  s.mutable_resources()->set_num_processes(3);  // optional: present once set
  const std::string json = JobSpecToJson(s);
  EXPECT_THAT(json, HasSubstr("\"num_processes\""));
  auto back = JobSpecFromJson(json);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->SerializeAsString(), s.SerializeAsString());
}

}  // namespace
}  // namespace accel::job

namespace accel::job {
namespace {

// Issue 28: values that passed submit and failed only in the cluster (or in acceld): a
// heartbeat deadline no rank can meet, a Slurm time limit with fields out of range, Kubernetes
// requests that are not quantities.
TEST(JobFileTest, LauncherValuesAndTheHeartbeatDeadlineAreCheckedAtSubmit) {
  auto error = [](const std::string& yaml) {
    absl::StatusOr<accel::v1::JobSpec> spec =
        ParseJobYaml("data: {path: /d.txt}\n" + yaml, "job.yaml", "/");
    if (!spec.ok()) return Msg(spec.status());
    return Msg(ValidateJobSpec(*spec, /*check_files=*/false));
  };
  EXPECT_THAT(error("heartbeat_timeout_s: 0.001\n"),
              HasSubstr("heartbeat_timeout_s: must be 0 (acceld's --heartbeat-timeout) or at "
                        "least 4 seconds"));
  EXPECT_THAT(error("heartbeat_timeout_s: 3.9\n"), HasSubstr("heartbeat_timeout_s: must be 0"));
  EXPECT_EQ(error("heartbeat_timeout_s: 0\n"), "");
  EXPECT_EQ(error("heartbeat_timeout_s: 4\n"), "");
  const std::string slurm = "resources:\n  num_processes: 2\n  launcher: slurm\n  slurm: ";
  EXPECT_THAT(error(slurm + "{time: \"99999999-99:99:99\"}\n"),
              HasSubstr("resources.slurm.time: '99999999-99:99:99': hours 99 is out of range"));
  EXPECT_THAT(error(slurm + "{time: \"99999999-00:00:00\"}\n"),
              HasSubstr("resources.slurm.time: '99999999-00:00:00' is longer than 365 days"));
  EXPECT_EQ(error(slurm + "{time: \"2-00:30:00\"}\n"), "");
  const std::string kube = "resources:\n  num_processes: 2\n  launcher: kubernetes\n  kubernetes: ";
  EXPECT_THAT(error(kube + "{cpu: lots}\n"),
              HasSubstr("resources.kubernetes.cpu: 'lots' is not a Kubernetes quantity"));
  EXPECT_THAT(error(kube + "{memory: -1Gi}\n"),
              HasSubstr("resources.kubernetes.memory: '-1Gi' must be positive"));
  EXPECT_EQ(error(kube + "{cpu: 500m, memory: 4Gi}\n"), "");
}

}  // namespace
}  // namespace accel::job
