#include "distributed/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "core/copy_values.h"

#if GPT_WITH_MPI
#include <mpi.h>
// GPT_MPI_CALL(MPI_Bcast, args...): the call, then an MpiFailure naming it when it failed.
#define GPT_MPI_CALL(function, ...) check_mpi(function(__VA_ARGS__), #function)
#endif

namespace gpt {

namespace {

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(variable)) return true;
  return false;
}

#if GPT_WITH_MPI
template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}

// The launcher's rank for this process, before MPI is initialised ("" when none is set).
std::string launcher_rank() {
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(variable)) return value;
  return "";
}
#endif

}  // namespace

#if GPT_WITH_MPI
void World::check_mpi(int code, const char* function) const {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::snprintf(text, sizeof text, "MPI error %d", code);
  std::string where = describe();
  if (!mpi_) {  // in start_mpi, before MPI told the rank: the launcher's
    const std::string rank = launcher_rank();
    where = (rank.empty() ? "a process" : "rank " + rank) + (host_.empty() ? "" : " on " + host_);
  }
  throw MpiFailure(std::string(function) + " failed on " + where + ": " + text);
}
#endif

std::string World::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + (host_.empty() ? "" : " on " + host_);
}

World World::start(int* argc, char*** argv) {
  World w;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  w.host_ = host;
  if (launched_by_mpi()) w.start_mpi(argc, argv);
  return w;
}

void World::start_mpi(int* argc, char*** argv) {
#if GPT_WITH_MPI
  int provided = 0;
  // Only the main thread calls MPI (OpenMP threads never do).
  GPT_MPI_CALL(MPI_Init_thread, argc, argv, MPI_THREAD_FUNNELED, &provided);
  // Failures come back as codes (then an MpiFailure naming the call), not as a silent abort.
  GPT_MPI_CALL(MPI_Comm_set_errhandler, MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  GPT_MPI_CALL(MPI_Comm_rank, MPI_COMM_WORLD, &rank_);
  GPT_MPI_CALL(MPI_Comm_size, MPI_COMM_WORLD, &size_);
  mpi_ = true;
  MPI_Comm local;
  GPT_MPI_CALL(MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  GPT_MPI_CALL(MPI_Comm_size, local, &ranks_on_host_);
  int local_rank = 0;
  GPT_MPI_CALL(MPI_Comm_rank, local, &local_rank);
  GPT_MPI_CALL(MPI_Comm_free, &local);
  int leader = local_rank == 0 ? 1 : 0;
  GPT_MPI_CALL(MPI_Allreduce, &leader, &hosts_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)argc;
  (void)argv;
  throw UserError(
      "this gpt was built without MPI but was started by an MPI launcher (install libopenmpi-dev and "
      "rebuild with -DGPT_MPI=ON)");
#endif
}

void World::stop() {
#if GPT_WITH_MPI
  if (mpi_) MPI_Finalize();
#endif
  mpi_ = false;
}

void World::all_gather(const double* mine, int count, double* all) const {
#if GPT_WITH_MPI
  if (mpi_) return GPT_MPI_CALL(MPI_Allgather, mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, MPI_COMM_WORLD);
#endif
  copy_values(all, mine, count);  // in one process every collective is a copy of this rank's part
}

template <class T>
void World::all_gather_v_of(const T* mine, T* all, const std::vector<int>& counts,
                            const std::vector<int>& offsets) const {
#if GPT_WITH_MPI
  if (mpi_)
    return GPT_MPI_CALL(MPI_Allgatherv, mine, counts[static_cast<std::size_t>(rank_)], mpi_type<T>(), all,
                        counts.data(), offsets.data(), mpi_type<T>(), MPI_COMM_WORLD);
#endif
  copy_values(all + offsets[0], mine, counts[0]);
}

void World::all_gather_v(const float* mine, float* all, const std::vector<int>& counts,
                         const std::vector<int>& offsets) const {
  all_gather_v_of(mine, all, counts, offsets);
}

void World::all_gather_v(const double* mine, double* all, const std::vector<int>& counts,
                         const std::vector<int>& offsets) const {
  all_gather_v_of(mine, all, counts, offsets);
}

void World::gather_v(const float* mine, float* all, const std::vector<int>& counts,
                     const std::vector<int>& offsets) const {
#if GPT_WITH_MPI
  if (mpi_)
    return GPT_MPI_CALL(MPI_Gatherv, mine, counts[static_cast<std::size_t>(rank_)], MPI_FLOAT, all, counts.data(),
                        offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
#endif
  copy_values(all + offsets[0], mine, counts[0]);
}

void World::scatter_v(const float* all, float* mine, const std::vector<int>& counts,
                      const std::vector<int>& offsets) const {
#if GPT_WITH_MPI
  if (mpi_)
    return GPT_MPI_CALL(MPI_Scatterv, all, counts.data(), offsets.data(), MPI_FLOAT, mine,
                        counts[static_cast<std::size_t>(rank_)], MPI_FLOAT, 0, MPI_COMM_WORLD);
#endif
  copy_values(mine, all + offsets[0], counts[0]);
}

void World::all_to_all_v(const float* send, const std::vector<int>& send_counts, const std::vector<int>& send_offsets,
                         float* recv, const std::vector<int>& recv_counts, const std::vector<int>& recv_offsets) const {
#if GPT_WITH_MPI
  if (mpi_)
    return GPT_MPI_CALL(MPI_Alltoallv, send, send_counts.data(), send_offsets.data(), MPI_FLOAT, recv,
                        recv_counts.data(), recv_offsets.data(), MPI_FLOAT, MPI_COMM_WORLD);
#endif
  (void)recv_counts;
  copy_values(recv + recv_offsets[0], send + send_offsets[0], send_counts[0]);
}

void World::broadcast(void* data, std::size_t bytes) const {
#if GPT_WITH_MPI
  // In pieces: MPI counts are ints.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  auto* p = static_cast<char*>(data);
  if (mpi_)
    for (std::size_t done = 0; done < bytes; done += kPiece)
      GPT_MPI_CALL(MPI_Bcast, p + done, static_cast<int>(std::min(kPiece, bytes - done)), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
  (void)data;
  (void)bytes;
#endif
}

int64_t World::max(int64_t value) const {
  int64_t result = value;
#if GPT_WITH_MPI
  if (mpi_) GPT_MPI_CALL(MPI_Allreduce, &value, &result, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
#endif
  return result;
}

void World::barrier() const {
#if GPT_WITH_MPI
  if (mpi_) GPT_MPI_CALL(MPI_Barrier, MPI_COMM_WORLD);
#endif
}

void World::abort(int exit_code) const {
#if GPT_WITH_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, exit_code);
#endif
  std::_Exit(exit_code);
}

}  // namespace gpt
