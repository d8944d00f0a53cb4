// Fuzz target: the Accelerate config YAML (engine/config/document.h ParseYamlDocument,
// accelerate_yaml.h ReadAccelerateConfig, resolve.h), alone and with a DeepSpeed JSON, then the
// plan's JSON and conversions (config_checks.h), and the lowering acceld runs on the text.
// Properties: nothing thrown by yaml-cpp escapes; every error is InvalidArgument naming the
// file; a resolved plan prints as JSON and converts to files that resolve.
#include <string>

#include "engine/config/accelerate_yaml.h"
#include "fuzz/config_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  using namespace accel::config;
  const std::string_view text = AsText(data, size);
  auto doc = ParseYamlDocument(text, "accelerate.yaml");
  if (!doc.ok()) {
    CheckError(doc.status(), {absl::StatusCode::kInvalidArgument}, "accelerate.yaml");
    return 0;
  }
  Diagnostics diag;
  (void)ReadAccelerateConfig(*doc, &diag);
  if (!diag.ok()) CheckError(diag.ToStatus(), {absl::StatusCode::kInvalidArgument}, "");
  static const Document* ds_json = [] {
    auto d = ParseJsonDocument(R"({"zero_optimization": {"stage": 3}})", "ds.json");
    FUZZ_CHECK(d.ok(), "fixed JSON");
    return new Document(std::move(*d));
  }();
  for (const Document* json : {static_cast<const Document*>(nullptr), ds_json}) {
    auto plan = ResolveDocuments(*doc, json, FuzzJob());
    CheckResolved(plan);
    if (plan.ok()) CheckPlan(*plan);
  }
  CheckLowering({"accelerate.yaml", std::string(text)}, {});
  return 0;
}
