// gpt serve in process, on loopback: the completions API against gpt sample's generation (the
// same text for the same request and seed, whatever else the server is doing), server-sent
// events, logprobs against the model's own forward, /inspect against gpt heads, llama-server's
// small endpoints and fields against its documented names, and every kind of bad input, slow or
// vanishing client, overload and shutdown.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "core/atomic_file.h"
#include "core/graph.h"
#include "core/random_streams.h"
#include "inspect/heads_analysis.h"
#include "process_runner.h"
#include "sample/text_generation.h"
#include "serve/batch_engine.h"
#include "serve/completion_request.h"
#include "serve/http_server.h"
#include "serve/llama_endpoints.h"
#include "serve/stop_matcher.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::u32string kSymbols = U"\n !,.abcdehlo";  // sorted: the vocabulary's ids in order

Vocab symbols_vocab() { return Vocab::from_code_points(std::vector<char32_t>(kSymbols.begin(), kSymbols.end())); }

std::unique_ptr<Gpt> random_model(int64_t block_size) {
  GptConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = block_size;
  c.vocab_size = static_cast<int64_t>(kSymbols.size());
  c.dropout = 0;
  auto model = std::make_unique<Gpt>(c);
  Rng rng(5);
  ParamStore& p = model->params();
  for (std::size_t i = 0; i < p.padded_floats(); ++i) p.data()[i] = static_cast<float>(rng.normal() * 0.4);
  return model;
}

// An open TCP connection to the server, for what an HTTP client library would not do: stall,
// vanish mid-stream.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawConnection() { close(); }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Reads until `marker` arrives or the connection ends; returns what was read.
  std::string read_until(const std::string& marker) {
    std::string got;
    char buffer[4096];
    while (got.find(marker) == std::string::npos) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      got.append(buffer, static_cast<std::size_t>(n));
    }
    return got;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string post_request(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// What gpt sample generates for a request: its Generator, its random streams, its sampler.
std::vector<std::string> sample_texts(Gpt& model, const Vocab& vocab, const std::string& prompt, int64_t n,
                                      uint64_t seed, const GenerationSettings& settings) {
  std::vector<int32_t> ids = vocab.encode(prompt, "prompt");
  crop_prompt(ids, model.config().block_size);
  Generator generator(model, n);
  std::vector<Rng> rngs;
  for (int64_t s = 0; s < n; ++s) rngs.push_back(sample_stream(seed, s));
  std::vector<std::string> texts(static_cast<std::size_t>(n));
  generate(generator, ids, settings, rngs, [&](int64_t s, int32_t id, const float*) { texts[s] += vocab.decode(id); });
  return texts;
}

// The data: lines of a server-sent event stream, in order; "[DONE]" as a string.
std::vector<json> stream_events(const std::string& body, bool& ended_with_done) {
  std::vector<json> events;
  ended_with_done = false;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "an event without its blank line: " << body.substr(at);
    if (end == std::string::npos) break;
    const std::string event = body.substr(at, end - at);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    EXPECT_EQ(event.find('\n'), std::string::npos) << "one data line per event: " << event;
    EXPECT_FALSE(ended_with_done) << "an event after [DONE]";
    if (event == "data: [DONE]")
      ended_with_done = true;
    else
      events.push_back(json::parse(event.substr(6)));
    at = end + 2;
  }
  return events;
}

// A client that hangs up while the server writes must not end this test binary (gpt serve
// ignores SIGPIPE the same way).
const bool kSigpipeIgnored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;

class Serve : public ::testing::Test {
 protected:
  std::unique_ptr<Gpt> model = random_model(16);
  Vocab vocab = symbols_vocab();
  std::unique_ptr<HttpServer> server;
  std::thread serving;
  int port = 0;

  void start(ServeOptions options = {}) {
    options.port = 0;
    options.model_id = "test";
    server = std::make_unique<HttpServer>(*model, vocab, options);
    port = server->bind();
    serving = std::thread([this] { server->serve(); });
    for (int i = 0; i < 200 && !client().Get("/health"); ++i) std::this_thread::sleep_for(10ms);
  }
  void TearDown() override {
    if (server) server->stop();
    if (serving.joinable()) serving.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  }
  json post(const std::string& path, const json& body, int expected_status = 200) {
    auto res = client().Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, expected_status) << res->body;
    return json::parse(res->body);
  }
  GenerationSettings settings(int64_t max_tokens, double temperature = 0.8, int64_t top_k = 200) const {
    GenerationSettings s;
    s.max_new_tokens = max_tokens;
    s.sampling.temperature = temperature;
    s.sampling.top_k = top_k;
    return s;
  }
  bool healthy() {
    auto res = client().Get("/health");
    return res && res->status == 200 && json::parse(res->body)["status"] == "ok";
  }
};

TEST_F(Serve, CompletionIsGptSampleText) {
  start();
  // 40 characters of a 16-character context: the exact mode's window moves for most of them.
  const json r =
      post("/v1/completions",
           {{"prompt", "hello, "}, {"max_tokens", 40}, {"n", 3}, {"seed", 5}, {"temperature", 0.9}, {"top_k", 6}});
  const std::vector<std::string> expected = sample_texts(*model, vocab, "hello, ", 3, 5, settings(40, 0.9, 6));
  ASSERT_EQ(r["choices"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"], expected[i]) << i;
    EXPECT_EQ(r["choices"][i]["finish_reason"], "length");
  }
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "test");
  EXPECT_EQ(r["seed"], 5);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(r["usage"]["completion_tokens"], 120);
  // Without a seed the server draws one and says which: asking with it gives the same text.
  const json drawn = post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 12}});
  EXPECT_LT(drawn["seed"].get<uint64_t>(), uint64_t{1} << 53) << "exact in a JavaScript number";
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  EXPECT_NEAR(drawn["created"].get<double>(), static_cast<double>(now.count()), 5.0);
  const json again = post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 12}, {"seed", drawn["seed"]}});
  EXPECT_EQ(drawn["choices"][0]["text"], again["choices"][0]["text"]);
}

// The batch a request's characters share with others' changes from step to step; its text does not.
TEST_F(Serve, ConcurrentRequestsGetTheTextTheyGetAlone) {
  ServeOptions options;
  // 16 choices for 8 slots: some wait for others to finish (and at most 8 requests wait: no 503).
  options.max_clients = 8;
  options.context_shift = 4;
  start(options);
  std::vector<std::future<json>> results;
  for (int r = 0; r < 8; ++r)
    results.push_back(std::async(std::launch::async, [this, r] {
      const std::string prompt = std::string("hello, hello").substr(0, 1 + r);
      return post("/v1/completions",
                  {{"prompt", prompt}, {"max_tokens", 10 + 7 * r}, {"n", 1 + r % 3}, {"seed", 100 + r}});
    }));
  for (int r = 0; r < 8; ++r) {
    const json got = results[r].get();
    GenerationSettings s = settings(10 + 7 * r);
    s.context_shift = 4;
    const std::vector<std::string> expected =
        sample_texts(*model, vocab, std::string("hello, hello").substr(0, 1 + r), 1 + r % 3, 100 + r, s);
    ASSERT_EQ(got["choices"].size(), expected.size()) << r;
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(got["choices"][i]["text"], expected[i]) << r << " " << i;
  }
}

TEST_F(Serve, StreamIsServerSentEventsOfOneCharacterEach) {
  start();
  const json request = {{"prompt", "hello"}, {"max_tokens", 25}, {"n", 2}, {"seed", 9}, {"stream", true}};
  auto res = client().Post("/v1/completions", request.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  bool done = false;
  const std::vector<json> events = stream_events(res->body, done);
  EXPECT_TRUE(done);
  std::vector<std::string> texts(2);
  std::vector<int> finishes(2, 0);
  for (const json& e : events) {
    const json& choice = e["choices"][0];
    const std::size_t i = choice["index"];
    EXPECT_EQ(finishes[i], 0) << "an event after its choice finished";
    if (choice["finish_reason"].is_null()) {
      EXPECT_EQ(choice["text"].get<std::string>().size(), 1u) << "one character per event";
    } else {
      EXPECT_EQ(choice["finish_reason"], "length");
      ++finishes[i];
    }
    texts[i] += choice["text"].get<std::string>();
  }
  EXPECT_EQ(finishes, std::vector<int>({1, 1}));
  EXPECT_EQ(texts, sample_texts(*model, vocab, "hello", 2, 9, settings(25)));
}

// logprobs are the model's own: against a full forward over the text (nanoGPT's way).
TEST_F(Serve, LogprobsAreTheModelsNextCharacterLogProbabilities) {
  start();
  const json r = post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 8}, {"seed", 3}, {"logprobs", 3}});
  const json& lp = r["choices"][0]["logprobs"];
  const std::string text = r["choices"][0]["text"];
  ASSERT_EQ(lp["tokens"].size(), 8u);
  std::vector<int32_t> ids = vocab.encode("hello" + text, "text");
  Arena arena;
  Graph g(arena);
  NoGradGuard no_grad(g);
  Rng unused(0);
  const Gpt::Output out = model->forward(g, ids.data(), 1, static_cast<int64_t>(ids.size()), nullptr, false, unused);
  const int64_t V = model->config().vocab_size;
  for (std::size_t i = 0; i < 8; ++i) {
    const float* logits = out.logits.data + (4 + i) * V;
    double max = logits[0], sum = 0;
    for (int64_t v = 0; v < V; ++v) max = std::max(max, static_cast<double>(logits[v]));
    for (int64_t v = 0; v < V; ++v) sum += std::exp(logits[v] - max);
    const double log_z = max + std::log(sum);
    EXPECT_EQ(lp["tokens"][i], std::string(1, text[i]));
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), logits[ids[5 + i]] - log_z, 1e-4) << i;
    ASSERT_EQ(lp["top_logprobs"][i].size(), 3u);
    double best = -1e9;
    for (const auto& [token, value] : lp["top_logprobs"][i].items()) best = std::max(best, value.get<double>());
    EXPECT_NEAR(best, max - log_z, 1e-4) << i;
    EXPECT_EQ(lp["text_offset"][i], 5 + i);  // bytes of prompt + text, as OpenAI's
  }
  EXPECT_TRUE(post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 2}})["choices"][0]["logprobs"].is_null());
}

