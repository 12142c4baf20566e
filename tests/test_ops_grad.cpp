// Finite-difference gradient check of every differentiable op, on odd and non-square shapes.
#include <cmath>

#include "gradcheck.h"
#include "ops/ops.h"

namespace gpt {
namespace {

using testing::gradcheck;
using testing::OwnedTensor;

std::vector<OwnedTensor> make_inputs(std::initializer_list<Shape> shapes, uint64_t seed = 1, float stddev = 1.0f) {
  Rng rng(seed);
  std::vector<OwnedTensor> inputs;
  for (const Shape& s : shapes) inputs.emplace_back(s, rng, stddev);
  return inputs;
}

void expect_gradcheck(const testing::OpFn& op, std::vector<OwnedTensor>& inputs) {
  const auto result = gradcheck(op, inputs);
  EXPECT_TRUE(result.ok) << result.where;
}

TEST(Gradcheck, CatchesWrongGradient) {
  // An op whose backward is 10% too large must be flagged: the check can fail.
  auto wrong = [](Graph& g, const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor out = g.make(x.shape, x.requires_grad());
    for (int64_t i = 0; i < x.numel(); ++i) out.data[i] = x.data[i] * x.data[i];
    g.record(out, [=] {
      float* dx = x.grad_accumulator();
      for (int64_t i = 0; i < x.numel(); ++i) dx[i] += 1.1f * 2.0f * x.data[i] * out.grad()[i];
    });
    return out;
  };
  auto inputs = make_inputs({Shape{3, 5}});
  EXPECT_FALSE(gradcheck(wrong, inputs).ok);
}

TEST(OpGrad, Matmul2D) {
  auto inputs = make_inputs({Shape{3, 5}, Shape{5, 7}});
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return matmul(g, in[0], in[1]); }, inputs);
}

TEST(OpGrad, MatmulTransposedOperands) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb));
      Shape a = ta ? Shape{5, 4} : Shape{4, 5};
      Shape b = tb ? Shape{9, 5} : Shape{5, 9};
      auto inputs = make_inputs({a, b}, 2);
      expect_gradcheck([=](Graph& g, const std::vector<Tensor>& in) { return matmul(g, in[0], in[1], ta, tb); },
                       inputs);
    }
}

TEST(OpGrad, MatmulBatched) {
  auto inputs = make_inputs({Shape{2, 3, 4, 5}, Shape{2, 3, 6, 5}}, 3);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return matmul(g, in[0], in[1], false, true); },
                   inputs);
}

TEST(OpGrad, MatmulSharedRightOperand) {
  auto inputs = make_inputs({Shape{3, 4, 5}, Shape{5, 7}}, 4);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return matmul(g, in[0], in[1]); }, inputs);
}

TEST(OpGrad, MatmulLargerThanOneCacheBlock) {
  // K = 300 spans two K blocks and M = 50 two M blocks of the packed kernel.
  auto inputs = make_inputs({Shape{50, 300}, Shape{300, 3}}, 5, 0.2f);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return matmul(g, in[0], in[1]); }, inputs);
}

TEST(OpGrad, AddSameShapeAndBroadcast) {
  auto same = make_inputs({Shape{3, 7}, Shape{3, 7}}, 6);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return add(g, in[0], in[1]); }, same);
  auto rows = make_inputs({Shape{2, 3, 7}, Shape{3, 7}}, 7);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return add(g, in[0], in[1]); }, rows);
  auto vec = make_inputs({Shape{5, 7}, Shape{7}}, 8);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return add(g, in[0], in[1]); }, vec);
}

TEST(OpGrad, MulSameShapeAndBroadcast) {
  auto same = make_inputs({Shape{4, 3}, Shape{4, 3}}, 9);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return mul(g, in[0], in[1]); }, same);
  auto vec = make_inputs({Shape{2, 5, 3}, Shape{3}}, 10);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return mul(g, in[0], in[1]); }, vec);
}

