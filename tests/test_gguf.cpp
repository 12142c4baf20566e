// The GGUF export without llama.cpp (tools/check_gguf.sh runs the files in llama.cpp itself): the
// header, the metadata's keys and types, the tensors' names, shapes, types, offsets and bytes, the
// q/k row order for llama's rotation, half precision and Q8_0, the tokenizer's escaping, and the
// refusals, read back with a small GGUF reader of the test's own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <span>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/gguf.h"
#include "io/gguf_export.h"
#include "kernels/rope.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

// A GGUF file parsed back: metadata values as their type and a printable value, tensors as
// descriptions and data.
struct ParsedGguf {
  uint32_t version = 0;
  struct Value {
    uint32_t type = 0;
    std::string text;                // strings; numbers and bools printed
    std::vector<std::string> items;  // arrays (of strings, or of numbers printed)
    uint32_t item_type = 0;
  };
  std::map<std::string, Value> metadata;
  std::vector<std::string> keys_in_order;
  struct TensorInfo {
    std::vector<uint64_t> ne;  // innermost first
    uint32_t type = 0;
    uint64_t offset = 0;
    std::string data;  // from offset to the next tensor (or the end)
  };
  std::map<std::string, TensorInfo> tensors;
  std::vector<std::string> tensor_order;
  uint64_t data_start = 0;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    GPT_CHECK(at_ + sizeof(T) <= bytes_.size(), "GGUF truncated");
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string string() {
    const auto n = get<uint64_t>();
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string scalar(uint32_t type) {
    switch (type) {
      case 4:
        return std::to_string(get<uint32_t>());
      case 5:
        return std::to_string(get<int32_t>());
      case 6: {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.9g", get<float>());
        return buffer;
      }
      case 7:
        return get<uint8_t>() ? "true" : "false";
      case 8:
        return string();
    }
    ADD_FAILURE() << "unexpected GGUF value type " << type;
    return "";
  }
  uint64_t at() const { return at_; }

 private:
  const std::string& bytes_;
  uint64_t at_ = 0;
};

ParsedGguf parse(const std::string& bytes) {
  ParsedGguf g;
  Reader r(bytes);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  r.get<uint32_t>();
  g.version = r.get<uint32_t>();
  const auto n_tensors = r.get<uint64_t>(), n_kv = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = r.string();
    ParsedGguf::Value v;
    v.type = r.get<uint32_t>();
    if (v.type == 9) {
      v.item_type = r.get<uint32_t>();
      const auto n = r.get<uint64_t>();
      for (uint64_t k = 0; k < n; ++k) v.items.push_back(r.scalar(v.item_type));
    } else {
      v.text = r.scalar(v.type);
    }
    EXPECT_FALSE(g.metadata.count(key)) << "duplicate key " << key;
    g.metadata[key] = v;
    g.keys_in_order.push_back(key);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const std::string name = r.string();
    ParsedGguf::TensorInfo t;
    const auto dims = r.get<uint32_t>();
    for (uint32_t d = 0; d < dims; ++d) t.ne.push_back(r.get<uint64_t>());
    t.type = r.get<uint32_t>();
    t.offset = r.get<uint64_t>();
    g.tensors[name] = t;
    g.tensor_order.push_back(name);
  }
  g.data_start = (r.at() + 31) / 32 * 32;
  for (std::size_t i = 0; i < g.tensor_order.size(); ++i) {
    auto& t = g.tensors[g.tensor_order[i]];
    const uint64_t end =
        i + 1 < g.tensor_order.size() ? g.tensors[g.tensor_order[i + 1]].offset : bytes.size() - g.data_start;
    t.data = bytes.substr(g.data_start + t.offset, end - t.offset);
  }
  return g;
}

