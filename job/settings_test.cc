// The settings table itself (job/settings.h): every row complete and true to the proto, its
// defaults the ones the parser set before the table, and the parser, checks, flags and options
// all driven by it.
#include "job/settings.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>

#include <set>
#include <string>

#include "CLI/CLI.hpp"
#include "gmock/gmock.h"
#include "engine/model/model_config.h"
#include "engine/model/registry.h"
#include "gtest/gtest.h"
#include "job/job_file.h"
#include "job/job_options.h"
#include "job/settings_flags.h"

namespace accel::job {
namespace {

using accel::v1::JobSpec;
using google::protobuf::FieldDescriptor;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

TEST(SettingsTest, EveryRowHasHelpAndARealProtoFieldOfItsType) {
  std::set<absl::string_view> keys;
  for (const Setting& s : JobSettings()) {
    SCOPED_TRACE(std::string(s.key));
    EXPECT_TRUE(keys.insert(s.key).second) << "declared twice";
    EXPECT_FALSE(s.help.empty());
    const FieldDescriptor* f = SettingField(s);
    ASSERT_NE(f, nullptr) << "no JobSpec field " << (s.field.empty() ? s.key : s.field);
    switch (s.type) {
      case SettingType::kInt:
        EXPECT_THAT(f->cpp_type(), ::testing::AnyOf(FieldDescriptor::CPPTYPE_INT32,
                                                    FieldDescriptor::CPPTYPE_INT64,
                                                    FieldDescriptor::CPPTYPE_UINT64));
        break;
      case SettingType::kReal: EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_DOUBLE); break;
      case SettingType::kBool: EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_BOOL); break;
      case SettingType::kSettings: EXPECT_TRUE(f->is_map()); break;
      case SettingType::kWeightedPaths:
        EXPECT_TRUE(f->is_repeated());
        ASSERT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_MESSAGE);
        EXPECT_NE(f->message_type()->FindFieldByName("path"), nullptr);
        EXPECT_NE(f->message_type()->FindFieldByName("weight"), nullptr);
        break;
      case SettingType::kSection:
        EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_MESSAGE);
        EXPECT_NE(FindSetting(std::string(s.key) + "." + std::string(s.short_key)), nullptr);
        break;
      default: EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_STRING);
    }
    if (s.type == SettingType::kEnum || s.type == SettingType::kSettings) {
      EXPECT_FALSE(s.names.empty());
    }
    if (!s.flag.empty()) {
      EXPECT_FALSE(s.flag_help.empty());
    }
    if (!s.default_value.empty()) {
      JobSpec spec;
      EXPECT_TRUE(SetSettingFromText(s, s.default_value, spec).ok());
    }
  }
}

// Every field of the job file's part of JobSpec has a row (the config texts travel beside
// their paths and are no keys of the file).
TEST(SettingsTest, EveryJobSpecFieldIsATableRow) {
  std::set<const FieldDescriptor*> covered;
  for (const Setting& s : JobSettings()) covered.insert(SettingField(s));
  const auto* d = JobSpec::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->name() == "accelerate_config_text" || f->name() == "deepspeed_config_text") continue;
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      EXPECT_TRUE(covered.contains(f)) << f->name();
      continue;
    }
    for (int j = 0; j < f->message_type()->field_count(); ++j) {
      EXPECT_TRUE(covered.contains(f->message_type()->field(j)))
          << f->name() << "." << f->message_type()->field(j)->name();
    }
  }
}

