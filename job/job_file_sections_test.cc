// The job-file sections of issues 30 and 31: train.sample_*, eval and data.mix, each parsed,
// mapped onto the engine's options and checked at the door (job_file_test.cc has the rest).
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "job/job_file.h"
#include "job/job_options.h"
#include "gtest/gtest.h"

namespace accel::job {
namespace {

using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

// train.sample_*: parsed from the train section, mapped onto the engine's options, ranges
// checked at the door naming the key.
TEST(JobFileTest, SampleKeysParseMapAndAreCheckedAtTheDoor) {
  auto spec = ParseJobYaml(
      "data: {path: train.txt}\ntrain: {sample_every: 25, sample_prompt: \"Once upon\", "
      "sample_max_new_tokens: 16, sample_temperature: 0.8}\n",
      "/jobs/j.yaml", "/jobs");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto options = JobOptionsFromSpec(*spec);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->sample.every, 25);
  EXPECT_EQ(options->sample.prompt, "Once upon");
  EXPECT_EQ(options->sample.max_new_tokens, 16);
  EXPECT_EQ(options->sample.temperature, 0.8);
  const config::SampleOptions off = JobOptionsFromSpec(DefaultJobSpec())->sample;
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.max_new_tokens, 32);
  EXPECT_EQ(off.temperature, 0);  // greedy
  auto check = [](const std::string& train) {
    auto s = ParseJobYaml("data: {path: /d}\ntrain: {" + train + "}\n", "j.yaml", "/");
    return s.ok() ? Msg(ValidateJobSpec(*s, /*check_files=*/false)) : Msg(s.status());
  };
  EXPECT_THAT(check("sample_every: -1"), HasSubstr("train.sample_every: must be an integer >= 0"));
  EXPECT_THAT(check("sample_max_new_tokens: 0"),
              HasSubstr("train.sample_max_new_tokens: must be an integer >= 1"));
  EXPECT_THAT(check("sample_temperature: -0.5"),
              HasSubstr("train.sample_temperature: must be >= 0 (0: greedy), got -0.5"));
  EXPECT_THAT(check("sample_evry: 5"), HasSubstr("did you mean train.sample_every?"));
}

// Issue 31: the eval section, its short form, its paths resolved as data.path's, its engine
// options, and what is refused at submit (a missing eval file; asking for evaluations without
// eval data).
TEST(JobFileTest, EvalSectionParsesMapsAndIsCheckedAtTheDoor) {
  auto spec = ParseJobYaml(
      "data: {path: train.txt}\neval: {data: held_out.bin, every_n_steps: 50, max_batches: 8, "
      "at_start: true}\ncheckpoint: {keep_best: 2}\n",
      "/jobs/j.yaml", "/jobs");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->eval().data().path(), "/jobs/held_out.bin");
  auto options = JobOptionsFromSpec(*spec);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->eval.data, "/jobs/held_out.bin");
  EXPECT_EQ(options->eval.every_n_steps, 50);
  EXPECT_EQ(options->eval.max_batches, 8);
  EXPECT_TRUE(options->eval.at_start);
  EXPECT_TRUE(options->eval.at_end);  // the default
  EXPECT_EQ(options->keep_best, 2);
  auto long_form = ParseJobYaml("data: {path: /d}\neval: {data: {path: v.txt}, at_end: false}\n",
                                "/jobs/j.yaml", "/jobs");
  ASSERT_TRUE(long_form.ok()) << long_form.status();
  EXPECT_EQ(long_form->eval().data().path(), "/jobs/v.txt");
  EXPECT_FALSE(JobOptionsFromSpec(*long_form)->eval.at_end);
  EXPECT_FALSE(JobOptionsFromSpec(DefaultJobSpec())->eval.at_start);
  EXPECT_TRUE(JobOptionsFromSpec(DefaultJobSpec())->eval.data.empty());

  auto typo = ParseJobYaml("data: {path: /d}\neval: {every_n_step: 5}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(typo.status()), HasSubstr("did you mean eval.every_n_steps?"));
  const std::string dir = ::testing::TempDir() + "/job_file_eval_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/data.txt") << "text";
  auto with = [&](const std::function<void(accel::v1::JobSpec&)>& edit) {
    accel::v1::JobSpec s = DefaultJobSpec();
    s.mutable_data()->set_path(dir + "/data.txt");
    edit(s);
    return Msg(ValidateJobSpec(s, /*check_files=*/true));
  };
  EXPECT_EQ(with([&](auto& s) { s.mutable_eval()->mutable_data()->set_path(dir + "/data.txt"); }),
            "");
  EXPECT_THAT(with([&](auto& s) { s.mutable_eval()->mutable_data()->set_path(dir + "/none"); }),
              HasSubstr("eval.data.path: no such file: " + dir + "/none"));
  EXPECT_EQ(with([](auto& s) { s.mutable_eval()->set_every_n_steps(10); }),
            "eval.every_n_steps: needs eval.data (the held-out tokens to evaluate on)");
  EXPECT_EQ(with([](auto& s) { s.mutable_eval()->set_at_start(true); }),
            "eval.at_start: needs eval.data (the held-out tokens to evaluate on)");
  EXPECT_EQ(with([](auto& s) { s.mutable_checkpoint()->set_keep_best(1); }),
            "checkpoint.keep_best: needs eval.data (the held-out tokens to evaluate on)");
  EXPECT_THAT(with([](auto& s) { s.mutable_eval()->set_max_batches(-1); }),
              HasSubstr("eval.max_batches"));
  std::filesystem::remove_all(dir);
}

