#include "serve/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/check.h"
#include "sample/text_generation.h"
#include "serve/inspection.h"
#include "serve/llama_endpoints.h"
#include "serve/page.h"

namespace gpt {

namespace {

using json = nlohmann::ordered_json;  // fields in the order written (top_logprobs most likely first)

// Model text may hold bytes that are not UTF-8 (a byte vocabulary's single bytes): replaced, not thrown.
template <typename Json>
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

// /inspect's answer: large, in nlohmann::json's (sorted) order.
void send_inspection(httplib::Response& res, const nlohmann::json& body) {
  res.status = 200;
  res.set_content(dump(body), "application/json");
}

json error_body(int status, const std::string& message, const std::string& param) {
  const char* type = status == 503   ? "server_busy"
                     : status >= 500 ? "server_error"
                     : status == 401 ? "authentication_error"
                     : status == 403 ? "permission_error"
                                     : "invalid_request_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", status}}}};
}

json logprobs_json(const std::vector<TokenLogprob>& entries, int64_t& offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprob& e : entries) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto& [text, logprob] : e.top) alternatives[text] = logprob;
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += static_cast<int64_t>(e.token.size());
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

// One entry of "choices", whole or a stream's chunk; finish_reason null while the choice runs.
json choice_json(int64_t index, const std::string& text, json logprobs, FinishReason finish) {
  return {{"index", index},
          {"text", text},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish == FinishReason::none ? json(nullptr) : json(finish_reason_name(finish))}};
}

std::optional<std::string> header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

RequestHead request_head(const httplib::Request& req) {
  return {req.method,
          req.path,
          header(req, "Host"),
          header(req, "Origin"),
          header(req, "Content-Type"),
          header(req, "Authorization")};
}

// What a whole (non-streamed) completion collects per choice.
struct ChoiceText {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  FinishReason finish = FinishReason::none;
};

}  // namespace

std::string log_safe(const std::string& text) {
  std::string out;
  for (const char c : text.substr(0, 200)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || byte == '\\')
      out += fmt::format("\\x{:02x}", byte);
    else
      out += c;
  }
  return text.size() > 200 ? out + "..." : out;
}

HttpServer::HttpServer(Gpt& model, const Vocab& vocab, ServeOptions options)
    : model_(model),
      vocab_(vocab),
      options_(std::move(options)),
      access_(options_.access),
      engine_(model, vocab, {options_.max_clients, options_.max_clients, options_.context_shift}),
      http_(std::make_unique<httplib::Server>()),
      seeds_(std::random_device{}()),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()) {
  // Every generating or waiting client holds a connection thread; a few more answer /health and
  // the page while they do.
  const auto threads = static_cast<std::size_t>(2 * options_.max_clients + 4);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(static_cast<std::size_t>(options_.max_body_bytes));
  http_->set_tcp_nodelay(true);  // a stream's small writes go out at once, not after the peer's ACK
  http_->set_read_timeout(options_.read_timeout_seconds, 0);
  http_->set_write_timeout(options_.write_timeout_seconds, 0);
  add_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const int port = options_.port == 0 ? http_->bind_to_any_port(options_.access.host)
                                      : (http_->bind_to_port(options_.access.host, options_.port) ? options_.port : -1);
  if (port < 0)
    throw UserError("cannot listen on " + options_.access.host + ":" + std::to_string(options_.port) +
                    " (in use, or not an address of this machine); pick another --port, or --port 0 for any free one");
  return port;
}

void HttpServer::serve() {
  serve_entered_ = true;
  if (!stop_requested_) http_->listen_after_bind();
  serve_returned_ = true;
}