TEST_F(Serve, StopSequencesEndTheTextBeforeThem) {
  start();
  const json greedy = {{"prompt", "hello"}, {"max_tokens", 30}, {"temperature", 0}};
  const std::string whole = post("/v1/completions", greedy)["choices"][0]["text"];
  ASSERT_EQ(whole.size(), 30u);
  const std::string stop = whole.substr(12, 3);
  const std::size_t first = whole.find(stop);
  json stopped = greedy;
  stopped["stop"] = json::array({"zzz", stop});
  const json r = post("/v1/completions", stopped);
  EXPECT_EQ(r["choices"][0]["text"], whole.substr(0, first));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  stopped["stream"] = true;
  auto res = client().Post("/v1/completions", stopped.dump(), "application/json");
  ASSERT_TRUE(res);
  bool done = false;
  std::string streamed;
  for (const json& e : stream_events(res->body, done)) streamed += e["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, whole.substr(0, first)) << "no part of a stop sequence is ever sent";
}

TEST(StopMatcher, HoldsBackWhatMayStartAStopSequence) {
  StopMatcher m({"ab", "xyz"});
  EXPECT_EQ(m.push("q").text, "q");
  StopMatcher::Released held = m.push("x");
  EXPECT_EQ(held.text, "");
  EXPECT_EQ(held.tokens, 0);
  held = m.push("y");
  EXPECT_EQ(held.text, "");
  held = m.push("q");  // "xyq" can no longer become "xyz"
  EXPECT_EQ(held.text, "xyq");
  EXPECT_EQ(held.tokens, 3);
  EXPECT_EQ(m.push("a").text, "");
  const StopMatcher::Released stopped = m.push("b");
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.text, "");
  StopMatcher tail({"ab"});
  EXPECT_EQ(tail.push("a").text, "");
  EXPECT_EQ(tail.flush().text, "a");
  StopMatcher none({});
  EXPECT_EQ(none.push("a").text, "a");
}

// A megabyte of nested brackets is refused, not dumped into the message (which recursed and
// overflowed the stack: a crash of the whole server from one request).
TEST(CompletionRequest, DeeplyNestedValuesAreRefusedWithoutRecursion) {
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  for (const char* field : {"max_tokens", "stop", "temperature", "prompt", "logit_bias"}) {
    try {
      parse_completion_request(std::string("{\"prompt\": \"a\", \"") + field + "\": " + deep + "}", {},
                               symbols_vocab());
      ADD_FAILURE() << field << " accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.param(), field);
    }
  }
}

TEST(CompletionRequest, DefaultsAreGptSamples) {
  const CompletionRequest r = parse_completion_request(R"({"prompt": ["hi"]})", {}, symbols_vocab());
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(r.sampling.temperature, SamplingSettings{}.temperature);
  EXPECT_EQ(r.sampling.top_k, SamplingSettings{}.top_k);
  EXPECT_EQ(r.sampling.top_p, SamplingSettings{}.top_p);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.seed);
  EXPECT_FALSE(r.logprobs);
  EXPECT_TRUE(r.sampling.logit_bias.empty());
  EXPECT_EQ(
      parse_completion_request(R"({"prompt": "hi", "max_tokens": 3.0, "model": "x"})", {}, symbols_vocab()).max_tokens,
      3);
}

TEST_F(Serve, BadRequestsGet4xxNamingTheFieldAndTheServerGoesOn) {
  ServeOptions options;
  options.max_body_bytes = 4096;
  start(options);
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"{\"prompt\": \"hel", 400, ""},
      {"[1, 2]", 400, ""},
      {"{}", 400, "prompt"},
      {R"({"prompt": 5})", 400, "prompt"},
      {R"({"prompt": [1, 2, 3]})", 400, "prompt"},
      {R"({"prompt": ""})", 400, "prompt"},
      {R"({"prompt": "hello", "max_tokens": -1})", 400, "max_tokens"},
      {R"({"prompt": "hello", "max_tokens": 1e30})", 400, "max_tokens"},
      {R"({"prompt": "hello", "max_tokens": 18446744073709551615})", 400, "max_tokens"},
      {R"({"prompt": "hello", "max_tokens": "5"})", 400, "max_tokens"},
      {R"({"prompt": "hello", "temperature": -0.5})", 400, "temperature"},
      {R"({"prompt": "hello", "temperature": "hot"})", 400, "temperature"},
      {R"({"prompt": "hello", "top_p": 0})", 400, "top_p"},
      {R"({"prompt": "hello", "top_k": 2.5})", 400, "top_k"},
      {R"({"prompt": "hello", "n": 0})", 400, "n"},
      {R"({"prompt": "hello", "n": 1000000})", 400, "n"},
      {R"({"prompt": "hello", "seed": -3})", 400, "seed"},
      {R"({"prompt": "hello", "stream": "yes"})", 400, "stream"},
      {R"({"prompt": "hello", "stop": 7})", 400, "stop"},
      {R"({"prompt": "hello", "stop": ["a", "b", "c", "d", "e"]})", 400, "stop"},
      {R"({"prompt": "hello", "logprobs": 1000})", 400, "logprobs"},
      {R"({"prompt": "hello", "echo": true})", 400, "echo"},
      {R"({"prompt": "héllo"})", 400, "prompt"},  // é is not in the vocabulary
      {"{\"prompt\": \"h\xff\xfe\"}", 400, ""},   // not UTF-8
      {R"({"text": 5})", 400, "text"},            // (sent to /inspect below)
  };
  for (std::size_t i = 0; i + 1 < cases.size(); ++i) {
    const auto& [body, status, param] = cases[i];
    auto res = client().Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, status) << body << " -> " << res->body;
    const json error = json::parse(res->body)["error"];
    EXPECT_FALSE(error["message"].get<std::string>().empty()) << body;
    if (!param.empty()) {
      EXPECT_EQ(error["param"], param) << body;
    }
  }
  auto res = client().Post("/inspect", std::get<0>(cases.back()), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "text");
  res = client().Post("/v1/completions", "{\"prompt\": \"" + std::string(8000, 'a') + "\"}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  res = client().Get("/v1/models", {{"Range", "bytes=0-1,2-3,4-5"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 416) << "a response copied once per range asked for";
  res = client().Get("/etc/passwd");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(json::parse(res->body)["error"]["message"].get<std::string>().find("no such endpoint"), std::string::npos);
  EXPECT_TRUE(healthy());
  EXPECT_EQ(
      post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 3}})["choices"][0]["text"].get<std::string>().size(),
      3u);
}

// The answer to one request sent as written (with "Connection: close": the server closes after it).
std::string answer_to(int port, const std::string& request) {
  RawConnection connection(port);
  EXPECT_TRUE(connection.connected());
  EXPECT_TRUE(connection.send(request));
  return connection.read_until(std::string(1, '\0'));  // never sent: reads to the end
}

int status_of(const std::string& answer) { return answer.size() > 12 ? std::atoi(answer.c_str() + 9) : 0; }

std::string request_text(const std::string& method, const std::string& path, const std::string& headers,
                         const std::string& body = "") {
  return method + " " + path + " HTTP/1.1\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// A client that sends its request a byte at a time (slowloris) holds one connection until the read
// timeout drops it; everyone else is served meanwhile.
TEST_F(Serve, SlowClientIsDroppedWhileOthersAreServed) {
  ServeOptions options;
  options.read_timeout_seconds = 1;
  start(options);
  RawConnection slow(port);
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"));
  EXPECT_TRUE(healthy());
  EXPECT_EQ(
      post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 5}})["choices"][0]["text"].get<std::string>().size(),
      5u);
  const auto before = std::chrono::steady_clock::now();
  slow.read_until("\r\n\r\n");  // the server closes it (possibly after an error response)
  EXPECT_LT(std::chrono::steady_clock::now() - before, 8s);
  EXPECT_TRUE(healthy());
}

