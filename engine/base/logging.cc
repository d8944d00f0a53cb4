#include "engine/base/logging.h"

#include <string>

namespace accel {

bool SetLogLevel(std::string_view name) {
  auto level = spdlog::level::from_str(std::string(name));
  if (level == spdlog::level::off && name != "off") return false;
  spdlog::set_level(level);
  return true;
}

void SetLogTag(std::string_view tag) {
  spdlog::set_pattern("[%H:%M:%S.%e] [" + std::string(tag) + "] [%^%l%$] %v");
}

}  // namespace accel