void HttpServer::stop() {
  engine_.shutdown();
  // httplib stops writing every stream the moment it stops: first let the streams send what the
  // engine ended them with, and [DONE] (a client that does not read is dropped by the write timeout).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.write_timeout_seconds + 1);
  while (open_streams_.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // httplib's stop() does nothing until its listen loop runs: a serve() that has begun is let start.
  stop_requested_ = true;
  while (serve_entered_ && !serve_returned_ && !http_->is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

uint64_t HttpServer::fresh_seed() {
  std::lock_guard lock(seed_mutex_);
  return seeds_() >> 11;  // in [0, 2^53): exact in a JavaScript number, so a page can send it back
}

namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

json HttpServer::models_json() const {
  const json meta = model_meta_json(model_.config(), model_.params().parameter_count(), vocab_);
  return {{"object", "list"},
          {"data", json::array({{{"id", options_.model_id},
                                 {"object", "model"},
                                 {"created", created_},
                                 {"owned_by", "gpt"},
                                 {"meta", meta}}})}};
}

void HttpServer::add_routes() {
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(playground_page()), "text/html; charset=utf-8");
  });
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const BatchEngine::Load load = engine_.load();
    send_json(res, 200,
              {{"status", "ok"}, {"slots_busy", load.busy_slots}, {"slots", load.slots}, {"waiting", load.waiting}});
  });
  http_->Get("/v1/models",
             [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, models_json()); });
  // A bounded pattern: std::regex backtracks through every byte it may match, and paths are 8 KiB.
  http_->Get(R"(/v1/models/([^/]{1,255}))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != options_.model_id)
      throw RequestError(
          404, "no model \"" + std::string(req.matches[1]) + "\": this server has \"" + options_.model_id + "\"",
          "model");
    send_json(res, 200, models_json()["data"][0]);
  });
  http_->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { complete(req, res); });
  http_->Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, tokenize(vocab_, req.body));
  });
  http_->Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    send_json(res, 200, detokenize(vocab_, req.body));
  });
  http_->Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              props_json({model_.config().block_size, options_.max_clients, options_.limits.max_tokens,
                          options_.model_path, options_.model_id}));
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const BatchEngine::Load load = engine_.load();
    res.set_content(metrics_.prometheus_text(load.busy_slots, load.waiting), "text/plain; version=0.0.4");
  });
  http_->Post("/inspect", [this](const httplib::Request& req, httplib::Response& res) {
    json result;
    engine_.run([&] { result = inspect_text(model_, vocab_, req.body); });
    result["model"] = options_.model_id;
    send_inspection(res, result);
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (const RequestError& e) {
      if (e.status() == 503) res.set_header("Retry-After", "1");
      send_json(res, e.status(), error_body(e.status(), e.what(), e.param()));
    } catch (const std::exception& e) {
      spdlog::error("request failed: {}", e.what());
      send_json(res, 500, error_body(500, e.what(), ""));
    }
  });
  // httplib's own refusals (unknown path, wrong method, a body over the limit) get a JSON body too.
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 404   ? "no such endpoint: " + req.method + " " + req.path
                                : res.status == 413 ? "the body is larger than the server accepts"
                                                    : "the request was refused";
    send_json(res, res.status, error_body(res.status, message, ""));
  });
  // Runs before httplib reads the body: a request refused here costs its headers only.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const AccessDecision decision = access_.decide(request_head(req));
    for (const auto& [name, value] : decision.headers) res.set_header(name, value);
    if (decision.action == AccessDecision::Action::refuse) {
      res.set_header("Connection", "close");  // its unread body must not be taken for a next request
      send_json(res, decision.status, error_body(decision.status, decision.message, ""));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (decision.action == AccessDecision::Action::answer) {
      res.status = decision.status;
      return httplib::Server::HandlerResponse::Handled;
    }
    // No endpoint serves byte ranges; httplib would copy a response once per range asked for.
    if (req.ranges.empty()) return httplib::Server::HandlerResponse::Unhandled;
    send_json(res, 416, error_body(416, "byte ranges are not served", ""));
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::info("{} {} {} {}", req.remote_addr, log_safe(req.method), log_safe(req.path), res.status);
  });
}