// data.mix: weighted sources in the file's order, relative paths resolved; bad weights,
// repeated paths and a mixture without a format are refused naming the key.
TEST(JobFileTest, DataMixKeepsItsOrderAndIsCheckedAtTheDoor) {
  auto spec = ParseJobYaml(
      "data:\n  format: jsonl\n  mix:\n    chat.jsonl: 3\n    \"web/*.jsonl\": 0.5\n"
      "    /abs/b.jsonl: 1\n",
      "/jobs/j.yaml", "/jobs");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->data().mix_size(), 3);
  EXPECT_EQ(spec->data().mix(0).path(), "/jobs/chat.jsonl");
  EXPECT_EQ(spec->data().mix(0).weight(), 3);
  EXPECT_EQ(spec->data().mix(1).path(), "/jobs/web/*.jsonl");
  EXPECT_EQ(spec->data().mix(1).weight(), 0.5);
  EXPECT_EQ(spec->data().mix(2).path(), "/abs/b.jsonl");
  EXPECT_TRUE(spec->data().path().empty());  // a mixture needs no data.path
  auto options = JobOptionsFromSpec(*spec);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->dataset.mix.size(), 3u);
  EXPECT_EQ(options->dataset.mix[1], (std::pair<std::string, double>{"/jobs/web/*.jsonl", 0.5}));

  auto zero = ParseJobYaml("data: {format: jsonl, mix: {a.jsonl: 0}}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(zero.status()), HasSubstr("data.mix.a.jsonl: must be a positive weight"));
  auto word = ParseJobYaml("data: {format: jsonl, mix: {a.jsonl: lots}}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(word.status()), HasSubstr("must be a positive weight"));
  auto list = ParseJobYaml("data: {format: jsonl, mix: [a.jsonl]}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(list.status()), HasSubstr("data.mix: must be a mapping of paths to weights"));
  auto twice = ParseJobYaml("data:\n  format: jsonl\n  mix:\n    a.jsonl: 1\n    a.jsonl: 2\n",
                            "j.yaml", "/");
  EXPECT_THAT(Msg(twice.status()), HasSubstr("duplicate path (first given on line 4)"));
  auto no_format = ParseJobYaml("data: {mix: {a.jsonl: 1}}\n", "j.yaml", "/");
  ASSERT_TRUE(no_format.ok()) << no_format.status();
  EXPECT_THAT(Msg(ValidateJobSpec(*no_format, /*check_files=*/false)),
              HasSubstr("data.mix: needs data.format"));
  // A spec from another client: the same rule on the proto.
  accel::v1::JobSpec bad = *spec;
  bad.mutable_data()->mutable_mix(0)->set_weight(-1);
  EXPECT_THAT(Msg(ValidateJobSpec(bad, /*check_files=*/false)),
              HasSubstr("data.mix: /jobs/chat.jsonl: the weight must be a positive number, "
                        "got -1"));
  // Neither data.path nor data.mix: data.path is required.
  EXPECT_THAT(Msg(ParseJobYaml("data: {format: jsonl}\n", "j.yaml", "/").status()),
              HasSubstr("data.path: required"));
}

}  // namespace
}  // namespace accel::job
