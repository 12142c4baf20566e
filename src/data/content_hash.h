// XXH64 (xxHash, 64-bit, seed 0; Debian's libxxhash-dev, inlined) over a stream fed in pieces of
// any size: the same digest however the input is split. Datasets record it to notice a changed
// source; it is not a cryptographic hash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL  // static functions in this header: nothing to link, for every target
#endif
#include <xxhash.h>

namespace gpt {

class ContentHash {
 public:
  ContentHash() { XXH64_reset(&state_, 0); }
  void update(std::string_view bytes) { XXH64_update(&state_, bytes.data(), bytes.size()); }
  uint64_t digest() const { return XXH64_digest(&state_); }

  std::string hex() const {
    static const char* digits = "0123456789abcdef";
    std::string s(16, '0');
    const uint64_t d = digest();
    for (int i = 0; i < 16; ++i) s[i] = digits[(d >> (60 - 4 * i)) & 15];
    return s;
  }

 private:
  XXH64_state_t state_;  // a plain struct: no allocation, copyable
};

}  // namespace gpt
