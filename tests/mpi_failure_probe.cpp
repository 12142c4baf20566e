// Makes one MPI call fail on purpose, under mpirun (test_distributed starts it): an all-gather of
// a negative count, which MPI rejects on every rank. Prints the error main would report and exits
// with its code, so the test can check the message names the call, MPI's error and the rank.
#include <cstdio>

#include "distributed/world.h"

int main(int argc, char** argv) {
  gpt::World world = gpt::World::start(&argc, &argv);
  double mine = 1.0, all[8] = {};
  int code = 0;
  try {
    world.all_gather(&mine, -1, all);
    std::printf("no error\n");
  } catch (const gpt::MpiFailure& e) {
    std::printf("gpt: error: %s\n", e.what());
    code = e.exit_code();
  }
  std::fflush(stdout);
  world.stop();
  return code;
}
