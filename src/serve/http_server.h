// `gpt serve`'s HTTP side: the playground page, an OpenAI-style completions API (llama-server's
// shape), /inspect, /health, and llama-server's /tokenize, /detokenize, /props and /metrics
// (serve/llama_endpoints.h, serve/server_metrics.h), on the HttpListener's connections (one thread each, a bounded
// number, every request read within a deadline). The AccessPolicy decides on each request before its body is read;
// generation runs on the BatchEngine's thread, /inspect too (between steps), and a completion whose client has gone is
// cancelled. Nothing of a request reaches the file system; every refusal is JSON naming the field: {"error":
// {"message", "type", "param", "code"}}.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "data/vocab.h"
#include "model/gpt.h"
#include "serve/access_policy.h"
#include "serve/batch_engine.h"
#include "serve/completion_request.h"
#include "serve/http_connection.h"
#include "serve/http_listener.h"
#include "serve/server_metrics.h"

namespace gpt {

struct ServeOptions {
  AccessOptions access;           // the address to bind (access.host) and who may use it
  int port = 8080;                // 0: any free port
  int64_t max_clients = 32;       // choices generating at once; as many more may wait
  int64_t max_connections = 256;  // open at once; one more is answered 503
  int64_t context_shift = 0;
  int64_t step_rows = EngineOptions{}.step_rows;  // prompt and window rows per engine step
  ServeLimits limits;
  std::string model_id;    // what /v1/models calls the model
  std::string model_path;  // the checkpoint file, for /props
  int64_t max_body_bytes = 1 << 20;
  int read_timeout_seconds = 5;   // to send a whole request (or the next one on a kept connection)
  int write_timeout_seconds = 5;  // for a client to take each write of its answer
};

// A client's text for the log: control bytes and backslashes escaped as \xNN (a path cannot forge
// log lines), at most 200 bytes.
std::string log_safe(const std::string& text);

class HttpServer {
 public:
  HttpServer(Gpt& model, const Vocab& vocab, ServeOptions options);
  ~HttpServer();

  // Binds the socket; returns the port (the chosen one for port 0). Throws UserError when it cannot.
  int bind();
  // Serves until stop(); call from one thread.
  void serve();
  // Whether serve() has returned (after stop(), or when listening failed).
  bool finished() const { return serve_returned_; }
  // Ends running completions (their streams close properly), then stops serving. Any thread.
  void stop();

 private:
  void serve_connection(HttpConnection& connection);
  bool admitted(const HttpRequest& request, HttpConnection& connection);
  void route(const HttpRequest& request, HttpConnection& connection);
  std::shared_ptr<CompletionJob> start_completion(const std::string& body);
  void complete(const HttpRequest& request, HttpConnection& connection);
  void whole_completion(CompletionJob& job, nlohmann::ordered_json head, HttpConnection& connection);
  void stream_completion(CompletionJob& job, const nlohmann::ordered_json& head, HttpConnection& connection);
  nlohmann::ordered_json models_json() const;
  uint64_t fresh_seed();

  Gpt& model_;
  const Vocab& vocab_;
  ServeOptions options_;
  AccessPolicy access_;
  ServerMetrics metrics_;  // before engine_: the engine's jobs record into it until the engine ends
  BatchEngine engine_;
  HttpListener listener_;
  std::mutex seed_mutex_;
  std::mt19937_64 seeds_;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<int64_t> open_streams_{0};
  std::atomic<bool> serve_returned_{false};
  const int64_t created_;
};

}  // namespace gpt
