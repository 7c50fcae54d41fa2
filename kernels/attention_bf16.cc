// The fused tiny attention of aMLP on bf16 CPU activations (see attention_bf16.h).
//
// Every product is C = A B over K = 2 K2 (an odd K gets a zero pair half), with both operands as
// pairs of bf16 along K in 32-bit words, what vdpbf16ps multiplies: B in "pair form", row p
// holding for each column j the word (B[2p][j] low, B[2p+1][j] high); A as PairRows, the word
// (A[i][2p], A[i][2p+1]) at a strided address, so that a row-major A and the pair form of a
// transposed one (A = X^T: the pair form of X) are both read in place. The packing functions
// below build these from the sequence-major rows.
#include "kernels/attention_bf16.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define GMLP_HAVE_AVX512_BF16_KERNEL 1
#endif

#include "kernels/cpu_kernel_util.h"
#include "kernels/dropout.h"

// Two bf16 read as one 32-bit word hold the first in the low half (PairRows, the packing).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "attention_bf16.cc assumes little-endian");

namespace gmlp::kernels::cpu {
namespace {

std::atomic<bool> g_portable_gemm{false};

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// An A operand: the pair p of row i (two bf16, low element first) at base + i * row + p * pair
// (in bf16 elements).
struct PairRows {
  const uint16_t* base;
  int64_t row, pair;
  uint32_t Word(int64_t i, int64_t p) const {
    uint32_t w;
    std::memcpy(&w, base + i * row + p * pair, sizeof(w));
    return w;
  }
};

// A row-major bf16 matrix with an even row length (stride ld elements) as an A operand.
PairRows RowMajor(const uint16_t* a, int64_t ld) { return {a, ld, 2}; }
// The pair form of X (rows of `cols` words) as the A operand X^T.
PairRows TransposedPairForm(const uint32_t* x, int64_t cols) {
  return {reinterpret_cast<const uint16_t*>(x), 2, 2 * cols};
}

// C (M x N floats, row stride ldc) = A (M x 2 K2) times the pair form Bp (K2 rows of N words,
// stride ldb).
GMLP_VECTOR_CLONES
void GemmPortable(int64_t M, int64_t N, int64_t K2, PairRows A, const uint32_t* Bp, int64_t ldb,
                  float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
    for (int64_t p = 0; p < K2; ++p) {
      const uint32_t w = A.Word(i, p);
      const float a0 = BitsToFloat(w << 16), a1 = BitsToFloat(w & 0xFFFF0000u);
      const uint32_t* b = Bp + p * ldb;
      for (int64_t j = 0; j < N; ++j) {
        c[j] += a0 * BitsToFloat(b[j] << 16) + a1 * BitsToFloat(b[j] & 0xFFFF0000u);
      }
    }
  }
}

#ifdef GMLP_HAVE_AVX512_BF16_KERNEL
#define GMLP_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// R rows x 32 columns of C, the accumulators in registers; m0 and m1 mask the columns that exist.
// The row loops are unrolled: otherwise GCC also stores the accumulators to the stack on every
// step of p, which made the kernel 1.7x slower.
template <int R>
GMLP_AVX512_BF16 inline void TileAvx512Bf16(int64_t K2, PairRows A, int64_t i0, const uint32_t* Bp,
                                            int64_t ldb, float* C, int64_t ldc, __mmask16 m0,
                                            __mmask16 m1) {
  __m512 acc0[R], acc1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc0[r] = _mm512_setzero_ps();
    acc1[r] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < K2; ++p) {
    const auto b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, Bp + p * ldb);
    const auto b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, Bp + p * ldb + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto a = (__m512bh)_mm512_set1_epi32(static_cast<int32_t>(A.Word(i0 + r, p)));
      acc0[r] = _mm512_dpbf16_ps(acc0[r], a, b0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], a, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(C + r * ldc, m0, acc0[r]);
    _mm512_mask_storeu_ps(C + r * ldc + 16, m1, acc1[r]);
  }
}

