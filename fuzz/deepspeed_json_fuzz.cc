// Fuzz target: the DeepSpeed config JSON (engine/config/document.h ParseJsonDocument,
// deepspeed_json.h ReadDeepSpeedJson, resolve.h) under a DEEPSPEED Accelerate YAML, then the
// plan's JSON and conversion (config_checks.h), and the lowering acceld runs on the text.
// Properties: nothing thrown by nlohmann::json escapes; every error is InvalidArgument naming
// the file; a resolved plan prints as JSON and converts to files that resolve.
#include <string>

#include "engine/config/deepspeed_json.h"
#include "fuzz/config_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  using namespace accel::config;
  const std::string_view text = AsText(data, size);
  auto doc = ParseJsonDocument(text, "ds_config.json");
  if (!doc.ok()) {
    CheckError(doc.status(), {absl::StatusCode::kInvalidArgument}, "ds_config.json");
    return 0;
  }
  Diagnostics diag;
  (void)ReadDeepSpeedJson(*doc, &diag);
  if (!diag.ok()) CheckError(diag.ToStatus(), {absl::StatusCode::kInvalidArgument}, "");
  static const Document* ds_yaml = [] {
    auto d = ParseYamlDocument("distributed_type: DEEPSPEED\nnum_processes: 4\n", "ds.yaml");
    FUZZ_CHECK(d.ok(), "fixed YAML");
    return new Document(std::move(*d));
  }();
  auto plan = ResolveDocuments(*ds_yaml, &*doc, FuzzJob());
  CheckResolved(plan);
  if (plan.ok()) CheckPlan(*plan);
  CheckLowering({}, {"ds_config.json", std::string(text)});
  return 0;
}
