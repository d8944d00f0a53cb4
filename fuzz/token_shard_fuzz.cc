// Fuzz target: training data files (engine/data/token_source.h): llm.c token shards (GPT-2
// uint16 and Llama 3 uint32), and any other file read as bytes; then batches cut from what was
// read (batch_loader.h).
// Properties: an error is DataLoss / InvalidArgument naming the file; a file starting with
// either shard magic is read as a shard or refused, never as text; the tokens read are exactly
// the file's, at the width its magic implies; every batch holds tokens of the source, targets
// one ahead of inputs.
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/batch_loader.h"
#include "engine/data/token_source.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"

namespace accel::fuzz {
namespace {

using data::TokenSource;
using data::TokenSourceKind;

constexpr char kPath[] = "/data/train.bin";

void CheckTokens(const TokenSource& src, const uint8_t* data, size_t size) {
  int32_t max_token = 0;
  if (src.kind() == TokenSourceKind::kTokenShard) {
    int32_t magic;
    std::memcpy(&magic, data, 4);
    const int width = magic == data::kTokenShard32Magic ? 4 : 2;
    FUZZ_CHECK(src.token_bytes() == width, "a shard's token width is not its magic's");
    const int64_t n = (static_cast<int64_t>(size) - data::kTokenShardHeaderBytes) / width;
    FUZZ_CHECK(src.size() == n && n >= 1, "shard token count");
    for (int64_t i = 0; i < n; ++i) {
      uint32_t t = 0;  // little-endian: the low `width` bytes
      std::memcpy(&t, data + data::kTokenShardHeaderBytes + width * i, width);
      FUZZ_CHECK(t <= INT32_MAX, "a shard token above INT32_MAX was accepted");
      FUZZ_CHECK(src.token(i) == static_cast<int32_t>(t),
                 "shard token " + std::to_string(i) + " differs");
      max_token = std::max<int32_t>(max_token, static_cast<int32_t>(t));
    }
    FUZZ_CHECK(src.vocab_hint() == int64_t{max_token} + 1, "vocab_hint of a shard");
  } else {
    FUZZ_CHECK(src.size() == static_cast<int64_t>(size) && size >= 1, "text token count");
    for (size_t i = 0; i < size; ++i) {
      FUZZ_CHECK(src.token(static_cast<int64_t>(i)) == data[i], "text token differs");
      max_token = std::max<int32_t>(max_token, data[i]);
    }
    FUZZ_CHECK(src.vocab_hint() == 256, "vocab_hint of text");
  }
  FUZZ_CHECK(src.max_token() == max_token, "max_token");
  FUZZ_CHECK(src.storage_bytes() == src.size() * src.token_bytes(), "storage_bytes");
}

// Batches of a few shapes (chosen from the input size so that the corpus covers several).
void CheckBatches(std::shared_ptr<const TokenSource> src, size_t size) {
  data::BatchLoaderOptions o;
  o.batch_size = 1 + static_cast<int64_t>(size % 3);
  o.seq_len = 1 + static_cast<int64_t>(size % 7);
  o.world = 1 + static_cast<int>(size % 2);
  o.rank = o.world - 1;
  if (size % 5 == 0) o.shuffle_seed = size;
  auto loader = data::BatchLoader::Create(src, o);
  if (!loader.ok()) {
    CheckError(loader.status(), {absl::StatusCode::kInvalidArgument}, "");
    FUZZ_CHECK(src->size() < o.batch_size * o.seq_len * o.world + 1,
               "loader refused a source that is large enough: " + loader.status().ToString());
    return;
  }
  const int64_t bt = o.batch_size * o.seq_len;
  std::vector<int32_t> in(static_cast<size_t>(bt)), tgt(static_cast<size_t>(bt));
  const int64_t w = (*loader)->windows_per_epoch();
  for (int64_t k : {int64_t{0}, int64_t{1}, w - 1, w, 3 * w + 1, int64_t{1} << 40}) {
    (*loader)->Fill(k, in.data(), tgt.data());
    const int64_t first = (*loader)->token_offset(k);
    FUZZ_CHECK(first >= 0 && first + bt + 1 <= src->size(), "a batch reads past the source");
    for (int64_t i = 0; i < bt; ++i) {
      FUZZ_CHECK(in[i] == src->token(first + i) && tgt[i] == src->token(first + i + 1),
                 "batch tokens are not the source's");
    }
  }
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  accel::testing::MemEnv env;
  PutFile(&env, kPath, AsText(data, size));
  auto src = TokenSource::Open(&env, kPath);
  int32_t magic = 0;
  if (size >= 4) std::memcpy(&magic, data, 4);
  if (!src.ok()) {
    CheckError(src.status(), {absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument},
               kPath);
    return 0;
  }
  const bool shard_magic =
      magic == accel::data::kTokenShardMagic || magic == accel::data::kTokenShard32Magic;
  FUZZ_CHECK(shard_magic == ((*src)->kind() == TokenSourceKind::kTokenShard),
             "shard magic and kind disagree");
  CheckTokens(**src, data, size);
  CheckBatches(std::shared_ptr<const TokenSource>(std::move(*src)), size);
  return 0;
}
