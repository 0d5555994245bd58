/* A C11 program that links only an exported dense library (and libm): every M of a
 * list, inside and outside the tuned range, against a float64 reference computed here
 * with the output poisoned (NaN) first, also from four threads at once; then every error
 * path of the C API.
 *
 * Built by export_test.sh with
 *   -DEXPORT_HEADER='"name.h"' -DAPI(f)=name_##f -DCODE(c)=NAME_##c -DEPILOGUE=0..3
 * (EPILOGUE: 0 none, 1 bias, 2 bias + ReLU, 3 bias + GELU). N and K come from the
 * header's element-count helpers. Prints "N checks failed" and exits 1 on failure. */
#include <math.h>
#include <pthread.h>
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

/* The call fails with `code` and a message containing `fragment`. */
#define EXPECT_ERROR(call, code, fragment)                                                         \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    const char* msg_ = API(last_error)();                                                          \
    EXPECT(rc_ == (code), "%s returned %d, expected %d (message: %s)", #call, rc_, (code), msg_);  \
    EXPECT(msg_ != NULL && strstr(msg_, (fragment)) != NULL, "%s: message '%s' lacks '%s'", #call, \
           msg_ ? msg_ : "(null)", (fragment));                                                    \
  } while (0)

#if EPILOGUE > 0
#define RUN(M, x, nx, w, b, nb, y, ny) API(run)(M, x, nx, w, b, nb, y, ny)
#else
#define RUN(M, x, nx, w, b, nb, y, ny) API(run)(M, x, nx, w, y, ny)
#endif

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float uniform(void) { /* in [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float* random_floats(int64_t n) {
  float* p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) p[i] = uniform();
  return p;
}

static double epilogue(double v) {
#if EPILOGUE == 2
  return v > 0 ? v : 0;
#elif EPILOGUE == 3
  return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
#else
  return v;
#endif
}

/* ||y - ref|| / ||ref||; INFINITY if any element is not finite (unwritten: NaN). */
static double check(int64_t M, int64_t N, int64_t K, const float* x, const float* w,
                    const float* bias, const float* y) {
  double diff = 0, norm = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (double)x[m * K + k] * (double)w[n * K + k];
      if (bias) acc += bias[n];
      double ref = epilogue(acc), got = y[m * N + n];
      if (!isfinite(got)) return INFINITY;
      diff += (got - ref) * (got - ref);
      norm += ref * ref;
    }
  return sqrt(diff) / (norm > 1e-300 ? sqrt(norm) : 1e-300);
}

/* Several threads calling run at once, each on its own shapes. */
struct Worker {
  int first;
  int64_t N, K;
  const API(weights) * weights;
  const float *w, *bias;
  int64_t bias_elements;
  double worst;
  int failed_calls;
};

