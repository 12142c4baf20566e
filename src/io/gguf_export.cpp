#include "io/gguf_export.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/check.h"

namespace gpt {

namespace {

// What our kernels use (kernels/layernorm.h, kernels/rmsnorm.h); llama.cpp reads it from the file.
constexpr float kNormEps = 1e-5f;

// llama.cpp's general.file_type (enum llama_ftype): what most of the weights are.
uint32_t file_type(GgufTensorType type) {
  switch (type) {
    case GgufTensorType::f32:
      return 0;  // LLAMA_FTYPE_ALL_F32
    case GgufTensorType::f16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case GgufTensorType::q8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case GgufTensorType::bf16:
      return 32;  // LLAMA_FTYPE_MOSTLY_BF16
  }
  return 0;
}

// Rows [first, first + count) of a row-major [*, cols] matrix.
std::vector<float> rows_of(const float* data, int64_t first, int64_t count, int64_t cols) {
  return std::vector<float>(data + first * cols, data + (first + count) * cols);
}

// The length of the UTF-8 character starting with byte b (0 when b cannot start one).
int utf8_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xe0) == 0xc0) return 2;
  if ((b & 0xf0) == 0xe0) return 3;
  if ((b & 0xf8) == 0xf0) return 4;
  return 0;
}

class TensorWriter {
 public:
  TensorWriter(GgufFile& file, GgufTensorType type) : file_(file), type_(type) {}
  // A weight matrix [rows, cols] in the export's type.
  void matrix(const std::string& name, const float* data, int64_t rows, int64_t cols) {
    const GgufTensorType type = type_ == GgufTensorType::q8_0 && cols % kQ8BlockSize != 0 ? GgufTensorType::f16 : type_;
    file_.add_tensor(name, {rows, cols}, data, type);
  }
  // Norm weights, biases, position embeddings: F32 always (ggml adds and multiplies them in F32).
  void vector(const std::string& name, const float* data, int64_t n) {
    file_.add_tensor(name, {n}, data, GgufTensorType::f32);
  }
  void f32(const std::string& name, const std::vector<int64_t>& shape, const float* data) {
    file_.add_tensor(name, shape, data, GgufTensorType::f32);
  }
  void vector_or_zeros(const std::string& name, const Tensor& t, int64_t n) {
    if (t.data) return vector(name, t.data, n);
    const std::vector<float> zeros(static_cast<std::size_t>(n), 0.0f);
    vector(name, zeros.data(), n);
  }

 private:
  GgufFile& file_;
  GgufTensorType type_;
};

void add_tokenizer(GgufFile& file, const Vocab& vocab) {
  std::vector<std::string> tokens;
  for (int id = 0; id < vocab.size(); ++id) tokens.push_back(rwkv_escape(vocab.decode(id)));
  file.add_string("tokenizer.ggml.model", "rwkv");
  file.add_string_array("tokenizer.ggml.tokens", tokens);
  file.add_int32_array("tokenizer.ggml.token_type", std::vector<int32_t>(tokens.size(), 1));  // NORMAL
  // The rwkv tokenizer has no BOS, EOS, UNK or PAD unless the file names one: every id is a
  // character of ours, none is an end-of-sequence by default, and nothing is added to a prompt.
  file.add_bool("tokenizer.ggml.add_bos_token", false);
  file.add_bool("tokenizer.ggml.add_eos_token", false);
}

