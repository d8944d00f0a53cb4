// Text front ends (YAML/JSON → Document), value parsing and "did you mean".
#include "engine/config/did_you_mean.h"
#include "engine/config/document.h"
#include "engine/config/values.h"
#include "gtest/gtest.h"

namespace accel::config {
namespace {

using nlohmann::json;

TEST(DidYouMeanTest, EditDistanceCountsSwapsOnceAndIgnoresCaseAndDashes) {
  EXPECT_EQ(EditDistance("stage", "stage"), 0u);
  EXPECT_EQ(EditDistance("stgae", "stage"), 1u);  // adjacent swap
  EXPECT_EQ(EditDistance("Zero-Stage", "zero_stage"), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(DidYouMeanTest, SuggestsOnlyNearMisses) {
  const std::vector<std::string_view> keys = {"zero_stage", "zero3_init_flag",
                                              "offload_param_device"};
  EXPECT_EQ(ClosestName("zero_stag", keys), "zero_stage");
  EXPECT_EQ(ClosestName("offload_params_device", keys), "offload_param_device");
  EXPECT_EQ(ClosestName("completely_different", keys), "");
  EXPECT_EQ(ClosestName("ab", {"cd"}), "");  // 2 edits on 2 letters is not a typo
  EXPECT_EQ(DidYouMean("zero3_init_flg", keys), " (did you mean \"zero3_init_flag\"?)");
  EXPECT_EQ(DidYouMean("xyz", keys), "");
}

TEST(YamlDocumentTest, TypesScalarsLikePyYaml) {
  auto doc = ParseYamlDocument(
      "a: yes\nb: 'no'\nc: no\nd: 8\ne: 1e8\nf: 1.0e+8\ng: null\nh: ~\ni: '8'\nj: -3\n"
      "k: 0.5\nl: [x, 2]\nm: {n: true}\no: Off\n",
      "t.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const json& r = doc->root;
  EXPECT_EQ(r["a"], true);
  EXPECT_EQ(r["b"], "no");
  EXPECT_EQ(r["c"], false);
  EXPECT_EQ(r["d"], 8);
  EXPECT_EQ(r["e"], "1e8");  // YAML 1.1 needs a dot for a float
  EXPECT_EQ(r["f"], 1e8);
  EXPECT_TRUE(r["g"].is_null());
  EXPECT_TRUE(r["h"].is_null());
  EXPECT_EQ(r["i"], "8");
  EXPECT_EQ(r["j"], -3);
  EXPECT_EQ(r["k"], 0.5);
  EXPECT_EQ(r["l"], json::array({"x", 2}));
  EXPECT_EQ(r["m"]["n"], true);
  EXPECT_EQ(r["o"], false);
}

TEST(YamlDocumentTest, RecordsKeyPositions) {
  auto doc = ParseYamlDocument("top: 1\nfsdp_config:\n  fsdp_version: 2\n", "t.yaml");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->MarkOf({"fsdp_config", "fsdp_version"}).line, 3);
  EXPECT_EQ(doc->MarkOf({"fsdp_config", "fsdp_version"}).column, 3);
  EXPECT_EQ(doc->MarkOf({"fsdp_config", "missing"}).line, 2);  // nearest ancestor
}

TEST(YamlDocumentTest, ErrorsNameLineAndColumn) {
  auto doc = ParseYamlDocument("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message().rfind("bad.yaml:", 0), 0u) << doc.status();
  EXPECT_NE(doc.status().message().find("malformed YAML"), std::string::npos);

}

// A repeated key does not fail the parse: it is recorded (the first value kept) for the reader to
// report with the file's other problems.
::testing::AssertionResult Duplicates(const Document& doc, std::string_view want) {
  Diagnostics diag;
  diag.DuplicateKeys(doc);
  std::string got;
  for (const std::string& e : diag.errors()) got += e + "\n";
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got:\n" << got << "want:\n" << want;
}

TEST(YamlDocumentTest, RepeatedKeysAreRecordedWithBothLines) {
  auto doc = ParseYamlDocument("a: 1\na: 2\nb:\n  c: 1\n  d: 2\n  c: 3\n", "dup.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->root["a"], 1);
  EXPECT_EQ(doc->root["b"]["c"], 1);
  EXPECT_TRUE(Duplicates(*doc, "dup.yaml:2:1: a: key given twice (also at line 1)\n"
                               "dup.yaml:6:3: b.c: key given twice (also at line 4)\n"));
}

TEST(JsonDocumentTest, RepeatedKeysAreRecordedWithPathAndLines) {
  // Nested objects, objects inside arrays, an escaped spelling of the same key, and keys that
  // only look alike (in strings, in other objects) are not repeats.
  const char* text = R"({
  "zero_optimization": {"stage": 2,
    "offload_param": {"device": "cpu"},
    "stage": 3},
  "list": [{"x": 1}, {"x": 2, "y": "\"x\": 3", "x": 4}],
  "a\u0062": 1, "ab": 2,
  "device": "cpu"
})";
  auto doc = ParseJsonDocument(text, "ds.json");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_TRUE(Duplicates(*doc, "ds.json:4:5: zero_optimization.stage: key given twice (also at "
                               "line 2)\n"
                               "ds.json:5:48: list.1.x: key given twice (also at line 5)\n"
                               "ds.json:6:17: ab: key given twice (also at line 6)\n"));
  doc = ParseJsonDocument(R"({"a": {"b": 1}, "c": [1, {"b": 2}], "s": "{\"a\": 1}"})", "ok.json");
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(doc->duplicate_keys.empty());
  doc = ParseJsonDocument(R"("just a string")", "s.json");
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(doc->duplicate_keys.empty());
}

TEST(YamlDocumentTest, LimitsAliasBombsAndNesting) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char name = 'b'; name <= 'h'; ++name) {
    bomb += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = name;
  }
  auto doc = ParseYamlDocument(bomb, "bomb.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("YAML nodes"), std::string::npos) << doc.status();

  doc = ParseYamlDocument(std::string(1000, '[') + std::string(1000, ']'), "deep.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("nesting deeper"), std::string::npos);
}

TEST(JsonDocumentTest, ErrorsNameLineAndColumn) {
  auto doc = ParseJsonDocument("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message().rfind("x.json:3:8: malformed JSON: ", 0), 0u)
      << doc.status();
  doc = ParseJsonDocument("", "empty.json");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("empty.json:1:1"), std::string::npos) << doc.status();
}

// Found by fuzz/deepspeed_json_fuzz.cc: nlohmann::json stops at a NUL byte, so "1\0..." parsed
// as 1, and the duplicate-key scan then read past the end of an unterminated string after it.
TEST(JsonDocumentTest, ANulByteIsMalformedNotTheEndOfTheText) {
  for (std::string_view text : {std::string_view("922337\0{\"t>r", 12),
                                std::string_view("{\"a\": 1}\n\0{\"b\": 2}", 18)}) {
    auto doc = ParseJsonDocument(text, "nul.json");
    ASSERT_FALSE(doc.ok()) << testing::PrintToString(std::string(text));
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(doc.status().message().find("nul.json:"), std::string::npos) << doc.status();
    EXPECT_NE(doc.status().message().find("malformed JSON: a NUL byte"), std::string::npos);
  }
}

TEST(JsonDocumentTest, MarkAtOffset) {
  EXPECT_EQ(MarkAtOffset("ab\ncd", 0).line, 1);
  EXPECT_EQ(MarkAtOffset("ab\ncd", 4).line, 2);
  EXPECT_EQ(MarkAtOffset("ab\ncd", 4).column, 2);
}

TEST(ValuesTest, StrToBoolAcceptsAccelerateSpellings) {
  for (const char* t : {"y", "YES", "t", "True", "on", "1"}) EXPECT_EQ(StrToBool(t), true) << t;
  for (const char* f : {"n", "No", "f", "FALSE", "off", "0"}) EXPECT_EQ(StrToBool(f), false) << f;
  EXPECT_EQ(StrToBool("maybe"), std::nullopt);
  EXPECT_EQ(StrToBool(""), std::nullopt);
}

TEST(ValuesTest, IntegersAcceptIntegralFloatsAndNumericStrings) {
  int64_t v = 0;
  std::string error;
  EXPECT_TRUE(ParseIntValue(json(1e9), &v, &error));
  EXPECT_EQ(v, 1000000000);
  EXPECT_TRUE(ParseIntValue(json("1e8"), &v, &error));
  EXPECT_EQ(v, 100000000);
  EXPECT_TRUE(ParseIntValue(json("42"), &v, &error));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(ParseIntValue(json(1.5), &v, &error));
  EXPECT_EQ(error, "1.5 is not an integer");
  EXPECT_FALSE(ParseIntValue(json("x"), &v, &error));
  EXPECT_FALSE(ParseIntValue(json(true), &v, &error));
  EXPECT_FALSE(ParseIntValue(json(1e30), &v, &error));
}

TEST(ValuesTest, ReaderEnumsTakeNamesAndCodes) {
  Document doc;
  doc.source = "s";
  doc.root = json{{"a", "full_shard"}, {"b", 2}, {"c", "SHARD_GRAD_OPP"}, {"d", "auto"}};
  Diagnostics diag;
  Reader r(doc, &diag);
  EXPECT_EQ(r.Enum({"a"}, FsdpStrategyNames()), Strategy::kFullShard);
  EXPECT_EQ(r.Enum({"b"}, FsdpStrategyNames()), Strategy::kShardGradOp);
  EXPECT_EQ(r.Enum({"c"}, FsdpStrategyNames()), std::nullopt);
  EXPECT_EQ(r.Enum({"d"}, FsdpStrategyNames()), std::nullopt);
  EXPECT_EQ(r.Enum({"missing"}, FsdpStrategyNames()), std::nullopt);
  ASSERT_EQ(diag.errors().size(), 2u);
  EXPECT_NE(diag.errors()[0].find("(did you mean \"SHARD_GRAD_OP\"?)"), std::string::npos);
  EXPECT_EQ(diag.errors()[0].find("\"1\""), std::string::npos);  // codes are not listed
  EXPECT_NE(diag.errors()[1].find("s: d: \"auto\" cannot be filled here"), std::string::npos);
}

TEST(ValuesTest, CheckKeysReportsEveryUnknownKey) {
  Document doc;
  doc.source = "s";
  doc.root = json{{"sec", {{"good", 1}, {"goood", 2}, {"zzz", 3}}}};
  Diagnostics diag;
  Reader r(doc, &diag);
  r.CheckKeys({"sec"}, {"good"});
  ASSERT_EQ(diag.errors().size(), 2u);
  EXPECT_EQ(diag.errors()[0], "s: sec.goood: unknown key (did you mean \"good\"?)");
  EXPECT_EQ(diag.errors()[1], "s: sec.zzz: unknown key");
  EXPECT_FALSE(diag.ToStatus().ok());
}

}  // namespace
}  // namespace accel::config
