#include "engine/generate/generator.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::generate {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// How much of `text` can be shown now: all of it when `final`, else without a trailing
// replacement character and without a tail that is a proper prefix of a stop string.
size_t Settled(const std::string& text, const std::vector<std::string>& stops, bool final) {
  if (final) return text.size();
  size_t end = text.size();
  if (std::string_view(text).ends_with(kReplacement)) end -= kReplacement.size();
  size_t hold = 0;
  for (const std::string& s : stops) {
    for (size_t len = std::min(s.size() - 1, end); len > hold; --len) {
      if (std::string_view(text).substr(end - len, len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  return end - hold;
}

}  // namespace

absl::StatusOr<GenerateResult> Generate(model::KvDecoder& decoder, int64_t vocab,
                                        const std::vector<int32_t>& prompt,
                                        const GenerateOptions& options, const DecodeFn& decode,
                                        const StreamFn& stream) {
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) >= decoder.capacity()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt is ", prompt.size(), " tokens, which leaves no room in the model's context of ",
        decoder.capacity(), " positions"));
  }
  if (options.max_new_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-new-tokens ", options.max_new_tokens, " must be at least 1"));
  }
  for (const std::string& s : options.stop_strings) {
    if (s.empty()) return absl::InvalidArgumentError("--stop: a stop string is empty");
  }
  ACCEL_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampling));
  decoder.Reset();
  std::vector<float> logits(vocab);
  ACCEL_RETURN_IF_ERROR(decoder.Step(prompt.data(), static_cast<int64_t>(prompt.size()),
                                     logits.data()));
  GenerateResult r;
  size_t shown = 0;
  auto show = [&](bool final) {
    const size_t settled = Settled(r.text, options.stop_strings, final);
    if (stream && settled > shown) stream(std::string_view(r.text).substr(shown, settled - shown));
    shown = std::max(shown, settled);
  };
  while (true) {
    const int32_t next = sampler.Next(logits.data(), vocab);
    if (std::find(options.end_ids.begin(), options.end_ids.end(), next) !=
        options.end_ids.end()) {
      r.stop_reason = "eos";
      break;
    }
    r.ids.push_back(next);
    r.text = decode(r.ids);
    size_t cut = std::string::npos;
    for (const std::string& s : options.stop_strings) cut = std::min(cut, r.text.find(s));
    if (cut != std::string::npos) {
      r.text.resize(cut);
      r.stop_reason = "stop";
      break;
    }
    if (static_cast<int64_t>(r.ids.size()) >= options.max_new_tokens) {
      r.stop_reason = "length";
      break;
    }
    if (decoder.position() >= decoder.capacity()) {
      r.stop_reason = "context";
      break;
    }
    show(false);
    ACCEL_RETURN_IF_ERROR(decoder.Step(&next, 1, logits.data()));
  }
  show(true);
  return r;
}

}  // namespace accel::generate
