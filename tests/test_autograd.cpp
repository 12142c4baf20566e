// Autograd semantics: gradient accumulation on fan-out, no-grad mode, the tape, and the fused
// attention op against its primitive composition.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "core/memory.h"
#include "gradcheck.h"
#include "ops/ops.h"
#include "same_bits.h"
#include "thread_count.h"

namespace gpt {
namespace {

using testing::OwnedTensor;

TEST(Autograd, FanOutAccumulates) {
  // y = x * x + x uses x three times: dy/dx = 2x + 1.
  Rng rng(1);
  OwnedTensor x(Shape{4}, rng);
  Arena arena;
  Graph g(arena);
  Tensor xv = x.view();
  Tensor loss = sum(g, add(g, mul(g, xv, xv), xv));
  g.backward(loss);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(x.grad[i], 2 * x.data[i] + 1);
}

TEST(Autograd, ResidualBranchAccumulates) {
  // h = x + linear(x): the gradient reaching x is the identity's plus the linear branch's.
  Rng rng(2);
  OwnedTensor x(Shape{3, 4}, rng), w(Shape{4, 4}, rng);
  Arena arena;
  Graph g(arena);
  Tensor loss = sum(g, add(g, x.view(), linear(g, x.view(), w.view_no_grad(), Tensor{})));
  g.backward(loss);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 4; ++i) {
      float expected = 1.0f;  // identity branch
      for (int o = 0; o < 4; ++o) expected += w.data[o * 4 + i];
      EXPECT_NEAR(x.grad[r * 4 + i], expected, 1e-5);
    }
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Rng rng(3);
  OwnedTensor x(Shape{5}, rng);
  Arena arena;
  Graph g(arena);
  for (int step = 0; step < 2; ++step) {
    g.backward(sum(g, scale(g, x.view(), 3.0f)));
    g.reset();
  }
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(x.grad[i], 6.0f);
}

TEST(Autograd, NoGradRecordsNothingAndAllocatesNoGradients) {
  Rng rng(4);
  OwnedTensor x(Shape{3, 8}, rng), w(Shape{8}, rng);
  Arena arena;
  Graph g(arena);
  NoGradGuard no_grad(g);
  Tensor y = gelu(g, layernorm(g, x.view(), w.view(), Tensor{}));
  EXPECT_EQ(g.tape_size(), 0u);
  EXPECT_FALSE(y.requires_grad());
  for (float v : x.grad) EXPECT_EQ(v, 0.0f);
}

TEST(Autograd, InputsWithoutGradientRecordNothing) {
  Rng rng(5);
  OwnedTensor x(Shape{2, 3}, rng);
  Arena arena;
  Graph g(arena);
  Tensor y = softmax(g, x.view_no_grad());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(g.tape_size(), 0u);
}

TEST(Autograd, SteadyStateStepDoesNotGrowTheArena) {
  Rng rng(6);
  OwnedTensor x(Shape{16, 32}, rng), w(Shape{64, 32}, rng);
  Arena arena(1024);  // deliberately small: the first step must grow it
  Graph g(arena);
  std::size_t capacity_after_first = 0;
  for (int step = 0; step < 4; ++step) {
    Tensor loss = mean(g, gelu(g, linear(g, x.view(), w.view(), Tensor{})));
    g.backward(loss);
    g.reset();
    if (step == 0) capacity_after_first = arena.capacity_bytes();
    if (step > 0) {
      EXPECT_EQ(arena.capacity_bytes(), capacity_after_first);
    }
  }
  EXPECT_GE(arena.capacity_bytes(), arena.high_water_bytes());
}

// The fused op and the primitive composition must agree in forward and backward.
void expect_attention_matches_primitives(int64_t B, int64_t T, int64_t C, int n_head, int n_kv_head = 0) {
  Rng rng(7);
  const int64_t kv_width = n_kv_head == 0 ? C : C / n_head * n_kv_head;
  OwnedTensor qkv_fused(Shape{B, T, C + 2 * kv_width}, rng), upstream(Shape{B, T, C}, rng);
  OwnedTensor qkv_ref = qkv_fused;
  Arena arena;
  Graph g(arena);
  Rng dropout_rng(1);
  Tensor fused = causal_self_attention(g, qkv_fused.view(), n_head, 0.0f, dropout_rng, true, n_kv_head);
  Tensor ref = testing::attention_from_primitives(g, qkv_ref.view(), n_head, n_kv_head);
  ASSERT_EQ(fused.shape, ref.shape);
  for (int64_t i = 0; i < fused.numel(); ++i) EXPECT_NEAR(fused.data[i], ref.data[i], 1e-5) << i;
  // Seed both outputs with the same upstream gradient, then backpropagate.
  std::copy(upstream.data.begin(), upstream.data.end(), fused.grad_accumulator());
  std::copy(upstream.data.begin(), upstream.data.end(), ref.grad_accumulator());
  g.run_backward();
  for (int64_t i = 0; i < qkv_fused.view().numel(); ++i) EXPECT_NEAR(qkv_fused.grad[i], qkv_ref.grad[i], 1e-5) << i;
}

TEST(FusedAttention, MatchesPrimitiveComposition) { expect_attention_matches_primitives(2, 9, 12, 3); }
TEST(FusedAttention, MatchesPrimitiveCompositionAcrossRowBlocks) { expect_attention_matches_primitives(1, 130, 8, 2); }
TEST(FusedAttention, GroupedQueryMatchesRepeatedKvHeads) {
  expect_attention_matches_primitives(2, 9, 12, 6, 2);  // groups of 3 query heads
  expect_attention_matches_primitives(2, 9, 12, 3, 1);  // multi-query: one kv head
  expect_attention_matches_primitives(1, 130, 8, 4, 2);
}

// Forward packs a kv head once for the consecutive query heads of its group that one thread runs:
// team sizes that split groups between threads, put a group boundary inside one thread's share, or
// give one thread the same kv head of two batch rows must still give every head its own batch
// row's kv head, the same bits on any thread count.
TEST(FusedAttention, GroupedQueryGivesTheSameBitsOnAnyThreadCount) {
  struct Heads {
    int64_t B;
    int n_head, n_kv_head;
  };
  for (const Heads heads : {Heads{1, 6, 2}, Heads{2, 3, 1}}) {
    const int64_t T = 70, C = 24;
    Rng rng(23);
    OwnedTensor qkv(Shape{heads.B, T, C + 2 * C / heads.n_head * heads.n_kv_head}, rng),
        upstream(Shape{heads.B, T, C}, rng);
    auto run = [&](int threads) {
      Arena arena;
      Graph g(arena);
      Rng dropout_rng(4);
      std::fill(qkv.grad.begin(), qkv.grad.end(), 0.0f);
      return testing::on_threads(threads, [&] {
        Tensor out = causal_self_attention(g, qkv.view(), heads.n_head, 0.1f, dropout_rng, true, heads.n_kv_head);
        std::copy(upstream.data.begin(), upstream.data.end(), out.grad_accumulator());
        g.run_backward();
        std::vector<float> values(out.data, out.data + out.numel());
        values.insert(values.end(), qkv.grad.begin(), qkv.grad.end());
        return values;
      });
    };
    const std::vector<float> reference = run(1);
    for (int threads : {2, 3, 4, 5})
      EXPECT_TRUE(testing::same_bits(run(threads), reference))
          << threads << " threads, B " << heads.B << ", " << heads.n_head << " heads, " << heads.n_kv_head << " kv";
  }
}

// When q|k|v's gradient has not arrived yet (q|k|v made by an op, so its slot is pooled), backward
// takes the buffer unzeroed and each (batch, kv head) task zeroes its own columns first. The arena
// is filled with NaN beforehand, so a column no task zeroed would show. Bit for bit against the
// accumulating path (q|k|v a leaf whose gradient starts at zero), with several kv heads each
// shared by two query heads and a kv head per query head, on several thread counts.
TEST(FusedAttention, GradientTakenUnzeroedGivesTheAccumulatingBits) {
  for (const int n_kv_head : {2, 4}) {
    const int64_t B = 2, T = 70, C = 16;
    const int n_head = 4;
    Rng rng(29);
    OwnedTensor qkv(Shape{B, T, C + 2 * C / n_head * n_kv_head}, rng), upstream(Shape{B, T, C}, rng);
    auto run = [&](bool through_op, int threads) {
      constexpr std::size_t kJunkFloats = std::size_t{1} << 20;
      Arena arena(kJunkFloats * sizeof(float));  // one block, which reset() keeps
      float* junk = arena.allocate_floats(kJunkFloats);
      std::fill(junk, junk + kJunkFloats, std::nanf(""));
      arena.reset();
      Graph g(arena);
      Rng dropout_rng(4);
      std::fill(qkv.grad.begin(), qkv.grad.end(), 0.0f);
      return testing::on_threads(threads, [&] {
        const Tensor input = through_op ? scale(g, qkv.view(), 1.0f) : qkv.view();
        Tensor out = causal_self_attention(g, input, n_head, 0.1f, dropout_rng, true, n_kv_head);
        std::copy(upstream.data.begin(), upstream.data.end(), out.grad_accumulator());
        g.run_backward();
        return qkv.grad;
      });
    };
    const std::vector<float> accumulated = run(false, 1);
    for (int threads : {1, 2, 3})
      EXPECT_TRUE(testing::same_bits(run(true, threads), accumulated)) << threads << " threads, " << n_kv_head << " kv";
  }
}

// One forward and backward of causal_self_attention with dropout 0.1 and the given upstream
// gradient, forward on forward_threads and backward on backward_threads: the output, then qkv's
// gradient.
std::vector<float> attention_output_and_gradient(OwnedTensor& qkv, const OwnedTensor& upstream, int n_head,
                                                 Dtype inputs, int forward_threads, int backward_threads) {
  Arena arena;
  Graph g(arena);
  Rng dropout_rng(4);
  std::fill(qkv.grad.begin(), qkv.grad.end(), 0.0f);
  Tensor out = testing::on_threads(forward_threads, [&] {
    return causal_self_attention(g, qkv.view(), n_head, 0.1f, dropout_rng, true, 0, inputs);
  });
  std::copy(upstream.data.begin(), upstream.data.end(), out.grad_accumulator());
  testing::on_threads(backward_threads, [&] {
    g.run_backward();
    return 0;
  });
  std::vector<float> values(out.data, out.data + out.numel());
  values.insert(values.end(), qkv.grad.begin(), qkv.grad.end());
  return values;
}

// dtype bfloat16: q, k, v, the probabilities and the gradients are rounded as the products pack
// them; the softmax and every sum stay float32. So the results sit within bfloat16's precision of
// float32's without being float32's (the rounding happens), on any thread count in the same bits.
TEST(FusedAttention, Bfloat16ProductsStayWithinBfloat16PrecisionOfFloat32) {
  const int64_t B = 2, T = 70, C = 24;
  Rng rng(29);
  OwnedTensor qkv(Shape{B, T, 3 * C}, rng), upstream(Shape{B, T, C}, rng);
  auto run = [&](Dtype inputs, int threads) {
    return attention_output_and_gradient(qkv, upstream, 3, inputs, threads, threads);
  };
  const std::vector<float> exact = run(Dtype::float32, 1), rounded = run(Dtype::bfloat16, 1);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    EXPECT_NEAR(rounded[i], exact[i], 2e-2 * (1 + std::abs(exact[i]))) << i;
    differing += rounded[i] != exact[i];
  }
  EXPECT_GT(differing, exact.size() / 2);
  for (int threads : {2, 3}) EXPECT_TRUE(testing::same_bits(run(Dtype::bfloat16, threads), rounded)) << threads;
}

