// Runs a command and prints its peak resident memory: "rank R peak_kib N" on standard error, R
// from Open MPI's environment (0 without it). Under mpirun, one line per process of a run, for the
// tests of how memory divides over processes.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_memory_probe COMMAND [ARGS...]\n");
    return 2;
  }
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::execv(argv[1], argv + 1);
    std::perror(argv[1]);
    std::_Exit(127);
  }
  int status = 0;
  rusage usage{};
  if (::wait4(child, &status, 0, &usage) != child) return 1;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  std::fprintf(stderr, "rank %s peak_kib %ld\n", rank ? rank : "0", usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
