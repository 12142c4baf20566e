// The blocked driver behind kernels/gemm.h: op(B) is packed once per K chunk (all of it for most
// products; or taken prepacked) and shared by the OpenMP team, then work items of MC rows times a
// chunk of columns run the family's micro-kernels over the chunk's K blocks in order, packing their
// own rows of A per block (or reading A in place), so that packed A and the item's C stay in cache
// (with A^T, a thread's items go block by block instead: see run_k_chunk; a long A^T B with more
// columns than rows runs as (B^T A)^T: see runs_transposed). The family is resolved once per call,
// on the calling thread (kernels/gemm/dispatch.h), and the packed operands live in grow-only thread
// scratch: products on different threads share nothing.
#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/aligned_buffer.h"
#include "core/check.h"
#include "core/first_failure.h"
#include "kernels/gemm/dispatch.h"
#include "kernels/gemm/flush_subnormals.h"
#include "kernels/gemm/kernel_family.h"
#include "kernels/gemm/row_times_transposed.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

using gemm_detail::AnyFamily;
using gemm_detail::FlushSubnormals;
using gemm_detail::KernelFamily;
using gemm_detail::MC;

// Grow-only: after the first steps of a run no call allocates. Both packed formats are 4 bytes
// per element.
struct GrowableBuffer {
  AlignedBuffer<float> buffer;
  template <typename Packed>
  Packed* get(int64_t n) {
    static_assert(sizeof(Packed) == sizeof(float));
    if (buffer.size() < static_cast<std::size_t>(n)) buffer = AlignedBuffer<float>(static_cast<std::size_t>(n));
    return reinterpret_cast<Packed*>(buffer.data());
  }
};

