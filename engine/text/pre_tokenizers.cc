#include "engine/text/pre_tokenizers.h"

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

enum class Behavior { kIsolated, kRemoved };

// Cuts `word` at the matches of `regex`: matched and unmatched stretches become words of their
// own (Isolated) or the matches are dropped (Removed); `invert` swaps matched and unmatched.
absl::Status SplitWord(const Regex& regex, Behavior behavior, bool invert, const std::string& word,
                       std::vector<std::string>* out) {
  std::vector<std::pair<size_t, size_t>> matches;
  ACCEL_RETURN_IF_ERROR(regex.FindAll(word, &matches));
  auto emit = [&](size_t begin, size_t end, bool is_match) {
    if (begin == end) return;
    if (behavior == Behavior::kRemoved && is_match != invert) return;
    out->push_back(word.substr(begin, end - begin));
  };
  size_t last = 0;
  for (const auto& [begin, end] : matches) {
    emit(last, begin, false);
    emit(begin, end, true);
    last = end;
  }
  emit(last, word.size(), false);
  return absl::OkStatus();
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::unique_ptr<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  absl::Status PreTokenize(std::vector<std::string>* words) const override {
    std::vector<std::string> split;
    split.reserve(words->size());
    for (std::string& word : *words) {
      if (add_prefix_space_ && (word.empty() || word[0] != ' ')) word.insert(0, " ");
      if (regex_ != nullptr) {
        ACCEL_RETURN_IF_ERROR(SplitWord(*regex_, Behavior::kIsolated, false, word, &split));
      } else if (!word.empty()) {
        split.push_back(std::move(word));
      }
    }
    // Each byte becomes the printable character that stands for it.
    const auto& alphabet = ByteLevelAlphabet();
    words->clear();
    for (const std::string& word : split) {
      std::string mapped;
      mapped.reserve(word.size() * 2);
      for (char c : word) mapped.append(alphabet[static_cast<unsigned char>(c)]);
      words->push_back(std::move(mapped));
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

  absl::Status PreTokenize(std::vector<std::string>* words) const override {
    std::vector<std::string> out;
    out.reserve(words->size());
    for (const std::string& word : *words) {
      ACCEL_RETURN_IF_ERROR(SplitWord(*regex_, behavior_, invert_, word, &out));
    }
    *words = std::move(out);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  absl::Status PreTokenize(std::vector<std::string>* words) const override {
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
  if (type == "Sequence") {
    ACCEL_ASSIGN_OR_RETURN(auto parts,
                           GetParts<PreTokenizer>(j, at, "pretokenizers", PreTokenizerFromJson));
    return std::unique_ptr<PreTokenizer>(new Sequence(std::move(parts)));
  }
  return Unsupported(at, absl::StrCat("type \"", type, "\""));
}

}  // namespace accel::text