// gpt2: every bias exists (zeros where our config has none); q, k, v stay one fused matrix in our
// row order (q's heads, then k's, then v's), which is llama.cpp's.
void add_gpt2_blocks(TensorWriter& out, const GptConfig& c, const GptWeights& w) {
  const int64_t C = c.n_embd, F = c.mlp_width(), qkv = c.qkv_width();
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    const BlockWeights& b = w.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    out.vector(p + "attn_norm.weight", b.ln_1.weight.data, C);
    out.vector_or_zeros(p + "attn_norm.bias", b.ln_1.bias, C);
    out.matrix(p + "attn_qkv.weight", b.c_attn.weight.data, qkv, C);
    out.vector_or_zeros(p + "attn_qkv.bias", b.c_attn.bias, qkv);
    out.matrix(p + "attn_output.weight", b.attn_proj.weight.data, C, C);
    out.vector_or_zeros(p + "attn_output.bias", b.attn_proj.bias, C);
    out.vector(p + "ffn_norm.weight", b.ln_2.weight.data, C);
    out.vector_or_zeros(p + "ffn_norm.bias", b.ln_2.bias, C);
    out.matrix(p + "ffn_up.weight", b.c_fc.weight.data, F, C);
    out.vector_or_zeros(p + "ffn_up.bias", b.c_fc.bias, F);
    out.matrix(p + "ffn_down.weight", b.mlp_proj.weight.data, C, F);
    out.vector_or_zeros(p + "ffn_down.bias", b.mlp_proj.bias, C);
  }
}

// llama and qwen3: q, k and v as three matrices, c_fc's halves as gate and up; for llama, q's and
// k's rows reordered for its adjacent-pair rotation (interleave_rope_rows). Biases only where ours
// exist (llama.cpp's llama reads them when present; qwen3 is refused with bias).
void add_llama_blocks(TensorWriter& out, const GptConfig& c, const GptWeights& w, bool interleave) {
  const int64_t C = c.n_embd, F = c.mlp_width(), H = c.n_head, KV = c.kv_heads(), hs = c.head_size();
  const std::vector<float> ones(static_cast<std::size_t>(hs), 1.0f);
  // Rows [first, first + heads * hs) of a [*, cols] tensor: one of q, k, v, reordered for RoPE if asked.
  const auto part = [&](const float* data, int64_t first_head, int64_t heads, int64_t cols, bool rope) {
    return rope && interleave ? interleave_rope_rows(data + first_head * hs * cols, heads, hs, cols)
                              : rows_of(data, first_head * hs, heads * hs, cols);
  };
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    const BlockWeights& b = w.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    out.vector(p + "attn_norm.weight", b.ln_1.weight.data, C);
    const struct {
      const char* name;
      int64_t first_head, heads;
      bool rope;
    } qkv[] = {{"attn_q", 0, H, true}, {"attn_k", H, KV, true}, {"attn_v", H + KV, KV, false}};
    for (const auto& m : qkv) {
      out.matrix(p + m.name + ".weight", part(b.c_attn.weight.data, m.first_head, m.heads, C, m.rope).data(),
                 m.heads * hs, C);
      if (b.c_attn.bias.data)
        out.vector(p + m.name + ".bias", part(b.c_attn.bias.data, m.first_head, m.heads, 1, m.rope).data(),
                   m.heads * hs);
    }
    if (c.qk_norm) {  // ours has no weights: llama.cpp's RMSNorm times ones is the same
      out.vector(p + "attn_q_norm.weight", ones.data(), hs);
      out.vector(p + "attn_k_norm.weight", ones.data(), hs);
    }
    out.matrix(p + "attn_output.weight", b.attn_proj.weight.data, C, C);
    if (b.attn_proj.bias.data) out.vector(p + "attn_output.bias", b.attn_proj.bias.data, C);
    out.vector(p + "ffn_norm.weight", b.ln_2.weight.data, C);
    out.matrix(p + "ffn_gate.weight", b.c_fc.weight.data, F, C);  // c_fc's first F rows: the gate
    out.matrix(p + "ffn_up.weight", b.c_fc.weight.data + F * C, F, C);
    out.matrix(p + "ffn_down.weight", b.mlp_proj.weight.data, C, F);
    if (b.c_fc.bias.data) {
      out.vector(p + "ffn_gate.bias", b.c_fc.bias.data, F);
      out.vector(p + "ffn_up.bias", b.c_fc.bias.data + F, F);
    }
    if (b.mlp_proj.bias.data) out.vector(p + "ffn_down.bias", b.mlp_proj.bias.data, C);
  }
}

