// Decoders of tokenizer.json ("decoder"): ByteLevel, ByteFallback, Fuse, Strip, Replace,
// Metaspace and Sequence, with Hugging Face's semantics (decode_chain over the token strings, then
// joined). Bytes that do not form UTF-8 become U+FFFD: one per maximal ill-formed subpart for
// ByteLevel (Rust's from_utf8_lossy), one per byte for a run of <0xNN> tokens that is not UTF-8
// (ByteFallback). Any other type is refused by name when the file is loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/json_fields.h"

namespace accel::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the list of token strings (HF's decode_chain).
  virtual void DecodeChain(std::vector<std::string>* tokens) const = 0;
};

// The decoder a tokenizer.json "decoder" value describes; nullptr for null (HF then joins the
// tokens with spaces).
[[nodiscard]] absl::StatusOr<std::unique_ptr<Decoder>> DecoderFromJson(const Json& j,
                                                                       const JsonPath& at);
// GPT-2's: ByteLevel.
std::unique_ptr<Decoder> ByteLevelDecoder();

}  // namespace accel::text
