// Who may use `gpt serve`, decided from a request's method, path and headers before its body is
// read. Any web page the user visits can send requests to 127.0.0.1, so:
//  - the Host header must name this server (a page on a DNS-rebinding name is refused);
//  - an Origin other than the server's own is refused unless --cors allows it (then the answer
//    carries the CORS headers, and a preflight is answered);
//  - POST bodies are JSON only (a cross-site page can POST text/plain without a preflight);
//  - with an API key, every request but the page and /health carries it as a Bearer token.
// It does not parse bodies, limit connections or rate, or do TLS.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt {

struct AccessOptions {
  std::string host = "127.0.0.1";          // the address the server is bound to (--host)
  std::vector<std::string> allowed_hosts;  // more names the Host header may carry; "*": any
  std::vector<std::string> cors_origins;   // origins whose pages may call the API; "*": any
  std::string api_key;                     // empty: no key required
};

// What the policy reads of a request; a header the request lacks is nullopt.
struct RequestHead {
  std::string method;
  std::string path;
  std::optional<std::string> host, origin, content_type, authorization;
};

struct AccessDecision {
  enum class Action { proceed, answer, refuse };
  Action action = Action::proceed;
  int status = 0;                                            // answer: 204 (a preflight); refuse: 4xx
  std::string message;                                       // refuse: what the client can do about it
  std::vector<std::pair<std::string, std::string>> headers;  // to set on the response, whatever it is
};

class AccessPolicy {
 public:
  explicit AccessPolicy(AccessOptions options);
  AccessDecision decide(const RequestHead& request) const;
  // Whether the bound address is reachable from this machine only.
  bool loopback_only() const;

 private:
  bool host_allowed(std::string_view host_header) const;
  bool same_origin(std::string_view origin, const std::optional<std::string>& host_header) const;
  bool cors_allowed(std::string_view origin) const;
  bool key_accepted(const std::optional<std::string>& authorization) const;

  AccessOptions options_;
  std::string bound_name_;  // options_.host, normalised as a Host header's name is
};

// The name part of a Host header or an origin's authority ("[::1]:8080" -> "::1"), lower-case,
// without a trailing dot.
std::string host_name(std::string_view authority);
// Whether the two strings are equal, in time that depends on `secret`'s length only.
bool constant_time_equal(std::string_view given, std::string_view secret);

}  // namespace gpt
