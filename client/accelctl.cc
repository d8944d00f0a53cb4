#include "client/accelctl.h"

#include <algorithm>
#include <iostream>
#include <ostream>

#include "CLI/CLI.hpp"
#include "client/ckpt_commands.h"
#include "client/config_command.h"
#include "client/data_commands.h"
#include "client/data_render_command.h"
#include "client/generate_command.h"
#include "client/job_commands.h"
#include "client/terminal_text.h"

namespace accel::client {

int RunAccelctl(const std::vector<std::string>& args, const config::EnvMap& env,
                std::ostream& raw_out, std::ostream& raw_err) {
  // Everything printed goes through the terminal filter (terminal_text.h): text from acceld or
  // from files never reaches the terminal as control sequences.
  TerminalSafeStream out(raw_out, EscapeStyle::kText);
  TerminalSafeStream err(raw_err, EscapeStyle::kText);
  CLI::App app{"accelctl: submit and inspect accel training jobs; check config files"};
  app.require_subcommand(1);
  ConfigCommand config;
  AddConfigCommand(app, &config);
  CkptCommand ckpt;
  AddCkptCommands(app, &ckpt);
  JobCommand jobs;
  AddJobCommands(app, &jobs);
  // generate parses its own flags (generate_command.h, shared with accel-worker --generate).
  CLI::App* generate = app.add_subcommand("generate", "generate text from a model, in-process");
  generate->prefix_command();
  generate->set_help_flag();
  DataCommand data;
  AddDataCommands(app, &data);
  DataRenderCommand render;
  AddDataRenderCommand(*data.data, &render);

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Help of the subcommand that was being parsed, when there is one.
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitInvalid;
  }
  // JSON output keeps its \u escapes valid JSON (protobuf and nlohmann already escape C0).
  if (jobs.output == "json" || ckpt.output == "json" || config.explain.output == "json" ||
      render.chosen || (!data.chosen.empty() && (data.chosen != "prepare" || data.output == "json"))) {
    out.set_style(EscapeStyle::kJson);
  }
  if (generate->parsed()) {
    return RunGenerateCommand(generate->remaining(), "accelctl generate", out, err,
                              {.chat_template = DefaultChatTemplateLoader()});
  }
  if (!config.chosen.empty()) return RunParsedConfigCommand(config, env, out, err);
  if (!ckpt.chosen.empty()) return RunParsedCkptCommand(ckpt, out, err);
  if (!jobs.chosen.empty()) return RunParsedJobCommand(jobs, out, err);
  if (render.chosen) return RunDataRender(render, std::cin, out, err);
  if (!data.chosen.empty()) return RunParsedDataCommand(data, std::cin, out, err);
  err << "error: no command\n";
  return kExitInvalid;
}

config::EnvMap ConfigEnvironment(char** environ_array) {
  config::EnvMap env;
  for (char** e = environ_array; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (name.rfind("FSDP_", 0) == 0 || name.rfind("ACCELERATE_", 0) == 0) {
      env[name] = entry.substr(eq + 1);
    }
  }
  return env;
}

}  // namespace accel::client
