#include "client/data_render_command.h"

#include <istream>
#include <ostream>

#include "client/config_command.h"
#include "engine/text/chat_template.h"
#include "nlohmann/json.hpp"

namespace accel::client {

void AddDataRenderCommand(CLI::App& data, DataRenderCommand* command) {
  CLI::App* render = data.add_subcommand(
      "render", "Print a tokenizer's chat template applied to each {\"messages\": [...]} line of "
                "stdin, as one JSON string per line");
  render->add_option("--tokenizer-config", command->tokenizer_config,
                     "tokenizer_config.json holding the chat template (and bos/eos tokens)")
      ->required();
  render->add_flag("--add-generation-prompt", command->add_generation_prompt,
                   "end each rendering with the assistant's turn opening, as for generation");
  render->callback([command] { command->chosen = true; });
}

int RunDataRender(const DataRenderCommand& command, std::istream& in, std::ostream& out,
                  std::ostream& err) {
  auto chat = text::ChatTemplate::FromTokenizerConfigFile(command.tokenizer_config);
  if (!chat.ok()) {
    err << "error: " << chat.status().message() << "\n";
    return kExitInvalid;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::string problem;
    if (j.is_discarded()) {
      problem = "not valid JSON";
    } else if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array()) {
      problem = "expected an object with a \"messages\" array";
    } else {
      auto rendered = chat->Render(j["messages"], command.add_generation_prompt);
      if (rendered.ok()) {
        out << nlohmann::json(*rendered).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
        continue;
      }
      problem = std::string(rendered.status().message());
    }
    out.flush();
    err << "error: stdin line " << number << ": " << problem << "\n";
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace accel::client