std::string shortest(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

std::vector<std::string> gguf_refusals(const GptConfig& c) {
  std::vector<std::string> why;
  if (c.logit_softcap > 0)
    why.push_back(
        "logit_softcap " + shortest(c.logit_softcap) +
        ": llama.cpp's gpt2, llama and qwen3 architectures do not cap the logits (train with logit_softcap 0)");
  if (c.bigram_embedding)
    why.push_back(
        "bigram_embedding: no llama.cpp architecture adds an embedding of the previous and current token (train "
        "with bigram_embedding false)");
  if (c.value_embeddings)
    why.push_back(
        "value_embeddings: no llama.cpp architecture adds a token's embedding to attention's values (train with "
        "value_embeddings false)");
  if (c.mlp == Activation::relu2)
    why.push_back(
        "mlp \"relu2\": no llama.cpp architecture of this shape squares a ReLU (use \"gelu\" with learned "
        "positions, or \"swiglu\" with pos_encoding \"rope\")");
  if (c.pos_encoding == PosEncoding::learned) {
    if (c.norm == Norm::rmsnorm)
      why.push_back(
          "norm \"rmsnorm\" with pos_encoding \"learned\": llama.cpp's gpt2 architecture uses LayerNorm (use "
          "\"layernorm\", or pos_encoding \"rope\" with mlp \"swiglu\")");
    if (c.mlp == Activation::swiglu)
      why.push_back(
          "mlp \"swiglu\" with pos_encoding \"learned\": llama.cpp's gpt2 architecture uses GELU (use \"gelu\", or "
          "pos_encoding \"rope\" with norm \"rmsnorm\")");
    if (c.qk_norm)
      why.push_back(
          "qk_norm with pos_encoding \"learned\": llama.cpp's gpt2 architecture has no QK-norm (qwen3's has, "
          "with pos_encoding \"rope\", norm \"rmsnorm\" and mlp \"swiglu\")");
  } else {
    if (c.norm == Norm::layernorm)
      why.push_back(
          "norm \"layernorm\" with pos_encoding \"rope\": llama.cpp's llama and qwen3 architectures use RMSNorm "
          "(use \"rmsnorm\")");
    if (c.mlp == Activation::gelu)
      why.push_back(
          "mlp \"gelu\" with pos_encoding \"rope\": llama.cpp's llama and qwen3 architectures use SwiGLU (use "
          "\"swiglu\")");
    if (c.qk_norm && c.bias)
      why.push_back("bias with qk_norm: llama.cpp's qwen3 architecture has no bias tensors (use bias false)");
  }
  return why;
}

std::string gguf_architecture(const GptConfig& c) {
  if (c.pos_encoding == PosEncoding::learned) return "gpt2";
  return c.qk_norm ? "qwen3" : "llama";
}

GgufTensorType parse_gguf_tensor_type(const std::string& text) {
  std::string upper = text;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
  for (GgufTensorType t : {GgufTensorType::f32, GgufTensorType::f16, GgufTensorType::bf16, GgufTensorType::q8_0})
    if (upper == gguf_tensor_type_name(t)) return t;
  throw UserError("--tensor_type must be F32, F16, BF16 or Q8_0, got \"" + text + "\"");
}

std::string rwkv_escape(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    const int length = utf8_length(b);
    bool valid = length > 1 && i + length <= bytes.size();
    for (int k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(bytes[i + k]) & 0xc0) == 0x80;
    if (valid) {  // a whole multi-byte character: written as it is, readable in any GGUF viewer
      out.append(bytes.substr(i, static_cast<std::size_t>(length)));
      i += static_cast<std::size_t>(length);
      continue;
    }
    if (b == '\\')
      out += "\\\\";
    else if (b == '\t')
      out += "\\t";
    else if (b == '\n')
      out += "\\n";
    else if (b == '\r')
      out += "\\r";
    else if (b < 0x20 || b >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);  // lowercase: llama.cpp reads only a-f
      out += hex;
    } else
      out.push_back(static_cast<char>(b));
    ++i;
  }
  return out;
}