// A thread's packed operands: the K chunk of op(B) of the product it calls, shared with its team,
// and the rows of A its own work items pack (all M rows of a K block for a prepacked column
// share); and C^T of a product it runs transposed (runs_transposed). A product inside an
// enclosing parallel region (attention's) has its own thread's.
struct Scratch {
  GrowableBuffer a, b, transposed_c;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Runs the micro-kernels of rows [i0, i0+mc) x columns [j0, j0+nc) against the packed B (slivers
// of NR columns, each `steps` x NR). packed_a holds rows i0 .. i0+mc of this K block (MR-row
// slivers, each `steps` x MR), or is null: op(A) is then read in place (float32 families), from
// A or, when trans_a, from A^T. The last sliver runs the kernel for just its rows; a ragged last
// column sliver runs on a local tile. Tiles go A sliver by A sliver (each B sliver of the item
// streams past one A sliver), or, for a family with b_slivers_outer, B sliver by B sliver (BLIS's
// order: A, packed or in place, streams past one B sliver).
template <typename Packed>
void multiply_block(const KernelFamily<Packed>& family, bool trans_a, const float* A, int64_t lda, int64_t p0,
                    const Packed* packed_a, const Packed* packed_b, int64_t kc, int64_t i0, int64_t mc, int64_t j0,
                    int64_t nc, float* C, int64_t ldc, bool load_c) {
  const int64_t MR = family.MR, NR = family.NR, steps = family.steps(kc);
  const auto& in_place = family.in_place_a(trans_a);
  alignas(64) float edge[gemm_detail::kMaxTile];
  const auto tile = [&](int64_t ir, int64_t jr) {
    const int64_t rows = std::min(MR, mc - ir), cols = std::min(NR, j0 + nc - jr);
    const float* a_in_place = trans_a ? A + p0 * lda + (i0 + ir) : A + (i0 + ir) * lda + p0;
    const Packed* a = packed_a ? packed_a + ir * steps : reinterpret_cast<const Packed*>(a_in_place);
    const auto micro = (packed_a ? family.packed_a : in_place)[rows - 1];
    const Packed* b = packed_b + (jr / NR) * NR * steps;
    float* c = C + (i0 + ir) * ldc + jr;
    if (cols == NR) return micro(steps, a, lda, b, c, ldc, load_c);
    if (load_c)
      for (int64_t r = 0; r < rows; ++r) std::memcpy(edge + r * NR, c + r * ldc, cols * sizeof(float));
    micro(steps, a, lda, b, edge, NR, load_c);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * NR, cols * sizeof(float));
  };
  // A tile that adds to C starts its chains from C's values, so the micro-kernel waits for them
  // (from L2 or further, when a weight gradient's C is revisited once per K block): the next tile's
  // lines are fetched while this one multiplies.
  const auto prefetch_c = [&](int64_t ir, int64_t jr) {
    if (!load_c || ir >= mc || jr >= j0 + nc) return;
    const int64_t rows = std::min(MR, mc - ir), bytes = std::min(NR, j0 + nc - jr) * int64_t{sizeof(float)};
    for (int64_t r = 0; r < rows; ++r) {
      const char* line = reinterpret_cast<const char*>(C + (i0 + ir + r) * ldc + jr);
      for (int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(line + offset, 1);
    }
  };
  if (family.b_slivers_outer) {
    for (int64_t jr = j0; jr < j0 + nc; jr += NR)
      for (int64_t ir = 0; ir < mc; ir += MR) {
        ir + MR < mc ? prefetch_c(ir + MR, jr) : prefetch_c(0, jr + NR);
        tile(ir, jr);
      }
  } else {
    for (int64_t ir = 0; ir < mc; ir += MR)
      for (int64_t jr = j0; jr < j0 + nc; jr += NR) {
        jr + NR < j0 + nc ? prefetch_c(ir, jr + NR) : prefetch_c(ir + MR, j0);
        tile(ir, jr);
      }
  }
}

// Where a K block of a prepacked op(B) starts: the blocks before it hold p0 k values.
template <typename Packed>
int64_t prepacked_block_offset(const KernelFamily<Packed>& family, int64_t p0, int64_t slivers) {
  return family.steps(p0) * slivers * family.NR;
}

// The work items of a product: MC-row blocks times column chunks of chunk_slivers slivers, at
// least 4 items per thread and a multiple of the thread count where the columns allow it, so
// static scheduling stays balanced. A thread's share is a run of consecutive items; they go row
// block by row block when op(A) is the larger operand (M >= N), so a thread reads its part of A
// only, else column chunk by column chunk, so it reads its part of B only and holds whole chunks,
// each with the short last row block (a 128-row weight gradient's blocks of 48, 48 and 32 rows had
// split 288 : 224 rows on two threads).
struct WorkSplit {
  int64_t blocks_m, chunks_n, chunk_slivers, items;
  bool by_columns;
  int64_t row_block(int64_t item) const { return by_columns ? item % blocks_m : item / chunks_n; }
  int64_t chunk(int64_t item) const { return by_columns ? item / blocks_m : item % chunks_n; }
  int64_t first_row(int64_t item) const { return row_block(item) * MC; }
  int64_t first_sliver(int64_t item) const { return chunk(item) * chunk_slivers; }
};
WorkSplit split_work(int64_t M, int64_t N, int64_t slivers, int threads) {
  const int64_t blocks_m = (M + MC - 1) / MC;
  int64_t chunks_n = 1;
  while ((blocks_m * chunks_n < 4 * threads || (blocks_m * chunks_n) % threads != 0) && chunks_n < slivers) ++chunks_n;
  const int64_t chunk_slivers = (slivers + chunks_n - 1) / chunks_n;
  chunks_n = (slivers + chunk_slivers - 1) / chunk_slivers;
  return {blocks_m, chunks_n, chunk_slivers, blocks_m * chunks_n, M < N};
}

// Packed op(B) per K chunk: at most this many bytes (or one K block, when a block alone is
// larger), so that a work item, which runs every K block of a chunk against its rows, finds B in
// the last-level cache. The largest op(B) of the 10.7M recipe's forward and input-gradient
// products (2.4 MB in float32) is one chunk; a weight gradient (K = tokens) takes many.
constexpr int64_t kChunkPackedBytes = int64_t{3} << 20;

// One blocked product, as the team shares it.
template <typename Packed>
struct BlockedProduct {
  const KernelFamily<Packed>& family;
  bool trans_a, trans_b;
  int64_t M, N, K;
  const float* A;
  int64_t lda;
  const float* B;  // null when prepacked
  int64_t ldb;
  const Packed* prepacked;  // every K block of op(B), or null: packed per K chunk into packed_b
  float* C;
  int64_t ldc;
  bool accumulate;
  bool pack_a;       // else A is read in place
  Packed* packed_b;  // one K chunk of op(B), when not prepacked
  WorkSplit split;
};

// This thread's share of K values [p_begin, p_end): its contiguous share of packing the chunk's
// op(B) (unless prepacked), then (once the team has packed) its work items, each running the
// chunk's K blocks in order: its rows of A packed per block in the thread's own scratch (or read
// in place), its tile of C still in cache from one block to the next. No worksharing constructs:
// the serial case may run inside a caller's parallel loop (attention), where an orphaned `omp for`
// would bind to the caller's team.
template <typename Packed>
void run_k_chunk(const BlockedProduct<Packed>& p, int64_t p_begin, int64_t p_end, int64_t thread, int64_t team) {
  const KernelFamily<Packed>& family = p.family;
  const int64_t MR = family.MR, NR = family.NR, block_values = family.kc_values();
  const int64_t slivers = (p.N + NR - 1) / NR;
  const FlushSubnormals flush(family.flush_with_mxcsr);
  // Where the K block starting at p0 sits in the chunk's packed op(B).
  const auto chunk_offset = [&](int64_t p0) { return prepacked_block_offset(family, p0 - p_begin, slivers); };
  const auto block_b = [&](int64_t p0) -> const Packed* {
    return p.prepacked ? p.prepacked + prepacked_block_offset(family, p0, slivers) : p.packed_b + chunk_offset(p0);
  };
  if (!p.prepacked) {
    const int64_t packs = (p_end - p_begin + block_values - 1) / block_values * slivers;
    // The thread's share of (K block, sliver) packs, a run of consecutive slivers per call: an
    // untransposed B is then read along its lines, not across them.
    const IndexRange my_packs = contiguous_share(packs, thread, team);
    const int64_t last = my_packs.end;
    for (int64_t s = my_packs.begin; s < last;) {
      const int64_t p0 = p_begin + s / slivers * block_values, j = s % slivers * NR;
      const int64_t kc = std::min(block_values, p_end - p0), run = std::min(last - s, slivers - s % slivers);
      family.pack_b(NR, p.trans_b, p.B, p.ldb, p0, kc, j, std::min(run * NR, p.N - j),
                    p.packed_b + chunk_offset(p0) + j * family.steps(kc));
      s += run;
    }
    if (team > 1) {
#pragma omp barrier
    }
  }
  Packed* a_rows = p.pack_a ? thread_scratch().a.get<Packed>(MC * family.steps(block_values)) : nullptr;
  const WorkSplit& split = p.split;
  const auto run = [&](int64_t item, int64_t p0) {
    const int64_t i0 = split.first_row(item), mc = std::min(MC, p.M - i0);
    const int64_t j0 = split.first_sliver(item) * NR;
    const int64_t nc = std::min(split.chunk_slivers * NR, p.N - j0);
    const int64_t kc = std::min(block_values, p_end - p0);
    if (a_rows) family.pack_a(MR, p.trans_a, p.A, p.lda, i0, mc, p0, kc, a_rows);
    multiply_block(family, p.trans_a, p.A, p.lda, p0, a_rows, block_b(p0), kc, i0, mc, j0, nc, p.C, p.ldc,
                   p.accumulate || p0 > 0);
  };
  const IndexRange items = contiguous_share(split.items, thread, team);
  if (p.trans_a) {
    // A^T (a weight gradient's dy^T: K = tokens) holds an item's rows of A as short pieces of
    // long lines of k: block by block, the thread's items read each line's pieces one after
    // another, their tiles of C staying in L2.
    for (int64_t p0 = p_begin; p0 < p_end; p0 += block_values)
      for (int64_t item = items.begin; item < items.end; ++item) run(item, p0);
  } else {
    for (int64_t item = items.begin; item < items.end; ++item)
      for (int64_t p0 = p_begin; p0 < p_end; p0 += block_values) run(item, p0);
  }
}

// The blocked product. `prepacked` is null or holds every K block of op(B) in the packed layout.
template <typename Packed>
void gemm_blocked(const KernelFamily<Packed>& family, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  const float* A, int64_t lda, const float* B, int64_t ldb,
                  std::type_identity_t<const Packed*> prepacked, float* C, int64_t ldc, bool accumulate) {
  const int64_t NR = family.NR, slivers = (N + NR - 1) / NR, block_values = family.kc_values();
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const WorkSplit split = split_work(M, N, slivers, threads);
  const bool parallel = split.items > 1 && M * N * K >= (1 << 18) && threads > 1;
  const int64_t block_bytes = family.steps(std::min(K, block_values)) * slivers * NR * int64_t{sizeof(Packed)};
  const int64_t blocks = (K + block_values - 1) / block_values;
  const int64_t chunk_blocks = prepacked ? blocks : std::clamp<int64_t>(kChunkPackedBytes / block_bytes, 1, blocks);
  const int64_t chunk_values = chunk_blocks * block_values;
  Scratch& scratch = thread_scratch();
  const BlockedProduct<Packed> product{
      .family = family,
      .trans_a = trans_a,
      .trans_b = trans_b,
      .M = M,
      .N = N,
      .K = K,
      .A = A,
      .lda = lda,
      .B = B,
      .ldb = ldb,
      .prepacked = prepacked,
      .C = C,
      .ldc = ldc,
      .accumulate = accumulate,
      .pack_a = !family.reads_a_in_place(trans_a, K),
      .packed_b = prepacked ? nullptr : scratch.b.get<Packed>(chunk_blocks * block_bytes / int64_t{sizeof(Packed)}),
      .split = split};
  for (int64_t p_begin = 0; p_begin < K; p_begin += chunk_values) {
    const int64_t p_end = std::min(K, p_begin + chunk_values);
    // Small products (attention's, each inside the caller's own parallel loop) skip the cost of
    // opening a parallel region.
    if (parallel) {
      // Safe with run_k_chunk's barrier: what can throw (growing a thread's scratch) follows it.
      FirstFailure failure;
#pragma omp parallel
      failure.capture([&] { run_k_chunk(product, p_begin, p_end, omp_get_thread_num(), omp_get_num_threads()); });
      failure.rethrow();
    } else {
      run_k_chunk(product, p_begin, p_end, 0, 1);
    }
  }
}

// dst[j][i] = src[i][j] for the rows x cols src, a square tile at a time, so that both sides are
// read and written a cache line at a time.
void transpose(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst, int64_t ldd) {
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
#pragma omp parallel for if (rows * cols >= kParallelMinElementwise && !omp_in_parallel())
  for (int64_t t = 0; t < row_tiles; ++t)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t i = t * kTile; i < std::min(rows, (t + 1) * kTile); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) dst[j * ldd + i] = src[i * lds + j];
}

// C = A^T B (+ C) as C^T = B^T A (+ C^T) in the thread's scratch (see runs_transposed).
template <typename Packed>
void gemm_transposed(const KernelFamily<Packed>& family, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  float* transposed_c = thread_scratch().transposed_c.get<float>(M * N);
  if (accumulate) transpose(M, N, C, ldc, transposed_c, M);
  gemm_blocked(family, true, false, N, M, K, B, ldb, A, lda, nullptr, transposed_c, M, accumulate);
  transpose(N, M, transposed_c, M, C, ldc);
}

bool zero_or_trivial(int64_t M, int64_t N, int64_t K, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return true;
  if (K > 0) return false;
  if (!accumulate)
    for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(float));
  return true;
}

