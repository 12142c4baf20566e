// One HTTP/1.1 connection of `gpt serve`, on a blocking socket driven with poll(): requests read
// with Boost.Beast's parser (headers and body within one deadline, size-limited), answers
// written by hand (whole, or a chunked stream), and whether the client has gone. Every wait
// also watches the server's stop descriptor. Knows nothing of routes or models (http_server.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string path;  // the target up to '?', percent-decoded
  Headers headers;   // names lower-case, in the order sent
  std::string body;
  std::string remote;  // the client's address
  bool keep_alive = true;
  bool expects_continue = false;  // "Expect: 100-continue": the client waits for a go-ahead
  // The first header of that name (lower-case), if sent.
  std::optional<std::string> header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  Headers headers;
};

struct ConnectionLimits {
  int64_t max_header_bytes = 16 << 10;
  int64_t max_body_bytes = 1 << 20;
  std::chrono::milliseconds read_timeout{5000};   // to send a whole request, or to start the next
  std::chrono::milliseconds write_timeout{5000};  // for the client to take each write
};

class HttpConnection {
 public:
  // Takes the socket; stop_fd becomes readable when the server stops.
  HttpConnection(int fd, int stop_fd, std::string remote, const ConnectionLimits& limits);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Reads the next request's line and headers; nullopt when the connection is done (closed,
  // timed out, stopped or malformed: any answer owed was sent).
  std::optional<HttpRequest> read_head();
  // Reads its body (after a "100 Continue" if the client waits for one); false when the
  // connection is done (413 for a body over the limit, 408 when too slow, were sent).
  bool read_body(HttpRequest& request);

  // Headers added to every answer of the current request (CORS).
  void add_header(std::string name, std::string value);
  // A whole answer; `close` ends the connection after it. False when the client did not take it.
  bool send(const HttpResponse& response, bool close = false);
  // A chunked answer: begin, any number of chunks, finish.
  bool begin_stream(int status, const std::string& content_type, const Headers& headers);
  bool send_chunk(std::string_view data);
  bool finish_stream();

  // Whether the client closed its side or the connection failed (a pipelined next request is not).
  bool client_gone();
  // The status of the last answer (for the log), 0 when none.
  int status() const { return status_; }
  bool open() const { return open_; }
  bool stopping() const;

 private:
  bool read_more(std::chrono::steady_clock::time_point deadline);
  bool write_all(std::string_view data);
  void refuse(int status, const std::string& message);
  // Feeds what was read to the parser; false, after the refusal it owes, when that is not a
  // request we read (malformed, or over a size limit).
  bool parse_buffered();
  // Waits for more of the request within its deadline; false when the connection is done (with a
  // 408 when the request had begun).
  bool read_more_of_request();

  int fd_;
  int stop_fd_;
  std::string remote_;
  ConnectionLimits limits_;
  std::string buffer_;  // bytes read and not yet parsed (the start of a pipelined request)
  struct Parser;
  std::unique_ptr<Parser> parser_;  // the request being read
  Headers extra_headers_;
  std::chrono::steady_clock::time_point deadline_;
  bool keep_alive_ = true;
  bool head_only_ = false;  // a HEAD request: the answer's headers without its body
  bool open_ = true;
  int status_ = 0;
};

// The reason phrase of an HTTP status.
const char* status_text(int status);
// A refusal: its body in OpenAI's error shape, {"error": {"message", "type", "param", "code"}},
// and for a 503 "Retry-After: 1".
HttpResponse error_response(int status, const std::string& message, const std::string& param = "");
// An answer as sent: status line, headers (`extra` first), Content-Length, and the body unless
// `head_only` (the answer to a HEAD request).
std::string response_text(const HttpResponse& response, const Headers& extra, bool close, bool head_only);

}  // namespace gpt