// llama.cpp's llama_unescape_rwkv_token, as its llama-vocab.cpp reads tokens: \t \n \r \xhh
// (lowercase), \c for any other c; everything else as it is.
std::string unescape_rwkv(const std::string& escaped) {
  std::string out;
  bool escaping = false;
  int hex_remaining = 0, hex = 0;
  for (char c : escaped) {
    if (hex_remaining) {
      hex = hex * 16 + (c >= 'a' ? c - 'a' + 10 : c - '0');
      if (--hex_remaining == 0) {
        out.push_back(static_cast<char>(hex));
        hex = 0;
      }
    } else if (escaping) {
      escaping = false;
      if (c == 't')
        out.push_back('\t');
      else if (c == 'n')
        out.push_back('\n');
      else if (c == 'r')
        out.push_back('\r');
      else if (c == 'x')
        hex_remaining = 2;
      else
        out.push_back(c);
    } else if (c == '\\') {
      escaping = true;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

GptConfig small_config() {
  GptConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.block_size = 16;
  c.vocab_size = 6;
  return c;
}

GptConfig llama_config() {
  GptConfig c = small_config();
  c.pos_encoding = PosEncoding::rope;
  c.norm = Norm::rmsnorm;
  c.mlp = Activation::swiglu;
  c.n_kv_head = 2;
  c.tie_embeddings = false;
  c.rope_theta = 500;
  return c;
}

const Vocab& test_vocab() {
  static const Vocab v = Vocab::from_code_points({U'\n', U' ', U'\\', U'a', U'\u00e9', U'\u2019'});
  return v;
}

std::vector<float> floats(std::string_view data, int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  std::memcpy(out.data(), data.data(), static_cast<std::size_t>(n) * 4);
  return out;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data, t.data + t.numel()); }

ParsedGguf export_and_parse(Gpt& model, GgufTensorType type = GgufTensorType::f32) {
  return parse(gguf_from_model(model, test_vocab(), type, "test").bytes());
}

TEST(Gguf, HeaderMagicVersionAndCounts) {
  GgufFile file;
  file.add_string("general.architecture", "gpt2");
  file.add_uint32("x.count", 7);
  const float v[3] = {1, 2, 3};
  file.add_tensor("t", {3}, v, GgufTensorType::f32);
  const std::string bytes = file.bytes();
  ASSERT_GE(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  uint32_t version;
  uint64_t tensors, kv;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&tensors, bytes.data() + 8, 8);
  std::memcpy(&kv, bytes.data() + 16, 8);
  EXPECT_EQ(version, 3u);
  EXPECT_EQ(tensors, 1u);
  EXPECT_EQ(kv, 2u);
  const ParsedGguf g = parse(bytes);
  EXPECT_EQ(g.metadata.at("x.count").text, "7");
  EXPECT_EQ(g.data_start % 32, 0u);
  EXPECT_EQ(floats(g.tensors.at("t").data, 3), std::vector<float>({1, 2, 3}));
}

TEST(Gguf, Gpt2MetadataKeysAndTypes) {
  GptConfig c = small_config();
  c.mlp_hidden = 96;
  Gpt model(c);
  model.init_weights(1);
  const ParsedGguf g = export_and_parse(model, GgufTensorType::q8_0);
  EXPECT_EQ(g.version, 3u);
  const auto expect = [&](const std::string& key, uint32_t type, const std::string& text) {
    ASSERT_TRUE(g.metadata.count(key)) << key;
    EXPECT_EQ(g.metadata.at(key).type, type) << key;
    EXPECT_EQ(g.metadata.at(key).text, text) << key;
  };
  expect("general.architecture", 8, "gpt2");
  expect("general.name", 8, "test");
  expect("general.alignment", 4, "32");
  expect("general.file_type", 4, "7");
  expect("gpt2.context_length", 4, "16");
  expect("gpt2.embedding_length", 4, "64");
  expect("gpt2.feed_forward_length", 4, "96");
  expect("gpt2.block_count", 4, "2");
  expect("gpt2.attention.head_count", 4, "4");
  expect("gpt2.attention.head_count_kv", 4, "4");
  expect("gpt2.attention.layer_norm_epsilon", 6, "9.99999975e-06");
  expect("tokenizer.ggml.model", 8, "rwkv");
  expect("tokenizer.ggml.add_bos_token", 7, "false");
  expect("tokenizer.ggml.add_eos_token", 7, "false");
  // No special ids: the rwkv tokenizer's defaults (none) hold, so no character of ours ends a text.
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    EXPECT_FALSE(g.metadata.count(key)) << key;
  const auto& tokens = g.metadata.at("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens.item_type, 8u);
  EXPECT_EQ(tokens.items, std::vector<std::string>({"\\n", " ", "\\\\", "a", "\u00e9", "\u2019"}));
  EXPECT_EQ(g.metadata.at("tokenizer.ggml.token_type").items, std::vector<std::string>(6, "1"));
  EXPECT_FALSE(g.metadata.count("gpt2.rope.freq_base"));
}

TEST(Gguf, Gpt2TensorsNamesShapesLayoutAndZeroBiases) {
  GptConfig c = small_config();
  c.n_kv_head = 2;
  Gpt model(c);
  model.init_weights(2);
  const ParsedGguf g = export_and_parse(model);
  const int64_t C = 64, qkv = 64 + 2 * 2 * 16;
  const std::map<std::string, std::vector<uint64_t>> shapes = {
      {"token_embd.weight", {64, 6}},       {"position_embd.weight", {64, 16}}, {"output_norm.weight", {64}},
      {"output_norm.bias", {64}},           {"blk.1.attn_norm.weight", {64}},   {"blk.1.attn_norm.bias", {64}},
      {"blk.1.attn_qkv.weight", {64, 128}}, {"blk.1.attn_qkv.bias", {128}},     {"blk.1.attn_output.weight", {64, 64}},
      {"blk.1.attn_output.bias", {64}},     {"blk.1.ffn_norm.weight", {64}},    {"blk.1.ffn_norm.bias", {64}},
      {"blk.1.ffn_up.weight", {64, 256}},   {"blk.1.ffn_up.bias", {256}},       {"blk.1.ffn_down.weight", {256, 64}},
      {"blk.1.ffn_down.bias", {64}}};
  for (const auto& [name, ne] : shapes) {
    ASSERT_TRUE(g.tensors.count(name)) << name;
    EXPECT_EQ(g.tensors.at(name).ne, ne) << name;
    EXPECT_EQ(g.tensors.at(name).type, 0u) << name;
  }
  EXPECT_EQ(g.tensors.size(), 4 + 2 * 12u);  // tied: no output.weight
  EXPECT_FALSE(g.tensors.count("output.weight"));
  for (const auto& [name, t] : g.tensors) EXPECT_EQ(t.offset % 32, 0u) << name;
  const GptWeights& w = model.weights();
  EXPECT_EQ(floats(g.tensors.at("token_embd.weight").data, 6 * C), values(w.wte));
  EXPECT_EQ(floats(g.tensors.at("blk.1.attn_qkv.weight").data, qkv * C), values(w.blocks[1].c_attn.weight));
  EXPECT_EQ(floats(g.tensors.at("blk.0.ffn_down.weight").data, 256 * C), values(w.blocks[0].mlp_proj.weight));
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_qkv.bias").data, qkv), std::vector<float>(qkv, 0.0f));
}

TEST(Gguf, LlamaTensorsSplitQkvAndGateUpAndInterleaveQAndK) {
  Gpt model(llama_config());
  model.init_weights(3);
  const ParsedGguf g = export_and_parse(model);
  EXPECT_EQ(g.metadata.at("general.architecture").text, "llama");
  EXPECT_EQ(g.metadata.at("llama.rope.freq_base").text, "500");
  EXPECT_EQ(g.metadata.at("llama.rope.dimension_count").text, "16");
  EXPECT_EQ(g.metadata.at("llama.attention.head_count_kv").text, "2");
  EXPECT_EQ(g.metadata.at("llama.attention.layer_norm_rms_epsilon").type, 6u);
  const int64_t C = 64, hs = 16, F = model.config().mlp_width();
  EXPECT_EQ(g.tensors.at("blk.0.attn_q.weight").ne, (std::vector<uint64_t>{64, 64}));
  EXPECT_EQ(g.tensors.at("blk.0.attn_k.weight").ne, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(g.tensors.at("blk.0.ffn_gate.weight").ne, (std::vector<uint64_t>{64, static_cast<uint64_t>(F)}));
  EXPECT_EQ(g.tensors.at("output.weight").ne, (std::vector<uint64_t>{64, 6}));
  EXPECT_FALSE(g.tensors.count("position_embd.weight"));
  EXPECT_FALSE(g.tensors.count("output_norm.bias"));
  EXPECT_FALSE(g.tensors.count("blk.0.attn_q.bias"));
  const BlockWeights& b = model.weights().blocks[1];
  const float* q = b.c_attn.weight.data;
  const float* k = q + 4 * hs * C;
  const float* v = k + 2 * hs * C;
  const std::vector<float> got_q = floats(g.tensors.at("blk.1.attn_q.weight").data, 4 * hs * C);
  // Row 2i of each head is our row i, row 2i + 1 our row i + hs/2.
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < hs / 2; ++i)
      for (int64_t col = 0; col < C; col += 7) {
        EXPECT_EQ(got_q[(h * hs + 2 * i) * C + col], q[(h * hs + i) * C + col]);
        EXPECT_EQ(got_q[(h * hs + 2 * i + 1) * C + col], q[(h * hs + i + hs / 2) * C + col]);
      }
  EXPECT_EQ(floats(g.tensors.at("blk.1.attn_k.weight").data, 2 * hs * C), interleave_rope_rows(k, 2, hs, C));
  EXPECT_EQ(floats(g.tensors.at("blk.1.attn_v.weight").data, 2 * hs * C), std::vector<float>(v, v + 2 * hs * C));
  EXPECT_EQ(floats(g.tensors.at("blk.1.ffn_gate.weight").data, F * C),
            std::vector<float>(b.c_fc.weight.data, b.c_fc.weight.data + F * C));
  EXPECT_EQ(floats(g.tensors.at("blk.1.ffn_up.weight").data, F * C),
            std::vector<float>(b.c_fc.weight.data + F * C, b.c_fc.weight.data + 2 * F * C));
}

// The reason for the reordering: llama.cpp's rotation of adjacent pairs (rope type NORM) applied to
// the reordered vector is our rotate-half rotation, reordered.
TEST(Gguf, InterleavedRowsTurnUnderAdjacentPairRopeAsOursUnderRotateHalf) {
  const int64_t hs = 8, heads = 2, pos = 5;
  const RopeTable table = make_rope_table(16, hs, 10000.0);
  std::vector<float> x(heads * hs);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.7f * static_cast<float>(i) + 0.3f);
  std::vector<float> ours(x.size());
  rope_rotate(table, pos, x.data(), ours.data(), heads);
  const std::vector<float> ours_interleaved = interleave_rope_rows(ours.data(), heads, hs, 1);
  std::vector<float> theirs = interleave_rope_rows(x.data(), heads, hs, 1);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < hs / 2; ++i) {
      const float cos = table.cos[pos * (hs / 2) + i], sin = table.sin[pos * (hs / 2) + i];
      float& a = theirs[h * hs + 2 * i];
      float& b = theirs[h * hs + 2 * i + 1];
      const float a0 = a, b0 = b;
      a = a0 * cos - b0 * sin;
      b = a0 * sin + b0 * cos;
    }
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(theirs[i], ours_interleaved[i]) << i;
}

TEST(Gguf, Qwen3ForQkNormWithUnitNormWeightsAndNoReordering) {
  GptConfig c = llama_config();
  c.qk_norm = true;
  c.tie_embeddings = true;
  Gpt model(c);
  model.init_weights(4);
  const ParsedGguf g = export_and_parse(model);
  EXPECT_EQ(g.metadata.at("general.architecture").text, "qwen3");
  EXPECT_EQ(g.metadata.at("qwen3.attention.key_length").text, "16");
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_q_norm.weight").data, 16), std::vector<float>(16, 1.0f));
  EXPECT_EQ(g.tensors.at("blk.0.attn_k_norm.weight").ne, std::vector<uint64_t>{16});
  const float* q = model.weights().blocks[0].c_attn.weight.data;
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_q.weight").data, 64 * 64), std::vector<float>(q, q + 64 * 64));
  EXPECT_FALSE(g.tensors.count("output.weight"));
}

TEST(Gguf, LlamaBiasesAreSplitAndReorderedLikeTheirRows) {
  GptConfig c = llama_config();
  c.bias = true;
  Gpt model(c);
  model.init_weights(5);
  const BlockWeights& b = model.weights().blocks[0];
  for (float& x : std::span(b.c_attn.bias.data, static_cast<std::size_t>(b.c_attn.bias.numel())))
    x = static_cast<float>(&x - b.c_attn.bias.data);
  const ParsedGguf g = export_and_parse(model);
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_q.bias").data, 64), interleave_rope_rows(b.c_attn.bias.data, 4, 16, 1));
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_k.bias").data, 32)[1], 64.0f + 8.0f);
  EXPECT_EQ(floats(g.tensors.at("blk.0.attn_v.bias").data, 32)[1], 97.0f);
  EXPECT_TRUE(g.tensors.count("blk.0.ffn_gate.bias") && g.tensors.count("blk.0.ffn_down.bias"));
}

TEST(Gguf, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds up past the largest half
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie: to the even 1.0
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  // Half an ulp: 2^-11 relative for normals, 2^-25 absolute below 2^-14 (subnormal halves).
  for (float x : {0.1f, -3.14159f, 1e-6f, 1000.5f})
    EXPECT_NEAR(half_to_float(float_to_half(x)), x, std::max(std::fabs(x) / 2048, std::ldexp(1.0f, -25))) << x;
}

TEST(Gguf, Q8RoundTripWithinHalfAStep) {
  std::vector<float> x(64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.37f * static_cast<float>(i)) * (i < 32 ? 1.0f : 0.01f);
  x[40] = 0;
  const std::string blocks = quantize_q8_0(x.data(), 64);
  ASSERT_EQ(blocks.size(), 2u * 34u);
  const std::vector<float> back = dequantize_q8_0(blocks, 64);
  for (int block = 0; block < 2; ++block) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[block * 32 + j]));
    const float step = amax / 127;
    EXPECT_EQ(static_cast<uint8_t>(blocks[block * 34]) | (static_cast<uint8_t>(blocks[block * 34 + 1]) << 8),
              float_to_half(step));
    for (int j = 0; j < 32; ++j) EXPECT_NEAR(back[block * 32 + j], x[block * 32 + j], step * 0.5f + step * 1e-3f);
  }
  EXPECT_EQ(back[40], 0.0f);
  const std::vector<float> zeros(32, 0.0f);
  EXPECT_EQ(dequantize_q8_0(quantize_q8_0(zeros.data(), 32), 32), zeros);
}

