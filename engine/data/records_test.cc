#include "engine/data/records.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::data {
namespace {

using ::testing::ElementsAre;
using ::testing::FieldsAre;

TEST(RecordsTest, FormatNamesRoundTripAndUnknownIsRefusedByName) {
  for (auto name : {"text", "jsonl", "prompt_completion", "messages", "tokens"}) {
    auto f = ParseDatasetFormat(name);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ(DatasetFormatName(*f), name);
  }
  auto bad = ParseDatasetFormat("csv");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("data.format: unknown format \"csv\""));
  EXPECT_TRUE(FormatHasMask(DatasetFormat::kMessages));
  EXPECT_FALSE(FormatHasMask(DatasetFormat::kJsonl));
}

TEST(RecordsTest, TheFormatOfAFileIsDetectedFromItsMagicThenItsName) {
  const std::string shard("\x88\xd8\x34\x01", 4);  // 20240520 little-endian
  const std::string shard32("\xa1\xd9\x34\x01", 4);  // 20240801
  EXPECT_EQ(DetectDatasetFormat("a.jsonl", shard), DatasetFormat::kTokens);
  EXPECT_EQ(DetectDatasetFormat("a.bin", shard32), DatasetFormat::kTokens);
  EXPECT_EQ(DetectDatasetFormat("a.jsonl", "{\"t"), DatasetFormat::kJsonl);
  EXPECT_EQ(DetectDatasetFormat("dir/a.json", ""), DatasetFormat::kJsonl);
  EXPECT_EQ(DetectDatasetFormat("a.txt", "abcd"), DatasetFormat::kText);
}

TEST(RecordsTest, TextDocumentsAreSeparatedByBlankLines) {
  const std::string text = "one\ntwo\n\n \t\r\n\nthree\r\n\nfour";
  EXPECT_THAT(SplitRecords(DatasetFormat::kText, text),
              ElementsAre(FieldsAre(1, "one\ntwo"), FieldsAre(6, "three"), FieldsAre(8, "four")));
  EXPECT_TRUE(SplitRecords(DatasetFormat::kText, "\n\n  \n").empty());
}

TEST(RecordsTest, JsonLinesAreRecordsAndBlankLinesAreSkipped) {
  const std::string jsonl = "{\"a\":1}\r\n\n{\"b\":2}\n   \n{\"c\":3}";
  EXPECT_THAT(SplitRecords(DatasetFormat::kJsonl, jsonl),
              ElementsAre(FieldsAre(1, "{\"a\":1}"), FieldsAre(3, "{\"b\":2}"),
                          FieldsAre(5, "{\"c\":3}")));
  EXPECT_TRUE(SplitRecords(DatasetFormat::kTokens, jsonl).empty());
}

}  // namespace
}  // namespace accel::data
