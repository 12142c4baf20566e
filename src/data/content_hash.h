// XXH64 (Yann Collet's xxHash, 64-bit, seed 0) over a stream fed in pieces of any size: the same
// digest however the input is split. Datasets record it to notice a changed source; it is not a
// cryptographic hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpt {

class ContentHash {
 public:
  void update(std::string_view bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t n = bytes.size();
    total_ += n;
    if (buffered_ > 0) {
      const std::size_t take = std::min(n, sizeof buffer_ - buffered_);
      std::memcpy(buffer_ + buffered_, p, take);
      buffered_ += take, p += take, n -= take;
      if (buffered_ < sizeof buffer_) return;
      consume_stripe(buffer_);
      buffered_ = 0;
    }
    for (; n >= sizeof buffer_; p += sizeof buffer_, n -= sizeof buffer_) consume_stripe(p);
    std::memcpy(buffer_, p, n);
    buffered_ = n;
  }

  uint64_t digest() const {
    uint64_t h;
    if (total_ >= sizeof buffer_) {
      h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
      for (uint64_t v : v_) h = (h ^ round(0, v)) * kP1 + kP4;
    } else {
      h = kP5;
    }
    h += total_;
    const unsigned char* p = buffer_;
    std::size_t n = buffered_;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, load<uint64_t>(p)), 27) * kP1 + kP4;
    if (n >= 4) {
      h = rotl(h ^ (static_cast<uint64_t>(load<uint32_t>(p)) * kP1), 23) * kP2 + kP3;
      p += 4, n -= 4;
    }
    for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    return h ^ (h >> 32);
  }

  std::string hex() const {
    static const char* digits = "0123456789abcdef";
    std::string s(16, '0');
    const uint64_t d = digest();
    for (int i = 0; i < 16; ++i) s[i] = digits[(d >> (60 - 4 * i)) & 15];
    return s;
  }

 private:
  static constexpr uint64_t kP1 = 11400714785074694791ULL, kP2 = 14029467366897019727ULL, kP3 = 1609587929392839161ULL,
                            kP4 = 9650029242287828579ULL, kP5 = 2870177450012600261ULL;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t round(uint64_t acc, uint64_t input) { return rotl(acc + input * kP2, 31) * kP1; }
  template <class T>
  static T load(const unsigned char* p) {  // little-endian, as this project's targets are
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
  }
  void consume_stripe(const unsigned char* p) {
    for (int lane = 0; lane < 4; ++lane) v_[lane] = round(v_[lane], load<uint64_t>(p + 8 * lane));
  }

  uint64_t v_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  unsigned char buffer_[32];
  std::size_t buffered_ = 0;
  uint64_t total_ = 0;
};

}  // namespace gpt
