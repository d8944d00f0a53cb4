#include "engine/text/bpe.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/base/status_macros.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

constexpr size_t kMaxCachedWordBytes = 256;  // HF's MAX_LENGTH

struct Symbol {
  int32_t id;
  int prev;
  int next;
  bool removed;
};

// A queued merge; the heap pops the lowest rank, then the leftmost position (HF's Merge::cmp).
struct QueuedMerge {
  size_t pos;
  uint32_t rank;
  int32_t new_id;
  bool operator<(const QueuedMerge& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(
    StringMap<int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
    BpeOptions options, std::string_view origin) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  for (const auto& [token, id] : vocab) {
    if (id < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(origin), ": token \"", token, "\" has negative id ", id));
    model->vocab_r_[id] = token;
    model->max_id_ = std::max(model->max_id_, id);
  }
  const size_t prefix_len =
      options.continuing_subword_prefix ? options.continuing_subword_prefix->size() : 0;
  auto lookup = [&](const std::string& token, size_t rank) -> absl::StatusOr<int32_t> {
    const auto it = vocab.find(token);
    if (it == vocab.end()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": merge ", rank + 1,
                                                     " uses token \"", token,
                                                     "\", which is not in the vocab"));
    }
    return it->second;
  };
  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    ACCEL_ASSIGN_OR_RETURN(int32_t a_id, lookup(a, rank));
    ACCEL_ASSIGN_OR_RETURN(int32_t b_id, lookup(b, rank));
    if (b.size() < prefix_len) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(origin), ": merge ", rank + 1, " \"", b,
                       "\" is shorter than continuing_subword_prefix"));
    }
    ACCEL_ASSIGN_OR_RETURN(int32_t new_id, lookup(a + b.substr(prefix_len), rank));
    // A repeated pair keeps its last rank, as HF's collect() into a map does.
    model->merges_[PairKey(a_id, b_id)] = Merge{static_cast<uint32_t>(rank), new_id};
  }
  if (options.unk_token) {
    const auto it = vocab.find(*options.unk_token);
    if (it == vocab.end()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": unk_token \"",
                                                     *options.unk_token, "\" is not in the vocab"));
    }
    model->unk_id_ = it->second;
  }
  if (options.byte_fallback) {
    model->byte_ids_.resize(256);
    for (int b = 0; b < 256; ++b) {
      const auto it = vocab.find(absl::StrFormat("<0x%02X>", b));
      if (it != vocab.end()) model->byte_ids_[b] = it->second;
    }
  }
  model->vocab_ = std::move(vocab);
  model->options_ = std::move(options);
  return model;
}

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::FromJson(const Json& j, const JsonPath& at) {
  if (!j.is_object()) return JsonError(at, "must be an object");
  // HF reads a model without "type" by trying each model kind; BPE is the one with merges.
  if (!IsNullOrAbsent(j, "type") || !j.contains("merges")) {
    ACCEL_ASSIGN_OR_RETURN(std::string type, GetString(j, at, "type"));
    if (type != "BPE") return Unsupported(at, absl::StrCat("type \"", type, "\""));
  }
  if (!IsNullOrAbsent(j, "dropout")) {
    const Json& d = j["dropout"];
    if (!d.is_number() || d.get<double>() != 0.0) {
      return Unsupported(at.Key("dropout"), absl::StrCat("value ", d.dump()));
    }
  }
  BpeOptions options;
  ACCEL_ASSIGN_OR_RETURN(options.unk_token, GetOptionalString(j, at, "unk_token"));
  ACCEL_ASSIGN_OR_RETURN(options.fuse_unk, GetBool(j, at, "fuse_unk", false));
  ACCEL_ASSIGN_OR_RETURN(options.byte_fallback, GetBool(j, at, "byte_fallback", false));
  ACCEL_ASSIGN_OR_RETURN(options.ignore_merges, GetBool(j, at, "ignore_merges", false));
  ACCEL_ASSIGN_OR_RETURN(options.continuing_subword_prefix,
                         GetOptionalString(j, at, "continuing_subword_prefix"));
  ACCEL_ASSIGN_OR_RETURN(options.end_of_word_suffix,
                         GetOptionalString(j, at, "end_of_word_suffix"));

  ACCEL_ASSIGN_OR_RETURN(const Json* vocab_json, GetObject(j, at, "vocab"));
  StringMap<int32_t> vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id] : vocab_json->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return JsonError(at.Key("vocab"),
                       absl::StrCat("entry \"", token, "\" must have an id in [0, 2^31)"));
    }
    vocab[token] = static_cast<int32_t>(id.get<int64_t>());
  }
  ACCEL_ASSIGN_OR_RETURN(const Json* merges_json, GetArray(j, at, "merges"));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json->size());
  for (size_t i = 0; i < merges_json->size(); ++i) {
    const Json& m = (*merges_json)[i];
    if (m.is_string()) {
      // HF's legacy form: "a b", split at the one space.
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return JsonError(at.Key("merges").Index(i), "must be \"a b\" (two tokens, one space)");
      }
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return JsonError(at.Key("merges").Index(i), "must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  return Create(std::move(vocab), merges, std::move(options), at.Name());
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  const auto it = vocab_r_.find(id);
  return it == vocab_r_.end() ? nullptr : &it->second;
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() < kMaxCachedWordBytes;
  CacheShard& shard = ShardFor(word);
  if (cacheable) {
    absl::MutexLock lock(&shard.mu);
    if (const auto it = shard.words.find(word); it != shard.words.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  MergeWord(word, &word_ids);
  ids->insert(ids->end(), word_ids.begin(), word_ids.end());
  if (cacheable) {
    absl::MutexLock lock(&shard.mu);
    if (shard.words.size() >= kCacheWords / kCacheShards) shard.words.clear();
    shard.words.emplace(word, std::move(word_ids));
  }
}

// HF's BPE::merge_word: one symbol per character (with prefix / suffix), unknown characters as
// <0xNN> bytes or unk (fused when fuse_unk), then every merge.
void BpeModel::MergeWord(std::string_view word, std::vector<int32_t>* ids) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  std::optional<int32_t> pending_unk;
  std::string piece;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::min(CharLength(static_cast<unsigned char>(word[i])), word.size() - i);
    piece.clear();
    if (i > 0 && options_.continuing_subword_prefix) piece += *options_.continuing_subword_prefix;
    piece.append(word.substr(i, n));
    if (i + n == word.size() && options_.end_of_word_suffix) piece += *options_.end_of_word_suffix;
    i += n;
    if (const auto it = vocab_.find(piece); it != vocab_.end()) {
      if (pending_unk) symbols.push_back(*pending_unk), pending_unk.reset();
      symbols.push_back(it->second);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<unsigned char>(c)].has_value();
      if (all) {
        for (char c : piece) symbols.push_back(*byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk && !options_.fuse_unk) symbols.push_back(*pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk) symbols.push_back(*pending_unk);
  MergeAll(&symbols);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
}

// HF's Word::merge_all, step for step: the same queue order and the same staleness test, so
// words whose merges compete give the same ids.
void BpeModel::MergeAll(std::vector<int32_t>* ids) const {
  const size_t n = ids->size();
  if (n < 2) return;
  std::vector<Symbol> symbols(n);
  for (size_t i = 0; i < n; ++i) {
    symbols[i] =
        Symbol{(*ids)[i], static_cast<int>(i) - 1, i + 1 < n ? static_cast<int>(i + 1) : -1, false};
  }
  std::priority_queue<QueuedMerge> queue;
  auto find = [&](int32_t a, int32_t b) -> const Merge* {
    const auto it = merges_.find(PairKey(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < n; ++i) {
    if (const Merge* m = find(symbols[i].id, symbols[i + 1].id)) {
      queue.push({i, m->rank, m->new_id});
    }
  }
  while (!queue.empty()) {
    const QueuedMerge top = queue.top();
    queue.pop();
    Symbol& cur = symbols[top.pos];
    if (cur.removed || cur.next == -1) continue;
    const int next_pos = cur.next;
    const Symbol right = symbols[next_pos];
    const Merge* target = find(cur.id, right.id);
    if (target == nullptr || target->new_id != top.new_id) continue;  // stale entry
    cur.id = top.new_id;
    cur.next = right.next;
    symbols[next_pos].removed = true;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int>(top.pos);
    if (cur.prev >= 0) {
      if (const Merge* m = find(symbols[cur.prev].id, cur.id)) {
        queue.push({static_cast<size_t>(cur.prev), m->rank, m->new_id});
      }
    }
    if (cur.next >= 0) {
      if (const Merge* m = find(cur.id, symbols[cur.next].id)) {
        queue.push({top.pos, m->rank, m->new_id});
      }
    }
  }
  ids->clear();
  for (const Symbol& s : symbols) {
    if (!s.removed) ids->push_back(s.id);
  }
}

}  // namespace accel::text