GMLP_AVX512_BF16
void GemmAvx512Bf16(int64_t M, int64_t N, int64_t K2, PairRows A, const uint32_t* Bp, int64_t ldb,
                    float* C, int64_t ldc) {
  constexpr int64_t kRows = 8;
  for (int64_t j0 = 0; j0 < N; j0 += 32) {
    const int64_t cols = std::min<int64_t>(32, N - j0);
    const auto m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
    const auto m1 = static_cast<__mmask16>(cols <= 16   ? 0
                                           : cols >= 32 ? 0xFFFF
                                                        : (1u << (cols - 16)) - 1);
    int64_t i0 = 0;
    for (; i0 + kRows <= M; i0 += kRows) {
      TileAvx512Bf16<kRows>(K2, A, i0, Bp + j0, ldb, C + i0 * ldc + j0, ldc, m0, m1);
    }
    // The last M % 8 rows: one tile of that height.
    using Tile = void (*)(int64_t, PairRows, int64_t, const uint32_t*, int64_t, float*, int64_t,
                          __mmask16, __mmask16);
    static constexpr Tile kTail[kRows] = {nullptr,
                                          &TileAvx512Bf16<1>,
                                          &TileAvx512Bf16<2>,
                                          &TileAvx512Bf16<3>,
                                          &TileAvx512Bf16<4>,
                                          &TileAvx512Bf16<5>,
                                          &TileAvx512Bf16<6>,
                                          &TileAvx512Bf16<7>};
    if (i0 < M) kTail[M - i0](K2, A, i0, Bp + j0, ldb, C + i0 * ldc + j0, ldc, m0, m1);
  }
}

bool CpuHasAvx512Bf16() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bf16");
  return has;
}
#else
bool CpuHasAvx512Bf16() { return false; }
#endif

void Gemm(int64_t M, int64_t N, int64_t K2, PairRows A, const uint32_t* Bp, int64_t ldb, float* C,
          int64_t ldc) {
#ifdef GMLP_HAVE_AVX512_BF16_KERNEL
  if (AttentionUsesAvx512Bf16()) {
    GemmAvx512Bf16(M, N, K2, A, Bp, ldb, C, ldc);
    return;
  }
#endif
  GemmPortable(M, N, K2, A, Bp, ldb, C, ldc);
}

inline uint32_t Pair(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// dst (rows x cols2, cols2 = cols rounded up to even) = the rows of src (stride src_ld), the
// odd column padded with zero: an A operand.
GMLP_VECTOR_CLONES
void PackRows(const uint16_t* src, int64_t src_ld, int64_t rows, int64_t cols, uint16_t* dst,
              int64_t cols2) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * cols2, src + r * src_ld, cols * sizeof(uint16_t));
    if (cols2 > cols) dst[r * cols2 + cols] = 0;
  }
}

// The pair form of B = X^T, X (rows x cols, stride src_ld): dst[p][j] = (X[j][2p], X[j][2p+1]),
// (cols+1)/2 rows of `rows` words. A pair of X's row is one word: this is a transpose of words.
GMLP_VECTOR_CLONES
void PackPairsOfTransposed(const uint16_t* src, int64_t src_ld, int64_t rows, int64_t cols,
                           uint32_t* dst) {
  const int64_t whole = cols / 2;
  for (int64_t j = 0; j < rows; ++j) {
    const uint16_t* x = src + j * src_ld;
    for (int64_t p = 0; p < whole; ++p)
      std::memcpy(dst + p * rows + j, x + 2 * p, sizeof(uint32_t));
    if (cols % 2 == 1) dst[whole * rows + j] = x[cols - 1];
  }
}

// The pair form of B = X, X (rows x cols, stride src_ld): dst[p][j] = (X[2p][j], X[2p+1][j]),
// (rows+1)/2 rows of `cols` words.
GMLP_VECTOR_CLONES
void PackPairsOfRows(const uint16_t* src, int64_t src_ld, int64_t rows, int64_t cols,
                     uint32_t* dst) {
  for (int64_t p = 0; 2 * p < rows; ++p) {
    const uint16_t* x0 = src + 2 * p * src_ld;
    const uint16_t* x1 = 2 * p + 1 < rows ? x0 + src_ld : nullptr;
    for (int64_t j = 0; j < cols; ++j) {
      dst[p * cols + j] = Pair(x0[j], x1 != nullptr ? x1[j] : uint16_t{0});
    }
  }
}