TEST(FusedAttention, KeepsNothingQuadraticInTheSequenceLength) {
  // [B, H, T, T] probabilities would be 2 * 8 * 512 * 512 floats = 16 MiB; the op's own memory
  // (output + per-thread scratch) must stay far below that.
  const int64_t B = 2, T = 512, C = 32;
  Rng rng(8);
  OwnedTensor qkv(Shape{B, T, 3 * C}, rng);
  Arena arena;
  Graph g(arena);
  Rng dropout_rng(1);
  Tensor out = causal_self_attention(g, qkv.view(), 8, 0.1f, dropout_rng, true);
  EXPECT_LT(arena.high_water_bytes(), std::size_t{4} << 20);
  g.backward(sum(g, out));
  EXPECT_LT(arena.high_water_bytes(), std::size_t{4} << 20);
}

// Backward may run with more threads than forward had (a caller changes the count in between):
// its per-thread scratch was sized in forward, so the op must use the team size it sized for.
// Out of bounds otherwise (AddressSanitizer reports it; here the gradients would differ).
TEST(FusedAttention, BackwardOnMoreThreadsThanForwardUsesItsScratchSafely) {
  const int64_t B = 3, T = 70, C = 16;
  Rng rng(21);
  OwnedTensor qkv(Shape{B, T, 3 * C}, rng), upstream(Shape{B, T, C}, rng);
  auto gradient = [&](int forward_threads, int backward_threads) {
    return attention_output_and_gradient(qkv, upstream, 4, Dtype::float32, forward_threads, backward_threads);
  };
  const std::vector<float> reference = gradient(1, 1);
  EXPECT_EQ(gradient(1, 3), reference);
  EXPECT_EQ(gradient(2, 1), reference);
}

