// accelctl's text forms of job events.
#include "client/event_format.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EventFormatTest, SizesDurationsAndBars) {
  EXPECT_EQ(Bytes(512), "512 B");
  EXPECT_EQ(Bytes(3 << 20), "3.0 MiB");
  EXPECT_EQ(Bytes(int64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(Duration(65), "1:05");
  EXPECT_EQ(Duration(3723), "1:02:03");
  EXPECT_EQ(ProgressBar(1, 4, 8), "[##......]");
  EXPECT_EQ(ProgressBar(0, 0, 4), "[....]");
}

TEST(EventFormatTest, MetricsLineHasStepLossAndThroughput) {
  v1::Event e;
  e.set_seq(7);
  v1::MetricsEvent* m = e.mutable_metrics();
  m->set_step(9);
  m->set_total_steps(20);
  m->set_loss(2.5f);
  m->set_tokens_per_s(1234);
  const std::string line = EventLine(e);
  EXPECT_THAT(line, HasSubstr("#7 step 10/20"));
  EXPECT_THAT(line, HasSubstr(" 50%"));
  EXPECT_THAT(line, HasSubstr("loss 2.5000"));
  EXPECT_THAT(line, HasSubstr("1234 tok/s"));
  EXPECT_THAT(line, Not(HasSubstr("sent")));  // no rank statistics on this step
}

TEST(EventFormatTest, EvalLineHasLossPerplexityAndTargets) {
  v1::Event e;
  e.set_seq(12);
  v1::EvalEvent* v = e.mutable_eval();
  v->set_step(10);
  v->set_eval_loss(2.25);
  v->set_eval_perplexity(9.4877);
  v->set_eval_tokens(4096);
  const std::string line = EventLine(e);
  EXPECT_THAT(line, HasSubstr("#12 eval step 10"));
  EXPECT_THAT(line, HasSubstr("eval loss 2.2500"));
  EXPECT_THAT(line, HasSubstr("perplexity 9.488"));
  EXPECT_THAT(line, HasSubstr("4096 targets"));
  // A checkpoint of an evaluated step says its eval loss; one without says nothing of it.
  v1::Event c;
  c.mutable_checkpoint()->set_step(10);
  EXPECT_THAT(EventLine(c), Not(HasSubstr("eval loss")));
  c.mutable_checkpoint()->set_eval_loss(2.25);
  EXPECT_THAT(EventLine(c), HasSubstr("eval loss 2.2500"));
}

// A sample is one line whatever its text holds: newlines, quotes and backslashes escaped, UTF-8
// kept; `watch --output json` carries every field.
TEST(EventFormatTest, SampleLineIsOneEscapedLineAndJsonHasEveryField) {
  v1::Event e;
  e.set_seq(14);
  v1::SampleEvent* v = e.mutable_sample();
  v->set_step(200);
  v->set_prompt("Once");
  v->set_text("upon a \"time\"\n\tthere\\was \xc3\xa9t\xc3\xa9");
  for (int id : {10, 11, 12}) v->add_ids(id);
  v->set_stop_reason("length");
  v->set_tokens_per_second(321.5);
  const std::string line = EventLine(e);
  EXPECT_EQ(line,
            "#14 step 200 sample: \"upon a \\\"time\\\"\\n\\tthere\\\\was "
            "\xc3\xa9t\xc3\xa9\"");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const std::string json = Json(e);
  EXPECT_THAT(json, HasSubstr("\"sample\":{\"step\":\"200\""));
  EXPECT_THAT(json, HasSubstr("\"prompt\":\"Once\""));
  EXPECT_THAT(json, HasSubstr("\"ids\":[10,11,12]"));
  EXPECT_THAT(json, HasSubstr("\"stop_reason\":\"length\""));
  EXPECT_THAT(json, HasSubstr("\"tokens_per_second\":321.5"));
}

TEST(EventFormatTest, EvalSummaryShowsTheLatestAndTheBest) {
  EXPECT_EQ(EvalSummaryText({}), "");
  std::vector<v1::EvalEvent> evals(3);
  const double losses[] = {3.0, 2.5, 2.75};
  for (int i = 0; i < 3; ++i) {
    evals[i].set_step(5 * i);
    evals[i].set_eval_loss(losses[i]);
    evals[i].set_eval_perplexity(std::exp(losses[i]));
  }
  EXPECT_EQ(EvalSummaryText(evals),
            "  eval loss 2.7500 (perplexity 15.643) at step 10; best 2.5000 at step 5\n");
}

TEST(EventFormatTest, LatestSampleIsOneEscapedLineWithItsTokenCount) {
  EXPECT_EQ(LatestSampleText({}), "");
  v1::SampleEvent s;
  s.set_step(200);
  s.set_text("Once upon\na \"time\"");
  for (int id : {10, 11, 12}) s.add_ids(id);
  EXPECT_EQ(LatestSampleText(s),
            "  latest step 200 sample: \"Once upon\\na \\\"time\\\"\" (3 tokens)\n");
  s.clear_ids();
  s.add_ids(7);
  EXPECT_THAT(LatestSampleText(s), ::testing::EndsWith("(1 token)\n"));
}

TEST(EventFormatTest, MetricsLineSplitsTheBytesSentByLink) {
  v1::Event e;
  v1::MetricsEvent* m = e.mutable_metrics();
  m->set_total_steps(2);
  m->set_bytes_sent(int64_t{6} << 20);
  m->set_bytes_sent_cross_node(int64_t{2} << 20);
  EXPECT_THAT(EventLine(e), HasSubstr("| sent 6.0 MiB (2.0 MiB across nodes)"));
}

TEST(EventFormatTest, MemoryLineAddsTheGpuOnlyWhenTheDriverReportedIt) {
  v1::Event e;
  e.set_seq(3);
  e.set_rank(1);
  v1::MemoryEvent* m = e.mutable_memory();
  m->set_step(-1);
  m->set_device_current(2 << 20);
  m->set_device_peak(4 << 20);
  const std::string cpu = EventLine(e);
  EXPECT_THAT(cpu, HasSubstr("memory rank 1 after setup: compute 2.0 MiB (peak 4.0 MiB)"));
  EXPECT_THAT(cpu, Not(HasSubstr("GPU")));
  m->set_device_driver_used(int64_t{10} << 30);
  m->set_device_driver_total(int64_t{140} << 30);
  EXPECT_THAT(EventLine(e), HasSubstr("GPU in use 10.00 GiB of 140.00 GiB"));
}

// The model line of a plan summary: the family's registry entry says whether head_dim, the MLP,
// the lm_head and the block follow (Llama's do, with its MLP's kind; GPT-2's follow from its
// width); a model_type this accelctl does not know shows them without a kind.
TEST(EventFormatTest, PlanSummaryShowsWhatTheFamilysEntrySays) {
  v1::Job j;
  v1::ModelSummary* m = j.mutable_plan()->mutable_model();
  m->set_name("m");
  m->set_head_dim(16);
  m->set_intermediate_size(176);
  m->set_block_class("Qwen2DecoderLayer");
  m->set_architecture("qwen2");
  EXPECT_THAT(PlanText(j), HasSubstr("    head_dim 16, mlp 176 (SwiGLU), untied lm_head, "
                                     "block Qwen2DecoderLayer"));
  m->set_architecture("gpt2");
  EXPECT_THAT(PlanText(j), Not(HasSubstr("head_dim")));
  m->set_architecture("");  // an acceld older than the field: GPT-2
  EXPECT_THAT(PlanText(j), Not(HasSubstr("head_dim")));
  m->set_architecture("newfamily");
  EXPECT_THAT(PlanText(j), HasSubstr("    head_dim 16, mlp 176, untied lm_head, block "));
}

}  // namespace
}  // namespace accel::client