// Writes the (n x a) float rows of one sequence into its rows of the sequence-major (n*B, ld)
// bf16 tensor at column offset `col`: row i goes to out[(i*B + b) * ld + col].
GMLP_VECTOR_CLONES
void ScatterRows(const float* src, int64_t n, int64_t a, int64_t B, int64_t b, int64_t ld,
                 int64_t col, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t* o = out + (i * B + b) * ld + col;
    for (int64_t j = 0; j < a; ++j) o[j] = FloatToBf16Bits(src[i * a + j]);
  }
}

// Reductions over a row as kLanes partial results folded in a fixed order: GCC vectorizes them
// (a plain float sum or max is a serial chain to it), and the order does not depend on threads.
constexpr int64_t kLanes = 16;

inline float MaxOf(const float* x, int64_t n) {
  float part[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) part[l] = -INFINITY;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) part[l] = part[l] < x[j + l] ? x[j + l] : part[l];
  }
  for (; j < n; ++j) part[0] = part[0] < x[j] ? x[j] : part[0];
  float m = part[0];
  for (int64_t l = 1; l < kLanes; ++l) m = m < part[l] ? part[l] : m;
  return m;
}

inline float SumOf(const float* x, int64_t n) {
  float part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) part[l] += x[j + l];
  }
  for (; j < n; ++j) part[0] += x[j];
  float sum = 0.0f;
  for (int64_t l = 0; l < kLanes; ++l) sum += part[l];
  return sum;
}

// Row-wise softmax of scale * S + score_bias + key_bias into P (bf16, n x n2, padding column
// zero). score_bias (n x n, this head's) and key_bias (n, this sequence's) may be null.
GMLP_VECTOR_CLONES
void SoftmaxRows(const float* S, const float* score_bias, const float* key_bias, int64_t n,
                 int64_t n2, float scale, uint16_t* P, float* e) {
  for (int64_t i = 0; i < n; ++i) {
    const float* s = S + i * n;
    for (int64_t j = 0; j < n; ++j) e[j] = s[j] * scale;
    if (score_bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) e[j] += score_bias[i * n + j];
    }
    if (key_bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) e[j] += key_bias[j];
    }
    const float m = MaxOf(e, n);
    for (int64_t j = 0; j < n; ++j) {
      // Below exp(-87) (a masked key) the probability is exactly zero, as ATen's exp gives.
      const float z = e[j] - m;
      e[j] = z < -87.0f ? 0.0f : ExpNonPositive(z);
    }
    const float inv = 1.0f / SumOf(e, n);
    uint16_t* p = P + i * n2;
    for (int64_t j = 0; j < n; ++j) p[j] = FloatToBf16Bits(e[j] * inv);
    if (n2 > n) p[n] = 0;
  }
}

// Dropout on the probabilities, as cpu::Dropout applies it to the contiguous (B, H, n, n)
// tensor: element (i, j) of this task is element base + i * n + j there.
struct ProbDropout {
  bool on = false;
  uint64_t seed = 0, threshold = 0;
  float scale = 1.0f;
};

// out = P with dropout (bf16, n x n2, padding column zero): each kept value scaled in float and
// rounded once, as Dropout's bf16 loop does.
GMLP_VECTOR_CLONES
void DropRows(const uint16_t* P, int64_t n, int64_t n2, uint64_t seed, uint64_t threshold,
              float scale, int64_t base, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t* p = P + i * n2;
    uint16_t* o = out + i * n2;
    uint64_t state = SplitMix64State(seed, static_cast<uint64_t>(base + i * n));
    for (int64_t j = 0; j < n; ++j, state += kGoldenGamma) {
      const uint16_t v = FloatToBf16Bits(Bf16BitsToFloat(p[j]) * scale);
      o[j] = DropoutKeepsState(state, threshold) ? v : uint16_t{0};
    }
    if (n2 > n) o[n] = 0;
  }
}

// The gradient through the dropout: dP (n x n, float) times the mask and scale, in place.
GMLP_VECTOR_CLONES
void MaskGradRows(float* dP, int64_t n, uint64_t seed, uint64_t threshold, float scale,
                  int64_t base) {
  uint64_t state = SplitMix64State(seed, static_cast<uint64_t>(base));
  for (int64_t i = 0; i < n * n; ++i, state += kGoldenGamma) {
    dP[i] = DropoutKeepsState(state, threshold) ? dP[i] * scale : 0.0f;
  }
}

