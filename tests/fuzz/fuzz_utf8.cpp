// libFuzzer target: the UTF-8 decoder. Valid input must re-encode to the same bytes and build a
// vocabulary that encodes it; invalid input must report an offset inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/utf8.h"
#include "data/vocab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::vector<char32_t> text;
  gpt::Utf8Error error;
  if (!gpt::decode_utf8(bytes, text, error)) {
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
