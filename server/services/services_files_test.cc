// The files a job names, at acceld's door (issue 28; docs/rpc.md, "What acceld reads on a
// client's behalf"): no error quotes a file acceld read for the client, paths are absolute and
// not in the kernel's file systems, init_weights may be a directory and every shard its index
// names is checked, and with --data-root every path must resolve under a root.
#include <sys/stat.h>
#include <unistd.h>

#include "engine/checkpoint/hf_weights.h"
#include "engine/model/model_config.h"
#include "server/services/services_test_fixture.h"

namespace accel::server {
namespace {

using ::testing::Not;

// Content no error may carry: each secret file holds some of these words.
const char* const kSecrets[] = {"root", "20228", "eyJhbGciOi", "hunter2", "password"};

void ExpectNoSecret(const grpc::Status& s) {
  for (const char* secret : kSecrets) {
    EXPECT_THAT(s.error_message(), Not(HasSubstr(secret))) << s.error_message();
  }
}

std::string WriteSecret(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0600);
  return path;
}

grpc::Status SubmitFile(v1::Coordinator::Stub* coord, const std::string& token,
                        const std::string& file, const std::string& accelerate,
                        const std::string& deepspeed) {
  grpc::ClientContext ctx;
  rpc::Authorize(ctx, token);
  v1::SubmitJobRequest req;
  req.set_job_file(file);
  req.set_accelerate_config(accelerate);
  req.set_deepspeed_config(deepspeed);
  v1::SubmitJobResponse resp;
  return coord->SubmitJob(&ctx, req, &resp);
}

// `SubmitJob job_file: /etc/shadow` answered "/etc/shadow:1:1: root:*:20228:... unknown key";
// a JWT file, "must be a mapping, got 'eyJhbGciOi...'"; configs did the same.
TEST_F(ServicesTest, NoErrorQuotesAFileAcceldReadForTheClient) {
  const std::vector<std::string> secrets = {
      WriteSecret(dir_ + "/shadow", "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n"),
      WriteSecret(dir_ + "/jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln\n"),
      WriteSecret(dir_ + "/mapping.yaml", "password: hunter2\n"),
      WriteSecret(dir_ + "/nested.yaml", "train:\n  password: hunter2\n"),
      WriteSecret(dir_ + "/value.yaml", "train:\n  steps: hunter2\n"),
      WriteSecret(dir_ + "/preset.yaml", "model: hunter2\ndata: {path: /x}\n"),
      WriteSecret(dir_ + "/escape.yaml", "name: \"hunter2\\q\"\n"),
      WriteSecret(dir_ + "/json", "{\"password\": \"hunter2\"}\n"),
      WriteSecret(dir_ + "/badjson", "{\"a\": hunter2}\n")};
  std::ofstream(dir_ + "/job.yaml") << "name: j\ndata: {path: data.txt}\n";
  for (const std::string& secret : secrets) {
    for (const auto& [file, accelerate, deepspeed] :
         {std::tuple<std::string, std::string, std::string>{secret, "", ""},
          {dir_ + "/job.yaml", secret, ""},
          {dir_ + "/job.yaml", "", secret}}) {
      grpc::Status s = SubmitFile(coord_.get(), token_, file, accelerate, deepspeed);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << secret;
      EXPECT_THAT(s.error_message(), HasSubstr(secret));  // the path and a position, though
      ExpectNoSecret(s);
    }
  }
  // What was expected, in our words, at the key's position.
  grpc::Status s = SubmitFile(coord_.get(), token_, dir_ + "/value.yaml", "", "");
  EXPECT_THAT(s.error_message(),
              HasSubstr(dir_ + "/value.yaml:2:10: train.steps: must be an integer"));
  s = SubmitFile(coord_.get(), token_, dir_ + "/nested.yaml", "", "");
  EXPECT_THAT(s.error_message(), HasSubstr(dir_ + "/nested.yaml:2:3: train: unknown key"));
  // A model config.json named by a spec is read by acceld too.
  for (const char* text : {"root:*:20228:0:99999:7:::\n", "{\"n_layer\": \"hunter2\"}",
                           "{\"model_type\": \"hunter2\"}", "{\"password\": hunter2}"}) {
    v1::JobSpec spec = Spec(1);
    spec.mutable_model()->set_config(WriteSecret(dir_ + "/config.json", text));
    s = Submit(spec, token_, nullptr);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text;
    ExpectNoSecret(s);
  }
  // init_weights that is no safetensors file: its first 8 bytes are not printed as a length.
  v1::JobSpec spec = Spec(1);
  spec.mutable_model()->set_init_weights(dir_ + "/shadow");
  s = Submit(spec, token_, nullptr);
  EXPECT_FALSE(s.ok());
  ExpectNoSecret(s);
}

// A relative path ran against acceld's working directory; /proc and /sys passed submit;
// docs/models.md said init_weights may be a directory but submit refused one; a FIFO shard
// passed submit and hung a rank past its heartbeat deadline.
TEST_F(ServicesTest, PathsAJobNamesAreCheckedAtTheDoor) {
  v1::JobSpec relative = Spec(1);
  relative.mutable_data()->set_path("data.txt");
  grpc::Status s = Submit(relative, token_, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("data.path: must be an absolute path"));
  relative = Spec(1);
  relative.mutable_checkpoint()->set_dir("ckpt");
  EXPECT_THAT(Submit(relative, token_, nullptr).error_message(),
              HasSubstr("checkpoint.dir: must be an absolute path"));
  for (const char* dir : {"/proc/self", "/proc/self/new", "/sys/kernel"}) {
    v1::JobSpec kernel = Spec(1);
    kernel.mutable_checkpoint()->set_dir(dir);
    s = Submit(kernel, token_, nullptr);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << dir;
    EXPECT_THAT(s.error_message(), HasSubstr("a kernel file system")) << dir;
  }
  v1::JobSpec environ = Spec(1);
  environ.mutable_data()->set_path("/proc/self/environ");
  EXPECT_THAT(Submit(environ, token_, nullptr).error_message(),
              HasSubstr("data.path: /proc/self/environ is under /proc"));

  // init_weights: a directory holding model.safetensors, then a sharded one.
  auto config = model::ModelPreset("gpt2-mini");
  ASSERT_TRUE(config.ok());
  auto layout = model::ModelLayout::Create(*config);
  ASSERT_TRUE(layout.ok());
  const std::vector<float> params(layout->num_params(), 0.01f);
  const std::string single = dir_ + "/single", sharded = dir_ + "/sharded";
  std::filesystem::create_directories(single);
  std::filesystem::create_directories(sharded);
  ASSERT_TRUE(checkpoint::SaveHfWeights(Env::Default(), single + "/model.safetensors", *layout,
                                        params.data())
                  .ok());
  ASSERT_TRUE(checkpoint::SaveHfWeights(Env::Default(), sharded + "/model.safetensors", *layout,
                                        params.data(), DType::kF32, 1 << 20)
                  .ok());
  ASSERT_TRUE(std::filesystem::exists(sharded + "/model.safetensors.index.json"));
  for (const std::string& weights : {single, sharded, single + "/model.safetensors"}) {
    v1::JobSpec spec = Spec(1);
    spec.mutable_model()->set_init_weights(weights);
    s = Submit(spec, token_, nullptr);
    EXPECT_TRUE(s.ok()) << weights << ": " << s.error_message();
  }
  v1::JobSpec empty_dir = Spec(1);
  std::filesystem::create_directories(dir_ + "/empty");
  empty_dir.mutable_model()->set_init_weights(dir_ + "/empty");
  EXPECT_THAT(Submit(empty_dir, token_, nullptr).error_message(),
              HasSubstr("model.init_weights: " + dir_ +
                        "/empty: a directory without "
                        "model.safetensors.index.json or model.safetensors"));
  std::string shard;
  for (const auto& e : std::filesystem::directory_iterator(sharded)) {
    if (e.path().filename().string().starts_with("model-")) shard = e.path().string();
  }
  ASSERT_FALSE(shard.empty());
  ASSERT_EQ(::unlink(shard.c_str()), 0);
  ASSERT_EQ(::mkfifo(shard.c_str(), 0600), 0);
  v1::JobSpec fifo = Spec(1);
  fifo.mutable_model()->set_init_weights(sharded);
  s = Submit(fifo, token_, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("model.init_weights: " + shard + " is a FIFO"));
}

// `acceld --data-root DIR`: every path a job names resolves (symlinks followed) under a root.
TEST_F(ServicesTest, WithDataRootEveryPathAJobNamesMustLieUnderARoot) {
  const std::string root = dir_ + "/root";
  std::filesystem::create_directories(root + "/data");
  std::ofstream(root + "/data/train.txt") << "hello world\n";
  std::ofstream(root + "/job.yaml") << "name: inside\ndata: {path: data/train.txt}\n";
  std::ofstream(dir_ + "/outside.yaml") << "name: outside\ndata: {path: root/data/train.txt}\n";
  std::filesystem::create_symlink(dir_ + "/data.txt", root + "/data/link.txt");
  AcceldOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = dir_ + "/state2";
  o.cpu_slots = 2;
  o.worker_bin = worker_;
  o.data_roots = {dir_ + "/missing"};
  auto refused = Acceld::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--data-root"));
  o.data_roots = {root};
  auto d = Acceld::Start(o);
  ASSERT_TRUE(d.ok()) << d.status();
  auto coord = v1::Coordinator::NewStub(*rpc::MakeChannel((*d)->address()));
  const std::string token = *rpc::ReadTokenFile(dir_ + "/state2/token");
  auto submit = [&](const v1::JobSpec& spec) {
    grpc::ClientContext ctx;
    rpc::Authorize(ctx, token);
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitJobResponse resp;
    return coord->SubmitJob(&ctx, req, &resp);
  };
  v1::JobSpec inside = Spec(1);
  inside.mutable_data()->set_path(root + "/data/train.txt");
  inside.mutable_checkpoint()->set_dir(root + "/ckpt/not/yet");
  grpc::Status s = submit(inside);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(SubmitFile(coord.get(), token, root + "/job.yaml", "", "").ok());

  const std::pair<std::string, std::string> outside[] = {
      {"data.path", dir_ + "/data.txt"},
      {"data.path", root + "/data/link.txt"},  // a symlink out of the root
      {"checkpoint.dir", root + "/../escape"},
      {"model.config", "/etc/hostname"}};
  for (const auto& [key, path] : outside) {
    v1::JobSpec spec = inside;
    if (key == "data.path") spec.mutable_data()->set_path(path);
    if (key == "checkpoint.dir") spec.mutable_checkpoint()->set_dir(path);
    if (key == "model.config") spec.mutable_model()->set_config(path);
    s = submit(spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    EXPECT_THAT(s.error_message(), HasSubstr(key + ": " + path + " is outside --data-root"));
  }
  s = SubmitFile(coord.get(), token, dir_ + "/outside.yaml", "", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("job_file: " + dir_ + "/outside.yaml is outside"));
  s = SubmitFile(coord.get(), token, root + "/job.yaml", "/etc/hostname", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("accelerate_config: /etc/hostname is outside"));
}

}  // namespace
}  // namespace accel::server
