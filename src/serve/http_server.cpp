#include "serve/http_server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/check.h"
#include "sample/text_generation.h"
#include "serve/inspection.h"
#include "serve/llama_endpoints.h"
#include "serve/page.h"
#include "serve/request_fields.h"

namespace gpt {

namespace {

using json = nlohmann::ordered_json;  // fields in the order written (top_logprobs most likely first)
using namespace std::chrono_literals;

// Model text may hold bytes that are not UTF-8 (a byte vocabulary's single bytes): replaced, not thrown.
template <typename Json>
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A JSON answer (/inspect's is an nlohmann::json, in its sorted order).
template <typename Json>
void send_json(HttpConnection& connection, int status, const Json& body) {
  HttpResponse response;
  response.status = status;
  response.body = dump(body);
  connection.send(response);
}

// HEAD is GET without the body.
void require_method(const HttpRequest& request, const std::string& method) {
  if (request.method != method && !(method == "GET" && request.method == "HEAD"))
    throw RequestError(405, request.path + " takes " + method + ", not " + request.method.substr(0, 16));
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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
      engine_(model, vocab, {options_.max_clients, options_.max_clients, options_.context_shift, options_.step_rows}),
      listener_({options_.access.host,
                 options_.port,
                 options_.max_connections,
                 {16 << 10, options_.max_body_bytes, std::chrono::seconds(options_.read_timeout_seconds),
                  std::chrono::seconds(options_.write_timeout_seconds)}}),
      seeds_(std::random_device{}()),
      created_(unix_seconds()) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() { return listener_.bind(); }

void HttpServer::serve() {
  listener_.run([this](HttpConnection& connection) { serve_connection(connection); });
  serve_returned_ = true;
}

void HttpServer::stop() {
  engine_.shutdown();
  // The streams send what the engine ended them with, and [DONE], before the connections are
  // told to stop (a client that does not read is dropped by the write timeout).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.write_timeout_seconds + 1);
  while (open_streams_.load() > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  listener_.stop();
}

uint64_t HttpServer::fresh_seed() {
  std::lock_guard lock(seed_mutex_);
  return seeds_() >> 11;  // in [0, 2^53): exact in a JavaScript number, so a page can send it back
}

void HttpServer::serve_connection(HttpConnection& connection) {
  while (std::optional<HttpRequest> request = connection.read_head()) {
    if (admitted(*request, connection) && connection.read_body(*request)) {
      try {
        route(*request, connection);
      } catch (const RequestError& e) {
        connection.send(error_response(e.status(), e.what(), e.param()));
      } catch (const std::exception& e) {
        spdlog::error("request failed: {}", e.what());
        if (connection.status() == 0) connection.send(error_response(500, e.what()), true);
      }
    }
    const int status = connection.status();
    spdlog::info("{} {} {} {}", request->remote, log_safe(request->method), log_safe(request->path),
                 status == 0 ? std::string("(client gone)") : std::to_string(status));
  }
}

// Decided from the headers alone; a request refused here costs nothing more, and its connection
// is closed (its body, unread, must not be taken for a next request).
bool HttpServer::admitted(const HttpRequest& request, HttpConnection& connection) {
  const AccessDecision decision =
      access_.decide({request.method, request.path, request.header("host"), request.header("origin"),
                      request.header("content-type"), request.header("authorization")});
  for (const auto& [name, value] : decision.headers) connection.add_header(name, value);
  if (decision.action == AccessDecision::Action::refuse) {
    connection.send(error_response(decision.status, decision.message), true);
    return false;
  }
  if (decision.action == AccessDecision::Action::answer) {
    HttpResponse response;
    response.status = decision.status;
    connection.send(response, true);
    return false;
  }
  if (request.header("range")) {  // no endpoint serves byte ranges
    connection.send(error_response(416, "byte ranges are not served"), true);
    return false;
  }
  return true;
}

void HttpServer::route(const HttpRequest& request, HttpConnection& connection) {
  const std::string& path = request.path;
  if (path == "/") {
    require_method(request, "GET");
    HttpResponse page;
    page.content_type = "text/html; charset=utf-8";
    page.body = std::string(playground_page());
    connection.send(page);
  } else if (path == "/health") {
    require_method(request, "GET");
    const BatchEngine::Load load = engine_.load();
    send_json(
        connection, 200,
        json{{"status", "ok"}, {"slots_busy", load.busy_slots}, {"slots", load.slots}, {"waiting", load.waiting}});
  } else if (path == "/v1/models") {
    require_method(request, "GET");
    send_json(connection, 200, models_json());
  } else if (path.starts_with("/v1/models/")) {
    require_method(request, "GET");
    const std::string id = path.substr(11);
    if (id != options_.model_id)
      throw RequestError(404, "no model \"" + id.substr(0, 200) + "\": this server has \"" + options_.model_id + "\"",
                         "model");
    send_json(connection, 200, models_json()["data"][0]);
  } else if (path == "/v1/completions") {
    require_method(request, "POST");
    complete(request, connection);
  } else if (path == "/tokenize") {
    require_method(request, "POST");
    send_json(connection, 200, tokenize(vocab_, request.body));
  } else if (path == "/detokenize") {
    require_method(request, "POST");
    send_json(connection, 200, detokenize(vocab_, request.body));
  } else if (path == "/props") {
    require_method(request, "GET");
    send_json(connection, 200,
              props_json({model_.config().block_size, options_.max_clients, options_.limits.max_tokens,
                          options_.model_path, options_.model_id}));
  } else if (path == "/metrics") {
    require_method(request, "GET");
    const BatchEngine::Load load = engine_.load();
    HttpResponse metrics;
    metrics.content_type = "text/plain; version=0.0.4";
    metrics.body = metrics_.prometheus_text(load.busy_slots, load.waiting);
    connection.send(metrics);
  } else if (path == "/inspect") {
    require_method(request, "POST");
    nlohmann::json result = engine_.inspect(request.body);
    result["model"] = options_.model_id;
    send_json(connection, 200, result);
  } else {
    throw RequestError(404, "no such endpoint: " + request.method.substr(0, 16) + " " + path.substr(0, 200));
  }
}

json HttpServer::models_json() const {
  const json meta = model_meta_json(model_.config(), model_.params().parameter_count(), vocab_);
  return {{"object", "list"},
          {"data", json::array({{{"id", options_.model_id},
                                 {"object", "model"},
                                 {"created", created_},
                                 {"owned_by", "gpt"},
                                 {"meta", meta}}})}};
}

std::shared_ptr<CompletionJob> HttpServer::start_completion(const std::string& body) {
  CompletionRequest request = parse_completion_request(body, options_.limits, vocab_);
  if (request.n > options_.max_clients)
    throw RequestError(400, "n: at most --max_clients (" + std::to_string(options_.max_clients) + ")", "n");
  std::vector<int32_t> prompt = encoded_field(vocab_, request.prompt, "prompt");
  crop_prompt(prompt, model_.config().block_size);
  const uint64_t seed = request.seed ? *request.seed : fresh_seed();
  auto job = std::make_shared<CompletionJob>(std::move(request), std::move(prompt), seed, &metrics_);
  engine_.submit(job);
  return job;
}

void HttpServer::complete(const HttpRequest& request, HttpConnection& connection) {
  const std::shared_ptr<CompletionJob> job = start_completion(request.body);
  const json head = {{"id", "cmpl-" + std::to_string(++next_id_)},
                     {"object", "text_completion"},
                     {"created", unix_seconds()},
                     {"model", options_.model_id},
                     {"seed", job->seed()}};
  if (job->request().stream)
    stream_completion(*job, head, connection);
  else
    whole_completion(*job, head, connection);
}

// How often a completion waiting for its next events looks whether its client is still there.
constexpr auto kClientCheck = 50ms;
// A stream's writes are at least this far apart: what the steps between them release goes out
// in one write. With a write per step, every stream's thread would wake for each character and
// take a core from the model's threads in the middle of their step.
constexpr auto kStreamInterval = 10ms;

// Collected whole, then sent; a client that leaves meanwhile cancels it (the engine frees its
// slots at its next step) and gets nothing.
void HttpServer::whole_completion(CompletionJob& job, json head, HttpConnection& connection) {
  while (!job.wait_finished(kClientCheck))
    if (connection.client_gone()) {
      job.cancel();
      return;
    }
  std::vector<ChoiceText> choices(static_cast<std::size_t>(job.request().n));
  std::vector<ChoiceEvent> events;
  while (job.take(events, kClientCheck)) {
    for (ChoiceEvent& e : events) {
      ChoiceText& c = choices[static_cast<std::size_t>(e.choice)];
      c.text += e.text;
      for (TokenLogprob& l : e.logprobs) c.logprobs.push_back(std::move(l));
      if (e.finish != FinishReason::none) c.finish = e.finish;
    }
    events.clear();
  }
  json out_choices = json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    auto offset = static_cast<int64_t>(job.request().prompt.size());
    json logprobs = job.request().logprobs ? logprobs_json(choices[i].logprobs, offset) : json(nullptr);
    out_choices.push_back(choice_json(static_cast<int64_t>(i), choices[i].text, logprobs, choices[i].finish));
  }
  // The job counts each choice's characters (stop sequences' included) as the engine made them.
  const CompletionTimings timings = job.timings();
  head["choices"] = std::move(out_choices);
  head["usage"] = {{"prompt_tokens", timings.prompt_n},
                   {"completion_tokens", timings.predicted_n},
                   {"total_tokens", timings.prompt_n + timings.predicted_n}};
  head["timings"] = timings_json(timings);
  send_json(connection, 200, head);
}

// Server-sent events: one event per released piece of text (a character, unless a stop sequence
// holds some back), a last one per choice with its finish_reason, then [DONE]; what one take
// brings goes out in one write. A client that goes away cancels the job.
void HttpServer::stream_completion(CompletionJob& job, const json& head, HttpConnection& connection) {
  ++open_streams_;
  struct StreamCount {
    std::atomic<int64_t>& open;
    ~StreamCount() { --open; }
  } const counted{open_streams_};
  if (!connection.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) {
    job.cancel();
    return;
  }
  // text_offset counts bytes of prompt + text, as OpenAI's.
  std::vector<int64_t> offsets(static_cast<std::size_t>(job.request().n),
                               static_cast<int64_t>(job.request().prompt.size()));
  std::vector<ChoiceEvent> events;
  std::string batch;
  for (bool more = true; more;) {
    events.clear();
    batch.clear();
    more = job.take(events, kClientCheck);
    for (ChoiceEvent& e : events) {
      json chunk = head;
      json logprobs = job.request().logprobs ? logprobs_json(e.logprobs, offsets[e.choice]) : json(nullptr);
      chunk["choices"] = json::array({choice_json(e.choice, e.text, logprobs, e.finish)});
      if (e.last) chunk["timings"] = timings_json(job.timings());
      batch += "data: " + dump(chunk) + "\n\n";
    }
    if (!connection.send_chunk(batch) || connection.client_gone()) {
      job.cancel();
      return;
    }
    if (more) std::this_thread::sleep_for(kStreamInterval);
  }
  if (connection.send_chunk("data: [DONE]\n\n")) connection.finish_stream();
}

}  // namespace gpt
