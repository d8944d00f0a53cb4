// The job settings table: every key of the job file (docs/job.md) declared once, with its type,
// default, range, help, standalone flag and JobSpec field. The table drives
//   - the job-file parser (settings_yaml.h: one YAML walker, one did-you-mean),
//   - the defaults a spec gets (DefaultJobSpec, job_file.h),
//   - the range and name checks at submit (CheckSettings, called by ValidateJobSpec),
//   - the `accel-worker --standalone` flags that are job keys (settings_flags.h),
//   - JobOptionsFromSpec (job_options.h: spec -> TrainOptions for the job's own settings),
//   - the "## Keys" table of docs/job.md (settings_doc.h; a test compares the file with it).
// Adding a key: one row in settings.cc (and, when it is new to the wire, its JobSpec field in
// proto/accel/v1/job.proto). docs/job.md "Adding a job setting".
//
// The proto field is named by its path and reached through protobuf reflection (FieldDescriptor)
// rather than a getter/setter pair per row: a row stays one line of data, the walker, defaults,
// checks and flags set and read every field type with one piece of code each, and a test can
// prove that every row names a real field of the right type (settings_test.cc).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "accel/v1/job.pb.h"
#include "engine/base/echo.h"
#include "engine/config/train_options.h"

namespace accel::job {

enum class SettingType {
  kInt,       // an integer; an int32 field also refuses what int32 cannot hold
  kReal,      // a finite number
  kBool,      // true or false
  kText,      // any text
  kPath,      // text; relative to the job file's folder, stored absolute
  kEnum,      // one of `names` (checked at submit)
  kSettings,  // a mapping of the keys in `names` to text (a launcher's settings)
  kWeightedPaths,  // a mapping of paths (relative to the job file) to positive weights, in order
  kSection,   // a section given as a scalar: short for {short_key: value} (`model: gpt2-tiny`)
};

// Maps a setting onto the engine's options (JobOptionsFromSpec, and a given standalone flag).
using ApplyFn = void (*)(const accel::v1::JobSpec& spec, config::TrainOptions& options);
// The same for a value that must be parsed; InvalidArgument naming the key when it does not map.
using ApplyCheckedFn = absl::Status (*)(const accel::v1::JobSpec& spec,
                                        config::TrainOptions& options);

inline constexpr double kNoBound = std::numeric_limits<double>::infinity();

struct Setting {
  absl::string_view key;  // the job-file path, "train.log_every"
  SettingType type;
  absl::string_view help;           // the docs table's "meaning" cell
  absl::string_view default_value;  // as the job file writes it; "" = the proto's (zero, unset)
  absl::string_view field = {};     // JobSpec field path; "" = the key
  // Range, checked at submit (an optional field only when set). Integers: "must be an integer
  // >= MIN, got V" / "must be at most MAX<max_note>, got V"; reals use range_error.
  double min = -kNoBound;
  double max = kNoBound;
  bool min_exclusive = false;          // reals: > min rather than >= min
  bool max_exclusive = false;          // reals: < max rather than <= max
  absl::string_view max_note = {};      // integers: after MAX in the message (" (2^20)")
  absl::string_view range_error = {};   // reals: the message; "{got}" becomes the value
  std::vector<absl::string_view> names = {};  // kEnum: the allowed names; kSettings: the keys
  absl::string_view short_key = {};    // kSection: the key a scalar stands for
  // `accel-worker --standalone`'s flag for this key, generated from this row ("" = none) and
  // its help there (the flag's own words: it prints progress, it does not send events).
  absl::string_view flag = {};
  absl::string_view flag_help = {};
  bool flag_shows_default = true;     // --help shows the default ([10])
  absl::string_view flag_default = {};  // what --help shows when not default_value
  ApplyFn apply = nullptr;
  ApplyCheckedFn apply_checked = nullptr;
  // The docs row: the key cell when it is not `key` alone, the default cell when it is not the
  // default as written (backquoted for text; "—" when there is none), and whether the row is
  // folded into the one before it (train.beta2 shares train.beta1's).
  absl::string_view doc_key = {};
  absl::string_view doc_default = {};
  bool doc_folded = false;
};

// Every job setting, in the docs table's order.
std::span<const Setting> JobSettings();
// The row for `key`, or nullptr.
const Setting* FindSetting(absl::string_view key);

// The JobSpec field of a row and the message that holds it (reflection; see the top comment).
const google::protobuf::FieldDescriptor* SettingField(const Setting& s);
google::protobuf::Message* MutableSettingParent(const Setting& s, accel::v1::JobSpec& spec);
const google::protobuf::Message& SettingParent(const Setting& s, const accel::v1::JobSpec& spec);

// Typed setters of a row's field (the YAML walker and the flags call them): an int32 field takes
// what SettingIntBounds allows (the caller checks), a uint64 one an int64's bits; a kSettings
// row's map gets one entry.
std::pair<int64_t, int64_t> SettingIntBounds(const Setting& s);
void SetSettingInt(const Setting& s, int64_t v, accel::v1::JobSpec& spec);
void SetSettingReal(const Setting& s, double v, accel::v1::JobSpec& spec);
void SetSettingBool(const Setting& s, bool v, accel::v1::JobSpec& spec);
void SetSettingText(const Setting& s, const std::string& v, accel::v1::JobSpec& spec);
// Appends one (path, weight) to a kWeightedPaths row's repeated WeightedPath field.
void AddSettingWeightedPath(const Setting& s, const std::string& path, double weight,
                            accel::v1::JobSpec& spec);
void AddSettingEntry(const Setting& s, const std::string& key, const std::string& value,
                     accel::v1::JobSpec& spec);

// Sets a scalar row's field from text as the job file or a flag writes it ("10", "3.0e-4",
// "true", "cosine"). InvalidArgument "KEY: must be ..." when the text is not of the row's type.
[[nodiscard]] absl::Status SetSettingFromText(const Setting& s, absl::string_view text,
                                              accel::v1::JobSpec& spec);

// A spec with every row's default (what an empty job file gives; data.path still empty).
accel::v1::JobSpec DefaultJobSpec();
// Creates every section message of the table (model, data, train, ...), empty where unset: a
// parsed job file holds them all (its JSON shows every section).
void AddSettingSections(accel::v1::JobSpec& spec);

// The table's checks of a complete spec, in table order: integer ranges, then every real
// finite, then real ranges, then enum names. InvalidArgument naming the key; under
// Echo::kPositionsOnly no text value is quoted.
[[nodiscard]] absl::Status CheckSettings(const accel::v1::JobSpec& spec, Echo echo);

}  // namespace accel::job
