// `accelctl data render`: a model's chat template applied to conversations, for a look at what
// training on a `messages` dataset will see (engine/text/chat_template.h).
//
//   accelctl data render --tokenizer-config FILE [--add-generation-prompt] < conversations.jsonl
//
// Reads one JSON object {"messages": [{"role", "content", ...}, ...]} per line of stdin (blank
// lines are skipped) and prints, per line, the rendered text as one JSON string. A line that is
// not such an object, or that the template refuses (raise_exception, a construct outside the
// supported subset), stops the command with "error: stdin line N: ..." and exit 2; what was
// rendered before it has been printed. A missing or template-less FILE is exit 2 too.
#pragma once

#include <iosfwd>
#include <string>

#include "CLI/CLI.hpp"

namespace accel::client {

struct DataRenderCommand {
  bool chosen = false;
  std::string tokenizer_config;
  bool add_generation_prompt = false;
};

// Registers `render` on the `data` subcommand `data`, filling *command when parsed. `command`
// must outlive the app. This is the one call the `data` command group makes for it.
void AddDataRenderCommand(CLI::App& data, DataRenderCommand* command);

// Runs a parsed `data render`: conversations from `in`, rendered lines to `out`, errors to
// `err`. Returns the exit code (0, or 2 on invalid input).
int RunDataRender(const DataRenderCommand& command, std::istream& in, std::ostream& out,
                  std::ostream& err);

}  // namespace accel::client
