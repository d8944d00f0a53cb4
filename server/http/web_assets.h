// The dashboard's files (server/http/web/), compiled into acceld by cmake/embed_web.cmake: the
// generated web_assets.cc defines kWebAssets. dashboard.js is server/http/web/js/*.js concatenated
// in the order server/CMakeLists.txt lists them.
#pragma once

#include <cstddef>
#include <string_view>

namespace accel::server {

struct WebAsset {
  std::string_view path;          // "/dashboard.js"; the page is "/index.html"
  std::string_view content_type;  // with charset
  std::string_view body;
};

extern const WebAsset kWebAssets[];
extern const size_t kNumWebAssets;

}  // namespace accel::server