// dS = scale * P * (dP - rowsum(P * dP)) into bf16 (n x n2, padding column zero); dP is
// overwritten.
GMLP_VECTOR_CLONES
void SoftmaxBackwardRows(const uint16_t* P, float* dP, int64_t n, int64_t n2, float scale,
                         uint16_t* dS) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t* p = P + i * n2;
    float* dp = dP + i * n;
    uint16_t* ds = dS + i * n2;
    // ds holds P * dP for the sum while it is formed (dp keeps dP).
    float part[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) part[l] += Bf16BitsToFloat(p[j + l]) * dp[j + l];
    }
    for (; j < n; ++j) part[0] += Bf16BitsToFloat(p[j]) * dp[j];
    float dot = 0.0f;
    for (int64_t l = 0; l < kLanes; ++l) dot += part[l];
    for (j = 0; j < n; ++j) {
      ds[j] = FloatToBf16Bits(scale * (Bf16BitsToFloat(p[j]) * (dp[j] - dot)));
    }
    if (n2 > n) ds[n] = 0;
  }
}

// The per-thread buffers of one task's forward or backward.
struct Scratch {
  std::vector<uint16_t> a_op, ds, dropped;  // A operands, row-major
  std::vector<uint32_t> a_pairs;            // an A operand as the pair form of its transpose
  std::vector<uint32_t> b_op;               // a B operand in pair form
  std::vector<float> c, dp, row;
  Scratch(int64_t n, int64_t a) {
    const int64_t n2 = n + (n & 1), a2 = a + (a & 1);
    a_op.resize(n * a2);
    ds.resize(n * n2);
    dropped.resize(n * n2);
    a_pairs.resize((n2 / 2) * n);
    b_op.resize(std::max((a2 / 2) * n, (n2 / 2) * a));
    c.resize(n * std::max(n, a));
    dp.resize(n * n);
    row.resize(n);
  }
};

// Where task (b, h) reads and writes: H heads of width k; q|k|v rows of width 3Hk, head h's q,
// k and v at columns h k, Hk + h k and 2Hk + h k; output rows of width Hk, head h at h k.
struct Geometry {
  int64_t n, B, H, k;
  int64_t n2() const { return n + (n & 1); }
  int64_t k2() const { return k + (k & 1); }
  int64_t width() const { return 3 * H * k; }
  int64_t ld() const { return width() * B; }  // between one sequence's positions in q|k|v
  int64_t q_offset(int64_t b, int64_t h) const { return b * width() + h * k; }
};