// Packs every K block of op(B) into `out`, in the layout gemm_blocked reads as `prepacked`.
template <typename Packed>
void pack_whole_b(const KernelFamily<Packed>& family, bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
                  Packed* out) {
  const int64_t NR = family.NR, slivers = (N + NR - 1) / NR;
  for (int64_t p0 = 0; p0 < K; p0 += family.kc_values()) {
    const int64_t kc = std::min(family.kc_values(), K - p0);
    Packed* block = out + prepacked_block_offset(family, p0, slivers);
    for (int64_t s = 0; s < slivers; ++s)
      family.pack_b(NR, trans_b, B, ldb, p0, kc, s * NR, std::min(NR, N - s * NR), block + s * NR * family.steps(kc));
  }
}

// gemm_prepacked_columns for one packed format, on the calling thread.
template <typename Packed>
void prepacked_columns(const KernelFamily<Packed>& family, int64_t M, const float* A, int64_t lda, const Packed* packed,
                       int64_t K, int64_t N, int64_t column_begin, int64_t column_end, float* C, int64_t ldc,
                       bool accumulate) {
  const int64_t MR = family.MR, NR = family.NR, slivers = (N + NR - 1) / NR;
  const FlushSubnormals flush(family.flush_with_mxcsr);
  for (int64_t p0 = 0; p0 < K; p0 += family.kc_values()) {
    const int64_t kc = std::min(family.kc_values(), K - p0);
    Packed* packed_a = nullptr;
    if (!family.reads_a_in_place(false, K)) {
      packed_a = thread_scratch().a.get<Packed>((M + MR - 1) / MR * MR * family.steps(kc));
      family.pack_a(MR, false, A, lda, 0, M, p0, kc, packed_a);
    }
    // Row blocks of MC as gemm_blocked makes them, so partial slivers fall where they do there.
    for (int64_t i0 = 0; i0 < M; i0 += MC)
      multiply_block(family, false, A, lda, p0, packed_a ? packed_a + i0 * family.steps(kc) : nullptr,
                     packed + prepacked_block_offset(family, p0, slivers), kc, i0, std::min(MC, M - i0), column_begin,
                     column_end - column_begin, C, ldc, accumulate || p0 > 0);
  }
}