// The whole request (headers and body) has one deadline: a client that trickles a byte now and
// then, each within any per-read timeout, is still dropped when the deadline passes.
TEST_F(Serve, TricklingClientIsDroppedAtTheRequestDeadline) {
  ServeOptions options;
  options.read_timeout_seconds = 1;
  start(options);
  RawConnection slow(port);
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ";
  const auto before = std::chrono::steady_clock::now();
  bool dropped = false;
  for (int i = 0; i < 40 && !dropped; ++i) {
    dropped = !slow.send(i < static_cast<int>(head.size()) ? head.substr(i, 1) : "a");
    std::this_thread::sleep_for(100ms);
  }
  const std::string answer = slow.read_until("\r\n\r\n");
  EXPECT_EQ(status_of(answer), 408) << answer;
  EXPECT_LT(std::chrono::steady_clock::now() - before, 3s);
  EXPECT_TRUE(healthy());
}

// Connections are bounded: one beyond the limit is answered 503 at once; below the limit, clients
// that opened connections and sent nothing (or half a request) delay no one.
TEST_F(Serve, ConnectionsBeyondTheLimitGet503AndIdleOnesDelayNoOne) {
  ServeOptions options;
  options.max_connections = 40;
  start(options);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 39; ++i) {
    idle.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(idle.back()->connected());
    if (i % 2) {
      ASSERT_TRUE(idle.back()->send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    }
  }
  // The 40th connection is served within a second. (The server may count a closed connection, here
  // start()'s probe, a moment after its client closed it: on a busy machine the first try can be
  // the 41st.)
  auto before = std::chrono::steady_clock::now();
  bool fortieth_served = healthy();
  while (!fortieth_served && std::chrono::steady_clock::now() - before < 1s) {
    std::this_thread::sleep_for(10ms);
    fortieth_served = healthy();
  }
  EXPECT_TRUE(fortieth_served);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
  // The 40th, kept open: the next is one too many.
  std::unique_ptr<RawConnection> last;
  for (int i = 0; i < 100 && !last; ++i) {
    last = std::make_unique<RawConnection>(port);
    ASSERT_TRUE(last->send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    if (status_of(last->read_until("\r\n\r\n")) != 200) {
      last.reset();
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_TRUE(last);
  before = std::chrono::steady_clock::now();
  const std::string refused = answer_to(port, request_text("GET", "/health", "Host: 127.0.0.1\r\n"));
  EXPECT_EQ(status_of(refused), 503) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
  idle.clear();
  last.reset();
  bool served = false;
  for (int i = 0; i < 200 && !served; ++i) {
    served = healthy();
    if (!served) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(served) << "closed connections are not counted any more";
}

// With the default limit, 150 half-sent requests (each holding a connection until its deadline)
// do not delay /health by a second.
TEST_F(Serve, HalfSentRequestsDoNotDelayHealth) {
  start();
  std::vector<std::unique_ptr<RawConnection>> half_sent;
  for (int i = 0; i < 150; ++i) {
    half_sent.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(half_sent.back()->send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"));
  }
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(healthy());
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
}

// A client that leaves before its (not streamed) completion is done cancels it: its slot is free
// within a step or two, instead of generating up to max_tokens for no one.
TEST_F(Serve, DisconnectBeforeAWholeCompletionEndsItFreesTheSlot) {
  start();
  RawConnection vanishing(port);
  ASSERT_TRUE(
      vanishing.send(post_request("/v1/completions", json({{"prompt", "hello"}, {"max_tokens", 4096}}).dump())));
  int busy = 0;
  for (int i = 0; i < 500 && busy == 0; ++i) {
    busy = json::parse(client().Get("/health")->body)["slots_busy"];
    if (busy == 0) std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(busy, 1);
  vanishing.close();
  const auto before = std::chrono::steady_clock::now();
  for (int i = 0; i < 500 && busy != 0; ++i) {
    std::this_thread::sleep_for(5ms);
    busy = json::parse(client().Get("/health")->body)["slots_busy"];
  }
  EXPECT_EQ(busy, 0) << "the completion of a client that went away is still generating";
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
}

// HTTP/1.1 as clients speak it: "Expect: 100-continue" (curl, for bodies over 1 KiB) gets its
// go-ahead, and requests pipelined on one connection are answered in order.
TEST_F(Serve, ContinueAndPipelinedRequests) {
  start();
  const std::string body = json({{"prompt", std::string(1500, 'a')}, {"max_tokens", 2}}).dump();
  RawConnection connection(port);
  ASSERT_TRUE(
      connection.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Expect: 100-continue\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(connection.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(connection.send(body + "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
                              "GET /v1/models/test HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  const std::string answers = connection.read_until(std::string(1, '\0'));
  const std::size_t first = answers.find("HTTP/1.1 200"), second = answers.find("HTTP/1.1 200", first + 1),
                    third = answers.find("HTTP/1.1 200", second + 1);
  ASSERT_NE(third, std::string::npos) << answers;
  EXPECT_NE(answers.find("\"text_completion\""), std::string::npos);
  EXPECT_LT(answers.find("\"text_completion\""), second);
  EXPECT_LT(answers.find("\"slots_busy\""), third);
  EXPECT_NE(answers.find("\"owned_by\":\"gpt\"", third), std::string::npos);
}

TEST_F(Serve, DisconnectMidStreamFreesTheSlot) {
  start();
  RawConnection vanishing(port);
  ASSERT_TRUE(vanishing.send(
      post_request("/v1/completions", json({{"prompt", "hello"}, {"max_tokens", 4096}, {"stream", true}}).dump())));
  EXPECT_NE(vanishing.read_until("data: ").find("data: "), std::string::npos);
  EXPECT_EQ(json::parse(client().Get("/health")->body)["slots_busy"], 1);
  vanishing.close();
  int busy = 1;
  for (int i = 0; i < 500 && busy != 0; ++i) {
    std::this_thread::sleep_for(20ms);
    busy = json::parse(client().Get("/health")->body)["slots_busy"];
  }
  EXPECT_EQ(busy, 0) << "the slot of a client that went away is still generating";
}

TEST_F(Serve, ClientsBeyondTheLimitWaitThenGet503) {
  ServeOptions options;
  options.max_clients = 1;  // one generating, one waiting
  start(options);
  RawConnection holder(port);
  ASSERT_TRUE(holder.send(
      post_request("/v1/completions", json({{"prompt", "hello"}, {"max_tokens", 4096}, {"stream", true}}).dump())));
  holder.read_until("data: ");
  auto waiting = std::async(std::launch::async, [this] {
    return post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 4}});
  });
  for (int i = 0; i < 500 && json::parse(client().Get("/health")->body)["waiting"] != 1; ++i)
    std::this_thread::sleep_for(10ms);
  auto refused = client().Post("/v1/completions", R"({"prompt": "hello"})", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_NE(json::parse(refused->body)["error"]["message"].get<std::string>().find("busy"), std::string::npos);
  holder.close();  // frees the slot: the waiting request runs
  EXPECT_EQ(waiting.get()["choices"][0]["text"].get<std::string>().size(), 4u);
}

TEST_F(Serve, ShutdownWhileStreamingEndsStreamsCleanly) {
  start();
  RawConnection streaming(port);
  ASSERT_TRUE(streaming.send(
      post_request("/v1/completions", json({{"prompt", "hello"}, {"max_tokens", 4096}, {"stream", true}}).dump())));
  streaming.read_until("data: ");
  std::thread stopper([this] { server->stop(); });
  const std::string rest = streaming.read_until("data: [DONE]\n\n");
  stopper.join();
  EXPECT_NE(rest.find("\"finish_reason\":\"stop\""), std::string::npos)
      << rest.substr(rest.size() > 400 ? rest.size() - 400 : 0);
  EXPECT_NE(rest.find("data: [DONE]\n\n"), std::string::npos);
}

TEST_F(Serve, InspectGivesDistributionsAndAttentionAsGptHeads) {
  start();
  const std::string text = "hello, hello. abc de";  // 20 characters: the first 4 are cropped
  const json r = post("/inspect", {{"text", text}, {"top_k", 3}});
  EXPECT_EQ(r["dropped"], 4);
  EXPECT_EQ(r["max_length"], 16) << "this model's attention is far below the bound: its whole context";
  const int64_t n = 16, V = model->config().vocab_size;
  ASSERT_EQ(r["tokens"].size(), 16u);
  std::vector<int32_t> ids = vocab.encode(text.substr(4), "text");
  std::vector<float> logits;
  const HeadsReportInput heads = analyze_heads(*model, vocab, ids, 8, 1337, &logits);
  for (int64_t t = 0; t < n; ++t) {
    const json& p = r["positions"][t];
    ASSERT_EQ(p["top"].size(), 3u);
    if (t + 1 == n) {
      EXPECT_TRUE(p["next"].is_null());
      continue;
    }
    const float* row = logits.data() + t * V;
    double sum = 0, max = *std::max_element(row, row + V);
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - max);
    EXPECT_EQ(p["next"], text.substr(5 + t, 1));
    EXPECT_NEAR(p["p_next"].get<double>(), std::exp(row[ids[t + 1]] - max) / sum, 1e-6);
    EXPECT_NEAR(p["top"][0]["p"].get<double>(), 1 / sum, 1e-4);
  }
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(r["head_labels"][l][h], heads.scores[l * 2 + h].label);
      for (int64_t t = 0; t < n; ++t) {
        const std::vector<double> weights = r["attention"][l][h][t];
        ASSERT_EQ(weights.size(), static_cast<std::size_t>(t + 1));
        double total = 0;
        for (double w : weights) total += w;
        EXPECT_NEAR(total, 1.0, 1e-3);
        EXPECT_NEAR(weights[0], heads.prompt_attention[((l * 2 + h) * n + t) * n], 1e-4);
      }
    }
}

// An answer holds at most the stated number of attention weights: beyond it, only the last
// characters that fit are inspected, and the answer says how many that is. A 12-layer, 12-head model
// with a 1,024-character context would have answered 75 million weights.
TEST(Inspect, AnswersAtMostItsBoundOfAttentionWeights) {
  GptConfig big;
  big.n_layer = big.n_head = 12;
  big.block_size = 1024;
  EXPECT_EQ(inspect_max_length(big, kMaxInspectAttention), 170);
  GptConfig recipe;
  recipe.n_layer = recipe.n_head = 6;
  recipe.block_size = 256;
  EXPECT_EQ(inspect_max_length(recipe, kMaxInspectAttention), 256) << "the 10.7M recipe's model, whole";

  std::unique_ptr<Gpt> model = random_model(16);
  const Vocab vocab = Vocab::from_code_points(std::vector<char32_t>(kSymbols.begin(), kSymbols.end()));
  EngineOptions options;
  options.slots = 2;
  options.max_inspect_attention = 2 * 2 * 10 * 11 / 2;  // 10 characters of this 2 x 2 model
  BatchEngine engine(*model, vocab, options);
  EXPECT_EQ(engine.inspect_max_length(), 10);
  const std::string text = "hello, hello. ab";  // 16 characters: the last 10 are inspected
  const json r = engine.inspect(json({{"text", text}, {"top_k", 2}}).dump());
  EXPECT_EQ(r["dropped"], 6);
  EXPECT_EQ(r["max_length"], 10);
  ASSERT_EQ(r["tokens"].size(), 10u);
  int64_t weights = 0;
  for (const auto& layer : r["attention"])
    for (const auto& head : layer)
      for (const auto& row : head) weights += static_cast<int64_t>(row.size());
  EXPECT_EQ(weights, options.max_inspect_attention);
  // What gpt heads computes on those 10 characters (its induction test with L = block_size / 2).
  const std::vector<int32_t> ids = vocab.encode(text.substr(6), "text");
  std::vector<float> logits;
  const HeadsReportInput heads = analyze_heads(*model, vocab, ids, 8, 1337, &logits);
  const int64_t V = model->config().vocab_size;
  for (int64_t t = 0; t + 1 < 10; ++t) {
    const float* row = logits.data() + t * V;
    double sum = 0, max = *std::max_element(row, row + V);
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - max);
    EXPECT_NEAR(r["positions"][t]["p_next"].get<double>(), std::exp(row[ids[t + 1]] - max) / sum, 1e-6) << t;
  }
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(r["head_labels"][l][h], heads.scores[l * 2 + h].label);
      for (int64_t t = 0; t < 10; ++t)
        EXPECT_NEAR(r["attention"][l][h][t][0].get<double>(), heads.prompt_attention[((l * 2 + h) * 10 + t) * 10],
                    1e-4);
    }
}

// Each choice's whole text, taken from the job until it ends.
std::vector<std::string> choice_texts(CompletionJob& job) {
  std::vector<std::string> texts(static_cast<std::size_t>(job.request().n));
  std::vector<ChoiceEvent> events;
  for (bool more = true; more;) {
    events.clear();
    more = job.take(events, 1s);
    for (const ChoiceEvent& e : events) texts[e.choice] += e.text;
  }
  return texts;
}

// A request's n choices run their prompt once (its keys and values copied to the other slots),
// with gpt sample's bits: choice i is sample i.
TEST(BatchEngine, NChoicesShareOneRunOfTheirPrompt) {
  std::unique_ptr<Gpt> model = random_model(16);
  const Vocab vocab = Vocab::from_code_points(std::vector<char32_t>(kSymbols.begin(), kSymbols.end()));
  EngineOptions options;
  options.slots = 4;
  BatchEngine engine(*model, vocab, options);
  const std::string prompt = "hello, ";
  CompletionRequest request = parse_completion_request(
      json({{"prompt", prompt}, {"max_tokens", 30}, {"n", 3}, {"top_k", 6}}).dump(), {}, vocab);
  auto job = std::make_shared<CompletionJob>(std::move(request), vocab.encode(prompt, "prompt"), 5);
  engine.submit(job);
  const std::vector<std::string> texts = choice_texts(*job);
  GenerationSettings settings;
  settings.max_new_tokens = 30;
  settings.sampling.top_k = 6;
  EXPECT_EQ(texts, sample_texts(*model, vocab, prompt, 3, 5, settings));
  EXPECT_EQ(engine.load().prompt_rows, 7) << "the prompt ran once per choice, not once per request";
}

// A whole completion's thread waits for the end, not for each event: wait_finished ignores the
// events before the last, and take() still gets every one of them afterwards.
TEST(CompletionJob, WaitFinishedReturnsAtTheLastEventOnly) {
  const Vocab vocab = Vocab::from_code_points(std::vector<char32_t>(kSymbols.begin(), kSymbols.end()));
  CompletionRequest request = parse_completion_request(json({{"prompt", "ab"}, {"n", 2}}).dump(), {}, vocab);
  CompletionJob job(std::move(request), vocab.encode("ab", "prompt"), 1);
  job.publish({0, "x", {}, FinishReason::none, 1});
  job.publish({1, "y", {}, FinishReason::length, 1});
  EXPECT_FALSE(job.wait_finished(20ms));
  std::thread last([&] {
    std::this_thread::sleep_for(30ms);
    job.publish({0, "z", {}, FinishReason::stop, 2});
  });
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(job.wait_finished(5s));
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 25ms);
  last.join();
  std::vector<ChoiceEvent> events;
  EXPECT_TRUE(job.take(events, 0ms));
  EXPECT_FALSE(job.take(events, 0ms));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(events.back().last);
}

// Runs `requests` (prompt, n, seed) in one engine, all admitted in the same step (a task holds the
// engine until every one is queued); returns each request's choices' texts.
std::vector<std::vector<std::string>> run_together(
    BatchEngine& engine, const Vocab& vocab, const std::vector<std::tuple<std::string, int64_t, uint64_t>>& requests,
    int64_t max_tokens) {
  std::promise<void> entered, release;
  std::thread holder([&] {
    engine.run([&] {
      entered.set_value();
      release.get_future().wait();
    });
  });
  entered.get_future().wait();
  std::vector<std::shared_ptr<CompletionJob>> jobs;
  for (const auto& [prompt, n, seed] : requests) {
    CompletionRequest request =
        parse_completion_request(json({{"prompt", prompt}, {"max_tokens", max_tokens}, {"n", n}}).dump(), {}, vocab);
    jobs.push_back(std::make_shared<CompletionJob>(std::move(request), vocab.encode(prompt, "prompt"), seed));
    engine.submit(jobs.back());
  }
  release.set_value();
  holder.join();
  std::vector<std::vector<std::string>> texts;
  for (const auto& job : jobs) {
    texts.push_back(choice_texts(*job));
  }
  return texts;
}

// One forward per engine step: requests whose prompts differ in length, admitted together, run
// their prompts in the first step and their characters and moved windows (context_shift: at
// different steps for each) together after it, each with gpt sample's bits. Under a step_rows of
// one row, the prompts go one per step (short texts: no window moves to queue up too).
TEST(BatchEngine, EveryStepIsOneForwardOfEverySlotsRows) {
  std::unique_ptr<Gpt> model = random_model(16);
  const Vocab vocab = Vocab::from_code_points(std::vector<char32_t>(kSymbols.begin(), kSymbols.end()));
  struct Case {
    int64_t step_rows, max_tokens, forwards;
    std::vector<std::tuple<std::string, int64_t, uint64_t>> requests;  // prompt, n, seed
  };
  const std::vector<Case> cases = {{512, 40, 40, {{"hello, ", 2, 5}, {"ab", 1, 6}, {"hello. hello, ab", 1, 7}}},
                                   {1, 9, 9 + 2, {{"hello, ", 2, 5}, {"ab", 1, 6}, {"abc", 1, 7}}}};
  for (const Case& c : cases) {
    SCOPED_TRACE("step_rows " + std::to_string(c.step_rows));
    GenerationSettings settings;
    settings.max_new_tokens = c.max_tokens;
    settings.context_shift = 5;
    EngineOptions options;
    options.slots = 4;
    options.context_shift = settings.context_shift;
    options.step_rows = c.step_rows;
    BatchEngine engine(*model, vocab, options);
    const auto texts = run_together(engine, vocab, c.requests, c.max_tokens);
    int64_t prompt_rows = 0;
    for (std::size_t r = 0; r < c.requests.size(); ++r) {
      const auto& [prompt, n, seed] = c.requests[r];
      EXPECT_EQ(texts[r], sample_texts(*model, vocab, prompt, n, seed, settings)) << "request " << r;
      prompt_rows += static_cast<int64_t>(prompt.size());
    }
    EXPECT_EQ(engine.load().forwards, c.forwards);
    EXPECT_EQ(engine.load().prompt_rows, prompt_rows);
  }
}

// A flood of /inspect (threads posting in a loop) shares the engine with a running stream: at most
// one inspection between two steps, so the stream keeps receiving characters, and the characters
// are the ones it gets alone (inspections run on a sequence of the engine's Generator of their own).
TEST_F(Serve, InspectFloodCannotStopARunningCompletion) {
  ServeOptions options;
  options.limits.max_tokens = 1'000'000;
  start(options);
  RawConnection stream(port);
  ASSERT_TRUE(stream.send(
      post_request("/v1/completions",
                   json({{"prompt", "hello"}, {"max_tokens", 1'000'000}, {"seed", 11}, {"stream", true}}).dump())));
  std::string got = stream.read_until("data: ");
  ASSERT_NE(got.find("data: "), std::string::npos);
  const std::size_t before_flood = got.size();
  std::atomic<bool> flooding{true};
  std::atomic<int64_t> inspections{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 6; ++i)
    flood.emplace_back([&] {
      httplib::Client c = client();
      while (flooding) {
        auto res = c.Post("/inspect", R"({"text": "hello, hello. abc de"})", "application/json");
        if (res && res->status == 200) ++inspections;
      }
    });
  // What arrives while the flood runs, and the longest wait between two reads.
  int64_t events = 0;
  auto longest = 0ms;
  auto last = std::chrono::steady_clock::now();
  const auto end = last + 1500ms;
  char buffer[4096];
  while (std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::recv(stream.fd(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    const auto now = std::chrono::steady_clock::now();
    longest = std::max(longest, std::chrono::duration_cast<std::chrono::milliseconds>(now - last));
    last = now;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  flooding = false;
  for (std::thread& t : flood) t.join();
  stream.close();
  std::string text;
  for (std::size_t at = got.find("data: "); at != std::string::npos; at = got.find("data: ", at)) {
    const std::size_t stop = got.find("\n\n", at);
    if (stop == std::string::npos) break;
    text += json::parse(got.substr(at + 6, stop - at - 6))["choices"][0]["text"].get<std::string>();
    if (at >= before_flood) ++events;
    at = stop;
  }
  EXPECT_GT(inspections.load(), 20) << "the flood did not run";
  EXPECT_GT(events, 20) << "the stream stalled while /inspect calls ran";
  EXPECT_LT(longest, 1s) << "a wait between two of the stream's characters";
  const std::string alone = sample_texts(*model, vocab, "hello", 1, 11, settings(text.size()))[0];
  EXPECT_EQ(alone, text) << "an inspection disturbed the stream's generation";
}

// What a page on another site can send without a preflight: text/plain, its own Origin, and (by
// DNS rebinding) its own name as the Host. Each is refused alone, before the engine runs anything.
TEST_F(Serve, CrossSiteAndForeignHostRequestsAreRefused) {
  start();
  const std::string body = json({{"prompt", "hello"}, {"max_tokens", 5}}).dump();
  const std::string ok_host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n",
                    json_type = "Content-Type: application/json\r\n";
  const auto status = [&](const std::string& headers) {
    return status_of(answer_to(port, request_text("POST", "/v1/completions", headers, body)));
  };
  EXPECT_EQ(status(ok_host + json_type), 200);
  EXPECT_EQ(status("Host: localhost:" + std::to_string(port) + "\r\n" + json_type), 200);
  EXPECT_EQ(status("Host: evil.example:18080\r\nContent-Type: text/plain\r\nOrigin: http://evil.example\r\n"), 403);
  EXPECT_EQ(status("Host: evil.example:18080\r\n" + json_type), 403) << "DNS rebinding: a foreign name as Host";
  EXPECT_EQ(status(ok_host + "Content-Type: text/plain\r\n"), 415);
  EXPECT_EQ(status(ok_host + "Content-Type: application/x-www-form-urlencoded\r\n"), 415);
  EXPECT_EQ(status(ok_host), 415) << "no Content-Type";
  EXPECT_EQ(status(ok_host + json_type + "Origin: http://evil.example\r\n"), 403);
  EXPECT_EQ(status(ok_host + json_type + "Origin: null\r\n"), 403);
  EXPECT_EQ(status(ok_host + json_type + "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n"), 200)
      << "the playground's own origin";
  EXPECT_EQ(status(ok_host + "Content-Type: Application/JSON; charset=utf-8\r\n"), 200);
  const std::string refused = answer_to(port, request_text("GET", "/v1/models", "Host: rebound.example\r\n"));
  EXPECT_EQ(status_of(refused), 403);
  EXPECT_NE(refused.find("--allowed_hosts"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("Access-Control-Allow-Origin"), std::string::npos);
  const std::string same_origin = answer_to(
      port, request_text("GET", "/v1/models", ok_host + "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n"));
  EXPECT_EQ(status_of(same_origin), 200);
  EXPECT_EQ(same_origin.find("Access-Control-Allow-Origin"), std::string::npos) << "no CORS unless --cors asks";
  // None of the refused requests started a completion: with 4096 characters to write, it would
  // hold its slot long after its refusal.
  const auto busy = [&] { return json::parse(client().Get("/health")->body)["slots_busy"].get<int>(); };
  for (int i = 0; i < 400 && busy() != 0; ++i) std::this_thread::sleep_for(5ms);
  const std::string long_body = json({{"prompt", "hello"}, {"max_tokens", 4096}}).dump();
  for (const std::string& headers :
       {std::string("Host: evil.example:18080\r\nContent-Type: text/plain\r\n"),
        ok_host + "Content-Type: text/plain\r\n", ok_host + json_type + "Origin: http://evil.example\r\n"})
    EXPECT_NE(status_of(answer_to(port, request_text("POST", "/v1/completions", headers, long_body))), 200);
  EXPECT_EQ(busy(), 0);
}

// A refusal costs the request's headers only: the server answers without waiting for the body.
TEST_F(Serve, RefusalsComeBeforeTheBodyIsRead) {
  start();
  RawConnection connection(port);
  ASSERT_TRUE(
      connection.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                      "Content-Length: 1000000\r\n\r\n{\"prompt\": \""));
  const auto before = std::chrono::steady_clock::now();
  const std::string answer = connection.read_until("\r\n\r\n");
  EXPECT_EQ(status_of(answer), 415) << answer;
  EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
}

TEST_F(Serve, HostsAllowedByNameOrAnyForAWildcardBind) {
  ServeOptions options;
  options.access.allowed_hosts = {"gpt.lan"};
  start(options);
  EXPECT_EQ(status_of(answer_to(port, request_text("GET", "/health", "Host: GPT.lan.:8080\r\n"))), 200);
  EXPECT_EQ(status_of(answer_to(port, request_text("GET", "/health", "Host: [::1]:8080\r\n"))), 200);
  EXPECT_EQ(status_of(answer_to(port, request_text("GET", "/health", "Host: 10.1.2.3\r\n"))), 403)
      << "another address by number, on a loopback bind";
  EXPECT_EQ(status_of(answer_to(port, request_text("GET", "/health", "Host: other.lan\r\n"))), 403);
  AccessPolicy wildcard({"0.0.0.0", {}, {}, ""});
  EXPECT_EQ(wildcard.decide({"GET", "/health", "10.1.2.3:8080", {}, {}, {}}).action, AccessDecision::Action::proceed);
  EXPECT_EQ(wildcard.decide({"GET", "/health", "[fe80::1]", {}, {}, {}}).action, AccessDecision::Action::proceed);
  EXPECT_EQ(wildcard.decide({"GET", "/health", "attacker.example", {}, {}, {}}).action, AccessDecision::Action::refuse);
  AccessPolicy named({"192.168.1.5", {}, {}, ""});
  EXPECT_EQ(named.decide({"GET", "/health", "192.168.1.5:80", {}, {}, {}}).action, AccessDecision::Action::proceed);
  EXPECT_EQ(named.decide({"GET", "/health", "192.168.1.6", {}, {}, {}}).action, AccessDecision::Action::refuse);
  EXPECT_FALSE(named.loopback_only());
  EXPECT_TRUE(AccessPolicy({"127.0.0.1", {}, {}, ""}).loopback_only());
  AccessPolicy any({"127.0.0.1", {"*"}, {}, ""});
  EXPECT_EQ(any.decide({"GET", "/health", "proxy.example", {}, {}, {}}).action, AccessDecision::Action::proceed);
}

TEST_F(Serve, CorsOriginsGetPreflightsAndHeaders) {
  ServeOptions options;
  options.access.cors_origins = {"http://app.example:3000/"};
  start(options);
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  const std::string preflight =
      answer_to(port, request_text("OPTIONS", "/v1/completions",
                                   host + "Origin: http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\n"
                                          "Access-Control-Request-Headers: content-type, authorization\r\n"));
  EXPECT_EQ(status_of(preflight), 204) << preflight;
  EXPECT_NE(preflight.find("Access-Control-Allow-Origin: http://app.example:3000\r\n"), std::string::npos);
  EXPECT_NE(preflight.find("Access-Control-Allow-Methods: GET, POST\r\n"), std::string::npos);
  EXPECT_NE(preflight.find("Access-Control-Allow-Headers: Authorization, Content-Type\r\n"), std::string::npos);
  EXPECT_EQ(status_of(answer_to(port, request_text("OPTIONS", "/v1/completions",
                                                   host + "Origin: http://evil.example\r\n"
                                                          "Access-Control-Request-Method: POST\r\n"))),
            403);
  const std::string answer =
      answer_to(port, request_text("POST", "/v1/completions",
                                   host + "Origin: http://app.example:3000\r\nContent-Type: application/json\r\n",
                                   json({{"prompt", "hello"}, {"max_tokens", 2}}).dump()));
  EXPECT_EQ(status_of(answer), 200);
  EXPECT_NE(answer.find("Access-Control-Allow-Origin: http://app.example:3000\r\n"), std::string::npos);
  EXPECT_NE(answer.find("Vary: Origin\r\n"), std::string::npos);
  const std::string error = answer_to(
      port, request_text("POST", "/v1/completions",
                         host + "Origin: http://app.example:3000\r\nContent-Type: application/json\r\n", "{}"));
  EXPECT_EQ(status_of(error), 400);
  EXPECT_NE(error.find("Access-Control-Allow-Origin: http://app.example:3000\r\n"), std::string::npos)
      << "the page must be able to read why it was refused";
}

TEST_F(Serve, ApiKeyIsRequiredOnEveryEndpointButThePageAndHealth) {
  ServeOptions options;
  options.access.api_key = "s3cret-key";
  start(options);
  const std::string body = json({{"prompt", "hello"}, {"max_tokens", 3}}).dump();
  auto res = client().Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(json::parse(res->body)["error"]["type"], "authentication_error");
  EXPECT_EQ(json::parse(res->body)["error"]["code"], 401);
  for (const char* wrong : {"Bearer s3cret-kez", "Bearer s3cret-key2", "Bearer ", "s3cret-key", "Basic s3cret-key"}) {
    res = client().Post("/v1/completions", {{"Authorization", wrong}}, body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << wrong;
  }
  res = client().Post("/v1/completions", {{"Authorization", "Bearer s3cret-key"}}, body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["choices"][0]["text"].get<std::string>().size(), 3u);
  res = client().Post("/v1/completions", {{"Authorization", "bearer  s3cret-key "}}, body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(client().Get("/v1/models")->status, 401);
  EXPECT_EQ(client().Get("/v1/models/test")->status, 401);
  EXPECT_EQ(client().Post("/inspect", R"({"text": "hello"})", "application/json")->status, 401);
  EXPECT_EQ(client().Post("/tokenize", R"({"content": "hello"})", "application/json")->status, 401);
  EXPECT_EQ(client().Post("/detokenize", R"({"tokens": [1]})", "application/json")->status, 401);
  EXPECT_EQ(client().Get("/props")->status, 401);
  EXPECT_EQ(client().Get("/metrics")->status, 401) << "what the server does is not told without the key";
  EXPECT_EQ(client().Get("/metrics", {{"Authorization", "Bearer s3cret-key"}})->status, 200);
  EXPECT_EQ(client().Get("/no/such/path")->status, 401) << "nothing about the server is told without the key";
  EXPECT_EQ(client().Get("/v1/models", {{"Authorization", "Bearer s3cret-key"}})->status, 200);
  EXPECT_EQ(client().Get("/")->status, 200);
  EXPECT_TRUE(healthy());
}

TEST(AccessPolicy, ComparesKeysInConstantTimeAndParsesHostNames) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcd", "abc"));
  EXPECT_FALSE(constant_time_equal(std::string("ab\0", 3), "abc"));
  EXPECT_EQ(host_name("LocalHost:8080"), "localhost");
  EXPECT_EQ(host_name("[::1]:8080"), "::1");
  EXPECT_EQ(host_name("::1"), "::1");
  EXPECT_EQ(host_name("example.com."), "example.com");
  EXPECT_EQ(host_name(" 127.0.0.1 "), "127.0.0.1");
}

TEST(ServeLog, ClientTextCannotForgeLogLines) {
  EXPECT_EQ(log_safe("/v1/models"), "/v1/models");
  EXPECT_EQ(log_safe("/a\r\n[12:00:00] [info] forged"), "/a\\x0d\\x0a[12:00:00] [info] forged");
  EXPECT_EQ(log_safe("\x1b[31mred\\"), "\\x1b[31mred\\x5c");
  EXPECT_EQ(log_safe(std::string(300, 'a')), std::string(200, 'a') + "...");
}

TEST_F(Serve, LongModelPathsAreRefusedCheaply) {
  start();
  const auto before = std::chrono::steady_clock::now();
  auto res = client().Get(("/v1/models/" + std::string(8000, 'a')).c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
  EXPECT_TRUE(healthy());
}

// A SIGTERM at start-up, before httplib's listen loop runs, used to be a stop() that did nothing.
TEST_F(Serve, StopBeforeServingStartsEndsServing) {
  ServeOptions options;
  options.port = 0;
  server = std::make_unique<HttpServer>(*model, vocab, options);
  server->bind();
  server->stop();
  serving = std::thread([this] { server->serve(); });
  serving.join();
  EXPECT_TRUE(server->finished());
}

TEST_F(Serve, PageModelsAndHealth) {
  start();
  auto page = client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("</html>"), std::string::npos);
  const json models = json::parse(client().Get("/v1/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "test");
  EXPECT_EQ(models["data"][0]["meta"]["vocab"].size(), kSymbols.size());
  EXPECT_EQ(models["data"][0]["meta"]["block_size"], 16);
  // llama-server's names beside ours.
  EXPECT_EQ(models["data"][0]["meta"]["n_vocab"], kSymbols.size());
  EXPECT_EQ(models["data"][0]["meta"]["n_ctx_train"], 16);
  EXPECT_EQ(models["data"][0]["meta"]["n_embd"], 16);
  EXPECT_EQ(models["data"][0]["meta"]["n_params"], model->params().parameter_count());
  EXPECT_EQ(models["data"][0]["meta"]["parameters"], model->params().parameter_count());
  EXPECT_EQ(json::parse(client().Get("/v1/models/test")->body)["id"], "test");
  EXPECT_EQ(client().Get("/v1/models/other")->status, 404);
  EXPECT_EQ(client().Post("/health", "{}", "application/json")->status, 405);
  const std::string head = answer_to(port, request_text("HEAD", "/health", "Host: 127.0.0.1\r\n"));
  EXPECT_EQ(status_of(head), 200);
  EXPECT_NE(head.find("Content-Length: "), std::string::npos);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "") << "HEAD: no body";
  EXPECT_TRUE(healthy());
}

// logit_bias in OpenAI's shape ({"id": bias}), llama-server's ([[id or text, bias]]) and with
// characters as keys; -100 and false ban (-inf); refusals name the field.
TEST(CompletionRequest, LogitBiasInOpenAisAndLlamaServersShapes) {
  const Vocab v = symbols_vocab();  // ids: '\n' 0, ' ' 1, ... 'a' 5, ... 'h' 10, 'l' 11, 'o' 12
  const float ban = -std::numeric_limits<float>::infinity();
  const auto bias_of = [&](const std::string& logit_bias) {
    return parse_completion_request(R"({"prompt": "hi", "logit_bias": )" + logit_bias + "}", {}, v).sampling.logit_bias;
  };
  using Biases = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(bias_of(R"({"5": 2.5, "10": -100, "lo": false, "0": -1})"),
            Biases({{0, -1.0f}, {5, 2.5f}, {10, ban}, {11, ban}, {12, ban}}));
  EXPECT_EQ(bias_of(R"([[5, 1], ["h", false], [12, -100], ["a", 3]])"), Biases({{5, 3.0f}, {10, ban}, {12, ban}}));
  EXPECT_TRUE(bias_of("{}").empty());
  EXPECT_TRUE(bias_of("[]").empty());
  EXPECT_TRUE(bias_of("null").empty());
  for (const char* bad :
       {R"({"13": 1})", R"({"99999999999999999999": 1})", R"({"5": 101})", R"({"5": -100.5})", R"({"5": true})",
        R"({"5": "1"})", R"({"5": null})", R"({"é": 1})", R"([[13, 1]])", R"([[-1, 1]])", R"([[5]])", R"([5, 1])",
        R"([["7", 1]])", R"("a")", "5", R"({"\n !,.abcdehlo": false})"}) {
    try {
      bias_of(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status(), 400) << bad;
      EXPECT_EQ(e.param(), "logit_bias") << bad;
    }
  }
}

// A banned character is never drawn, whatever the seed and however many are drawn; a favoured one
// wins; the text is gpt sample's with the same bias; and logprobs stay the model's own (unbiased).
TEST_F(Serve, LogitBiasBansAndFavoursCharacters) {
  start();
  const json banned = {{"11", -100}, {"o", false}, {" ", -100}};
  const json r = post("/v1/completions", {{"prompt", "hello"},
                                          {"max_tokens", 300},
                                          {"n", 4},
                                          {"seed", 11},
                                          {"temperature", 2.0},
                                          {"top_k", 0},
                                          {"logit_bias", banned}});
  GenerationSettings biased = settings(300, 2.0, 0);
  const float ban = -std::numeric_limits<float>::infinity();
  biased.sampling.logit_bias = {{1, ban}, {11, ban}, {12, ban}};
  const std::vector<std::string> expected = sample_texts(*model, vocab, "hello", 4, 11, biased);
  const std::vector<std::string> unbiased = sample_texts(*model, vocab, "hello", 4, 11, settings(300, 2.0, 0));
  std::string all_unbiased;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string text = r["choices"][i]["text"];
    EXPECT_EQ(text, expected[i]) << i;
    EXPECT_EQ(text.find_first_of("lo "), std::string::npos) << text;
    all_unbiased += unbiased[i];
  }
  EXPECT_NE(all_unbiased.find_first_of("lo "), std::string::npos) << "the test bans characters the model draws";
  // +100 in the array form with a character: greedy draws nothing else.
  const json favoured = post("/v1/completions", {{"prompt", "hello"},
                                                 {"max_tokens", 30},
                                                 {"temperature", 0},
                                                 {"logit_bias", json::array({json::array({"c", 100})})}});
  EXPECT_EQ(favoured["choices"][0]["text"], std::string(30, 'c'));
  // logprobs: the first character's distribution does not depend on the bias.
  const json base = {{"prompt", "hello"}, {"max_tokens", 1}, {"seed", 2}, {"logprobs", 5}};
  json with_bias = base;
  with_bias["logit_bias"] = {{"c", 100}};
  const json plain_lp = post("/v1/completions", base)["choices"][0]["logprobs"];
  const json biased_lp = post("/v1/completions", with_bias)["choices"][0]["logprobs"];
  EXPECT_EQ(biased_lp["tokens"][0], "c");
  EXPECT_EQ(biased_lp["top_logprobs"][0], plain_lp["top_logprobs"][0]);
  EXPECT_LT(biased_lp["token_logprobs"][0].get<double>(), 0.0);
}

// POST /tokenize and /detokenize with llama-server's fields: content, with_pieces, tokens.
TEST_F(Serve, TokenizeAndDetokenizeAsLlamaServer) {
  start();
  EXPECT_EQ(post("/tokenize", {{"content", "hello"}}), json({{"tokens", {10, 9, 11, 11, 12}}}));
  EXPECT_EQ(post("/tokenize", {{"content", "ha!"}, {"with_pieces", true}}),
            json::parse(R"({"tokens": [{"id": 10, "piece": "h"}, {"id": 5, "piece": "a"}, {"id": 2, "piece": "!"}]})"));
  EXPECT_EQ(post("/tokenize", {{"content", ""}}), json({{"tokens", json::array()}}));
  json error = post("/tokenize", {{"content", "hex"}}, 400)["error"];
  EXPECT_EQ(error["param"], "content");
  EXPECT_NE(error["message"].get<std::string>().find("'x' at position 2"), std::string::npos) << error;
  EXPECT_EQ(post("/tokenize", {{"text", "hello"}}, 400)["error"]["param"], "content");
  EXPECT_EQ(post("/tokenize", {{"content", "hello"}, {"with_pieces", 1}}, 400)["error"]["param"], "with_pieces");
  EXPECT_EQ(post("/detokenize", {{"tokens", {10, 9, 11, 11, 12, 2}}}), json({{"content", "hello!"}}));
  EXPECT_EQ(post("/detokenize", {{"tokens", json::array()}}), json({{"content", ""}}));
  EXPECT_EQ(post("/detokenize", {{"tokens", {10, 13}}}, 400)["error"]["param"], "tokens[1]");
  EXPECT_EQ(post("/detokenize", {{"tokens", {-1}}}, 400)["error"]["param"], "tokens[0]");
  EXPECT_EQ(post("/detokenize", {{"tokens", {"h"}}}, 400)["error"]["param"], "tokens[0]");
  EXPECT_EQ(post("/detokenize", {{"tokens", "hello"}}, 400)["error"]["param"], "tokens");
  EXPECT_EQ(post("/detokenize", json::object(), 400)["error"]["param"], "tokens");
  auto res = client().Post("/tokenize", "{\"content\": ", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}

// A byte vocabulary's piece that is not UTF-8 on its own is its bytes, as llama-server's.
TEST(LlamaEndpoints, PiecesThatAreNotUtf8AreBytes) {
  const json got = json::parse(tokenize(Vocab::bytes(), R"({"content": "aé", "with_pieces": true})").dump());
  EXPECT_EQ(got, json::parse(R"({"tokens": [{"id": 97, "piece": "a"}, {"id": 195, "piece": [195]},
                                            {"id": 169, "piece": [169]}]})"));
  EXPECT_EQ(detokenize(Vocab::bytes(), R"({"tokens": [97, 195, 169]})")["content"], "aé");
}

// GET /props: llama-server's default_generation_settings (gpt sample's defaults), n_ctx, slots, model, build.
TEST_F(Serve, PropsGiveDefaultsContextSlotsAndBuild) {
  ServeOptions options;
  options.max_clients = 3;
  options.model_path = "/runs/test/model.safetensors";
  start(options);
  const json props = json::parse(client().Get("/props")->body);
  const json& defaults = props["default_generation_settings"];
  EXPECT_EQ(defaults["n_ctx"], 16);
  EXPECT_EQ(defaults["params"]["temperature"], SamplingSettings{}.temperature);
  EXPECT_EQ(defaults["params"]["top_k"], SamplingSettings{}.top_k);
  EXPECT_EQ(defaults["params"]["top_p"], SamplingSettings{}.top_p);
  EXPECT_EQ(defaults["params"]["n_predict"], CompletionRequest{}.max_tokens);
  EXPECT_EQ(defaults["params"]["max_tokens"], CompletionRequest{}.max_tokens);
  EXPECT_EQ(props["total_slots"], 3);
  EXPECT_EQ(props["model_path"], "/runs/test/model.safetensors");
  EXPECT_EQ(props["model_alias"], "test");
  EXPECT_EQ(props["build_info"].get<std::string>().rfind("gpt ", 0), 0u) << props["build_info"];
  EXPECT_FALSE(props["kernels"].get<std::string>().empty());
  // The defaults are what a request without settings gets: gpt sample's text.
  const json r = post("/v1/completions", {{"prompt", "hello"}, {"seed", 4}});
  EXPECT_EQ(r["choices"][0]["text"], sample_texts(*model, vocab, "hello", 1, 4, settings(16))[0]);
}

// Prometheus text: name -> value of every sample, and whether each has its # HELP and # TYPE.
std::map<std::string, double> prometheus_samples(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    samples[name] = std::stod(line.substr(space + 1));
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_TRUE(text.find("# TYPE " + name + " counter\n") != std::string::npos ||
                text.find("# TYPE " + name + " gauge\n") != std::string::npos)
        << name;
  }
  return samples;
}

// GET /metrics: llama-server's metrics under gpt_, counted as completions end; the rates are over
// the completions ended since the previous scrape.
TEST_F(Serve, MetricsArePrometheusTextOfLlamaServersMetrics) {
  start();
  auto res = client().Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  std::map<std::string, double> m = prometheus_samples(res->body);
  for (const char* name :
       {"gpt_prompt_tokens_total", "gpt_prompt_seconds_total", "gpt_prompt_tokens_seconds",
        "gpt_tokens_predicted_total", "gpt_tokens_predicted_seconds_total", "gpt_predicted_tokens_seconds",
        "gpt_requests_total", "gpt_requests_processing", "gpt_requests_deferred"}) {
    ASSERT_TRUE(m.count(name)) << name;
    EXPECT_EQ(m[name], 0) << name;
  }
  post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 20}, {"n", 2}});
  m = prometheus_samples(client().Get("/metrics")->body);
  EXPECT_EQ(m["gpt_prompt_tokens_total"], 5);
  EXPECT_EQ(m["gpt_tokens_predicted_total"], 40);
  EXPECT_EQ(m["gpt_requests_total"], 1);
  EXPECT_GT(m["gpt_prompt_seconds_total"], 0);
  EXPECT_GT(m["gpt_tokens_predicted_seconds_total"], 0);
  EXPECT_NEAR(m["gpt_predicted_tokens_seconds"], 40 / m["gpt_tokens_predicted_seconds_total"],
              1e-6 * m["gpt_predicted_tokens_seconds"]);
  EXPECT_GT(m["gpt_prompt_tokens_seconds"], 0);
  m = prometheus_samples(client().Get("/metrics")->body);
  EXPECT_EQ(m["gpt_predicted_tokens_seconds"], 0) << "no completion ended since the last scrape";
  EXPECT_EQ(m["gpt_tokens_predicted_total"], 40) << "counters keep counting";
  // A stream running: one slot processing; its characters count when it ends (here: cancelled).
  RawConnection streaming(port);
  ASSERT_TRUE(streaming.send(
      post_request("/v1/completions", json({{"prompt", "hello"}, {"max_tokens", 4096}, {"stream", true}}).dump())));
  EXPECT_NE(streaming.read_until("data: ").find("data: "), std::string::npos);
  EXPECT_EQ(prometheus_samples(client().Get("/metrics")->body)["gpt_requests_processing"], 1);
  streaming.close();
  for (int i = 0; i < 500 && m["gpt_requests_total"] != 2; ++i) {
    std::this_thread::sleep_for(20ms);
    m = prometheus_samples(client().Get("/metrics")->body);
  }
  EXPECT_EQ(m["gpt_requests_total"], 2);
  EXPECT_EQ(m["gpt_requests_processing"], 0);
  EXPECT_GT(m["gpt_tokens_predicted_total"], 40);
}

// llama-server's `timings`: in a whole completion, and in a stream's last event only.
TEST_F(Serve, CompletionsCarryLlamaServersTimings) {
  start();
  const json r = post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 12}, {"n", 2}});
  const json& t = r["timings"];
  for (const char* field : {"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n",
                            "predicted_ms", "predicted_per_token_ms", "predicted_per_second"})
    EXPECT_TRUE(t.contains(field) && t[field].is_number()) << field << ": " << t;
  EXPECT_EQ(t["prompt_n"], 5);
  EXPECT_EQ(t["predicted_n"], 24);
  EXPECT_GT(t["prompt_ms"].get<double>(), 0);
  EXPECT_GT(t["predicted_ms"].get<double>(), 0);
  EXPECT_NEAR(t["prompt_per_token_ms"].get<double>(), t["prompt_ms"].get<double>() / 5, 1e-9);
  EXPECT_NEAR(t["predicted_per_second"].get<double>(), 24e3 / t["predicted_ms"].get<double>(), 1e-6);
  EXPECT_NEAR(t["predicted_per_token_ms"].get<double>(), t["predicted_ms"].get<double>() / 24, 1e-9);
  auto res = client().Post("/v1/completions", json({{"prompt", "hel"}, {"max_tokens", 9}, {"stream", true}}).dump(),
                           "application/json");
  ASSERT_TRUE(res);
  bool done = false;
  const std::vector<json> events = stream_events(res->body, done);
  ASSERT_FALSE(events.empty());
  for (std::size_t i = 0; i + 1 < events.size(); ++i) EXPECT_FALSE(events[i].contains("timings")) << i;
  ASSERT_TRUE(events.back().contains("timings")) << events.back();
  EXPECT_EQ(events.back().at("timings").at("prompt_n"), 3);
  EXPECT_EQ(events.back().at("timings").at("predicted_n"), 9);
  // No characters asked for: no rates of nothing (0, not NaN).
  const json none = post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 0}})["timings"];
  EXPECT_EQ(none["predicted_n"], 0);
  EXPECT_EQ(none["predicted_per_second"], 0);
  EXPECT_EQ(none["predicted_per_token_ms"], 0);
}

