// Stand-alone replica (stop 57): does prefetching the next column tile's B while a tile's
// rows compute overlap one core's DRAM reads with its multiply-adds? ffn2 of BERT-base at
// T = 32: M = 32, K = 3072, N = 768, B in tile panels [N / 64][K][64], a 4 x 64 tile, m the
// inner tile loop (8 calls per column tile). 36 copies of B (340 MB) are walked in turn so
// that each product meets its B in DRAM.
//   gcc -O3 -march=native -o replica replica.c && ./replica
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { M = 32, K = 3072, N = 768, NR = 64, MR = 4, V = NR / 16, COPIES = 36 };
enum Mode { kNone, kOld, kSpread };
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
// One call: MR rows x NR columns over all of K. `next`: the next tile's B (K x NR floats).
static inline __attribute__((always_inline)) void tile(const float* A, const float* Bp, float* C,
                                                       enum Mode mode, const float* next,
                                                       int call, int calls) {
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0, c##i##3 = c##i##0;
  DECL(0) DECL(1) DECL(2) DECL(3)
#define ROW(i) { __m512 a = _mm512_set1_ps(A[i * K + k]); \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0); c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1); \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2); c##i##3 = _mm512_fmadd_ps(a, b3, c##i##3); }
  // Spread: this call's share of the next tile's K x V lines, one line every calls / V steps.
  const long rate = ((long)V << 20) / calls, first = (long)call * K;
  for (int k = 0; k < K; k++) {
    const float* b = Bp + (size_t)k * NR;
    if (mode == kOld && call < V)  // vector `call` of the next tile's k-row, every step
      _mm_prefetch((const char*)(next + (size_t)k * NR + call * 16), _MM_HINT_T1);
    if (mode == kSpread)
      _mm_prefetch((const char*)(next + (((first + k) * rate) >> 20) * 16), _MM_HINT_T1);
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16), b2 = _mm512_load_ps(b + 32),
           b3 = _mm512_load_ps(b + 48);
    ROW(0) ROW(1) ROW(2) ROW(3)
  }
#define ST(i) _mm512_storeu_ps(C + i * N, c##i##0); _mm512_storeu_ps(C + i * N + 16, c##i##1); \
  _mm512_storeu_ps(C + i * N + 32, c##i##2); _mm512_storeu_ps(C + i * N + 48, c##i##3);
  ST(0) ST(1) ST(2) ST(3)
}
static void product(const float* A, const float* B, float* C, enum Mode mode, const float* after,
                    int same_tile) {
  const int tiles = N / NR, calls = M / MR;
  for (int t = 0; t < tiles; t++) {
    const float* Bp = same_tile ? B : B + (size_t)t * K * NR;
    const float* next = t + 1 < tiles ? Bp + (size_t)K * NR : after;
    for (int r = 0; r < calls; r++) tile(A + r * MR * K, Bp, C + r * MR * N + t * NR, mode, next, r, calls);
  }
}
int main(void) {
  const size_t size = (size_t)K * N;
  float* B = aligned_alloc(64, size * COPIES * sizeof(float));
  float *A = aligned_alloc(64, M * K * sizeof(float)), *C = aligned_alloc(64, M * N * sizeof(float));
  for (size_t i = 0; i < size * COPIES; i++) B[i] = (float)(i % 7) * 0.01f;
  for (int i = 0; i < M * K; i++) A[i] = 0.001f * (i % 13);
  const char* names[] = {"no prefetch", "old prefetch_next", "spread"};
  for (int round = 0; round < 3; round++) {
    double t0 = now();
    __m512 s = _mm512_setzero_ps();
    for (size_t i = 0; i < size * COPIES; i += 16) s = _mm512_add_ps(s, _mm512_load_ps(B + i));
    double t1 = now();
    printf("read loop: %.3f ms per copy (%.1f GB/s) [%g]\n", (t1 - t0) / COPIES * 1e3,
           size * COPIES * 4 / (t1 - t0) / 1e9, _mm512_reduce_add_ps(s));
    t0 = now();
    for (int i = 0; i < COPIES; i++) product(A, B, C, kNone, B, 1);
    t1 = now();
    printf("compute only (one tile's B, in L2): %.3f ms\n", (t1 - t0) / COPIES * 1e3);
    for (int mode = 0; mode < 3; mode++) {
      t0 = now();
      for (int i = 0; i < COPIES; i++)
        product(A, B + size * i, C, mode, B + size * ((i + 1) % COPIES), 0);
      t1 = now();
      printf("cold, %s: %.3f ms\n", names[mode], (t1 - t0) / COPIES * 1e3);
    }
  }
  return 0;
}
