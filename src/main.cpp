// gpt: command-line entry point. Wires the subcommands (one file each under cli/) and maps
// errors to exit codes: 2 for usage and input errors, 1 for runtime failures.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"gpt: train and sample character-level GPT models"};
  app.set_version_flag("--version", std::string("gpt ") + GPT_VERSION);
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version exit 0; usage errors 2
  }
  return 0;
}
