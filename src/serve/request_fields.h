// Reading a JSON request body field by field: each reader checks one value's type and range and
// throws RequestError(400) naming the field, so every endpoint refuses bad input the same way.
// Error messages never print an array or object (its dump recurses as deep as the client nested it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "data/vocab.h"
#include "serve/completion_request.h"

namespace gpt {

[[noreturn]] void refuse_field(const std::string& field, const std::string& message);

// The body as a JSON object; RequestError(400) for malformed JSON, invalid UTF-8 or another type.
nlohmann::json parse_body_object(const std::string& body);

// An integer in [low, high]; JSON floats with an integral value (2.0) count as integers.
int64_t integer_field(const nlohmann::json& value, const std::string& field, int64_t low, int64_t high);
double number_field(const nlohmann::json& value, const std::string& field);  // finite
std::string string_field(const nlohmann::json& value, const std::string& field);
bool bool_field(const nlohmann::json& value, const std::string& field);
// A text's token ids; a character outside the vocabulary is a RequestError(400) naming it, its
// position and the field.
std::vector<int32_t> encoded_field(const Vocab& vocab, const std::string& text, const std::string& field);

// A value for an error message: a scalar's JSON (at most 80 bytes), or "an array" / "an object".
std::string shown(const nlohmann::json& value);

}  // namespace gpt