TEST(OpGrad, Scale) {
  auto inputs = make_inputs({Shape{3, 5}}, 11);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return scale(g, in[0], -0.37f); }, inputs);
}

TEST(OpGrad, CausalMaskFillThenSoftmax) {
  // -inf above the diagonal, as attention uses it; softmax turns it into exact zeros.
  auto inputs = make_inputs({Shape{2, 5, 5}}, 12);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) { return softmax(g, causal_mask_fill(g, in[0], -INFINITY)); },
      inputs);
  auto filled = make_inputs({Shape{3, 3}}, 13);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return causal_mask_fill(g, in[0], 2.5f); }, filled);
}

TEST(OpGrad, Softmax) {
  auto inputs = make_inputs({Shape{4, 7}}, 14);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return softmax(g, in[0]); }, inputs);
}

TEST(OpGrad, Dropout) {
  auto inputs = make_inputs({Shape{6, 11}}, 15);
  // A fresh Rng per call gives the same mask in every forward of the check.
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(5);
        return scale(g, dropout(g, in[0], 0.3f, rng, true), 1.0f);
      },
      inputs);
}

TEST(OpGrad, TransposeEveryAxisPair) {
  for (int a0 = 0; a0 < 4; ++a0)
    for (int a1 = a0 + 1; a1 < 4; ++a1) {
      SCOPED_TRACE(std::to_string(a0) + "," + std::to_string(a1));
      auto inputs = make_inputs({Shape{2, 3, 4, 5}}, 16);
      expect_gradcheck([=](Graph& g, const std::vector<Tensor>& in) { return transpose(g, in[0], a0, a1); }, inputs);
    }
}

TEST(OpGrad, ReshapeIsAView) {
  auto inputs = make_inputs({Shape{2, 6}}, 17);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        return scale(g, reshape(in[0], Shape{3, 4}), 2.0f);
      },
      inputs);
}

TEST(OpGrad, SplitAndConcat) {
  auto inputs = make_inputs({Shape{3, 9}}, 18);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        auto parts = split_last(g, in[0], {2, 3, 4});
        // Reorder and rescale so each piece's gradient is distinguishable.
        return concat_last(g, {scale(g, parts[2], 3.0f), parts[0], scale(g, parts[1], -1.0f)});
      },
      inputs);
}

TEST(OpGrad, SumAndMean) {
  auto inputs = make_inputs({Shape{3, 4}}, 19);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return sum(g, in[0]); }, inputs);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return mean(g, in[0]); }, inputs);
}

TEST(OpGrad, LinearWithAndWithoutBias) {
  auto with_bias = make_inputs({Shape{2, 3, 5}, Shape{7, 5}, Shape{7}}, 20);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return linear(g, in[0], in[1], in[2]); }, with_bias);
  auto no_bias = make_inputs({Shape{4, 5}, Shape{3, 5}}, 21);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return linear(g, in[0], in[1], Tensor{}); }, no_bias);
}

TEST(OpGrad, EmbeddingWithRepeatedIds) {
  auto inputs = make_inputs({Shape{6, 5}}, 22);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        static const int32_t ids[] = {3, 0, 3, 5, 1, 3, 0};
        return embedding(g, in[0], ids, Shape{7});
      },
      inputs);
}

TEST(OpGrad, AddEmbeddingAtColumnsWithRepeatedIds) {
  auto inputs = make_inputs({Shape{2, 3, 9}, Shape{4, 3}}, 29);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        static const int32_t ids[] = {3, 0, 3, 1, 3, 0};
        return add_embedding_at(g, in[0], in[1], ids, 5);
      },
      inputs);
}

TEST(OpGrad, LayernormWithAndWithoutBias) {
  auto with_bias = make_inputs({Shape{4, 7}, Shape{7}, Shape{7}}, 23);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return layernorm(g, in[0], in[1], in[2]); },
                   with_bias);
  auto no_bias = make_inputs({Shape{2, 3, 6}, Shape{6}}, 24);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return layernorm(g, in[0], in[1], Tensor{}); },
                   no_bias);
}

