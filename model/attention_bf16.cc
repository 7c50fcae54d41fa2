// The fused tiny attention of aMLP on bf16 CPU activations (see attention_bf16.h).
//
// Every product is C = A B over K = 2 K2 (an odd K gets a zero pair half), with both operands as
// pairs of bf16 along K in 32-bit words, what vdpbf16ps multiplies: B in "pair form", row p
// holding for each column j the word (B[2p][j] low, B[2p+1][j] high); A as PairRows, the word
// (A[i][2p], A[i][2p+1]) at a strided address, so that a row-major A and the pair form of a
// transposed one (A = X^T: the pair form of X) are both read in place. The packing functions
// below build these from the sequence-major rows.
#include "model/attention_bf16.h"

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

#include "model/cpu_kernel_util.h"

// Two bf16 read as one 32-bit word hold the first in the low half (PairRows, the packing).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "attention_bf16.cc assumes little-endian");

namespace gmlp::model {
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

// Row-wise softmax of scale * S + bias into P (bf16, n x n2, padding column zero).
GMLP_VECTOR_CLONES
void SoftmaxRows(const float* S, const float* bias, int64_t n, int64_t n2, float scale, uint16_t* P,
                 float* e) {
  for (int64_t i = 0; i < n; ++i) {
    const float* s = S + i * n;
    if (bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) e[j] = s[j] * scale + bias[j];
    } else {
      for (int64_t j = 0; j < n; ++j) e[j] = s[j] * scale;
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

// The per-thread buffers of one sequence's forward or backward.
struct Scratch {
  std::vector<uint16_t> a_op, ds;  // A operands, row-major
  std::vector<uint32_t> a_pairs;   // an A operand as the pair form of its transpose
  std::vector<uint32_t> b_op;      // a B operand in pair form
  std::vector<float> c, dp, row;
  Scratch(int64_t n, int64_t a) {
    const int64_t n2 = n + (n & 1), a2 = a + (a & 1);
    a_op.resize(n * a2);
    ds.resize(n * n2);
    a_pairs.resize((n2 / 2) * n);
    b_op.resize(std::max((a2 / 2) * n, (n2 / 2) * a));
    c.resize(n * std::max(n, a));
    dp.resize(n * n);
    row.resize(n);
  }
};

class TinyAttentionFunction : public torch::autograd::Function<TinyAttentionFunction> {
 public:
  // bias_Bn: (B, n) float32, or empty for no padding.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_N3A,
                               const torch::Tensor& bias_Bn, int64_t n, int64_t B) {
    const torch::Tensor qkv = qkv_N3A.contiguous();
    const int64_t a = qkv.size(1) / 3, n2 = n + (n & 1), a2 = a + (a & 1), ld = 3 * a * B;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a)));
    torch::Tensor out = torch::empty({n * B, a}, qkv.options());
    torch::Tensor probs = torch::empty({B, n, n2}, qkv.options());
    const uint16_t* x = Bf16Bits(qkv);
    const float* bias = bias_Bn.numel() > 0 ? bias_Bn.data_ptr<float>() : nullptr;
    at::parallel_for(0, B, 1, [&](int64_t first, int64_t last) {
      Scratch s(n, a);
      for (int64_t b = first; b < last; ++b) {
        const uint16_t* q = x + b * 3 * a;  // row i of this sequence's q|k|v at q + i * ld
        uint16_t* p = Bf16Bits(probs) + b * n * n2;
        // S = q k^T, P = softmax(scale S + bias).
        PackRows(q, ld, n, a, s.a_op.data(), a2);
        PackPairsOfTransposed(q + a, ld, n, a, s.b_op.data());
        Gemm(n, n, a2 / 2, RowMajor(s.a_op.data(), a2), s.b_op.data(), n, s.c.data(), n);
        SoftmaxRows(s.c.data(), bias != nullptr ? bias + b * n : nullptr, n, n2, scale, p,
                    s.row.data());
        // O = P v.
        PackPairsOfRows(q + 2 * a, ld, n, a, s.b_op.data());
        Gemm(n, a, n2 / 2, RowMajor(p, n2), s.b_op.data(), a, s.c.data(), a);
        ScatterRows(s.c.data(), n, a, B, b, a, 0, Bf16Bits(out));
      }
    });
    ctx->save_for_backward({qkv, probs});
    ctx->saved_data["n"] = n;
    ctx->saved_data["B"] = B;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const torch::Tensor& probs = saved[1];
    const int64_t n = ctx->saved_data["n"].toInt(), B = ctx->saved_data["B"].toInt();
    const int64_t a = qkv.size(1) / 3, n2 = n + (n & 1), a2 = a + (a & 1), ld = 3 * a * B;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a)));
    const torch::Tensor dout = grads[0].to(torch::kBFloat16).contiguous();
    torch::Tensor dqkv = torch::empty_like(qkv);
    const uint16_t* x = Bf16Bits(qkv);
    const uint16_t* dy = Bf16Bits(dout);
    at::parallel_for(0, B, 1, [&](int64_t first, int64_t last) {
      Scratch s(n, a);
      for (int64_t b = first; b < last; ++b) {
        const uint16_t* q = x + b * 3 * a;  // row i of this sequence's q|k|v at q + i * ld
        const uint16_t* d = dy + b * a;     // row i of its dO at d + i * B * a
        const uint16_t* p = Bf16Bits(probs) + b * n * n2;
        // dP = dO v^T, then dS.
        PackRows(d, B * a, n, a, s.a_op.data(), a2);
        PackPairsOfTransposed(q + 2 * a, ld, n, a, s.b_op.data());
        Gemm(n, n, a2 / 2, RowMajor(s.a_op.data(), a2), s.b_op.data(), n, s.dp.data(), n);
        SoftmaxBackwardRows(p, s.dp.data(), n, n2, scale, s.ds.data());
        // dq = dS k.
        PackPairsOfRows(q + a, ld, n, a, s.b_op.data());
        Gemm(n, a, n2 / 2, RowMajor(s.ds.data(), n2), s.b_op.data(), a, s.c.data(), a);
        ScatterRows(s.c.data(), n, a, B, b, 3 * a, 0, Bf16Bits(dqkv));
        // dk = dS^T q.
        PackPairsOfRows(s.ds.data(), n2, n, n, s.a_pairs.data());
        PackPairsOfRows(q, ld, n, a, s.b_op.data());
        Gemm(n, a, n2 / 2, TransposedPairForm(s.a_pairs.data(), n), s.b_op.data(), a, s.c.data(),
             a);
        ScatterRows(s.c.data(), n, a, B, b, 3 * a, a, Bf16Bits(dqkv));
        // dv = P^T dO.
        PackPairsOfRows(p, n2, n, n, s.a_pairs.data());
        PackPairsOfRows(d, B * a, n, a, s.b_op.data());
        Gemm(n, a, n2 / 2, TransposedPairForm(s.a_pairs.data(), n), s.b_op.data(), a, s.c.data(),
             a);
        ScatterRows(s.c.data(), n, a, B, b, 3 * a, 2 * a, Bf16Bits(dqkv));
      }
    });
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void SetAttentionGemmForTesting(AttentionGemm gemm) {
  g_portable_gemm.store(gemm == AttentionGemm::kPortable);
}

