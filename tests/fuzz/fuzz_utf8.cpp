// libFuzzer target: the UTF-8 decoder. Valid input must re-encode to the same bytes and build a
// vocabulary that encodes it; invalid input must report an offset inside the input. Decoding in
// blocks (as gpt prepare reads) must agree with decoding the whole, and repairing any bytes for
// printing must give valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/utf8.h"
#include "data/vocab.h"

namespace {

// Decodes in blocks of `block` bytes, each stopping 3 bytes short of its end and carrying the rest;
// returns false at the first error, which must be the whole input's first error.
bool decode_in_blocks(const std::string& bytes, std::size_t block, std::vector<char32_t>& out, gpt::Utf8Error& error) {
  std::string carried;
  std::size_t offset = 0;  // of carried[0] in the input
  for (std::size_t i = 0; i < bytes.size() || i == 0; i += block) {
    const std::string piece = carried + bytes.substr(i, block);
    const bool at_end = i + block >= bytes.size();
    const std::size_t cut = at_end ? piece.size() : piece.size() - 3;
    const std::size_t stop = gpt::decode_utf8_sequences(
        piece, 0, cut, [&](char32_t c) { out.push_back(c); }, error);
    if (stop == gpt::kUtf8Invalid) {
      error.byte_offset += offset;
      return false;
    }
    carried = piece.substr(stop);
    offset += stop;
    if (at_end) break;
  }
  return true;
}

void check_repair(const std::string& bytes) {
  gpt::Utf8Repair repair;
  const std::size_t half = bytes.size() / 2;
  const std::string printed = repair.push(bytes.substr(0, half)) + repair.push(bytes.substr(half)) + repair.finish();
  std::vector<char32_t> decoded;
  gpt::Utf8Error error;
  if (!gpt::decode_utf8(printed, decoded, error)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::vector<char32_t> text;
  gpt::Utf8Error error;
  const bool valid = gpt::decode_utf8(bytes, text, error);
  check_repair(bytes);
  if (size >= 8) {
    std::vector<char32_t> blocks;
    gpt::Utf8Error block_error;
    const bool blocks_valid = decode_in_blocks(bytes, 4 + data[0] % 13, blocks, block_error);
    if (blocks_valid != valid) std::abort();
    if (valid && blocks != text) std::abort();
    if (!valid && block_error.byte_offset != error.byte_offset) std::abort();
  }
  if (!valid) {
    if (error.byte_offset >= size) std::abort();
    return 0;
  }
  std::string again;
  for (char32_t c : text) gpt::append_utf8(c, again);
  if (again != bytes) std::abort();
  if (!text.empty()) {
    const gpt::Vocab vocab = gpt::Vocab::from_text(text);
    if (vocab.encode(text, "fuzz").size() != text.size()) std::abort();
    gpt::Vocab::from_json(vocab.to_json(), "fuzz");
  }
  return 0;
}
