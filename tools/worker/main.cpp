// dietcode-worker: the measurement worker process the tuner starts (src/tune/measure.h).
// Not meant to be run by hand: it reads JSON requests on stdin, one per line.
#include "tune/measure.h"

int main(int argc, char** argv) {
  return dietcode::tune::measure_worker_main(argc, argv);
}