// A one-layer model trained for `iterations` on a generated corpus (dir's corpus.txt); its run folder.
std::string tiny_run(const testing::ScratchDir& dir, int iterations) {
  const std::string corpus = dir.write("corpus.txt", testing::generated_corpus(8000)), out = dir.file("out");
  const std::string half = std::to_string(iterations / 2);
  EXPECT_EQ(testing::run_gpt("train --data_path " + corpus + " --out_dir " + out +
                             " --n_layer 1 --n_head 2 --n_embd 16 --block_size 8 --batch_size 4 --max_iters " +
                             std::to_string(iterations) + " --eval_interval " + half +
                             " --eval_iters 2 --warmup_iters 1 --lr_decay_iters " + std::to_string(iterations))
                .exit_code,
            0);
  return out;
}

// The port `gpt serve` printed in its log, polled every `poll` for up to 30 s; 0 if it never came.
int printed_port(const std::string& log_path, std::chrono::milliseconds poll) {
  for (auto waited = 0ms; waited < 30s; waited += poll) {
    const std::string text = std::filesystem::exists(log_path) ? read_whole_file(log_path) : "";
    const std::size_t at = text.find("http://127.0.0.1:");
    if (at != std::string::npos) return std::atoi(text.c_str() + at + 17);
    std::this_thread::sleep_for(poll);
  }
  return 0;
}

