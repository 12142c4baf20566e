#include "serve/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "core/check.h"

namespace gpt {

namespace {

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof text);
  else if (address.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text, sizeof text);
  return text;
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return -1;
  return ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(address).sin6_port
                                             : reinterpret_cast<sockaddr_in&>(address).sin_port);
}

// A socket bound to host:port and listening, or -1.
int listening_socket(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
    return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

}  // namespace

HttpListener::HttpListener(ListenerOptions options) : options_(std::move(options)) {
  GPT_CHECK(::pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) == 0, "cannot create the server's stop pipe");
}

HttpListener::~HttpListener() {
  stop();
  std::unique_lock lock(mutex_);
  ended_.wait(lock, [&] { return open_ == 0; });
  lock.unlock();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

int HttpListener::bind() {
  listen_fd_ = listening_socket(options_.host, options_.port);
  if (listen_fd_ < 0)
    throw UserError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (in use, or not an address of this machine); pick another --port, or --port 0 for any free one");
  ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  return bound_port(listen_fd_);
}

void HttpListener::stop() {
  const char byte = 1;  // never read: the pipe stays readable, waking every poll that watches it
  [[maybe_unused]] const ssize_t written = ::write(stop_pipe_[1], &byte, 1);
}

int64_t HttpListener::open_connections() const {
  std::lock_guard lock(mutex_);
  return open_;
}

// The answer to a connection beyond the limit, sent without waiting: it goes out unless the
// client's receive window is already full, which a new connection's is not.
void HttpListener::refuse_over_limit(int fd) const {
  const std::string answer =
      response_text(error_response(503, "the server has " + std::to_string(options_.max_connections) +
                                            " connections open; retry later"),
                    {}, true, false);
  [[maybe_unused]] const ssize_t sent = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  char drain[4096];  // unread request bytes at close() would reset the connection before the answer is read
  while (::recv(fd, drain, sizeof drain, MSG_DONTWAIT) > 0) {
  }
  ::close(fd);
}

void HttpListener::run(const std::function<void(HttpConnection&)>& serve) {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) break;
    if (!(fds[0].revents & POLLIN)) continue;
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size, SOCK_CLOEXEC);
    if (fd < 0) continue;  // gone before it was accepted, or out of descriptors for now
    {
      std::lock_guard lock(mutex_);
      if (open_ >= options_.max_connections) {
        refuse_over_limit(fd);
        continue;
      }
      ++open_;
    }
    try {
      std::thread([this, fd, remote = address_text(address), &serve] {
        {
          HttpConnection connection(fd, stop_pipe_[0], remote, options_.limits);
          serve(connection);
        }
        std::lock_guard lock(mutex_);
        --open_;
        ended_.notify_all();
      }).detach();
    } catch (const std::system_error&) {  // no thread to be had now: as if over the limit
      refuse_over_limit(fd);
      std::lock_guard lock(mutex_);
      --open_;
    }
  }
  std::unique_lock lock(mutex_);
  ended_.wait(lock, [&] { return open_ == 0; });
}

}  // namespace gpt
