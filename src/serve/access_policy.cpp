#include "serve/access_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>

#include "core/ascii.h"

namespace gpt {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_ipv4(const std::string& name, in_addr* address = nullptr) {
  in_addr parsed{};
  if (inet_pton(AF_INET, name.c_str(), &parsed) != 1) return false;
  if (address) *address = parsed;
  return true;
}

bool is_ipv6(const std::string& name) {
  in6_addr parsed{};
  return inet_pton(AF_INET6, name.c_str(), &parsed) == 1;
}

// Names that resolve to this machine without asking DNS, so no other site can be behind them.
bool is_loopback_name(const std::string& name) {
  if (name == "localhost" || name.ends_with(".localhost") || name == "::1") return true;
  in_addr address{};
  return is_ipv4(name, &address) && (ntohl(address.s_addr) >> 24) == 127;
}

bool is_wildcard(const std::string& name) { return name.empty() || name == "0.0.0.0" || name == "::"; }

// "http://host:port" -> "host:port"; the whole text when it has no scheme.
std::string_view authority_of(std::string_view origin) {
  const std::size_t scheme_end = origin.find("://");
  return scheme_end == std::string_view::npos ? origin : origin.substr(scheme_end + 3);
}

AccessDecision refusal(int status, std::string message) {
  return {AccessDecision::Action::refuse, status, std::move(message), {}};
}

}  // namespace

std::string host_name(std::string_view authority) {
  authority = ascii_trimmed(authority);
  std::string_view name = authority;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    name = close == std::string_view::npos ? authority.substr(1) : authority.substr(1, close - 1);
  } else if (const std::size_t colon = authority.find(':');
             colon != std::string_view::npos && authority.find(':', colon + 1) == std::string_view::npos) {
    name = authority.substr(0, colon);  // one colon: a port follows; more: a bare IPv6 address
  }
  std::string out = ascii_lower(name);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

bool constant_time_equal(std::string_view given, std::string_view secret) {
  // Every byte of the secret is compared whatever differs first, so the time tells nothing of
  // where the mismatch is.
  unsigned difference = given.size() == secret.size() ? 0u : 1u;
  for (std::size_t i = 0; i < secret.size(); ++i)
    difference |= static_cast<unsigned char>(i < given.size() ? given[i] : 0) ^ static_cast<unsigned char>(secret[i]);
  return difference == 0;
}

AccessPolicy::AccessPolicy(AccessOptions options)
    : options_(std::move(options)), bound_name_(host_name(options_.host)) {
  for (std::string& name : options_.allowed_hosts) name = name == "*" ? name : host_name(name);
  for (std::string& origin : options_.cors_origins) {
    origin = ascii_lower(ascii_trimmed(origin));
    while (origin.ends_with('/')) origin.pop_back();
  }
}

bool AccessPolicy::loopback_only() const { return is_loopback_name(bound_name_); }

bool AccessPolicy::host_allowed(std::string_view host_header) const {
  const std::string name = host_name(host_header);
  if (contains(options_.allowed_hosts, "*") || contains(options_.allowed_hosts, name)) return true;
  if (is_loopback_name(name) || (!is_wildcard(bound_name_) && name == bound_name_)) return true;
  // On every address of the machine, any address may be asked for by number: a DNS-rebinding
  // page needs a name.
  return is_wildcard(bound_name_) && (is_ipv4(name) || is_ipv6(name));
}

bool AccessPolicy::same_origin(std::string_view origin, const std::optional<std::string>& host_header) const {
  const std::string normalised = ascii_lower(ascii_trimmed(origin));
  return host_header && normalised != "null" && authority_of(normalised) == ascii_lower(ascii_trimmed(*host_header));
}

bool AccessPolicy::cors_allowed(std::string_view origin) const {
  return contains(options_.cors_origins, "*") || contains(options_.cors_origins, ascii_lower(ascii_trimmed(origin)));
}

bool AccessPolicy::key_accepted(const std::optional<std::string>& authorization) const {
  if (!authorization) return false;
  const std::string_view value = ascii_trimmed(*authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size() || ascii_lower(value.substr(0, kScheme.size())) != kScheme) return false;
  return constant_time_equal(ascii_trimmed(value.substr(kScheme.size())), options_.api_key);
}

AccessDecision AccessPolicy::decide(const RequestHead& request) const {
  if (request.host && !host_allowed(*request.host))
    return refusal(403, "Host \"" + host_name(*request.host).substr(0, 100) +
                            "\" is not a name of this server; to serve it, start gpt serve with --allowed_hosts NAME");
  AccessDecision decision;
  const bool cross_origin = request.origin && !same_origin(*request.origin, request.host);
  if (cross_origin) {
    if (!cors_allowed(*request.origin))
      return refusal(403,
                     "requests from pages of another origin are refused; to allow one, start gpt serve with "
                     "--cors ORIGIN");
    decision.headers = {{"Access-Control-Allow-Origin", *request.origin}, {"Vary", "Origin"}};
  }
  if (request.method == "OPTIONS") {
    decision.action = AccessDecision::Action::answer;
    decision.status = 204;
    decision.headers.emplace_back("Allow", "GET, POST, OPTIONS");
    if (cross_origin) {
      decision.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST");
      decision.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
      decision.headers.emplace_back("Access-Control-Max-Age", "600");
    }
    return decision;
  }
  const bool public_path = request.path == "/" || request.path == "/health";
  if (!options_.api_key.empty() && !public_path && !key_accepted(request.authorization)) {
    AccessDecision refused = refusal(401, "a valid API key is required: send the header \"Authorization: Bearer KEY\"");
    refused.headers = decision.headers;
    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  }
  if (request.method == "POST") {
    const std::string media_type =
        request.content_type
            ? ascii_lower(ascii_trimmed(request.content_type->substr(0, request.content_type->find(';'))))
            : "";
    if (media_type != "application/json") {
      AccessDecision refused =
          refusal(415, "the body must be JSON: send the header \"Content-Type: application/json\"");
      refused.headers = decision.headers;
      return refused;
    }
  }
  return decision;
}

}  // namespace gpt