// The fused block ops must give exactly the composition's values and gradients (same calls, same
// order), so that fusing changed no number in training. Sizes make the GEMMs run several K blocks.
struct Composed {
  std::vector<float> out;
  std::vector<std::vector<float>> grads;
};

Composed run_with_grads(std::vector<OwnedTensor>& inputs, const OwnedTensor& upstream,
                        const std::function<Tensor(Graph&, const std::vector<Tensor>&)>& op) {
  for (auto& in : inputs) std::fill(in.grad.begin(), in.grad.end(), 0.0f);
  Arena arena;
  Graph g(arena);
  std::vector<Tensor> views;
  for (auto& in : inputs) views.push_back(in.view());
  Tensor out = op(g, views);
  std::copy(upstream.data.begin(), upstream.data.end(), out.grad_accumulator());
  Composed result{std::vector<float>(out.data, out.data + out.numel()), {}};
  g.run_backward();
  for (auto& in : inputs) result.grads.push_back(in.grad);
  return result;
}

void expect_identical(const Composed& fused, const Composed& composed) {
  ASSERT_EQ(fused.out.size(), composed.out.size());
  for (std::size_t i = 0; i < fused.out.size(); ++i) ASSERT_EQ(fused.out[i], composed.out[i]) << "output " << i;
  for (std::size_t t = 0; t < fused.grads.size(); ++t)
    for (std::size_t i = 0; i < fused.grads[t].size(); ++i)
      ASSERT_EQ(fused.grads[t][i], composed.grads[t][i]) << "gradient of input " << t << " element " << i;
}