class AttentionFunction : public torch::autograd::Function<AttentionFunction> {
 public:
  // key_bias_Bn: (B, n) float32; score_bias_Hnn: (H, n, n) float32; either empty for none.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_NW,
                               const torch::Tensor& key_bias_Bn,
                               const torch::Tensor& score_bias_Hnn, int64_t n, int64_t B, int64_t H,
                               double dropout, int64_t seed) {
    const torch::Tensor qkv = qkv_NW.contiguous();
    const Geometry g{n, B, H, qkv.size(1) / (3 * H)};
    const int64_t n2 = g.n2(), k = g.k, k2 = g.k2(), ld = g.ld();
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(k)));
    const ProbDropout drop = MakeDropout(dropout, seed);
    torch::Tensor out = torch::empty({n * B, H * k}, qkv.options());
    torch::Tensor probs = torch::empty({B * H, n, n2}, qkv.options());
    const uint16_t* x = Bf16Bits(qkv);
    const float* key_bias = key_bias_Bn.numel() > 0 ? key_bias_Bn.data_ptr<float>() : nullptr;
    const float* score_bias =
        score_bias_Hnn.numel() > 0 ? score_bias_Hnn.data_ptr<float>() : nullptr;
    at::parallel_for(0, B * H, 1, [&](int64_t first, int64_t last) {
      Scratch s(n, k);
      for (int64_t t = first; t < last; ++t) {
        const int64_t b = t / H, h = t % H;
        const uint16_t* q = x + g.q_offset(b, h);  // row i of its q at q + i * ld
        uint16_t* p = Bf16Bits(probs) + t * n * n2;
        // S = q k^T, P = softmax(scale S + biases).
        PackRows(q, ld, n, k, s.a_op.data(), k2);
        PackPairsOfTransposed(q + H * k, ld, n, k, s.b_op.data());
        Gemm(n, n, k2 / 2, RowMajor(s.a_op.data(), k2), s.b_op.data(), n, s.c.data(), n);
        SoftmaxRows(s.c.data(), score_bias != nullptr ? score_bias + h * n * n : nullptr,
                    key_bias != nullptr ? key_bias + b * n : nullptr, n, n2, scale, p,
                    s.row.data());
        // O = dropout(P) v.
        const uint16_t* pv = p;
        if (drop.on) {
          DropRows(p, n, n2, drop.seed, drop.threshold, drop.scale, t * n * n, s.dropped.data());
          pv = s.dropped.data();
        }
        PackPairsOfRows(q + 2 * H * k, ld, n, k, s.b_op.data());
        Gemm(n, k, n2 / 2, RowMajor(pv, n2), s.b_op.data(), k, s.c.data(), k);
        ScatterRows(s.c.data(), n, k, B, b, H * k, h * k, Bf16Bits(out));
      }
    });
    ctx->save_for_backward({qkv, probs});
    ctx->saved_data["n"] = n;
    ctx->saved_data["B"] = B;
    ctx->saved_data["H"] = H;
    ctx->saved_data["dropout"] = dropout;
    ctx->saved_data["seed"] = seed;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const torch::Tensor& probs = saved[1];
    const int64_t n = ctx->saved_data["n"].toInt(), B = ctx->saved_data["B"].toInt();
    const int64_t H = ctx->saved_data["H"].toInt();
    const ProbDropout drop =
        MakeDropout(ctx->saved_data["dropout"].toDouble(), ctx->saved_data["seed"].toInt());
    const Geometry g{n, B, H, qkv.size(1) / (3 * H)};
    const int64_t n2 = g.n2(), k = g.k, k2 = g.k2(), ld = g.ld(), W = g.width();
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(k)));
    const torch::Tensor dout = grads[0].to(torch::kBFloat16).contiguous();
    torch::Tensor dqkv = torch::empty_like(qkv);
    const uint16_t* x = Bf16Bits(qkv);
    const uint16_t* dy = Bf16Bits(dout);
    at::parallel_for(0, B * H, 1, [&](int64_t first, int64_t last) {
      Scratch s(n, k);
      for (int64_t t = first; t < last; ++t) {
        const int64_t b = t / H, h = t % H;
        const uint16_t* q = x + g.q_offset(b, h);    // row i of its q at q + i * ld
        const uint16_t* d = dy + b * H * k + h * k;  // row i of its dO at d + i * B * H * k
        const uint16_t* p = Bf16Bits(probs) + t * n * n2;
        // dP = mask * (dO v^T), then dS.
        PackRows(d, B * H * k, n, k, s.a_op.data(), k2);
        PackPairsOfTransposed(q + 2 * H * k, ld, n, k, s.b_op.data());
        Gemm(n, n, k2 / 2, RowMajor(s.a_op.data(), k2), s.b_op.data(), n, s.dp.data(), n);
        if (drop.on) MaskGradRows(s.dp.data(), n, drop.seed, drop.threshold, drop.scale, t * n * n);
        SoftmaxBackwardRows(p, s.dp.data(), n, n2, scale, s.ds.data());
        // dq = dS k.
        PackPairsOfRows(q + H * k, ld, n, k, s.b_op.data());
        Gemm(n, k, n2 / 2, RowMajor(s.ds.data(), n2), s.b_op.data(), k, s.c.data(), k);
        ScatterRows(s.c.data(), n, k, B, b, W, h * k, Bf16Bits(dqkv));
        // dk = dS^T q.
        PackPairsOfRows(s.ds.data(), n2, n, n, s.a_pairs.data());
        PackPairsOfRows(q, ld, n, k, s.b_op.data());
        Gemm(n, k, n2 / 2, TransposedPairForm(s.a_pairs.data(), n), s.b_op.data(), k, s.c.data(),
             k);
        ScatterRows(s.c.data(), n, k, B, b, W, H * k + h * k, Bf16Bits(dqkv));
        // dv = dropout(P)^T dO.
        const uint16_t* pv = p;
        if (drop.on) {
          DropRows(p, n, n2, drop.seed, drop.threshold, drop.scale, t * n * n, s.dropped.data());
          pv = s.dropped.data();
        }
        PackPairsOfRows(pv, n2, n, n, s.a_pairs.data());
        PackPairsOfRows(d, B * H * k, n, k, s.b_op.data());
        Gemm(n, k, n2 / 2, TransposedPairForm(s.a_pairs.data(), n), s.b_op.data(), k, s.c.data(),
             k);
        ScatterRows(s.c.data(), n, k, B, b, W, 2 * H * k + h * k, Bf16Bits(dqkv));
      }
    });
    return {dqkv,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }

 private:
  static ProbDropout MakeDropout(double p, int64_t seed) {
    ProbDropout d;
    d.on = p > 0.0;
    d.seed = static_cast<uint64_t>(seed);
    d.threshold = DropoutThreshold(p);
    d.scale = static_cast<float>(1.0 / (1.0 - p));
    return d;
  }
};

}  // namespace