std::vector<float> interleave_rope_rows(const float* rows, int64_t heads, int64_t head_size, int64_t cols) {
  std::vector<float> out(static_cast<std::size_t>(heads * head_size * cols));
  const int64_t half = head_size / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t pair = 0; pair < 2; ++pair) {
        const float* from = rows + (h * head_size + i + pair * half) * cols;
        std::copy(from, from + cols, out.begin() + (h * head_size + 2 * i + pair) * cols);
      }
  return out;
}

GgufFile gguf_from_model(Gpt& model, const Vocab& vocab, GgufTensorType type, const std::string& name) {
  const GptConfig& c = model.config();
  GPT_CHECK(gguf_refusals(c).empty(), "gguf_from_model on a config that does not export");
  GPT_CHECK(vocab.size() == c.vocab_size, "vocabulary and config disagree");
  const std::string arch = gguf_architecture(c);
  const GptWeights& w = model.weights();
  const int64_t C = c.n_embd, V = c.vocab_size, H = c.n_head, KV = c.kv_heads(), hs = c.head_size();
  const int64_t F = c.mlp_width(), L = c.n_layer;

  GgufFile file;
  const auto key = [&](const char* k) { return arch + "." + k; };
  file.add_string("general.architecture", arch);
  file.add_string("general.name", name);
  file.add_uint32("general.alignment", kGgufAlignment);
  file.add_uint32("general.file_type", file_type(type));
  file.add_uint32(key("vocab_size"), static_cast<uint32_t>(V));
  file.add_uint32(key("context_length"), static_cast<uint32_t>(c.block_size));
  file.add_uint32(key("embedding_length"), static_cast<uint32_t>(C));
  file.add_uint32(key("feed_forward_length"), static_cast<uint32_t>(F));
  file.add_uint32(key("block_count"), static_cast<uint32_t>(L));
  file.add_uint32(key("attention.head_count"), static_cast<uint32_t>(H));
  file.add_uint32(key("attention.head_count_kv"), static_cast<uint32_t>(KV));
  if (arch == "gpt2") {
    file.add_float32(key("attention.layer_norm_epsilon"), kNormEps);
  } else {
    file.add_float32(key("attention.layer_norm_rms_epsilon"), kNormEps);
    file.add_uint32(key("rope.dimension_count"), static_cast<uint32_t>(hs));
    file.add_float32(key("rope.freq_base"), static_cast<float>(c.rope_theta));
    file.add_uint32(key("attention.key_length"), static_cast<uint32_t>(hs));
    file.add_uint32(key("attention.value_length"), static_cast<uint32_t>(hs));
  }
  add_tokenizer(file, vocab);

  TensorWriter out(file, type);
  out.matrix("token_embd.weight", w.wte.data, V, C);
  if (arch == "gpt2") out.f32("position_embd.weight", {c.block_size, C}, w.wpe.data);
  out.vector("output_norm.weight", w.ln_f.weight.data, C);
  if (arch == "gpt2") out.vector_or_zeros("output_norm.bias", w.ln_f.bias, C);
  // Tied: no output.weight; llama.cpp then uses token_embd as the head, as we do.
  if (!c.tie_embeddings) out.matrix("output.weight", w.lm_head.weight.data, V, C);
  if (arch == "gpt2")
    add_gpt2_blocks(out, c, w);
  else
    add_llama_blocks(out, c, w, arch == "llama");
  return file;
}

void export_gguf(Gpt& model, const Vocab& vocab, GgufTensorType type, const std::string& name,
                 const std::string& path) {
  const std::vector<std::string> why = gguf_refusals(model.config());
  if (!why.empty()) {
    std::string message = "this model cannot be exported to GGUF; no llama.cpp architecture computes what it does:";
    for (const std::string& line : why) message += "\n  " + line;
    throw UserError(message);
  }
  gguf_from_model(model, vocab, type, name).write(path);
}

}  // namespace gpt