TEST(FusedBlockOps, LayerNormLinearIsBitIdenticalToTheComposition) {
  const int64_t rows = 70, C = 300, out = 40;
  Rng rng(11);
  std::vector<OwnedTensor> inputs;
  for (Shape s : {Shape{rows, C}, Shape{C}, Shape{C}, Shape{out, C}, Shape{out}}) inputs.emplace_back(s, rng);
  OwnedTensor upstream(Shape{rows, out}, rng);
  const Composed fused = run_with_grads(inputs, upstream, [](Graph& g, const std::vector<Tensor>& in) {
    return layernorm_linear(g, in[0], in[1], in[2], in[3], in[4]);
  });
  const Composed composed = run_with_grads(inputs, upstream, [](Graph& g, const std::vector<Tensor>& in) {
    return linear(g, layernorm(g, in[0], in[1], in[2]), in[3], in[4]);
  });
  expect_identical(fused, composed);
}

TEST(FusedBlockOps, RmsnormLinearIsBitIdenticalToTheComposition) {
  const int64_t rows = 70, C = 300, out = 40;
  Rng rng(13);
  std::vector<OwnedTensor> inputs;
  for (Shape s : {Shape{rows, C}, Shape{C}, Shape{out, C}, Shape{out}}) inputs.emplace_back(s, rng);
  OwnedTensor upstream(Shape{rows, out}, rng);
  const Composed fused = run_with_grads(inputs, upstream, [](Graph& g, const std::vector<Tensor>& in) {
    return norm_linear(g, Norm::rmsnorm, in[0], in[1], Tensor{}, in[2], in[3]);
  });
  const Composed composed = run_with_grads(inputs, upstream, [](Graph& g, const std::vector<Tensor>& in) {
    return linear(g, rmsnorm(g, in[0], in[1]), in[2], in[3]);
  });
  expect_identical(fused, composed);
}

