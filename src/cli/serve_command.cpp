// gpt serve: a local HTTP server for one trained model: the playground page, an OpenAI-style
// completions API and /inspect (serve/http_server.h). Ctrl-C or SIGTERM ends it cleanly: running
// streams get their last chunk and [DONE], then the process exits 0.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "cli/stop_signal.h"
#include "core/ascii.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "serve/access_policy.h"
#include "serve/http_server.h"

namespace gpt {

namespace {

struct ServeCommandOptions {
  CheckpointOptions model;
  ServeOptions serve;
  std::string api_key_file;
  std::string dtype;
  bool quiet = false;
};

// --api_key_file's key: its first line, without surrounding whitespace (a key on the command line
// is visible to every user of the machine in the process list; a file is not).
std::string read_api_key(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError("--api_key_file " + path + ": no such file");
  const std::string text = read_whole_file(path);
  const std::string key(ascii_trimmed(std::string_view(text).substr(0, text.find('\n'))));
  if (key.empty()) throw UserError("--api_key_file " + path + ": the file holds no key on its first line");
  return key;
}

void validate(const ServeCommandOptions& o, int64_t block_size) {
  if (o.serve.port < 0 || o.serve.port > 65535) throw UserError("--port must be in [0, 65535] (0 = any free port)");
  if (o.serve.max_clients < 1 || o.serve.max_clients > 1024) throw UserError("--max_clients must be in [1, 1024]");
  if (o.serve.max_connections < 2 * o.serve.max_clients + 2 || o.serve.max_connections > 65536)
    throw UserError(
        "--max_connections must be in [2 x --max_clients + 2, 65536]: every generating and waiting "
        "client holds a connection, and /health needs one more");
  if (o.serve.limits.max_tokens < 1) throw UserError("--max_tokens must be >= 1");
  if (o.serve.step_rows < 1 || o.serve.step_rows > 65536) throw UserError("--step_rows must be in [1, 65536]");
  if (o.serve.context_shift < 0 || o.serve.context_shift > block_size)
    throw UserError("--context_shift must be in [0, block_size = " + std::to_string(block_size) + "] (0 = exact)");
  if (!o.api_key_file.empty() && !o.serve.access.api_key.empty())
    throw UserError("--api_key and --api_key_file: give one of them");
}

// What /v1/models calls the model: its run folder's name.
std::string model_id(const std::string& checkpoint_path) {
  const std::filesystem::path folder = std::filesystem::absolute(checkpoint_path).parent_path();
  const std::string name = folder.filename().string();
  return name.empty() ? "gpt" : name;
}

int run_serve(ServeCommandOptions& options) {
  setup_logging(options.quiet);
  LoadedModel loaded = options.model.load();
  apply_dtype_option(options.dtype, *loaded.model);
  validate(options, loaded.model->config().block_size);
  if (!options.api_key_file.empty()) options.serve.access.api_key = read_api_key(options.api_key_file);
  options.serve.model_id = model_id(loaded.path);
  options.serve.model_path = loaded.path;
  HttpServer server(*loaded.model, loaded.vocab, options.serve);
  const int port = server.bind();
  spdlog::info("{}: {} parameters, block_size {}; up to {} completions at once", loaded.path,
               loaded.model->params().parameter_count(), loaded.model->config().block_size, options.serve.max_clients);
  if (!AccessPolicy(options.serve.access).loopback_only() && options.serve.access.api_key.empty())
    spdlog::warn(
        "--host {} is reachable from other machines and no --api_key is set: anyone who can reach this "
        "port can use the model and its compute",
        options.serve.access.host);
  // Before the address is printed: whoever reads it may signal at once.
  const StopSignalScope stop;
  std::printf("gpt serve: http://%s:%d/ (Ctrl-C to stop)\n", options.serve.access.host.c_str(), port);
  std::fflush(stdout);

  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;  // a client that hangs up is a failed write, not a signal
  struct sigaction previous_pipe {};
  ::sigaction(SIGPIPE, &ignore, &previous_pipe);
  std::thread http([&] { server.serve(); });
  while (stop.signal()->load() == 0 && !server.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool failed = server.finished() && stop.signal()->load() == 0;
  spdlog::info("stopping: ending the running completions");
  server.stop();
  http.join();
  ::sigaction(SIGPIPE, &previous_pipe, nullptr);
  if (failed) throw UserError("the server stopped accepting connections on its own", ExitCode::runtime);
  spdlog::info("stopped");
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeCommandOptions>();
  CLI::App* sub = app.add_subcommand("serve", "Serve a trained model: a playground page and an OpenAI-style API");
  add_checkpoint_options(sub, options->model, "folder holding model.safetensors");
  ServeOptions& s = options->serve;
  sub->add_option("--host", s.access.host, "address to listen on (127.0.0.1: this machine only)")
      ->capture_default_str();
  sub->add_option("--allowed_hosts", s.access.allowed_hosts,
                  "more names the Host header may carry besides --host and loopback names (comma-separated; "
                  "'*': any, for a proxy that checks them)")
      ->delimiter(',');
  sub->add_option("--cors", s.access.cors_origins,
                  "origins (scheme://host:port) whose pages may call the API; comma-separated, '*' for any")
      ->delimiter(',');
  sub->add_option("--api_key", s.access.api_key,
                  "require 'Authorization: Bearer KEY' on every request but the page and /health");
  sub->add_option("--api_key_file", options->api_key_file, "as --api_key, the key read from this file's first line");
  sub->add_option("--port", s.port, "TCP port; 0 = any free port (printed)")->capture_default_str();
  sub->add_option("--max_clients", s.max_clients,
                  "completions (choices) generated at once, batched in each step; as many more may wait, and "
                  "beyond that a request gets 503")
      ->capture_default_str();
  sub->add_option("--max_connections", s.max_connections,
                  "connections open at once (one thread each); one more is answered 503 at once")
      ->capture_default_str();
  sub->add_option("--step_rows", s.step_rows,
                  "prompt and re-encoded window characters one step runs beside the new characters (llama-server's "
                  "n_batch); each is run whole, at least one per step")
      ->capture_default_str();
  sub->add_option("--max_tokens", s.limits.max_tokens, "the most characters one choice may ask for")
      ->capture_default_str();
  sub->add_option("--context_shift", s.context_shift,
                  "past block_size, as gpt sample's: 0 = exact, N = drop the oldest N characters and re-encode once")
      ->capture_default_str();
  add_dtype_option(sub, options->dtype);
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  return {sub, [options](const World&) { return run_serve(*options); }};
}

}  // namespace gpt