bool AttentionUsesAvx512Bf16() { return !g_portable_gemm.load() && CpuHasAvx512Bf16(); }

torch::Tensor TinyAttentionBf16(const torch::Tensor& qkv_N3A, int64_t n, int64_t B,
                                const torch::Tensor& key_bias_B1N) {
  TORCH_CHECK(qkv_N3A.dim() == 2 && qkv_N3A.scalar_type() == torch::kBFloat16 && qkv_N3A.is_cpu() &&
                  qkv_N3A.size(0) == n * B && qkv_N3A.size(1) % 3 == 0 && qkv_N3A.size(1) > 0,
              "TinyAttentionBf16: qkv must be a bf16 CPU tensor (n*B, 3a) = (", n * B,
              ", 3a), got ", qkv_N3A.scalar_type(), " ", qkv_N3A.sizes());
  torch::Tensor bias;
  if (key_bias_B1N.defined()) {
    TORCH_CHECK(key_bias_B1N.numel() == B * n, "TinyAttentionBf16: key_bias must be (", B, ", 1, ",
                n, "), got ", key_bias_B1N.sizes());
    bias = key_bias_B1N.reshape({B, n}).to(torch::kFloat32).contiguous();
  } else {
    bias = torch::empty({0}, qkv_N3A.options().dtype(torch::kFloat32));
  }
  return TinyAttentionFunction::apply(qkv_N3A, bias, n, B);
}

}  // namespace gmlp::model