TEST(OpGrad, Rmsnorm) {
  auto inputs = make_inputs({Shape{2, 3, 6}, Shape{6}}, 26);
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return rmsnorm(g, in[0], in[1]); }, inputs);
}

TEST(OpGrad, EveryActivation) {
  for (Activation act : all_activations()) {
    SCOPED_TRACE(activation_name(act));
    auto inputs = make_inputs({Shape{5, activation_input_width(act, 7)}}, 25, 2.0f);
    expect_gradcheck([=](Graph& g, const std::vector<Tensor>& in) { return activate(g, in[0], act); }, inputs);
  }
}

TEST(OpGrad, Softcap) {
  auto inputs = make_inputs({Shape{4, 9}}, 28, 3.0f);  // values up to ~3 cap: into tanh's bend
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return softcap(g, in[0], 2.5f); }, inputs);
}

TEST(OpGrad, Swiglu) {
  auto inputs = make_inputs({Shape{2, 3, 10}}, 27, 2.0f);  // rows [gate | up] of width 5 each
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return swiglu(g, in[0]); }, inputs);
}

TEST(OpGrad, TokenPositionEmbeddingWithRepeatedIdsAndDropout) {
  // T = 3 of a 4-row position table; ids repeat so token rows collect several gradients.
  static const int32_t ids[6] = {2, 0, 2, 6, 2, 1};
  for (float p : {0.0f, 0.3f}) {
    auto inputs = make_inputs({Shape{7, 5}, Shape{4, 5}}, 46);
    expect_gradcheck(
        [=](Graph& g, const std::vector<Tensor>& in) {
          Rng rng(4);
          return token_position_embedding(g, in[0], in[1], ids, 2, 3, p, rng, true);
        },
        inputs);
  }
}

TEST(OpGrad, LayerNormLinearWithAndWithoutBiases) {
  auto with_bias = make_inputs({Shape{2, 3, 6}, Shape{6}, Shape{6}, Shape{5, 6}, Shape{5}}, 40);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) { return layernorm_linear(g, in[0], in[1], in[2], in[3], in[4]); },
      with_bias);
  auto no_bias = make_inputs({Shape{4, 6}, Shape{6}, Shape{3, 6}}, 41);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        return layernorm_linear(g, in[0], in[1], Tensor{}, in[2], Tensor{});
      },
      no_bias);
}

TEST(OpGrad, RmsnormLinearWithAndWithoutBias) {
  auto with_bias = make_inputs({Shape{2, 3, 6}, Shape{6}, Shape{5, 6}, Shape{5}}, 42);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        return norm_linear(g, Norm::rmsnorm, in[0], in[1], Tensor{}, in[2], in[3]);
      },
      with_bias);
  auto no_bias = make_inputs({Shape{4, 6}, Shape{6}, Shape{3, 6}}, 43);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        return norm_linear(g, Norm::rmsnorm, in[0], in[1], Tensor{}, in[2], Tensor{});
      },
      no_bias);
}

void expect_residual_projection_gradcheck(Activation act, float dropout_p, uint64_t seed) {
  auto inputs = make_inputs({Shape{2, 3, 5}, Shape{2, 3, activation_input_width(act, 4)}, Shape{5, 4}, Shape{5}}, seed);
  expect_gradcheck(
      [=](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(3);  // the same dropout mask on every evaluation
        return residual_projection(g, in[0], in[1], act, in[2], in[3], dropout_p, rng, true);
      },
      inputs);
}

TEST(OpGrad, ResidualProjectionOfEveryActivation) {
  for (Activation act : all_activations()) {
    SCOPED_TRACE(activation_name(act));
    expect_residual_projection_gradcheck(act, 0.0f, 42);
    expect_residual_projection_gradcheck(act, 0.3f, 44);
  }
}