// --api_key_file: the key from the file's first line, required; a missing file or two keys are
// usage errors. And a SIGTERM the moment the address is printed ends the server cleanly (the
// handler used to be installed after the print: the signal killed it).
TEST(ServeCommand, KeyFromAFileAndSigtermAsSoonAsTheAddressIsPrinted) {
  using testing::ChildProcess, testing::ScratchDir, testing::run_gpt;
  ScratchDir dir;
  const std::string out = tiny_run(dir, 4);
  const testing::CommandResult missing = run_gpt("serve --out_dir " + out + " --api_key_file " + dir.file("none"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("--api_key_file"), std::string::npos) << missing.output;
  const std::string key_file = dir.write("key.txt", "  k3y-from-file \nsecond line\n");
  EXPECT_EQ(run_gpt("serve --out_dir " + out + " --api_key x --api_key_file " + key_file).exit_code, 2);

  const std::string log_path = dir.file("serve.log");
  ChildProcess server({"serve", "--out_dir", out, "--port", "0", "--threads", "1", "--api_key_file", key_file},
                      log_path);
  int port = printed_port(log_path, 1ms);
  ASSERT_GT(port, 0) << read_whole_file(log_path);
  server.signal(SIGTERM);
  const std::optional<int> code = server.wait_for(30s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << read_whole_file(log_path);

  const std::string keyed_log = dir.file("keyed.log");
  ChildProcess keyed({"serve", "--out_dir", out, "--port", "0", "--threads", "1", "--api_key_file", key_file},
                     keyed_log);
  port = printed_port(keyed_log, 10ms);
  ASSERT_GT(port, 0) << read_whole_file(keyed_log);
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = client.Get("/v1/models", {{"Authorization", "Bearer k3y-from-file"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  keyed.signal(SIGTERM);
  EXPECT_EQ(keyed.wait_for(30s).value_or(-1), 0);
}

// The binary: `gpt serve` prints its address, answers as `gpt sample` does, and on SIGTERM ends a
// running stream properly and exits 0.
// --step_rows bounds the prompt rows of one step: 0 could never run a prompt, so it is refused
// as a usage error naming the flag.
TEST(ServeCommand, StepRowsOutsideItsRangeIsAUsageError) {
  testing::ScratchDir dir;
  const std::string out = tiny_run(dir, 4);
  for (const char* rows : {"0", "65537"}) {
    const testing::CommandResult r = testing::run_gpt("serve --out_dir " + out + " --step_rows " + rows);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--step_rows must be in [1, 65536]"), std::string::npos) << r.output;
  }
}

TEST(ServeCommand, AnswersAsSampleDoesAndStopsCleanlyOnSigterm) {
  using testing::ChildProcess, testing::ScratchDir, testing::run_gpt;
  ScratchDir dir;
  const std::string out = tiny_run(dir, 20);
  const std::string prompt = read_whole_file(dir.file("corpus.txt")).substr(0, 3), log_path = dir.file("serve.log");
  // A stream long enough that it is still running when SIGTERM arrives: this model can write 4096
  // characters before the signal lands, and that stream ends with "length", not "stop".
  const int64_t endless = 1'000'000;
  ChildProcess server(
      {"serve", "--out_dir", out, "--port", "0", "--threads", "1", "--max_tokens", std::to_string(endless)}, log_path);
  const int port = printed_port(log_path, 10ms);
  ASSERT_GT(port, 0) << read_whole_file(log_path);
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  auto res = client.Post("/v1/completions", json({{"prompt", prompt}, {"max_tokens", 30}, {"seed", 7}}).dump(),
                         "application/json");
  ASSERT_TRUE(res);
  const std::string sampled =
      run_gpt("sample --out_dir " + out + " --prompt '" + prompt + "' --max_new_tokens 30 --seed 7 --quiet", true)
          .output;
  EXPECT_EQ(prompt + json::parse(res->body)["choices"][0]["text"].get<std::string>() + "\n---------------\n", sampled);

  auto stream = std::async(std::launch::async, [&] {
    httplib::Client streaming("127.0.0.1", port);
    streaming.set_read_timeout(60, 0);
    auto r =
        streaming.Post("/v1/completions", json({{"prompt", prompt}, {"max_tokens", endless}, {"stream", true}}).dump(),
                       "application/json");
    return r ? r->body : std::string();
  });
  for (int i = 0; i < 3000; ++i) {
    auto health = client.Get("/health");
    if (health && json::parse(health->body)["slots_busy"] == 1) break;
    std::this_thread::sleep_for(10ms);
  }
  server.signal(SIGTERM);
  const std::optional<int> code = server.wait_for(60s);
  ASSERT_TRUE(code.has_value()) << "still running 60 s after SIGTERM";
  EXPECT_EQ(*code, 0) << read_whole_file(log_path);
  const std::string body = stream.get();
  EXPECT_NE(body.find("\"finish_reason\":\"stop\""), std::string::npos);
  EXPECT_EQ(body.substr(body.size() - 14), "data: [DONE]\n\n");
}

}  // namespace
}  // namespace gpt
