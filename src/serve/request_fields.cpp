#include "serve/request_fields.h"

#include <cmath>

#include "core/check.h"

namespace gpt {

using nlohmann::json;

void refuse_field(const std::string& field, const std::string& message) {
  throw RequestError(400, field + ": " + message, field);
}

json parse_body_object(const std::string& body_text) {
  json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded()) throw RequestError(400, "the body is not valid JSON (or not UTF-8)");
  if (!body.is_object()) throw RequestError(400, "the body must be a JSON object");
  return body;
}

std::string shown(const json& value) {
  return value.is_structured() ? "an " + std::string(value.type_name()) : value.dump().substr(0, 80);
}

int64_t integer_field(const json& value, const std::string& field, int64_t low, int64_t high) {
  double number = 0;
  if (value.is_number_unsigned()) {  // may exceed int64_t
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(high) || static_cast<int64_t>(u) < low)
      refuse_field(field,
                   "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + shown(value));
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) {
    number = static_cast<double>(value.get<int64_t>());
  } else if (value.is_number_float() && std::nearbyint(value.get<double>()) == value.get<double>() &&
             std::fabs(value.get<double>()) < 0x1p62) {
    number = value.get<double>();
  } else {
    refuse_field(field, "must be an integer, got " + shown(value));
  }
  if (number < static_cast<double>(low) || number > static_cast<double>(high))
    refuse_field(field, "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + shown(value));
  return static_cast<int64_t>(number);
}

double number_field(const json& value, const std::string& field) {
  if (!value.is_number()) refuse_field(field, "must be a number, got " + shown(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) refuse_field(field, "must be finite");
  return number;
}

std::string string_field(const json& value, const std::string& field) {
  if (!value.is_string()) refuse_field(field, "must be a string, got " + shown(value));
  return value.get<std::string>();
}

std::vector<int32_t> encoded_field(const Vocab& vocab, const std::string& text, const std::string& field) {
  try {
    return vocab.encode(text, field);
  } catch (const UserError& e) {
    throw RequestError(400, e.what(), field);
  }
}

bool bool_field(const json& value, const std::string& field) {
  if (!value.is_boolean()) refuse_field(field, "must be true or false");
  return value.get<bool>();
}

}  // namespace gpt