// A packed matrix's data in its family's element type.
template <typename Packed>
const Packed* packed_data(const KernelFamily<Packed>&, const PackedMatrix& B) {
  return reinterpret_cast<const Packed*>(B.data());
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Dtype inputs) {
  if (zero_or_trivial(M, N, K, C, ldc, accumulate)) return;
  if (inputs == Dtype::float32 && M == 1 && !trans_a && trans_b) {
    gemm_detail::row_times_transposed(gemm_detail::float32_family().row_dots, N, K, A, B, ldb, C, accumulate);
    return;
  }
  const bool transposed = gemm_detail::runs_transposed(trans_a, trans_b, M, N, K);
  gemm_detail::gemm_family(inputs).visit([&](const auto& family) {
    if (transposed)
      gemm_transposed(family, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    else
      gemm_blocked(family, trans_a, trans_b, M, N, K, A, lda, B, ldb, nullptr, C, ldc, accumulate);
  });
}

PackedMatrix::PackedMatrix(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, Dtype inputs) {
  pack(trans_b, K, N, B, ldb, inputs);
}

void PackedMatrix::pack(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, Dtype inputs) {
  K_ = K;
  N_ = N;
  dtype_ = inputs;
  gemm_detail::gemm_family(inputs).visit([&](const auto& family) {
    using Packed = typename std::remove_cvref_t<decltype(family)>::PackedType;
    nr_ = family.NR;
    kernel_name_ = family.name;
    const int64_t slivers = (N + nr_ - 1) / nr_;
    const auto floats = static_cast<std::size_t>(std::max<int64_t>(1, family.steps(K) * slivers * nr_));
    if (data_.size() < floats) data_ = AlignedBuffer<float>(floats);
    pack_whole_b(family, trans_b, K, N, B, ldb, reinterpret_cast<Packed*>(data_.data()));
  });
}

void gemm_prepacked(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, float* C, int64_t ldc,
                    bool accumulate) {
  if (zero_or_trivial(M, B.N(), B.K(), C, ldc, accumulate)) return;
  gemm_detail::family_named(B.kernel_name()).visit([&](const auto& family) {
    gemm_blocked(family, false, false, M, B.N(), B.K(), A, lda, nullptr, 0, packed_data(family, B), C, ldc, accumulate);
  });
}

void gemm_prepacked_columns(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, int64_t column_begin,
                            int64_t column_end, float* C, int64_t ldc, bool accumulate) {
  GPT_CHECK(column_begin % B.nr() == 0 && column_begin <= column_end && column_end <= B.N(), "column range");
  if (M <= 0 || column_begin == column_end) return;
  if (B.K() == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        std::memset(C + i * ldc + column_begin, 0, (column_end - column_begin) * sizeof(float));
    return;
  }
  gemm_detail::family_named(B.kernel_name()).visit([&](const auto& family) {
    prepacked_columns(family, M, A, lda, packed_data(family, B), B.K(), B.N(), column_begin, column_end, C, ldc,
                      accumulate);
  });
}

}  // namespace gpt