TEST(Gguf, QuantizedExportKeepsNormsF32AndShortRowsF16) {
  GptConfig c = small_config();
  c.n_embd = 48;  // rows of 48 values: not whole Q8_0 blocks
  c.n_head = 3;
  Gpt model(c);
  model.init_weights(6);
  const ParsedGguf g = export_and_parse(model, GgufTensorType::q8_0);
  EXPECT_EQ(g.tensors.at("blk.0.attn_qkv.weight").type, 1u);   // F16
  EXPECT_EQ(g.tensors.at("blk.0.ffn_down.weight").type, 8u);   // rows of 192: Q8_0
  EXPECT_EQ(g.tensors.at("blk.0.attn_norm.weight").type, 0u);  // F32
  EXPECT_EQ(g.tensors.at("position_embd.weight").type, 0u);
  const ParsedGguf bf16 = export_and_parse(model, GgufTensorType::bf16);
  EXPECT_EQ(bf16.tensors.at("token_embd.weight").type, 30u);
  EXPECT_EQ(bf16.metadata.at("general.file_type").text, "32");
}

TEST(Gguf, TokensEscapeAsLlamaCppUnescapesThem) {
  EXPECT_EQ(rwkv_escape("\\"), "\\\\");
  EXPECT_EQ(rwkv_escape("\n"), "\\n");
  EXPECT_EQ(rwkv_escape("\t"), "\\t");
  EXPECT_EQ(rwkv_escape("\r"), "\\r");
  EXPECT_EQ(rwkv_escape(std::string(1, '\0')), "\\x00");
  EXPECT_EQ(rwkv_escape("\x7f"), "\\x7f");
  EXPECT_EQ(rwkv_escape("\xc3"), "\\xc3");  // a lone byte of a byte vocabulary
  EXPECT_EQ(rwkv_escape("\xc3\xa9"), "\xc3\xa9");
  EXPECT_EQ(rwkv_escape("x"), "x");
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    EXPECT_EQ(unescape_rwkv(rwkv_escape(one)), one) << b;
  }
  for (const char* s : {"\u00e9", "\u2014", "\u2019", "\U0001F600", "a\\b"})
    EXPECT_EQ(unescape_rwkv(rwkv_escape(s)), s);
}