// `through_op`: x comes out of another op (a pooled gradient that is still empty when the
// projection's backward runs) rather than being a caller-owned input.
void expect_residual_projection_identical(Activation act, float dropout_p, bool through_op) {
  const int64_t rows = 70, in_features = 300, out = 40;
  Rng rng(12);
  std::vector<OwnedTensor> inputs;
  for (Shape s :
       {Shape{rows, out}, Shape{rows, activation_input_width(act, in_features)}, Shape{out, in_features}, Shape{out}})
    inputs.emplace_back(s, rng);
  OwnedTensor upstream(Shape{rows, out}, rng);
  const Composed fused = run_with_grads(inputs, upstream, [=](Graph& g, const std::vector<Tensor>& in) {
    Rng dropout_rng(5);
    const Tensor x = through_op ? scale(g, in[1], 0.5f) : in[1];
    return residual_projection(g, in[0], x, act, in[2], in[3], dropout_p, dropout_rng, true);
  });
  const Composed composed = run_with_grads(inputs, upstream, [=](Graph& g, const std::vector<Tensor>& in) {
    Rng dropout_rng(5);
    const Tensor x = through_op ? scale(g, in[1], 0.5f) : in[1];
    const Tensor activated = activate(g, x, act);
    return add(g, in[0], dropout(g, linear(g, activated, in[2], in[3]), dropout_p, dropout_rng, true));
  });
  expect_identical(fused, composed);
}

// Every value of the enum, so a new activation is checked the day it is added: the fused op's
// forward and its gradients must be those of the plain activation op followed by linear, dropout
// and add (an activation the fused op applied one way forward and another backward fails here).
TEST(FusedBlockOps, ResidualProjectionIsBitIdenticalToTheCompositionForEveryActivation) {
  ASSERT_GE(all_activations().size(), 2u);
  for (Activation act : all_activations()) {
    SCOPED_TRACE(activation_name(act));
    for (bool through_op : {false, true})
      for (float dropout_p : {0.0f, 0.2f}) expect_residual_projection_identical(act, dropout_p, through_op);
  }
}

TEST(FusedBlockOps, TokenPositionEmbeddingIsBitIdenticalToTheComposition) {
  const int64_t B = 3, T = 50, V = 11, C = 40;
  Rng rng(13);
  std::vector<int32_t> ids(B * T);
  for (auto& id : ids) id = static_cast<int32_t>(rng.next_u64() % V);
  std::vector<OwnedTensor> inputs;
  inputs.emplace_back(Shape{V, C}, rng);
  inputs.emplace_back(Shape{64, C}, rng);
  OwnedTensor upstream(Shape{B, T, C}, rng);
  for (float p : {0.0f, 0.2f}) {
    const Composed fused = run_with_grads(inputs, upstream, [&](Graph& g, const std::vector<Tensor>& in) {
      Rng dropout_rng(6);
      return token_position_embedding(g, in[0], in[1], ids.data(), B, T, p, dropout_rng, true);
    });
    const Composed composed = run_with_grads(inputs, upstream, [&](Graph& g, const std::vector<Tensor>& in) {
      Rng dropout_rng(6);
      const Tensor positions{in[1].data, in[1].grad_slot, Shape{T, C}};  // the first T rows
      return dropout(g, add(g, embedding(g, in[0], ids.data(), Shape{B, T}), positions), p, dropout_rng, true);
    });
    expect_identical(fused, composed);
  }
}

