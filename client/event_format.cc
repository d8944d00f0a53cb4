#include "client/event_format.h"

#include <google/protobuf/util/json_util.h>

#include <ctime>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/generate/training_sample.h"
#include "engine/model/registry.h"

namespace accel::client {

namespace v1 = accel::v1;

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

std::string StateName(v1::JobState s) {
  std::string n = v1::JobState_Name(s);
  return n.empty() ? "UNKNOWN" : n;
}

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / double(1 << 30));
  if (b >= (1 << 20)) return absl::StrFormat("%.1f MiB", b / double(1 << 20));
  if (b >= (1 << 10)) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

std::string Time(int64_t us) {
  if (us <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMicros(us), absl::LocalTimeZone());
}

std::string ProgressBar(int64_t done, int64_t total, int width) {
  const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "]");
}

// One line per event (text output).
std::string EventLine(const v1::Event& e) {
  const std::string who = e.rank() >= 0 ? absl::StrCat("rank ", e.rank()) : "job";
  switch (e.body_case()) {
    case v1::Event::kState:
      return absl::StrCat("#", e.seq(), " ", StateName(e.state().state()),
                          e.state().message().empty() ? "" : ": ", e.state().message());
    case v1::Event::kMetrics: {
      const v1::MetricsEvent& m = e.metrics();
      const int64_t done = m.step() + 1;
      return absl::StrFormat(
          "#%d step %d/%d %s %3d%% | loss %.4f | lr %.2e | grad norm %.3f | %.0f tok/s | "
          "%.0f ms/step | ETA %s%s%s",
          e.seq(), done, m.total_steps(), ProgressBar(done, m.total_steps()),
          m.total_steps() > 0 ? 100 * done / m.total_steps() : 0, m.loss(), m.lr(), m.grad_norm(),
          m.tokens_per_s(), m.step_seconds() * 1e3, Duration(m.eta_seconds()),
          m.bytes_sent() > 0 ? absl::StrCat(" | sent ", Bytes(m.bytes_sent()), " (",
                                            Bytes(m.bytes_sent_cross_node()), " across nodes)")
                             : "",
          m.skipped() ? " (skipped: non-finite)" : "");
    }
    case v1::Event::kMemory: {
      const v1::MemoryEvent& m = e.memory();
      return absl::StrCat("#", e.seq(), " memory ", who,
                          m.step() < 0 ? " after setup" : absl::StrCat(" at step ", m.step() + 1),
                          ": compute ", Bytes(m.device_current()), " (peak ",
                          Bytes(m.device_peak()), "), host ", Bytes(m.host_current()), " (peak ",
                          Bytes(m.host_peak()), ")",
                          m.device_driver_total() > 0
                              ? absl::StrCat(", GPU in use ", Bytes(m.device_driver_used()),
                                             " of ", Bytes(m.device_driver_total()))
                              : "");
    }
    case v1::Event::kCheckpoint: {
      const v1::CheckpointEvent& c = e.checkpoint();
      return absl::StrFormat("#%d checkpoint step %d: %s (%s, %s, %.2f s%s)", e.seq(), c.step(),
                             c.path(), c.kind(), Bytes(c.bytes()), c.seconds(),
                             c.has_eval_loss() ? absl::StrFormat(", eval loss %.4f", c.eval_loss())
                                               : "");
    }
    case v1::Event::kEval: {
      const v1::EvalEvent& v = e.eval();
      return absl::StrFormat("#%d eval step %d | eval loss %.4f | perplexity %.3f | %d targets | "
                             "%.0f tok/s",
                             e.seq(), v.step(), v.eval_loss(), v.eval_perplexity(),
                             v.eval_tokens(), v.tokens_per_s());
    }
    case v1::Event::kSample:
      // One line, whatever the text holds (newlines, quotes): escaped.
      return absl::StrCat("#", e.seq(), " ", generate::SampleLine(e.sample().step(),
                                                                  e.sample().text()));
    case v1::Event::kLog:
      return absl::StrCat("#", e.seq(), " [", who, "] ", e.log().line());
    case v1::Event::BODY_NOT_SET:
      break;
  }
  return absl::StrCat("#", e.seq(), " (unknown event)");
}