TEST(OpGrad, CausalSelfAttention) {
  // B=2, T=5, C=6 with 3 heads of size 2.
  auto inputs = make_inputs({Shape{2, 5, 18}}, 26);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(1);
        return causal_self_attention(g, in[0], 3, 0.0f, rng, true);
      },
      inputs);
}

TEST(OpGrad, CausalSelfAttentionWithDropout) {
  auto inputs = make_inputs({Shape{1, 7, 12}}, 27);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(1);
        return causal_self_attention(g, in[0], 2, 0.25f, rng, true);
      },
      inputs);
}

TEST(OpGrad, CausalSelfAttentionLongerThanOneRowBlock) {
  // T = 70: three query blocks of up to 32 rows, each seeing keys of the ones before; the first
  // ends inside the first chunk of 64 keys, the last inside the second.
  auto inputs = make_inputs({Shape{1, 70, 6}}, 28, 0.5f);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(1);
        return causal_self_attention(g, in[0], 1, 0.0f, rng, true);
      },
      inputs);
}

TEST(OpGrad, CausalSelfAttentionWithDropoutLongerThanOneRowBlock) {
  // Backward recomputes each block's probabilities and dropout mask; the later blocks' must
  // match what forward used.
  auto inputs = make_inputs({Shape{1, 70, 6}}, 30, 0.5f);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(2);
        return causal_self_attention(g, in[0], 1, 0.3f, rng, true);
      },
      inputs);
}

TEST(OpGrad, GroupedQueryAttention) {
  // B=2, T=5, 4 query heads sharing 2 kv heads of size 2: qkv width (4 + 2 * 2) * 2.
  auto inputs = make_inputs({Shape{2, 5, 16}}, 31);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(1);
        return causal_self_attention(g, in[0], 4, 0.0f, rng, true, 2);
      },
      inputs);
}

TEST(OpGrad, GroupedQueryAttentionWithDropoutLongerThanOneRowBlock) {
  // One kv head for 3 query heads (multi-query), T = 70: several row blocks, dropout.
  auto inputs = make_inputs({Shape{1, 70, 10}}, 32, 0.5f);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        Rng rng(3);
        return causal_self_attention(g, in[0], 3, 0.2f, rng, true, 1);
      },
      inputs);
}

TEST(OpGrad, RopeOnQAndKHeads) {
  // 3 query heads and 1 kv head of size 4 at positions 0 .. 6 (the table has 9); v passes.
  const RopeTable table = make_rope_table(9, 4, 10000.0);
  auto inputs = make_inputs({Shape{2, 7, 20}}, 33);
  expect_gradcheck([&](Graph& g, const std::vector<Tensor>& in) { return rope(g, in[0], 3, 1, table); }, inputs);
  const RopeTable small_theta = make_rope_table(7, 6, 3.0);  // large angles
  auto wide = make_inputs({Shape{1, 7, 24}}, 34);
  expect_gradcheck([&](Graph& g, const std::vector<Tensor>& in) { return rope(g, in[0], 2, 1, small_theta); }, wide);
}

TEST(OpGrad, QkRmsnorm) {
  auto inputs = make_inputs({Shape{2, 3, 24}}, 35);  // 2 query heads, 1 kv head of size 6
  expect_gradcheck([](Graph& g, const std::vector<Tensor>& in) { return qk_rmsnorm(g, in[0], 2, 1); }, inputs);
}

TEST(OpGrad, CrossEntropy) {
  auto inputs = make_inputs({Shape{5, 7}}, 29);
  expect_gradcheck(
      [](Graph& g, const std::vector<Tensor>& in) {
        static const int32_t targets[] = {0, 6, 3, 3, 1};
        return cross_entropy(g, in[0], targets);
      },
      inputs);
}

}  // namespace
}  // namespace gpt
