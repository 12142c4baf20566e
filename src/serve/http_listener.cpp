#include "serve/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
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

// Whether accept4 failed for this one connection only (gone before it was taken, a network error
// Linux reports on it, a firewall's refusal, a signal): the next one may well succeed.
bool failed_for_this_connection(int error) {
  switch (error) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

// Why accept4 fails for every connection for now, and what would help.
std::string shortage_text(int error, int64_t max_connections) {
  if (error == EMFILE) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    return "too many open files (this process may open " + std::to_string(limit.rlim_cur) +
           "): raise `ulimit -n` or lower --max_connections (" + std::to_string(max_connections) + ")";
  }
  if (error == ENFILE)
    return "too many open files in the system: raise the sysctl fs.file-max or lower --max_connections";
  if (error == ENOBUFS || error == ENOMEM) return "out of memory for sockets";
  return "accepting connections fails: " + std::error_code(error, std::generic_category()).message();
}

// After a failure that is not the connection's own (out of descriptors or memory), accept4 fails
// at once again, and the connection it could not take stays queued, so poll() wakes at once too:
// retrying at once spins a core until a descriptor is freed. As nginx does (it stops accepting
// for accept_mutex_delay, 500 ms), we wait instead, 10 ms doubling to 1 s, until one succeeds;
// the clients wait in the backlog meanwhile. One warning when a shortage begins, at most one a
// minute: a server at its limit frees a descriptor and runs short again with every connection.
class AcceptBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  // The pause before the next try.
  std::chrono::milliseconds after_failure(int error, int64_t max_connections) {
    const Clock::time_point now = Clock::now();
    if (failures_++ == 0) {
      began_ = now;
      warned_ = !last_warning_ || now - *last_warning_ >= std::chrono::minutes(1);
      if (warned_) {
        last_warning_ = now;
        spdlog::warn("{}; new connections wait until accepting succeeds again", shortage_text(error, max_connections));
      }
    }
    pause_ = std::clamp(pause_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    return pause_;
  }

  void after_success() {
    if (failures_ > 0 && warned_)
      spdlog::info("accepting connections again, after {:.1f} s and {} failed tries",
                   std::chrono::duration<double>(Clock::now() - began_).count(), failures_);
    failures_ = 0;
    pause_ = std::chrono::milliseconds(0);
  }

 private:
  int64_t failures_ = 0;  // in a row: 0 when the last try succeeded
  std::chrono::milliseconds pause_{0};
  Clock::time_point began_;
  bool warned_ = false;  // this shortage's start was logged
  std::optional<Clock::time_point> last_warning_;
};

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
  AcceptBackoff backoff;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) break;
    if (!(fds[0].revents & POLLIN)) continue;
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size, SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (!failed_for_this_connection(error)) {
        pollfd stopped = {stop_pipe_[0], POLLIN, 0};  // the pause ends early on stop(): the loop then returns
        ::poll(&stopped, 1, static_cast<int>(backoff.after_failure(error, options_.max_connections).count()));
      }
      continue;
    }
    backoff.after_success();
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
