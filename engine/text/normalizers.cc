#include "engine/text/normalizers.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/regex.h"

namespace accel::text {
namespace {

bool IsAscii(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

class Nfc : public Normalizer {
 public:
  absl::Status Normalize(std::string* text) const override { return NormalizeNfc(text); }
};

// HF Prepend: adds the string in front of every non-empty piece.
class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::Status Normalize(std::string* text) const override {
    if (!text->empty()) text->insert(0, prefix_);
    return absl::OkStatus();
  }

 private:
  std::string prefix_;
};

// HF Replace: every non-overlapping match, left to right, becomes `content`.
class Replace : public Normalizer {
 public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::Status Normalize(std::string* text) const override {
    return pattern_->ReplaceAll(content_, text);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  absl::Status Normalize(std::string* text) const override {
    for (const auto& part : parts_) ACCEL_RETURN_IF_ERROR(part->Normalize(text));
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

absl::Status NormalizeNfc(std::string* text) {
  if (IsAscii(*text)) return absl::OkStatus();
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&err);
  std::vector<UChar> utf16(text->size() + 1);
  int32_t utf16_len = 0;
  if (U_SUCCESS(err)) {
    u_strFromUTF8(utf16.data(), static_cast<int32_t>(utf16.size()), &utf16_len, text->data(),
                  static_cast<int32_t>(text->size()), &err);
  }
  if (U_SUCCESS(err) && unorm2_isNormalized(nfc, utf16.data(), utf16_len, &err) && U_SUCCESS(err)) {
    return absl::OkStatus();
  }
  // NFC can grow a string (compositions excluded from recomposition decompose); 3x is ICU's
  // documented worst case.
  std::vector<UChar> normalized(static_cast<size_t>(utf16_len) * 3 + 1);
  int32_t normalized_len = 0;
  if (U_SUCCESS(err)) {
    normalized_len = unorm2_normalize(nfc, utf16.data(), utf16_len, normalized.data(),
                                      static_cast<int32_t>(normalized.size()), &err);
  }
  std::string out(static_cast<size_t>(normalized_len) * 3 + 1, '\0');
  int32_t out_len = 0;
  if (U_SUCCESS(err)) {
    u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_len, normalized.data(),
                normalized_len, &err);
  }
  if (U_FAILURE(err)) {
    return absl::InternalError(absl::StrCat("NFC normalization of a ", text->size(),
                                            "-byte text failed: ", u_errorName(err)));
  }
  out.resize(out_len);
  *text = std::move(out);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Normalizer>> NormalizerFromJson(const Json& j, const JsonPath& at) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  ACCEL_ASSIGN_OR_RETURN(std::string type, GetString(j, at, "type"));
  if (type == "NFC") return std::unique_ptr<Normalizer>(new Nfc());
  if (type == "Prepend") {
    ACCEL_ASSIGN_OR_RETURN(std::string prefix, GetString(j, at, "prepend"));
    return std::unique_ptr<Normalizer>(new Prepend(std::move(prefix)));
  }
  if (type == "Replace") {
    ACCEL_ASSIGN_OR_RETURN(std::string pattern, GetPattern(j, at));
    ACCEL_ASSIGN_OR_RETURN(std::string content, GetString(j, at, "content"));
    ACCEL_ASSIGN_OR_RETURN(auto regex, Regex::Compile(pattern, at.Key("pattern").Name()));
    return std::unique_ptr<Normalizer>(new Replace(std::move(regex), std::move(content)));
  }
  if (type == "Sequence") {
    ACCEL_ASSIGN_OR_RETURN(auto parts,
                           GetParts<Normalizer>(j, at, "normalizers", NormalizerFromJson));
    return std::unique_ptr<Normalizer>(new Sequence(std::move(parts)));
  }
  return Unsupported(at, absl::StrCat("type \"", type, "\""));
}

}  // namespace accel::text