// Gradients of intermediate tensors are recycled: a chain of n ops on an S-float tensor keeps
// about two S-float gradient buffers alive in backward, not n.
TEST(Autograd, BackwardRecyclesGradientBuffersOfConsumedTensors) {
  const int64_t S = 64 * 1024, n = 12;
  Rng rng(9);
  OwnedTensor x(Shape{S}, rng);
  Arena arena;
  Graph g(arena);
  Tensor h = x.view();
  for (int64_t i = 0; i < n; ++i) h = gelu(g, h);
  Tensor loss = sum(g, h);
  const std::size_t after_forward = arena.high_water_bytes();
  g.backward(loss);
  const std::size_t bytes = static_cast<std::size_t>(S) * sizeof(float);
  EXPECT_LE(arena.high_water_bytes() - after_forward, 2 * bytes + 4096);
  // The result is still exact: d/dx of gelu^n, checked against a forward difference of the chain.
  for (int64_t i : {int64_t{0}, S / 2, S - 1}) {
    float up = x.data[i] + 1e-2f, down = x.data[i] - 1e-2f;
    for (int64_t k = 0; k < n; ++k) {
      up = 0.5f * up * (1.0f + std::erf(up / std::sqrt(2.0f)));
      down = 0.5f * down * (1.0f + std::erf(down / std::sqrt(2.0f)));
    }
    EXPECT_NEAR(x.grad[i], (up - down) / 2e-2f, 2e-3f) << i;
  }
}

TEST(Autograd, OpsWhoseOutputGetsNoGradientAreSkipped) {
  // y feeds nothing that reaches the loss, so its backward must not run (it would add zeros).
  Rng rng(10);
  OwnedTensor x(Shape{6}, rng);
  Arena arena;
  Graph g(arena);
  int runs = 0;
  Tensor y = gelu(g, x.view());
  int* counter = &runs;
  g.record(y, [counter] { ++*counter; });
  Tensor loss = sum(g, scale(g, x.view(), 2.0f));
  g.backward(loss);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(y.grad(), nullptr);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(x.grad[i], 2.0f);
}

// The process's address space, in bytes (VmSize).
std::size_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoul(line.substr(7)) * 1024;
  return 0;
}

// In a child: attention whose per-thread packs cannot be had (the address space is limited to
// what the process holds plus 4 MiB; each thread's packed keys need 4 MiB on a 2 MiB boundary), so
// the allocation fails on the threads of the parallel region. Exits 3 with the error when it
// reaches this thread, 0 if nothing failed.
[[noreturn]] void attend_without_memory_for_the_packs() {
  constexpr int64_t B = 4, T = 1024, hs = 1024;  // one head, four (batch, head) items
  const testing::ThreadCount two_threads(2);     // so a worker thread, not only this one, fails
  Rng rng(3);
  OwnedTensor small(Shape{B, 8, 3 * 8}, rng), qkv(Shape{B, T, 3 * hs}, rng);
  Arena arena(std::size_t{64} << 20);  // out, scratch and stats fit: the packs are all that grows
  Graph g(arena);
  NoGradGuard no_grad(g);
  Rng dropout_rng(1);
  // The team, its threads' small packs and their malloc arenas exist before the limit.
  causal_self_attention(g, small.view_no_grad(), 1, 0.0f, dropout_rng, false);
  arena.reset();
  const auto limit = static_cast<rlim_t>(address_space_bytes() + (std::size_t{4} << 20));
  const rlimit as{limit, limit};
  if (address_space_bytes() == 0 || ::setrlimit(RLIMIT_AS, &as) != 0) std::_Exit(4);
  try {
    causal_self_attention(g, qkv.view_no_grad(), 1, 0.0f, dropout_rng, false);
  } catch (const AllocationFailure& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::_Exit(3);
  }
  std::_Exit(0);
}

// An exception thrown inside a parallel region (here attention's packing) reaches the calling
// thread, which can report it, instead of ending the process in std::terminate.
TEST(AttentionDeathTest, AnAllocationFailingInsideTheParallelRegionReachesTheCaller) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit a limited address space";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a forked child of OpenMP threads has no team
  EXPECT_EXIT(attend_without_memory_for_the_packs(), ::testing::ExitedWithCode(3), "out of memory");
}

}  // namespace
}  // namespace gpt
