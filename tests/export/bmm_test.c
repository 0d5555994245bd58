/* A C11 program that links only an exported batch_matmul library (and libm): C[b, M, N] =
 * A[b, M, K] B[b, N, K]^T (LAYOUT_NT=1) or A B[b, K, N] (LAYOUT_NT=0), every M of a list
 * against a float64 reference with the output poisoned (NaN) first, then the error
 * paths. Built by export_test.sh with -DEXPORT_HEADER, -DAPI(f), -DCODE(c) (as
 * dense_test.c), -DBATCH=b and -DLAYOUT_NT. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include EXPORT_HEADER

static int failures = 0;

#define EXPECT(cond, ...)                                              \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fputc('\n', stderr);                                             \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static float* random_floats(int64_t n) {
  float* p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    p[i] = (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return p;
}

int main(void) {
  const int64_t K = API(A_elements)(1) / BATCH;
  const int64_t N = API(C_elements)(1) / BATCH;
  const int64_t Ms[] = {1, 2, 7, 16, 17, 31, 32, 33, 100};
  for (size_t t = 0; t < sizeof Ms / sizeof Ms[0]; ++t) {
    const int64_t M = Ms[t];
    float* a = random_floats(BATCH * M * K);
    float* b = random_floats(BATCH * N * K);
    float* c = malloc((size_t)(BATCH * M * N) * sizeof(float));
    for (int64_t i = 0; i < BATCH * M * N; ++i) c[i] = NAN;
    int rc = API(run)(M, a, BATCH * M * K, b, BATCH * N * K, c, BATCH * M * N);
    EXPECT(rc == CODE(OK), "M=%lld: %s", (long long)M, API(last_error)());
    double diff = 0, norm = 0;
    int unwritten = 0;
    for (int64_t p = 0; p < BATCH; ++p)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) {
            double bv = LAYOUT_NT ? b[(p * N + n) * K + k] : b[(p * K + k) * N + n];
            acc += (double)a[(p * M + m) * K + k] * bv;
          }
          double got = c[(p * M + m) * N + n];
          if (!isfinite(got)) ++unwritten;
          diff += (got - acc) * (got - acc);
          norm += acc * acc;
        }
    double err = sqrt(diff) / sqrt(norm);
    EXPECT(unwritten == 0 && err < 1e-5,
           "M=%lld (kernel %d): %d elements not written, relative error %g", (long long)M,
           API(kernel_for)(M), unwritten, err);
    printf("M=%-4lld kernel %d  relative error %.2e\n", (long long)M, API(kernel_for)(M), err);
    if (M == 7) {
      EXPECT(API(run)(0, a, 0, b, BATCH * N * K, c, 0) == CODE(ERROR_SHAPE), "M = 0 accepted");
      EXPECT(strstr(API(last_error)(), "M = 0") != NULL, "message: %s", API(last_error)());
      EXPECT(API(run)(M, a, BATCH * M * K, NULL, BATCH * N * K, c, BATCH * M * N) ==
                 CODE(ERROR_NULL_POINTER),
             "null B accepted");
      EXPECT(strstr(API(last_error)(), "buffer B is a null pointer") != NULL, "message: %s",
             API(last_error)());
      EXPECT(API(run)(M, a, BATCH * M * K, b, BATCH * N * K - 1, c, BATCH * M * N) ==
                 CODE(ERROR_BUFFER_SIZE),
             "short B accepted");
      EXPECT(strstr(API(last_error)(), "buffer B has") != NULL, "message: %s", API(last_error)());
    }
    free(a);
    free(b);
    free(c);
  }
  if (failures) {
    printf("%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
