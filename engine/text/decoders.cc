#include "engine/text/decoders.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/text/pre_tokenizers.h"
#include "engine/text/regex.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

// Each token's characters back to the bytes they stand for; a token with a character outside
// the byte-level alphabet (an added token such as "<|im_start|>" is inside it) keeps its own
// bytes. The whole is one string, decoded lossily.
class ByteLevel : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::string bytes;
    std::string token_bytes;
    for (const std::string& token : *tokens) {
      token_bytes.clear();
      bool mapped = true;
      for (size_t i = 0; i < token.size() && mapped;) {
        const int b = ByteLevelByte(DecodeChar(token, i));
        if (b < 0) mapped = false;
        token_bytes.push_back(static_cast<char>(b));
        i += CharLength(static_cast<unsigned char>(token[i]));
      }
      bytes.append(mapped ? token_bytes : token);
    }
    tokens->assign(1, ToValidUtf8(bytes));
  }
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" → the byte; -1 for any other token. Like Rust's u8::from_str_radix, a leading '+'
// is accepted ("<0x+A>").
int FallbackByte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  if (t[3] == '+') return HexDigit(t[4]);
  const int hi = HexDigit(t[3]), lo = HexDigit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

class ByteFallback : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (IsValidUtf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back(kReplacementChar);
      }
      pending.clear();
    };
    for (std::string& token : *tokens) {
      const int b = FallbackByte(token);
      if (b >= 0) {
        pending.push_back(static_cast<char>(b));
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    *tokens = std::move(out);
  }
};

class Fuse : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::string all;
    for (const std::string& t : *tokens) all += t;
    tokens->assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing characters equal to `content` from each
// token.
class Strip : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (std::string& t : *tokens) {
      size_t begin = 0, end = t.size();
      for (size_t k = 0;
           k < start_ && t.compare(begin, content_.size(), content_) == 0 && begin < end; ++k) {
        begin += content_.size();
      }
      for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;  // one character
  size_t start_, stop_;
};

class Replace : public Decoder {
 public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    // Tokens are short and the patterns literal; a PCRE2 failure leaves the token as it is.
    for (std::string& t : *tokens) (void)pattern_->ReplaceAll(content_, &t);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// Metaspace: the replacement character becomes a space, except in the first token, where it
// is dropped (unless prepend_scheme is "never").
class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool drop_in_first)
      : replacement_(std::move(replacement)), drop_in_first_(drop_in_first) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      std::string out;
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && drop_in_first_)) out += ' ';
          k += replacement_.size();
        } else {
          out += t[k++];
        }
      }
      t = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (const auto& part : parts_) part->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> ByteLevelDecoder() { return std::make_unique<ByteLevel>(); }

absl::StatusOr<std::unique_ptr<Decoder>> DecoderFromJson(const Json& j, const JsonPath& at) {
  if (j.is_null()) return std::unique_ptr<Decoder>();
  ACCEL_ASSIGN_OR_RETURN(std::string type, GetString(j, at, "type"));
  if (type == "ByteLevel") return ByteLevelDecoder();
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(new ByteFallback());
  if (type == "Fuse") return std::unique_ptr<Decoder>(new Fuse());
  if (type == "Strip") {
    ACCEL_ASSIGN_OR_RETURN(std::string content, GetString(j, at, "content"));
    ACCEL_ASSIGN_OR_RETURN(int64_t start, GetInt(j, at, "start"));
    ACCEL_ASSIGN_OR_RETURN(int64_t stop, GetInt(j, at, "stop"));
    if (!IsOneCharacter(content)) {
      return JsonError(at.Key("content"), "must be one character");
    }
    if (start < 0 || stop < 0) return JsonError(at, "start and stop must be >= 0");
    return std::unique_ptr<Decoder>(new Strip(std::move(content), start, stop));
  }
  if (type == "Replace") {
    ACCEL_ASSIGN_OR_RETURN(std::string pattern, GetPattern(j, at));
    ACCEL_ASSIGN_OR_RETURN(std::string content, GetString(j, at, "content"));
    ACCEL_ASSIGN_OR_RETURN(auto regex, Regex::Compile(pattern, at.Key("pattern").Name()));
    return std::unique_ptr<Decoder>(new Replace(std::move(regex), std::move(content)));
  }
  if (type == "Metaspace") {
    ACCEL_ASSIGN_OR_RETURN(MetaspaceOptions options, MetaspaceFromJson(j, at));
    return std::unique_ptr<Decoder>(
        new Metaspace(std::move(options.replacement), options.prepend != MetaspacePrepend::kNever));
  }
  if (type == "Sequence") {
    ACCEL_ASSIGN_OR_RETURN(auto parts, GetParts<Decoder>(j, at, "decoders", DecoderFromJson));
    return std::unique_ptr<Decoder>(new Sequence(std::move(parts)));
  }
  return Unsupported(at, absl::StrCat("type \"", type, "\""));
}

}  // namespace accel::text
