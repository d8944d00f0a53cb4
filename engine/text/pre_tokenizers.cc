#include "engine/text/pre_tokenizers.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/regex.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

// GPT-2's split pattern, as Hugging Face's ByteLevel pre-tokenizer writes it.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { kIsolated, kRemoved, kMergedWithNext };

// Cuts `word` at the matches of `regex`: matched and unmatched stretches become words of their
// own (Isolated), the matches are dropped (Removed), or each match joins the stretch after it
// (MergedWithNext; a match followed by another match stays alone, as in HF); `invert` swaps
// matched and unmatched. `*first_at_zero` tells whether the first word emitted starts at 0.
absl::Status SplitWord(const Regex& regex, Behavior behavior, bool invert, const std::string& word,
                       std::vector<std::string>* out, bool* first_at_zero) {
  std::vector<std::pair<size_t, size_t>> matches;
  ACCEL_RETURN_IF_ERROR(regex.FindAll(word, &matches));
  struct Segment {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Segment> segments;
  auto add = [&](size_t begin, size_t end, bool is_match) {
    if (begin < end) segments.push_back({begin, end, is_match != invert});
  };
  size_t last = 0;
  for (const auto& [begin, end] : matches) {
    add(last, begin, false);
    add(begin, end, true);
    last = end;
  }
  add(last, word.size(), false);
  if (behavior == Behavior::kMergedWithNext) {
    std::vector<Segment> merged;  // built back to front, as HF folds it
    bool next_is_match = false;
    for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
      if (it->is_match && !next_is_match && !merged.empty()) {
        merged.back().begin = it->begin;
      } else {
        merged.push_back(*it);
      }
      next_is_match = it->is_match;
    }
    segments.assign(merged.rbegin(), merged.rend());
  }
  bool first = true;
  for (const Segment& s : segments) {
    if (behavior == Behavior::kRemoved && s.is_match) continue;
    if (first) *first_at_zero = s.begin == 0;
    first = false;
    out->push_back(word.substr(s.begin, s.end - s.begin));
  }
  if (first) *first_at_zero = false;
  return absl::OkStatus();
}

