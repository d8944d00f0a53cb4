// docs/job.md's "## Keys" table is the settings table's (job/settings_doc.h).
#include "job/settings_doc.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/settings.h"

namespace accel::job {
namespace {

using ::testing::HasSubstr;

const std::string kDoc = std::string(ACCEL_SOURCE_DIR) + "/docs/job.md";

std::string ReadDoc() {
  std::ifstream in(kDoc);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The lines of a that b lacks ("- ") and of b that a lacks ("+ "), in order.
std::string LineDiff(const std::string& a, const std::string& b) {
  const std::vector<std::string> x = absl::StrSplit(a, '\n'), y = absl::StrSplit(b, '\n');
  std::string out;
  for (const std::string& l : x) {
    if (std::find(y.begin(), y.end(), l) == y.end()) out += "- " + l + "\n";
  }
  for (const std::string& l : y) {
    if (std::find(x.begin(), x.end(), l) == x.end()) out += "+ " + l + "\n";
  }
  return out;
}

TEST(SettingsDocTest, DocsKeysTableIsTheSettingsTable) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << kDoc;
  absl::StatusOr<std::string> want = ReplaceKeysBlock(doc);
  ASSERT_TRUE(want.ok()) << want.status();
  if (std::getenv("ACCEL_REGENERATE_DOCS") != nullptr) {
    std::ofstream(kDoc, std::ios::trunc) << *want;
    GTEST_SKIP() << "rewrote " << kDoc;
  }
  EXPECT_TRUE(doc == *want)
      << "docs/job.md's keys table differs from job/settings_table*.cc (- the file, + the "
         "table):\n"
      << LineDiff(doc, *want)
      << "Regenerate it: ACCEL_REGENERATE_DOCS=1 build/job/accel_job_test "
         "--gtest_filter=SettingsDocTest.*";
}

TEST(SettingsDocTest, RowsKeepTheirKeysDefaultsAndWords) {
  const std::string table = RenderKeysTable();
  EXPECT_THAT(table, HasSubstr("| `train.log_every` | 10 | a metrics event every N steps (and "
                               "for the first and last step) |\n"));
  EXPECT_THAT(table, HasSubstr("| `train.beta1`, `train.beta2` | 0.9, 0.999 | AdamW betas, in "
                               "[0, 1) |\n"));
  EXPECT_THAT(table, HasSubstr("| `model` | `{preset: gpt2-mini}` | "));
  EXPECT_THAT(table, HasSubstr("| `checkpoint.dir` | — | "));
  EXPECT_THAT(table, HasSubstr("| `train.lr` | 3.0e-4 | peak learning rate (> 0) |"));
}

TEST(SettingsDocTest, MissingMarkersAreNamed) {
  absl::StatusOr<std::string> r = ReplaceKeysBlock("# no table here\n");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(kKeysEnd));
}

}  // namespace
}  // namespace accel::job