static void* work(void* arg) {
  struct Worker* t = arg;
  uint64_t state = 0x51ED2705ull + (uint64_t)t->first;
  for (int64_t M = t->first; M <= 80; M += 4) {
    float* x = malloc((size_t)(M * t->K) * sizeof(float));
    float* y = malloc((size_t)(M * t->N) * sizeof(float));
    for (int64_t i = 0; i < M * t->K; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x[i] = (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    for (int64_t i = 0; i < M * t->N; ++i) y[i] = NAN;
    if (RUN(M, x, M * t->K, t->weights, t->bias, t->bias_elements, y, M * t->N) != CODE(OK))
      ++t->failed_calls;
    double err = check(M, t->N, t->K, x, t->w, t->bias, y);
    if (!(err <= t->worst)) t->worst = err;
    free(x);
    free(y);
  }
  return NULL;
}

int main(void) {
  const int64_t K = API(X_elements)(1);
  const int64_t N = API(Y_elements)(1);
  EXPECT(API(W_elements)(1) == N * K, "W elements %lld", (long long)API(W_elements)(1));
  float* w = random_floats(N * K);
  float* bias = NULL;
  int64_t bias_elements = 0;
#if EPILOGUE > 0
  bias_elements = API(bias_elements)(1);
  bias = random_floats(bias_elements);
#endif
  (void)bias_elements;
  API(weights)* weights = NULL;
  EXPECT(API(prepack)(w, N * K, &weights) == CODE(OK), "prepack: %s", API(last_error)());
  EXPECT(weights != NULL, "prepack gave no handle");
  EXPECT(strcmp(API(last_error)(), "") == 0, "message after success: %s", API(last_error)());

  /* The weights may be freed once packed: overwrite them (the handle owns a copy). */
  float* w_saved = malloc((size_t)(N * K) * sizeof(float));
  memcpy(w_saved, w, (size_t)(N * K) * sizeof(float));
  for (int64_t i = 0; i < N * K; ++i) w[i] = NAN;

  const int64_t Ms[] = {1, 2, 7, 16, 17, 31, 32, 33, 64, 65, 100};
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) EXPECT(API(set_threads)(2) == CODE(OK), "set_threads: %s", API(last_error)());
    for (size_t t = 0; t < sizeof Ms / sizeof Ms[0]; ++t) {
      const int64_t M = Ms[t];
      float* x = random_floats(M * K);
      float* y = malloc((size_t)(M * N) * sizeof(float));
      for (int64_t i = 0; i < M * N; ++i) y[i] = NAN;
      int rc = RUN(M, x, M * K, weights, bias, bias_elements, y, M * N);
      EXPECT(rc == CODE(OK), "M=%lld: run returned %d: %s", (long long)M, rc, API(last_error)());
      double err = check(M, N, K, x, w_saved, bias, y);
      int kernel = API(kernel_for)(M);
      EXPECT(err < 1e-5, "M=%lld (kernel %d, pass %d): relative error %g", (long long)M, kernel,
             pass, err);
      EXPECT(kernel >= 0, "kernel_for(%lld) = %d", (long long)M, kernel);
      if (pass == 0) printf("M=%-4lld kernel %d  relative error %.2e\n", (long long)M, kernel, err);
      free(x);
      free(y);
    }
  }

  {
    struct Worker workers[4];
    pthread_t threads[4];
    for (int t = 0; t < 4; ++t) {
      struct Worker init = {t + 1, N, K, weights, w_saved, bias, bias_elements, 0.0, 0};
      workers[t] = init;
      EXPECT(pthread_create(&threads[t], NULL, work, &workers[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < 4; ++t) {
      pthread_join(threads[t], NULL);
      EXPECT(workers[t].failed_calls == 0 && workers[t].worst < 1e-5,
             "concurrent thread %d: %d failed calls, worst relative error %g", t,
             workers[t].failed_calls, workers[t].worst);
    }
  }

  /* Bad arguments: refused before anything is computed (the output stays poisoned). */
  const int64_t M = 5;
  float* x = random_floats(M * K);
  float* y = malloc((size_t)(M * N) * sizeof(float));
  for (int64_t i = 0; i < M * N; ++i) y[i] = NAN;
  EXPECT_ERROR(RUN(0, x, 0, weights, bias, bias_elements, y, 0), CODE(ERROR_SHAPE),
               "M = 0: expected M >= 1");
  EXPECT_ERROR(RUN(-3, x, M * K, weights, bias, bias_elements, y, M * N), CODE(ERROR_SHAPE),
               "M = -3");
  EXPECT_ERROR(RUN(INT64_MAX / 2, x, M * K, weights, bias, bias_elements, y, M * N),
               CODE(ERROR_SHAPE), "too large");
  EXPECT_ERROR(RUN(M, NULL, M * K, weights, bias, bias_elements, y, M * N),
               CODE(ERROR_NULL_POINTER), "buffer X is a null pointer");
  EXPECT_ERROR(RUN(M, x, M * K - 1, weights, bias, bias_elements, y, M * N),
               CODE(ERROR_BUFFER_SIZE), "buffer X has");
  EXPECT_ERROR(RUN(M, x, M * K, weights, bias, bias_elements, NULL, M * N),
               CODE(ERROR_NULL_POINTER), "buffer Y is a null pointer");
  EXPECT_ERROR(RUN(M, x, M * K, weights, bias, bias_elements, y, M * N + 1),
               CODE(ERROR_BUFFER_SIZE), "buffer Y has");
  EXPECT_ERROR(RUN(M, x, M * K, NULL, bias, bias_elements, y, M * N), CODE(ERROR_NULL_POINTER),
               "weights handle is null");
  uint64_t bogus[16] = {0};
  EXPECT_ERROR(RUN(M, x, M * K, (const API(weights)*)bogus, bias, bias_elements, y, M * N),
               CODE(ERROR_WEIGHTS), "not made by");
#if EPILOGUE > 0
  EXPECT_ERROR(RUN(M, x, M * K, weights, NULL, bias_elements, y, M * N), CODE(ERROR_NULL_POINTER),
               "buffer bias is a null pointer");
  EXPECT_ERROR(RUN(M, x, M * K, weights, bias, bias_elements + 3, y, M * N),
               CODE(ERROR_BUFFER_SIZE), "buffer bias has");
#endif
  for (int64_t i = 0; i < M * N; ++i)
    if (!isnan(y[i])) {
      EXPECT(0, "a refused call wrote Y[%lld]", (long long)i);
      break;
    }
  API(weights)* other = (API(weights)*)bogus;
  EXPECT_ERROR(API(prepack)(NULL, N * K, &other), CODE(ERROR_NULL_POINTER), "null pointer");
  EXPECT(other == NULL, "a failed prepack left a handle");
  EXPECT_ERROR(API(prepack)(w_saved, N * K + 1, &other), CODE(ERROR_BUFFER_SIZE), "buffer W has");
  EXPECT_ERROR(API(prepack)(w_saved, N * K, NULL), CODE(ERROR_NULL_POINTER), "null");
  EXPECT_ERROR(API(set_threads)(0), CODE(ERROR_ARGUMENT), "expected 1..4096");
  EXPECT(API(kernel_for)(0) == -1, "kernel_for(0) = %d", API(kernel_for)(0));
  EXPECT(strstr(API(last_error)(), "M = 0") != NULL, "kernel_for(0) message: %s",
         API(last_error)());
  /* Still fine after the errors, and the message clears. */
  EXPECT(RUN(M, x, M * K, weights, bias, bias_elements, y, M * N) == CODE(OK), "%s",
         API(last_error)());
  EXPECT(strcmp(API(last_error)(), "") == 0, "message after success: %s", API(last_error)());
  EXPECT(check(M, N, K, x, w_saved, bias, y) < 1e-5, "M=%lld after errors", (long long)M);

  API(free_weights)(weights);
  API(free_weights)(NULL);
  free(x);
  free(y);
  free(w);
  free(w_saved);
  free(bias);
  if (failures) {
    printf("%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
