#include "job/settings_flags.h"

#include <google/protobuf/descriptor.h>

#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_join.h"
#include "engine/model/model_config.h"
#include "engine/model/registry.h"
#include "job/settings.h"

namespace accel::job {

namespace {

// The help text with its placeholders filled from the model registry, so `--help` lists every
// family's presets and model types as they are registered: {presets}, {model_types}.
std::string FlagHelp(const Setting& s) {
  std::string help(s.flag_help);
  const std::pair<std::string_view, std::string> fills[] = {
      {"{presets}", absl::StrJoin(model::ModelPresetNames(), ", ")},
      {"{model_types}", absl::StrJoin(model::SupportedModelTypes(), ", ")}};
  for (const auto& [placeholder, value] : fills) {
    const size_t at = help.find(placeholder);
    if (at != std::string::npos) help.replace(at, placeholder.size(), value);
  }
  return help;
}

}  // namespace

void AddSettingFlags(CLI::App& app, accel::v1::JobSpec* spec, config::TrainOptions* options) {
  using google::protobuf::FieldDescriptor;
  for (const Setting& s : JobSettings()) {
    if (s.flag.empty()) continue;
    const Setting* row = &s;
    auto applied = [row, spec, options] {
      if (row->apply != nullptr) row->apply(*spec, *options);
    };
    const std::string name(s.flag), help = FlagHelp(s);
    CLI::Option* option = nullptr;
    switch (s.type) {
      case SettingType::kBool:
        // A switch, as the hand-written add_flag(name, bool&) was: given means true.
        app.add_flag_callback(name, [row, spec, applied] {
          SetSettingBool(*row, true, *spec);
          applied();
        }, help);
        continue;
      case SettingType::kInt:
        if (SettingField(s)->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
          option = app.add_option_function<int32_t>(name, [row, spec, applied](const int32_t& v) {
            SetSettingInt(*row, v, *spec);
            applied();
          }, help);
        } else if (SettingField(s)->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
          option = app.add_option_function<uint64_t>(name, [row, spec, applied](const uint64_t& v) {
            SetSettingInt(*row, static_cast<int64_t>(v), *spec);
            applied();
          }, help);
        } else {
          option = app.add_option_function<int64_t>(name, [row, spec, applied](const int64_t& v) {
            SetSettingInt(*row, v, *spec);
            applied();
          }, help);
        }
        break;
      case SettingType::kReal:
        option = app.add_option_function<double>(name, [row, spec, applied](const double& v) {
          SetSettingReal(*row, v, *spec);
          applied();
        }, help);
        break;
      default:
        option = app.add_option_function<std::string>(
            name, [row, spec, applied](const std::string& v) {
              SetSettingText(*row, v, *spec);
              applied();
            }, help);
    }
    if (!s.flag_default.empty()) {
      option->default_str(std::string(s.flag_default));
    } else if (s.flag_shows_default) {
      option->default_str(std::string(s.default_value));
    }
  }
}

}  // namespace accel::job