// The defaults the hand-written DefaultJobSpec set before the table (rpc/job_file.cc at
// a2bd853), field for field.
TEST(SettingsTest, DefaultsAreTheOnesTheParserSetBefore) {
  JobSpec s;
  s.set_name("job");
  s.mutable_model()->set_preset("gpt2-mini");
  auto* t = s.mutable_train();
  t->set_steps(100);
  t->set_micro_batch(4);
  t->set_grad_accum(1);
  t->set_seq_len(64);
  t->set_lr(3e-4);
  t->set_min_lr(0);
  t->set_schedule("cosine");
  t->set_warmup(0);
  t->set_weight_decay(0);
  t->set_beta1(0.9);
  t->set_beta2(0.999);
  t->set_eps(1e-8);
  t->set_grad_clip(1.0);
  t->set_seed(1337);
  t->set_log_every(10);
  auto* r = s.mutable_resources();
  r->set_device("cpu");
  r->set_threads_per_process(1);
  auto* sh = s.mutable_sharding();
  sh->set_strategy("no_shard");
  sh->set_backward_prefetch("backward_pre");
  s.set_max_restarts(0);
  s.set_priority(0);
  s.set_comm_timeout_s(120);
  s.set_heartbeat_timeout_s(60);
  s.set_stop_grace_s(10);
  // Added with the dataset keys (issue 30): jsonl's text field.
  s.mutable_data()->set_text_field("text");
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(s, DefaultJobSpec())) << diff;
}

TEST(SettingsTest, OneWalkerSuggestsTheNearKeyAtEveryLevel) {
  auto top = ParseJobYaml("data: {path: /d}\nprority: 3\n", "j.yaml", "/");
  EXPECT_THAT(Msg(top.status()), HasSubstr("j.yaml:2:1: prority: unknown key (did you mean "
                                           "priority?)"));
  auto nested = ParseJobYaml("data: {path: /d}\ntrain: {log_evry: 3}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(nested.status()),
              HasSubstr("train.log_evry: unknown key (did you mean train.log_every?)"));
  auto section = ParseJobYaml("data: {path: /d}\nshardng: {strategy: zero1}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(section.status()), HasSubstr("shardng: unknown key (did you mean sharding?)"));
  auto settings = ParseJobYaml("data: {path: /d}\nresources: {slurm: {partiton: x}}\n", "j.yaml",
                               "/");
  EXPECT_THAT(Msg(settings.status()),
              HasSubstr("resources.slurm.partiton: unknown key (did you mean "
                        "resources.slurm.partition?)"));
  // Far from every key: the known ones are listed.
  auto far = ParseJobYaml("data: {path: /d}\ntrain: {zzzzzzzz: 1}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(far.status()), HasSubstr("train.zzzzzzzz: unknown key; known keys: "
                                           "activation_checkpointing, beta1"));
}

// train.log_every comes from its row alone: parsed, defaulted, range-checked, a flag.
TEST(SettingsTest, LogEveryIsOneRow) {
  const Setting* row = FindSetting("train.log_every");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->flag, "--log-every");
  EXPECT_EQ(DefaultJobSpec().train().log_every(), 10);
  auto spec = ParseJobYaml("data: {path: /d}\ntrain: {log_every: 3}\n", "j.yaml", "/");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->train().log_every(), 3);
  auto text = ParseJobYaml("data: {path: /d}\ntrain: {log_every: often}\n", "j.yaml", "/");
  EXPECT_THAT(Msg(text.status()),
              HasSubstr("j.yaml:2:20: train.log_every: must be an integer, got 'often'"));
  spec->mutable_train()->set_log_every(0);
  EXPECT_EQ(Msg(ValidateJobSpec(*spec, false)), "train.log_every: must be an integer >= 1, got 0");
}

TEST(SettingsTest, TableChecksKeepTheirMessages) {
  JobSpec s = DefaultJobSpec();
  s.mutable_data()->set_path("/d");
  ASSERT_TRUE(ValidateJobSpec(s, false).ok());
  auto with = [&](auto f) {
    JobSpec c = s;
    f(c);
    return Msg(ValidateJobSpec(c, false));
  };
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_train()->set_micro_batch(int64_t{1} << 21); }),
            "train.micro_batch: must be at most 1048576 (2^20), got 2097152");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_resources()->set_threads_per_process(2000); }),
            "resources.threads_per_process: must be at most 1024, got 2000");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_train()->set_lr(-1); }),
            "train.lr: must be > 0, got -1");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_train()->set_beta2(1); }),
            "train.beta2: must be in [0, 1)");
  EXPECT_EQ(with([](JobSpec& c) { c.set_comm_timeout_s(0); }),
            "comm_timeout_s: must be at least 0.001 (seconds), got 0");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_train()->set_schedule("step"); }),
            "train.schedule: must be constant, linear or cosine, got 'step'");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_resources()->set_device("tpu"); }),
            "resources.device: must be cpu or cuda, got 'tpu'");
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_resources()->set_num_processes(0); }),
            "resources.num_processes: must be an integer >= 1, got 0");
  // Unset optional fields are not checked.
  EXPECT_EQ(with([](JobSpec& c) { c.mutable_resources()->clear_num_processes(); }), "");
}

