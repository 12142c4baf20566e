// GradientSync: where the processes of a run agree on one gradient, between backward and the
// optimizer. It says which of an iteration's micro-batches this process computes, takes each
// micro-batch's gradient, and makes the iteration's gradient: the sum of its micro-batches'
// gradients in micro-batch order, each computed alone. That definition does not mention
// processes, so one process and N give the same bits. It also owns what depends on how the
// gradient is spread: clipping (the global norm) and which floats this process's optimizer
// updates.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/param_store.h"
#include "distributed/world.h"

namespace gpt {

struct MicroBatchRange {
  int64_t begin, end;  // micro-batch indices [begin, end) of 0 .. accumulation_steps - 1
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // Also sets the number of micro-batches of the iterations that follow.
  virtual MicroBatchRange micro_batches(int64_t accumulation_steps) = 0;
  // After micro-batch `micro`'s backward, whose gradient is in params' gradients: takes it, and
  // leaves the gradients zero when another micro-batch's backward follows.
  virtual void collect(int64_t micro, ParamStore& params, double loss) = 0;
  // The iteration's gradient into params' gradients (all of them, or this process's shard when the
  // optimizer is sharded); returns the micro-batches' losses summed in micro-batch order.
  virtual double synchronize(ParamStore& params) = 0;
  // The global gradient norm (clip_grad_norm's bits), and this process's gradients clipped by it.
  virtual double clip(ParamStore& params, double max_norm) = 0;
  // The floats of the store this process's optimizer updates (and keeps state for).
  virtual StoreRange optimizer_shard(const ParamStore& params) const = 0;
  // After the optimizer step: brings in the parameters other processes updated.
  virtual void share_parameters(ParamStore& params) = 0;
  // Floats this process sends and receives per iteration, and the seconds the last iteration's
  // exchange took (for the log and the benchmark): 0 in one process.
  virtual int64_t floats_exchanged_per_iteration() const { return 0; }
  virtual double exchange_seconds() const { return 0; }
};

// One process: every micro-batch is local. With several, the sum is kept beside the gradients.
class LocalGradientSync final : public GradientSync {
 public:
  MicroBatchRange micro_batches(int64_t accumulation_steps) override;
  void collect(int64_t micro, ParamStore& params, double loss) override;
  double synchronize(ParamStore& params) override;
  double clip(ParamStore& params, double max_norm) override;
  StoreRange optimizer_shard(const ParamStore& params) const override;
  void share_parameters(ParamStore&) override {}

 private:
  int64_t micro_batches_ = 1;
  AlignedBuffer<float> sum_;
  double loss_sum_ = 0.0;
};

// Data parallelism over a World of N processes. The store is cut into N contiguous shards
// (aligned to the norm's chunks); process r computes micro-batches [r k, (r+1) k) with
// k = accumulation_steps / N, keeps each one's gradient whole, and one MPI_Alltoallv sends each
// shard of each micro-batch to the shard's owner. The owner sums the accumulation_steps pieces of
// its shard in micro-batch order, which is the same arithmetic as one process (MPI's own
// reductions are not used: their order is unspecified). Then either every process gathers the
// summed gradient (MPI_Allgatherv) and steps the whole optimizer, or, sharded (ZeRO stage 1),
// each clips and steps its own shard with the state of that shard only and the updated
// parameters are gathered instead. Either way the exchange is the traffic of a ring allreduce
// when k = 1 (k times the reduce-scatter part otherwise).
class DataParallelSync final : public GradientSync {
 public:
  DataParallelSync(const World& world, const ParamStore& params, bool shard_optimizer);

  MicroBatchRange micro_batches(int64_t accumulation_steps) override;
  void collect(int64_t micro, ParamStore& params, double loss) override;
  double synchronize(ParamStore& params) override;
  double clip(ParamStore& params, double max_norm) override;
  StoreRange optimizer_shard(const ParamStore& params) const override;
  void share_parameters(ParamStore& params) override;

  StoreRange shard(int rank) const;  // the floats rank `rank` owns
  int64_t floats_exchanged_per_iteration() const override;
  double exchange_seconds() const override { return exchange_seconds_; }

 private:
  const World& world_;
  bool shard_optimizer_;
  int64_t total_;  // floats in the store's layout
  std::vector<int> shard_counts_, shard_offsets_;
  int64_t per_process_ = 1, first_micro_ = 0, accumulation_steps_ = 1;
  std::vector<int> send_counts_, send_offsets_, recv_counts_, recv_offsets_;
  AlignedBuffer<float> send_, recv_;  // [owner][micro][shard]; [source][micro][my shard]
  std::vector<double> losses_, all_losses_;
  std::vector<int> chunk_counts_, chunk_offsets_;  // each process's chunks of the norm's sum
  std::vector<double> chunk_sums_, all_chunk_sums_;
  double exchange_seconds_ = 0.0;
};

}  // namespace gpt