void SetAttentionGemmForTesting(AttentionGemm gemm) {
  g_portable_gemm.store(gemm == AttentionGemm::kPortable);
}

bool AttentionUsesAvx512Bf16() { return !g_portable_gemm.load() && CpuHasAvx512Bf16(); }

torch::Tensor AttentionBf16(const torch::Tensor& qkv_NW, int64_t n, int64_t B, int64_t heads,
                            const torch::Tensor& key_bias_B1N, const torch::Tensor& score_bias_Hnn,
                            double dropout, bool train) {
  TORCH_CHECK(heads > 0 && qkv_NW.dim() == 2 && qkv_NW.scalar_type() == torch::kBFloat16 &&
                  qkv_NW.is_cpu() && qkv_NW.size(0) == n * B && qkv_NW.size(1) % (3 * heads) == 0 &&
                  qkv_NW.size(1) > 0,
              "AttentionBf16: qkv must be a bf16 CPU tensor (n*B, 3 * heads * k) = (", n * B,
              ", 3 * ", heads, " * k), got ", qkv_NW.scalar_type(), " ", qkv_NW.sizes());
  TORCH_CHECK(dropout >= 0.0 && dropout < 1.0, "AttentionBf16: dropout must be in [0, 1), got ",
              dropout);
  const auto f32 = qkv_NW.options().dtype(torch::kFloat32);
  torch::Tensor key_bias = torch::empty({0}, f32), score_bias = torch::empty({0}, f32);
  if (key_bias_B1N.defined()) {
    TORCH_CHECK(key_bias_B1N.numel() == B * n, "AttentionBf16: key_bias must be (", B, ", 1, ", n,
                "), got ", key_bias_B1N.sizes());
    key_bias = key_bias_B1N.reshape({B, n}).to(torch::kFloat32).contiguous();
  }
  if (score_bias_Hnn.defined()) {
    TORCH_CHECK(score_bias_Hnn.numel() == heads * n * n, "AttentionBf16: score_bias must be (",
                heads, ", ", n, ", ", n, "), got ", score_bias_Hnn.sizes());
    score_bias = score_bias_Hnn.reshape({heads, n, n}).to(torch::kFloat32).contiguous();
  }
  const bool drop = train && dropout > 0.0;
  const int64_t seed = drop ? static_cast<int64_t>(NextDropoutSeed()) : 0;
  return AttentionFunction::apply(qkv_NW, key_bias, score_bias, n, B, heads, drop ? dropout : 0.0,
                                  seed);
}

torch::Tensor TinyAttentionBf16(const torch::Tensor& qkv_N3A, int64_t n, int64_t B,
                                const torch::Tensor& key_bias_B1N) {
  return AttentionBf16(qkv_N3A, n, B, 1, key_bias_B1N, torch::Tensor(), 0.0, false);
}

}  // namespace gmlp::kernels::cpu
