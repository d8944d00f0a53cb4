// The JSON side of a model's config.json, shared by the architecture readers.
//
// acceld reads config.json files named by RPC clients (docs/rpc.md, "What acceld reads on a
// client's behalf"), so nothing here or in the readers quotes the text: a parse error names
// the line and column, a value of the wrong type is described by its kind ("a string").
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace accel::model {

// The top-level object of `text`. Python's json writes NaN, Infinity and -Infinity, which JSON
// has not; they are read as NaN so the key's reader names the key ("rope_theta must be
// finite") instead of the whole file failing. InvalidArgument "SRC: not valid JSON (line L,
// column C)" or "SRC: not a JSON object".
[[nodiscard]] absl::StatusOr<nlohmann::json> ParseConfigJson(std::string_view text,
                                                             const std::string& src);

// What `v` is, in words, for a message that must not quote it: "a string", "a number", ...
std::string JsonKind(const nlohmann::json& v);

}  // namespace accel::model