std::shared_ptr<CompletionJob> HttpServer::start_completion(const std::string& body) {
  CompletionRequest request = parse_completion_request(body, options_.limits, vocab_);
  if (request.n > options_.max_clients)
    throw RequestError(400, "n: at most --max_clients (" + std::to_string(options_.max_clients) + ")", "n");
  std::vector<int32_t> prompt;
  try {
    prompt = vocab_.encode(request.prompt, "prompt");
  } catch (const UserError& e) {
    throw RequestError(400, e.what(), "prompt");
  }
  crop_prompt(prompt, model_.config().block_size);
  const uint64_t seed = request.seed ? *request.seed : fresh_seed();
  auto job = std::make_shared<CompletionJob>(std::move(request), std::move(prompt), seed, &metrics_);
  engine_.submit(job);
  return job;
}

void HttpServer::complete(const httplib::Request& req, httplib::Response& res) {
  const std::shared_ptr<CompletionJob> job = start_completion(req.body);
  const json head = {{"id", "cmpl-" + std::to_string(++next_id_)},
                     {"object", "text_completion"},
                     {"created", unix_seconds()},
                     {"model", options_.model_id},
                     {"seed", job->seed()}};
  if (job->request().stream)
    stream_completion(job, head, res);
  else
    send_json(res, 200, whole_completion(*job, head));
}

json HttpServer::whole_completion(CompletionJob& job, json head) {
  std::vector<ChoiceText> choices(static_cast<std::size_t>(job.request().n));
  std::vector<int64_t> generated(choices.size(), 0);
  std::vector<ChoiceEvent> events;
  while (job.take(events, std::chrono::milliseconds(200))) {
    for (ChoiceEvent& e : events) {
      ChoiceText& c = choices[static_cast<std::size_t>(e.choice)];
      c.text += e.text;
      for (TokenLogprob& l : e.logprobs) c.logprobs.push_back(std::move(l));
      if (e.finish != FinishReason::none) c.finish = e.finish;
      generated[e.choice] = std::max(generated[e.choice], e.generated);
    }
    events.clear();
  }
  json out_choices = json::array();
  int64_t completion_tokens = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    auto offset = static_cast<int64_t>(job.request().prompt.size());
    json logprobs = job.request().logprobs ? logprobs_json(choices[i].logprobs, offset) : json(nullptr);
    out_choices.push_back(choice_json(static_cast<int64_t>(i), choices[i].text, logprobs, choices[i].finish));
    completion_tokens += generated[i];
  }
  const auto prompt_tokens = static_cast<int64_t>(job.prompt().size());
  head["choices"] = std::move(out_choices);
  head["usage"] = {{"prompt_tokens", prompt_tokens},
                   {"completion_tokens", completion_tokens},
                   {"total_tokens", prompt_tokens + completion_tokens}};
  head["timings"] = timings_json(job.timings());
  return head;
}

// Server-sent events: one chunk per released piece of text (a character, unless a stop sequence
// holds some back), a last one per choice with its finish_reason, then [DONE]. A client that goes
// away cancels the job; the engine frees its slots at its next step.
void HttpServer::stream_completion(const std::shared_ptr<CompletionJob>& job, const json& head,
                                   httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  ++open_streams_;
  // text_offset counts bytes of prompt + text, as OpenAI's.
  auto offsets = std::make_shared<std::vector<int64_t>>(static_cast<std::size_t>(job->request().n),
                                                        static_cast<int64_t>(job->request().prompt.size()));
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, head, offsets](std::size_t, httplib::DataSink& sink) {
        std::vector<ChoiceEvent> events;
        const bool more = job->take(events, std::chrono::milliseconds(100));
        for (ChoiceEvent& e : events) {
          json chunk = head;
          json logprobs = job->request().logprobs ? logprobs_json(e.logprobs, (*offsets)[e.choice]) : json(nullptr);
          chunk["choices"] = json::array({choice_json(e.choice, e.text, logprobs, e.finish)});
          if (e.last) chunk["timings"] = timings_json(job->timings());
          const std::string line = "data: " + dump(chunk) + "\n\n";
          if (!sink.write(line.data(), line.size())) return false;
        }
        if (more) return sink.is_writable();
        static constexpr char kDone[] = "data: [DONE]\n\n";
        if (!sink.write(kDone, sizeof kDone - 1)) return false;
        sink.done();
        return true;
      },
      [this, job](bool success) {
        if (!success) job->cancel();
        --open_streams_;
      });
}

}  // namespace gpt
