#include "serve/http_connection.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "core/ascii.h"

namespace gpt {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

struct HttpConnection::Parser {
  http::request_parser<http::string_body> parser;
};

namespace {

enum class ReadResult { data, timeout, closed };

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%2F" -> "/"; a '%' not followed by two hex digits stays as it is.
std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return value;
  return std::nullopt;
}

const char* status_text(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

HttpResponse error_response(int status, const std::string& message, const std::string& param) {
  using json = nlohmann::ordered_json;
  const char* type = status == 503   ? "server_busy"
                     : status >= 500 ? "server_error"
                     : status == 401 ? "authentication_error"
                     : status == 403 ? "permission_error"
                                     : "invalid_request_error";
  const json body = {{"error",
                      {{"message", message},
                       {"type", type},
                       {"param", param.empty() ? json(nullptr) : json(param)},
                       {"code", status}}}};
  HttpResponse response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  if (status == 503) response.headers.emplace_back("Retry-After", "1");
  return response;
}

namespace {

// The status line and headers of an answer, without the blank line that ends them.
std::string head_lines(int status, const std::string& content_type, const Headers& extra, const Headers& headers,
                       bool close) {
  std::string text = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\n";
  if (!content_type.empty()) text += "Content-Type: " + content_type + "\r\n";
  for (const Headers* list : {&extra, &headers})
    for (const auto& [name, value] : *list) text += name + ": " + value + "\r\n";
  text += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
  return text;
}

}  // namespace

std::string response_text(const HttpResponse& response, const Headers& extra, bool close, bool head_only) {
  const bool empty = response.status == 204;
  std::string text = head_lines(response.status, empty ? "" : response.content_type, extra, response.headers, close);
  if (!empty) text += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  text += "\r\n";
  if (!head_only) text += response.body;
  return text;
}

HttpConnection::HttpConnection(int fd, int stop_fd, std::string remote, const ConnectionLimits& limits)
    : fd_(fd), stop_fd_(stop_fd), remote_(std::move(remote)), limits_(limits) {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  const int one = 1;  // a stream's small writes go out at once, not after the peer's ACK
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

HttpConnection::~HttpConnection() {
  if (fd_ < 0) return;
  if (open_) ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
}

bool HttpConnection::stopping() const { return readable_now(stop_fd_); }

bool HttpConnection::read_more(Clock::time_point deadline) {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || (fds[1].revents & POLLIN)) return false;
    char chunk[16 << 10];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    open_ = false;  // closed by the client, or failed
    return false;
  }
}

void HttpConnection::refuse(int status, const std::string& message) { send(error_response(status, message), true); }

bool HttpConnection::parse_buffered() {
  if (buffer_.empty()) return true;
  boost::system::error_code ec;
  buffer_.erase(0, parser_->parser.put(boost::asio::buffer(buffer_.data(), buffer_.size()), ec));
  if (!ec || ec == http::error::need_more) return true;
  if (ec == http::error::header_limit)
    refuse(431, "the request's headers are larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
  else if (ec == http::error::body_limit)
    refuse(413, "the body is larger than the server accepts (" + std::to_string(limits_.max_body_bytes) + " bytes)");
  else
    refuse(400, "malformed HTTP request: " + ec.message());
  return false;
}

bool HttpConnection::read_more_of_request() {
  if (read_more(deadline_)) return true;
  const bool begun = parser_->parser.got_some() || !buffer_.empty();
  if (open_ && begun && !stopping())
    refuse(408, "the request took longer than " + std::to_string(limits_.read_timeout.count()) + " ms to send");
  open_ = false;
  return false;
}

std::optional<HttpRequest> HttpConnection::read_head() {
  if (!open_ || !keep_alive_) return std::nullopt;
  extra_headers_.clear();
  status_ = 0;
  parser_ = std::make_unique<Parser>();
  http::request_parser<http::string_body>& p = parser_->parser;
  p.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  p.body_limit(static_cast<std::uint64_t>(limits_.max_body_bytes));
  p.eager(false);
  deadline_ = Clock::now() + limits_.read_timeout;
  for (;;) {
    if (!parse_buffered()) return std::nullopt;
    if (p.is_header_done()) break;
    if (!read_more_of_request()) return std::nullopt;
  }
  const auto& message = p.get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  const std::string_view target = message.target();
  request.path = percent_decoded(target.substr(0, target.find('?')));
  for (const auto& field : message)
    request.headers.emplace_back(ascii_lower(field.name_string()), std::string(field.value()));
  request.remote = remote_;
  request.keep_alive = message.keep_alive();
  request.expects_continue = ascii_lower(message[http::field::expect]) == "100-continue";
  keep_alive_ = request.keep_alive;
  head_only_ = request.method == "HEAD";
  return request;
}

bool HttpConnection::read_body(HttpRequest& request) {
  http::request_parser<http::string_body>& p = parser_->parser;
  if (request.expects_continue && !p.is_done() && !write_all("HTTP/1.1 100 Continue\r\n\r\n")) return open_ = false;
  p.eager(true);
  while (!p.is_done()) {
    if (!parse_buffered()) return false;
    if (p.is_done()) break;
    if (!read_more_of_request()) return false;
  }
  request.body = std::move(p.get().body());
  return true;
}

void HttpConnection::add_header(std::string name, std::string value) {
  extra_headers_.emplace_back(std::move(name), std::move(value));
}

bool HttpConnection::send(const HttpResponse& response, bool close) {
  close = close || !keep_alive_ || stopping();
  status_ = response.status;
  const bool sent = write_all(response_text(response, extra_headers_, close, head_only_));
  if (!sent || close) {
    keep_alive_ = false;
    open_ = false;
    ::shutdown(fd_, SHUT_WR);
    // Unread request bytes at close() would reset the connection, and the client could lose the
    // answer: read what it still sends, briefly.
    const auto until = Clock::now() + std::chrono::milliseconds(200);
    while (sent && read_more(until)) buffer_.clear();
  }
  return sent;
}

bool HttpConnection::begin_stream(int status, const std::string& content_type, const Headers& headers) {
  status_ = status;
  return write_all(head_lines(status, content_type, extra_headers_, headers, !keep_alive_) +
                   "Transfer-Encoding: chunked\r\n\r\n");
}

bool HttpConnection::send_chunk(std::string_view data) {
  if (data.empty()) return open_;  // an empty chunk would end the stream
  char size[32];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk(size, static_cast<std::size_t>(n));
  chunk.append(data);
  chunk += "\r\n";
  return write_all(chunk);
}

bool HttpConnection::finish_stream() { return write_all("0\r\n\r\n"); }

bool HttpConnection::write_all(std::string_view data) {
  if (!open_) return false;
  const auto deadline = Clock::now() + limits_.write_timeout;
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) > 0) continue;
    }
    open_ = false;  // failed, or the client took nothing for write_timeout
    return false;
  }
  return true;
}

bool HttpConnection::client_gone() {
  if (!open_) return true;
  char byte = 0;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // a pipelined request waits
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  open_ = false;
  return true;
}

}  // namespace gpt