// Runs `split_one` over every word, keeping Words::first_at_start true only when the first
// word's first piece still starts at its offset 0.
template <typename SplitOne>
absl::Status SplitEach(Words* words, SplitOne split_one) {
  std::vector<std::string> out;
  out.reserve(words->items.size());
  for (size_t i = 0; i < words->items.size(); ++i) {
    const size_t before = out.size();
    bool first_at_zero = false;
    ACCEL_RETURN_IF_ERROR(split_one(words->items[i], &out, &first_at_zero));
    if (i == 0) words->first_at_start = words->first_at_start && first_at_zero;
    if (i == 0 && out.size() == before) words->first_at_start = false;
  }
  words->items = std::move(out);
  return absl::OkStatus();
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::unique_ptr<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  absl::Status PreTokenize(Words* words) const override {
    ACCEL_RETURN_IF_ERROR(SplitEach(
        words,
        [&](std::string& word, std::vector<std::string>* out, bool* first_at_zero) -> absl::Status {
          // A prepended space takes the position of the character it precedes, as in HF.
          if (add_prefix_space_ && (word.empty() || word[0] != ' ')) word.insert(0, " ");
          if (regex_ != nullptr) {
            return SplitWord(*regex_, Behavior::kIsolated, false, word, out, first_at_zero);
          }
          *first_at_zero = !word.empty();
          if (!word.empty()) out->push_back(std::move(word));
          return absl::OkStatus();
        }));
    // Each byte becomes the printable character that stands for it.
    const auto& alphabet = ByteLevelAlphabet();
    for (std::string& word : words->items) {
      std::string mapped;
      mapped.reserve(word.size() * 2);
      for (char c : word) mapped.append(alphabet[static_cast<unsigned char>(c)]);
      word = std::move(mapped);
    }
    return absl::OkStatus();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;  // null when use_regex is false
};

class Split : public PreTokenizer {
 public:
  Split(std::unique_ptr<Regex> regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  absl::Status PreTokenize(Words* words) const override {
    return SplitEach(words,
                     [&](std::string& word, std::vector<std::string>* out, bool* first_at_zero) {
                       return SplitWord(*regex_, behavior_, invert_, word, out, first_at_zero);
                     });
  }

 private:
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

// Metaspace: spaces become `replacement` (Llama-style "▁"), which is prepended to a word
// ("always"; "first": only to the word at the very start of the text; "never"), and with
// `split` each replacement starts a new word.
class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, MetaspacePrepend prepend, std::unique_ptr<Regex> split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(std::move(split)) {}

  absl::Status PreTokenize(Words* words) const override {
    const bool at_start = words->first_at_start;
    for (size_t i = 0; i < words->items.size(); ++i) {
      std::string& word = words->items[i];
      std::string replaced;
      for (char c : word) {
        if (c == ' ') {
          replaced += replacement_;
        } else {
          replaced += c;
        }
      }
      word = std::move(replaced);
      const bool eligible = prepend_ == MetaspacePrepend::kAlways ||
                            (prepend_ == MetaspacePrepend::kFirst && i == 0 && at_start);
      if (eligible && word.compare(0, replacement_.size(), replacement_) != 0) {
        word.insert(0, replacement_);
      }
    }
    if (split_ == nullptr) return absl::OkStatus();
    return SplitEach(
        words, [&](std::string& word, std::vector<std::string>* out, bool* first_at_zero) {
          return SplitWord(*split_, Behavior::kMergedWithNext, false, word, out, first_at_zero);
        });
  }

 private:
  std::string replacement_;
  MetaspacePrepend prepend_;
  std::unique_ptr<Regex> split_;  // the replacement as a pattern, when split is true
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  absl::Status PreTokenize(Words* words) const override {
    for (const auto& part : parts_) ACCEL_RETURN_IF_ERROR(part->PreTokenize(words));
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

absl::StatusOr<std::unique_ptr<PreTokenizer>> MakeByteLevel(bool add_prefix_space, bool use_regex) {
  std::unique_ptr<Regex> regex;
  if (use_regex) {
    ACCEL_ASSIGN_OR_RETURN(regex, Regex::Compile(kGpt2Pattern, "ByteLevel"));
  }
  return std::unique_ptr<PreTokenizer>(new ByteLevel(add_prefix_space, std::move(regex)));
}

}  // namespace

absl::StatusOr<MetaspaceOptions> MetaspaceFromJson(const Json& j, const JsonPath& at) {
  MetaspaceOptions options;
  ACCEL_ASSIGN_OR_RETURN(options.replacement, GetString(j, at, "replacement"));
  if (!IsOneCharacter(options.replacement)) {
    return JsonError(at.Key("replacement"), "must be one character");
  }
  ACCEL_ASSIGN_OR_RETURN(std::optional<std::string> scheme,
                         GetOptionalString(j, at, "prepend_scheme"));
  const std::string name = scheme.value_or("always");
  if (name == "always") {
    options.prepend = MetaspacePrepend::kAlways;
  } else if (name == "first") {
    options.prepend = MetaspacePrepend::kFirst;
  } else if (name == "never") {
    options.prepend = MetaspacePrepend::kNever;
  } else {
    return JsonError(at.Key("prepend_scheme"), "must be \"always\", \"first\" or \"never\"");
  }
  // The older add_prefix_space: false means prepend_scheme "never" (HF refuses any other).
  ACCEL_ASSIGN_OR_RETURN(bool add_prefix_space, GetBool(j, at, "add_prefix_space", true));
  if (!add_prefix_space && options.prepend != MetaspacePrepend::kNever) {
    return JsonError(at, "add_prefix_space false does not match prepend_scheme");
  }
  ACCEL_ASSIGN_OR_RETURN(options.split, GetBool(j, at, "split", true));
  return options;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> Gpt2PreTokenizer() {
  return MakeByteLevel(/*add_prefix_space=*/false, /*use_regex=*/true);
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizerFromJson(const Json& j,
                                                                   const JsonPath& at) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  ACCEL_ASSIGN_OR_RETURN(std::string type, GetString(j, at, "type"));
  if (type == "ByteLevel") {
    ACCEL_ASSIGN_OR_RETURN(bool add_prefix_space, GetBool(j, at, "add_prefix_space", true));
    ACCEL_ASSIGN_OR_RETURN(bool use_regex, GetBool(j, at, "use_regex", true));
    return MakeByteLevel(add_prefix_space, use_regex);
  }
  if (type == "Split") {
    ACCEL_ASSIGN_OR_RETURN(std::string pattern, GetPattern(j, at));
    ACCEL_ASSIGN_OR_RETURN(std::string behavior_name, GetString(j, at, "behavior"));
    ACCEL_ASSIGN_OR_RETURN(bool invert, GetBool(j, at, "invert", false));
    Behavior behavior;
    if (behavior_name == "Isolated") {
      behavior = Behavior::kIsolated;
    } else if (behavior_name == "Removed") {
      behavior = Behavior::kRemoved;
    } else {
      return Unsupported(at.Key("behavior"), absl::StrCat("\"", behavior_name, "\""));
    }
    ACCEL_ASSIGN_OR_RETURN(auto regex, Regex::Compile(pattern, at.Key("pattern").Name()));
    return std::unique_ptr<PreTokenizer>(new Split(std::move(regex), behavior, invert));
  }
  if (type == "Metaspace") {
    ACCEL_ASSIGN_OR_RETURN(MetaspaceOptions options, MetaspaceFromJson(j, at));
    std::unique_ptr<Regex> split;
    if (options.split) {
      ACCEL_ASSIGN_OR_RETURN(split, Regex::Compile(Regex::Escape(options.replacement), at.Name()));
    }
    return std::unique_ptr<PreTokenizer>(
        new Metaspace(std::move(options.replacement), options.prepend, std::move(split)));
  }
  if (type == "Sequence") {
    ACCEL_ASSIGN_OR_RETURN(auto parts,
                           GetParts<PreTokenizer>(j, at, "pretokenizers", PreTokenizerFromJson));
    return std::unique_ptr<PreTokenizer>(new Sequence(std::move(parts)));
  }
  return Unsupported(at, absl::StrCat("type \"", type, "\""));
}

}  // namespace accel::text
