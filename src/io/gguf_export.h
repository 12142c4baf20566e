// A trained model as a GGUF file that llama.cpp runs: the model's config chooses one of llama.cpp's
// architectures whose forward pass computes what ours does (gpt2: learned positions, LayerNorm,
// GELU; llama: RoPE, RMSNorm, SwiGLU; qwen3: llama's with QK-norm), or the export is refused,
// naming every config key that no llama.cpp architecture computes as we do. The vocabulary becomes
// llama.cpp's "rwkv" tokenizer: one token per character (or byte), matched greedily, so llama.cpp
// turns any text of the alphabet into exactly our ids. docs/checkpoints.md has the user's view.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/vocab.h"
#include "io/gguf.h"
#include "model/gpt.h"

namespace gpt {

// What blocks an export: one line per config key that llama.cpp cannot compute as we do, with
// what to change. Empty: the model exports.
std::vector<std::string> gguf_refusals(const GptConfig& config);

// The llama.cpp architecture ("gpt2", "llama" or "qwen3") of an exportable config.
std::string gguf_architecture(const GptConfig& config);

// "F32", "F16", "BF16" or "Q8_0" (any case); UserError (exit 2) naming the flag otherwise.
GgufTensorType parse_gguf_tensor_type(const std::string& text);

// A token's bytes in the escaped form llama.cpp's rwkv tokenizer reads (llama_unescape_rwkv_token):
// backslash, tab, newline and carriage return as \\ \t \n \r, other control bytes and bytes that
// are not part of a valid UTF-8 character as \xhh (lowercase hex).
std::string rwkv_escape(std::string_view bytes);

// llama.cpp's `llama` architecture rotates adjacent pairs (2i, 2i+1) of a head (rope type NORM);
// ours rotates i with i + hs/2 (rotate-half, NeoX). Reordering each head's q and k output rows to
// [0, hs/2, 1, hs/2+1, ...] makes llama.cpp's rotation ours, and leaves q.k unchanged. rows:
// [heads * head_size, cols], row-major; returns the reordered copy.
std::vector<float> interleave_rope_rows(const float* rows, int64_t heads, int64_t head_size, int64_t cols);

// The GGUF file of `model` with its 2-D weight matrices stored as `type` (norms, biases and the
// position embedding stay F32; a matrix whose rows are not a multiple of 32 long stays F16 under
// Q8_0). The config must export (gguf_refusals empty).
GgufFile gguf_from_model(Gpt& model, const Vocab& vocab, GgufTensorType type, const std::string& name);

// Refuses (UserError, exit 2, every blocking key named, nothing written) or writes the file
// atomically.
void export_gguf(Gpt& model, const Vocab& vocab, GgufTensorType type, const std::string& name, const std::string& path);

}  // namespace gpt