std::string EvalSummaryText(const std::vector<v1::EvalEvent>& evals) {
  if (evals.empty()) return "";
  const v1::EvalEvent* best = &evals.front();
  for (const v1::EvalEvent& e : evals) {
    if (e.eval_loss() < best->eval_loss()) best = &e;
  }
  const v1::EvalEvent& latest = evals.back();
  return absl::StrFormat("  eval loss %.4f (perplexity %.3f) at step %d; best %.4f at step %d\n",
                         latest.eval_loss(), latest.eval_perplexity(), latest.step(),
                         best->eval_loss(), best->step());
}

std::string LatestSampleText(const std::optional<v1::SampleEvent>& latest) {
  if (!latest.has_value()) return "";
  return absl::StrCat("  latest ", generate::SampleLine(latest->step(), latest->text()), " (",
                      latest->ids_size(), latest->ids_size() == 1 ? " token)\n" : " tokens)\n");
}

// What the job runs, as acceld lowered it at submit (JobPlan); older jobs show their spec.
std::string PlanText(const v1::Job& j) {
  std::ostringstream out;
  if (!j.has_plan()) {
    out << "  ranks " << j.spec().resources().num_processes() << " "
         << j.spec().resources().device() << ", model " << j.spec().model().preset() << ", "
         << j.spec().sharding().strategy() << "\n";
    return out.str();
  }
  const v1::JobPlan& p = j.plan();
  std::string strategy = p.strategy();
  if (p.hybrid_group_size() > 0) {
    absl::StrAppend(&strategy, " (groups of ", p.hybrid_group_size(), ")");
  }
  out << "  plan " << strategy << " on " << p.world_size() << " " << p.device() << " rank"
       << (p.world_size() == 1 ? "" : "s") << ", " << p.precision() << " (params "
       << p.params_dtype() << ", grads " << p.grads_dtype() << ", master " << p.master_dtype()
       << ")";
  if (p.optimizer_device() != "compute") {
    out << ", optimizer on " << p.optimizer_device();
    if (p.params_device() != "compute") out << " with the parameters";
  }
  out << "\n";
  out << "  batch " << p.micro_batch() << " x accum " << p.grad_accum() << " x "
       << p.world_size() << " ranks = " << p.global_batch() << " sequences of " << p.seq_len()
       << " tokens per step, clip " << p.grad_clip() << ", checkpoints " << p.state_dict_type()
       << (p.save_16bit() ? " + 16-bit model" : "") << "\n";
  const v1::ModelSummary& m = p.model();
  // Summaries from an acceld older than the architecture field are GPT-2's.
  const std::string arch = m.architecture().empty() ? "gpt2" : m.architecture();
  std::string heads = absl::StrCat(m.n_head(), " heads");
  if (m.n_kv_head() != 0 && m.n_kv_head() != m.n_head()) {
    absl::StrAppend(&heads, " (", m.n_kv_head(), " key/value)");
  }
  out << absl::StrFormat("  model %s: %s, %d layers, %s, width %d, vocabulary %d, "
                          "context %d, %.2fM parameters\n",
                          m.name(), arch, m.n_layer(), heads, m.n_embd(), m.vocab_size(),
                          m.n_positions(), m.num_params() / 1e6);
  // The family's registry entry says whether these follow from the width (GPT-2's do) and
  // what its MLP is; a model_type this accelctl does not know shows them plainly.
  const model::Architecture* family = model::FindArchitecture(arch);
  if (family == nullptr || family->display.details) {
    const std::string mlp =
        family == nullptr || family->display.mlp.empty() ? "" : " (" + family->display.mlp + ")";
    out << absl::StrFormat("    head_dim %d, mlp %d%s, %s lm_head, block %s\n", m.head_dim(),
                           m.intermediate_size(), mlp, m.tied_embeddings() ? "tied" : "untied",
                           m.block_class());
  }
  if (!p.config().empty()) out << "  config " << p.config() << "\n";
  for (const std::string& note : p.notes()) out << "  note: " << note << "\n";
  return out.str();
}

}  // namespace accel::client