TEST(Gguf, RefusalsNameEveryBlockingKeyAndWriteNoFile) {
  GptConfig c = small_config();
  EXPECT_TRUE(gguf_refusals(c).empty());
  c.pos_encoding = PosEncoding::rope;
  c.norm = Norm::rmsnorm;
  c.mlp = Activation::relu2;
  c.qk_norm = true;
  c.logit_softcap = 30;
  const std::vector<std::string> why = gguf_refusals(c);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_NE(why[0].find("logit_softcap"), std::string::npos);
  EXPECT_NE(why[1].find("mlp \"relu2\""), std::string::npos);
  GptConfig learned_qk = small_config();
  learned_qk.qk_norm = true;
  ASSERT_EQ(gguf_refusals(learned_qk).size(), 1u);
  EXPECT_NE(gguf_refusals(learned_qk)[0].find("qk_norm"), std::string::npos);
  GptConfig mixed = small_config();
  mixed.pos_encoding = PosEncoding::rope;  // with layernorm and gelu
  EXPECT_EQ(gguf_refusals(mixed).size(), 2u);
  GptConfig qwen_bias = llama_config();
  qwen_bias.qk_norm = true;
  qwen_bias.bias = true;
  EXPECT_EQ(gguf_refusals(qwen_bias).size(), 1u);
  GptConfig learned_rms = small_config();
  learned_rms.norm = Norm::rmsnorm;
  learned_rms.mlp = Activation::swiglu;
  EXPECT_EQ(gguf_refusals(learned_rms).size(), 2u);
  GptConfig embeddings = llama_config();
  embeddings.bigram_embedding = true;
  embeddings.value_embeddings = true;
  ASSERT_EQ(gguf_refusals(embeddings).size(), 2u);
  EXPECT_NE(gguf_refusals(embeddings)[0].find("bigram_embedding"), std::string::npos);
  EXPECT_NE(gguf_refusals(embeddings)[1].find("value_embeddings"), std::string::npos);

  testing::ScratchDir dir;
  Gpt model(c);
  model.init_weights(7);
  const std::string path = dir.file("refused.gguf");
  try {
    export_gguf(model, test_vocab(), GgufTensorType::f32, "x", path);
    ADD_FAILURE() << "no refusal";
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("logit_softcap"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.file("")));
  Gpt fine(small_config());
  fine.init_weights(8);
  export_gguf(fine, test_vocab(), GgufTensorType::f16, "x", path);
  EXPECT_EQ(parse(read_whole_file(path)).tensors.at("blk.0.ffn_up.weight").type, 1u);
}

TEST(Gguf, TensorTypeNames) {
  EXPECT_EQ(parse_gguf_tensor_type("q8_0"), GgufTensorType::q8_0);
  EXPECT_EQ(parse_gguf_tensor_type("BF16"), GgufTensorType::bf16);
  EXPECT_THROW(parse_gguf_tensor_type("Q4_0"), UserError);
}

}  // namespace
}  // namespace gpt
