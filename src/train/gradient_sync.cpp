#include "train/gradient_sync.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "core/copy_values.h"
#include "train/clip.h"

namespace gpt {

namespace {

// dst[k] = dst[k] + src[k]: one addition per element, so the sum's order is the callers'.
void add_floats(float* dst, const float* src, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) dst[k] = dst[k] + src[k];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// ---- one process -------------------------------------------------------------------------------

MicroBatchRange LocalGradientSync::micro_batches(int64_t accumulation_steps) {
  micro_batches_ = accumulation_steps;
  return {0, accumulation_steps};
}

void LocalGradientSync::collect(int64_t micro, ParamStore& params, double loss) {
  loss_sum_ = micro == 0 ? 0.0 + loss : loss_sum_ + loss;
  if (micro_batches_ == 1) return;  // the gradient is the iteration's already
  const auto n = static_cast<int64_t>(params.padded_floats());
  if (sum_.size() != static_cast<std::size_t>(n)) sum_ = AlignedBuffer<float>(static_cast<std::size_t>(n));
  if (micro == micro_batches_ - 1) {
    add_floats(params.grad(), sum_.data(), n);  // g_last + sum: addition commutes exactly
    return;
  }
  if (micro == 0)
    copy_values(sum_.data(), params.grad(), n);
  else
    add_floats(sum_.data(), params.grad(), n);
  params.zero_grad();
}

double LocalGradientSync::synchronize(ParamStore&) { return loss_sum_; }

double LocalGradientSync::clip(ParamStore& params, double max_norm) { return clip_grad_norm(params, max_norm); }

StoreRange LocalGradientSync::optimizer_shard(const ParamStore& params) const {
  return {0, static_cast<int64_t>(params.padded_floats())};
}

// ---- several processes -------------------------------------------------------------------------

DataParallelSync::DataParallelSync(const World& world, const ParamStore& params, bool shard_optimizer)
    : world_(world), shard_optimizer_(shard_optimizer), total_(static_cast<int64_t>(params.padded_floats())) {
  const int N = world.size();
  const int64_t chunks = norm_chunks(total_);
  for (int r = 0; r < N; ++r) {
    const int64_t begin = std::min(total_, chunks * r / N * kNormChunk);
    const int64_t end = std::min(total_, chunks * (r + 1) / N * kNormChunk);
    GPT_CHECK(end - begin < (int64_t{1} << 31), "a shard of over 2^31 floats");
    shard_offsets_.push_back(static_cast<int>(begin));
    shard_counts_.push_back(static_cast<int>(end - begin));
    chunk_offsets_.push_back(static_cast<int>(begin / kNormChunk));
    chunk_counts_.push_back(static_cast<int>(norm_chunks(end) - begin / kNormChunk));
  }
  const auto mine = static_cast<std::size_t>(world.rank());
  chunk_sums_.resize(static_cast<std::size_t>(chunk_counts_[mine]));
  all_chunk_sums_.resize(static_cast<std::size_t>(norm_chunks(total_)));
}

StoreRange DataParallelSync::shard(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return {shard_offsets_[r], static_cast<int64_t>(shard_offsets_[r]) + shard_counts_[r]};
}

MicroBatchRange DataParallelSync::micro_batches(int64_t accumulation_steps) {
  const int N = world_.size();
  GPT_CHECK(accumulation_steps % N == 0, "gradient_accumulation_steps not divisible by the world size");
  if (accumulation_steps != accumulation_steps_ || send_counts_.empty()) {
    accumulation_steps_ = accumulation_steps;
    per_process_ = accumulation_steps / N;
    const int64_t mine = shard_counts_[static_cast<std::size_t>(world_.rank())];
    send_counts_.assign(static_cast<std::size_t>(N), 0);
    send_offsets_.assign(static_cast<std::size_t>(N), 0);
    recv_counts_.assign(static_cast<std::size_t>(N), 0);
    recv_offsets_.assign(static_cast<std::size_t>(N), 0);
    int64_t sent = 0;
    for (int r = 0; r < N; ++r) {
      const auto i = static_cast<std::size_t>(r);
      send_counts_[i] = static_cast<int>(per_process_ * shard_counts_[i]);
      send_offsets_[i] = static_cast<int>(sent);
      sent += send_counts_[i];
      recv_counts_[i] = static_cast<int>(per_process_ * mine);
      recv_offsets_[i] = static_cast<int>(per_process_ * mine * r);
    }
    GPT_CHECK(sent < (int64_t{1} << 31) && accumulation_steps * mine < (int64_t{1} << 31),
              "gradient exchange over 2^31 floats: use fewer micro-batches per process");
    send_ = AlignedBuffer<float>(static_cast<std::size_t>(sent));
    recv_ = AlignedBuffer<float>(static_cast<std::size_t>(accumulation_steps * mine));
    losses_.assign(static_cast<std::size_t>(per_process_), 0.0);
    all_losses_.assign(static_cast<std::size_t>(accumulation_steps), 0.0);
  }
  first_micro_ = per_process_ * world_.rank();
  return {first_micro_, first_micro_ + per_process_};
}

void DataParallelSync::collect(int64_t micro, ParamStore& params, double loss) {
  const int64_t j = micro - first_micro_;
  losses_[static_cast<std::size_t>(j)] = loss;
  for (int r = 0; r < world_.size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    copy_values(send_.data() + send_offsets_[i] + j * shard_counts_[i], params.grad() + shard_offsets_[i],
                shard_counts_[i]);
  }
  // After the last one, synchronize overwrites what it needs and the step ends with zero_grad.
  if (j + 1 < per_process_) params.zero_grad();
}

double DataParallelSync::synchronize(ParamStore& params) {
  const auto start = std::chrono::steady_clock::now();
  world_.all_to_all_v(send_.data(), send_counts_, send_offsets_, recv_.data(), recv_counts_, recv_offsets_);
  // recv holds this shard of every micro-batch, in micro-batch order (source rank, then its own).
  const StoreRange mine = shard(world_.rank());
  float* sum = params.grad() + mine.begin;
  copy_values(sum, recv_.data(), mine.size());
  for (int64_t m = 1; m < accumulation_steps_; ++m) add_floats(sum, recv_.data() + m * mine.size(), mine.size());
  if (!shard_optimizer_) world_.all_gather_v(sum, params.grad(), shard_counts_, shard_offsets_);
  world_.all_gather(losses_.data(), static_cast<int>(per_process_), all_losses_.data());
  exchange_seconds_ = seconds_since(start);
  double loss_sum = 0.0;
  for (double loss : all_losses_) loss_sum += loss;
  return loss_sum;
}

double DataParallelSync::clip(ParamStore& params, double max_norm) {
  if (!shard_optimizer_) return clip_grad_norm(params, max_norm);  // every process has the whole gradient
  // Each process sums the norm's chunks of its shard; the sums are gathered and added in chunk
  // order, as clip_grad_norm adds them.
  const StoreRange mine = shard(world_.rank());
  const int64_t first = mine.begin / kNormChunk, last = norm_chunks(mine.end);
  chunk_sums_of_squares(params.grad(), total_, first, last, chunk_sums_.data());
  world_.all_gather_v(chunk_sums_.data(), all_chunk_sums_.data(), chunk_counts_, chunk_offsets_);
  const double norm = norm_of_chunk_sums(all_chunk_sums_.data(), norm_chunks(total_));
  scale_floats(params.grad() + mine.begin, mine.size(), clip_coefficient(norm, max_norm));
  return norm;
}

StoreRange DataParallelSync::optimizer_shard(const ParamStore& params) const {
  if (shard_optimizer_) return shard(world_.rank());
  return {0, static_cast<int64_t>(params.padded_floats())};
}

void DataParallelSync::share_parameters(ParamStore& params) {
  if (!shard_optimizer_) return;
  const auto start = std::chrono::steady_clock::now();
  const StoreRange mine = shard(world_.rank());
  world_.all_gather_v(params.data() + mine.begin, params.data(), shard_counts_, shard_offsets_);
  exchange_seconds_ += seconds_since(start);
}

int64_t DataParallelSync::floats_exchanged_per_iteration() const {
  const int64_t mine = shard_counts_[static_cast<std::size_t>(world_.rank())];
  const int64_t sent = per_process_ * (total_ - mine);  // my micro-batches' other shards
  const int64_t gathered = total_ - mine;               // everyone else's shards
  return sent + gathered;
}

}  // namespace gpt
