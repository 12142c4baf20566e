// The listening socket of `gpt serve`: accepts connections and serves each on a thread of its
// own, so a slow or idle client holds only its own. At most `max_connections` are open at once;
// a connection beyond that is answered 503 at once and closed, whatever it was going to ask.
// stop() wakes every waiting connection; run() returns when all of them have ended. Out of
// descriptors or socket memory, it pauses between tries (10 ms to 1 s) instead of spinning.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "serve/http_connection.h"

namespace gpt {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int64_t max_connections = 256;
  ConnectionLimits limits;
};

class HttpListener {
 public:
  explicit HttpListener(ListenerOptions options);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds and listens; returns the port (the chosen one for port 0). UserError when it cannot.
  int bind();
  // Accepts until stop(), calling `serve` on each connection's own thread; returns once every
  // connection has ended. Call once, from one thread, after bind().
  void run(const std::function<void(HttpConnection&)>& serve);
  // Any thread, any time (before run() too: run() then returns at once).
  void stop();
  int64_t open_connections() const;

 private:
  void refuse_over_limit(int fd) const;

  ListenerOptions options_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};  // [0] readable once stop() wrote to [1]
  mutable std::mutex mutex_;
  std::condition_variable ended_;
  int64_t open_ = 0;  // connections being served
};

}  // namespace gpt
