#include "engine/data/dataset_check.h"

#include "absl/strings/str_cat.h"
#include "engine/data/dataset_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::HasSubstr;

class DatasetCheckTest : public testing::DatasetFilesTest {
 protected:
  PrepareOptions Options(const std::string& source) {
    PrepareOptions o;
    o.sources = {{source}};
    o.tokenizer = root_;
    o.format = DatasetFormat::kJsonl;
    o.chat = testing::SmallRender;
    return o;
  }
};

TEST_F(DatasetCheckTest, GoodInputPasses) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n");
  EXPECT_TRUE(CheckDataset(env_, Options(src), 50257).ok());
}

TEST_F(DatasetCheckTest, AVocabularyLargerThanTheModelsIsRefusedNamingBoth) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n");
  absl::Status s = CheckDataset(env_, Options(src), 256);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), absl::StrCat("data.tokenizer: its vocabulary (268 ids, ", root_,
                                      ") does not fit the model's vocab_size (256)"));
}

TEST_F(DatasetCheckTest, TheFirstRecordsOfEachFileMustParse) {
  const std::string src = Write("a.jsonl", "{\"text\": \"a\"}\n{\"text\": [1]}\n");
  absl::Status s = CheckDataset(env_, Options(src), 0);
  EXPECT_EQ(s.message(), src + ":2: field \"text\" must be a string, not array");
  PrepareOptions skip = Options(src);
  skip.skip_invalid = true;
  EXPECT_TRUE(CheckDataset(env_, skip, 0).ok());  // one good record: preparation will skip it
  // Only the first records are read at submit: a bad record later is preparation's to find.
  EXPECT_TRUE(CheckDataset(env_, Options(src), 0, /*records_per_file=*/1).ok());
}

TEST_F(DatasetCheckTest, MissingFilesAreNotFound) {
  EXPECT_EQ(CheckDataset(env_, Options(JoinPath(root_, "none.jsonl")), 0).code(),
            absl::StatusCode::kNotFound);
  PrepareOptions o = Options(Write("a.jsonl", "{\"text\": \"a\"}\n"));
  o.tokenizer = JoinPath(root_, "no_tokenizer");
  EXPECT_THAT(CheckDataset(env_, o, 0).message(), HasSubstr("data.tokenizer"));
}

}  // namespace
}  // namespace accel::data