TEST(SettingsTest, GeneratedFlagsParseIntoTheSpecAndTheOptions) {
  CLI::App app;
  JobSpec spec = DefaultJobSpec();
  config::TrainOptions o;
  AddSettingFlags(app, &spec, &o);
  // CLI11 takes a vector of arguments last first.
  ASSERT_NO_THROW(app.parse(std::vector<std::string>{"2", "--hybrid-group-size",
                                                     "--activation-checkpointing", "8", "--batch",
                                                     "0.01", "--lr", "3", "--log-every"}));
  EXPECT_EQ(spec.train().log_every(), 3);
  EXPECT_EQ(spec.train().micro_batch(), 8);
  EXPECT_EQ(o.batch, 8);
  EXPECT_EQ(o.schedule.base_lr, 0.01f);
  EXPECT_TRUE(o.activation_checkpointing);
  EXPECT_EQ(o.shard.hybrid_group_size, 2);
  EXPECT_EQ(o.steps, 100);  // not given: the engine's default, untouched
  EXPECT_THROW(app.parse(std::vector<std::string>{"often", "--log-every"}), CLI::ParseError);
  EXPECT_THAT(app.help(), HasSubstr("--log-every"));
  EXPECT_THAT(app.help(), HasSubstr("print progress every N steps"));
}

// Issue 32 item 13: the worker's --help named GPT-2 only; the model flags' help now comes from
// the registry, so every family's presets and model types are listed as they are registered.
TEST(SettingsTest, ModelFlagsHelpListsEveryFamilyFromTheRegistry) {
  CLI::App app;
  JobSpec spec = DefaultJobSpec();
  config::TrainOptions o;
  AddSettingFlags(app, &spec, &o);
  const std::string model_help = app.get_option("--model")->get_description();
  for (const std::string& preset : model::ModelPresetNames()) {
    EXPECT_THAT(model_help, HasSubstr(preset));
  }
  EXPECT_THAT(model_help, HasSubstr("llama-tiny"));
  const std::string config_help = app.get_option("--model-config")->get_description();
  for (const std::string& type : model::SupportedModelTypes()) {
    EXPECT_THAT(config_help, HasSubstr(type));
  }
  EXPECT_THAT(config_help, Not(HasSubstr("GPT-2")));
  EXPECT_THAT(app.help(), Not(HasSubstr("{presets}")));
}

TEST(SettingsTest, JobOptionsFromSpecMapsEachRow) {
  JobSpec spec = DefaultJobSpec();
  spec.mutable_train()->set_lr(0.5);
  spec.mutable_train()->set_schedule("linear");
  spec.mutable_sharding()->set_strategy("full_shard");
  spec.mutable_data()->set_shuffle_seed(7);
  absl::StatusOr<config::TrainOptions> o = JobOptionsFromSpec(spec);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->schedule.base_lr, 0.5f);
  EXPECT_EQ(o->schedule.kind, optim::ScheduleKind::kLinear);
  EXPECT_EQ(o->shard.strategy, shard::Strategy::kFullShard);
  EXPECT_EQ(o->shuffle_seed, 7u);
  spec.mutable_sharding()->set_backward_prefetch("sideways");
  EXPECT_THAT(Msg(JobOptionsFromSpec(spec).status()), HasSubstr("sharding.backward_prefetch: "));
}

}  // namespace
}  // namespace accel::job
