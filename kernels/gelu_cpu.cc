// Bias + GELU (+ gate) on bf16 or float32 CPU activations (see gelu_cpu.h).
#include "kernels/gelu_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu_kernel_util.h"
#include "kernels/gelu_math.h"

namespace gmlp::kernels::cpu {
namespace {

// Rows per block of the bias gradient's partial sums: fixed, so the sums' order is too.
constexpr int64_t kBlockRows = 64;

// Rows [begin, end): out = GELU(y + b) [* gate]. gate may be null. T is the activations' type:
// uint16_t (bf16 bits) or float.
template <typename T>
__attribute__((always_inline)) inline void ForwardRowsImpl(const T* y, const float* b,
                                                           const T* gate, int64_t F, int64_t begin,
                                                           int64_t end, T* out) {
  for (int64_t i = begin; i < end; ++i) {
    const T* yi = y + i * F;
    T* oi = out + i * F;
    if (gate != nullptr) {
      const T* gi = gate + i * F;
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Widen(yi[j]) + b[j], &g, &s);
        Store(g * Widen(gi[j]), oi + j);
      }
    } else {
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Widen(yi[j]) + b[j], &g, &s);
        Store(g, oi + j);
      }
    }
  }
}

// Rows [begin, end) of one block: dy, dgate (when gate is not null) and the block's partial
// bias gradient (F).
template <typename T>
__attribute__((always_inline)) inline void BackwardRowsImpl(const T* y, const float* b,
                                                            const T* gate, const T* dout, int64_t F,
                                                            int64_t begin, int64_t end, T* dy,
                                                            T* dgate, float* db_part) {
  // GELU and its slope first, in a loop of their own: GCC vectorizes that loop, and not GELU
  // inside the gated loop below when T is float.
  std::vector<float> buf(2 * F);
  float* __restrict gelu = buf.data();
  float* __restrict slope = buf.data() + F;
  for (int64_t j = 0; j < F; ++j) db_part[j] = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const T* yi = y + i * F;
    const T* doi = dout + i * F;
    T* dyi = dy + i * F;
    for (int64_t j = 0; j < F; ++j) GeluAndSlope(Widen(yi[j]) + b[j], gelu + j, slope + j);
    if (gate != nullptr) {
      const T* gi = gate + i * F;
      T* dgi = dgate + i * F;
      for (int64_t j = 0; j < F; ++j) {
        const float d = Widen(doi[j]);
        const float da = d * Widen(gi[j]) * slope[j];
        Store(da, dyi + j);
        Store(d * gelu[j], dgi + j);
        db_part[j] += da;
      }
    } else {
      for (int64_t j = 0; j < F; ++j) {
        const float da = Widen(doi[j]) * slope[j];
        Store(da, dyi + j);
        db_part[j] += da;
      }
    }
  }
}

// The two instantiations, each compiled for several instruction sets (GMLP_VECTOR_CLONES, which
// GCC does not apply to templates).
#define GMLP_GELU_ROWS(T)                                                                \
  GMLP_VECTOR_CLONES                                                                     \
  void ForwardRows(const T* y, const float* b, const T* gate, int64_t F, int64_t begin,  \
                   int64_t end, T* out) {                                                \
    ForwardRowsImpl(y, b, gate, F, begin, end, out);                                     \
  }                                                                                      \
  GMLP_VECTOR_CLONES                                                                     \
  void BackwardRows(const T* y, const float* b, const T* gate, const T* dout, int64_t F, \
                    int64_t begin, int64_t end, T* dy, T* dgate, float* db_part) {       \
    BackwardRowsImpl(y, b, gate, dout, F, begin, end, dy, dgate, db_part);               \
  }
GMLP_GELU_ROWS(uint16_t)
GMLP_GELU_ROWS(float)
#undef GMLP_GELU_ROWS

class BiasGeluFunction : public torch::autograd::Function<BiasGeluFunction> {
 public:
  // bias_F and gate_NF are ignored (empty placeholders: autograd's inputs must be defined)
  // unless has_bias and gated.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y_NF,
                               const torch::Tensor& bias_F, const torch::Tensor& gate_NF,
                               bool has_bias, bool gated) {
    const torch::Tensor y = y_NF.contiguous();
    const int64_t N = y.size(0), F = y.size(1);
    // Without a bias the kernels add zeros (one load and add per element, not a second copy of
    // each loop) and backward drops the bias gradient.
    const torch::Tensor b = has_bias ? bias_F.contiguous() : torch::zeros({F}, torch::kFloat32);
    const torch::Tensor gate = gated ? gate_NF.contiguous() : torch::Tensor();
    torch::Tensor out = torch::empty_like(y);
    const float* bp = b.data_ptr<float>();
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(F, 1));
    WithKernelType(y, [&](auto t) {
      using T = decltype(t);
      at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
        ForwardRows(KernelData<T>(y), bp, KernelData<T>(gate), F, begin, end, KernelData<T>(out));
      });
    });
    ctx->save_for_backward({y, b});
    ctx->saved_data["has_bias"] = has_bias;
    if (gated) ctx->saved_data["gate"] = gate;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& y = saved[0];
    const torch::Tensor& b = saved[1];
    const auto gate_it = ctx->saved_data.find("gate");
    const torch::Tensor gate =
        gate_it == ctx->saved_data.end() ? torch::Tensor() : gate_it->second.toTensor();
    const torch::Tensor dout = grads[0].to(y.scalar_type()).contiguous();
    const int64_t N = y.size(0), F = y.size(1);
    const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
    torch::Tensor dy = torch::empty_like(y);
    torch::Tensor dgate = gate.defined() ? torch::empty_like(gate) : torch::Tensor();
    torch::Tensor parts = torch::empty({blocks, F}, b.options());
    float* db_parts = parts.data_ptr<float>();
    WithKernelType(y, [&](auto t) {
      using T = decltype(t);
      at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
        for (int64_t blk = first; blk < last; ++blk) {
          BackwardRows(KernelData<T>(y), b.data_ptr<float>(), KernelData<T>(gate),
                       KernelData<T>(dout), F, blk * kBlockRows,
                       std::min(N, (blk + 1) * kBlockRows), KernelData<T>(dy), KernelData<T>(dgate),
                       db_parts + blk * F);
        }
      });
    });
    torch::Tensor db;
    if (ctx->saved_data["has_bias"].toBool()) {
      db = torch::empty({F}, b.options());
      SumBlocksInOrder(db_parts, blocks, F, db.data_ptr<float>());
    }
    return {dy, db, dgate, torch::Tensor(), torch::Tensor()};
  }
};

void CheckInputs(const torch::Tensor& y_NF, const torch::Tensor& bias_F, const char* op) {
  TORCH_CHECK(y_NF.dim() == 2 && y_NF.is_cpu() &&
                  (y_NF.scalar_type() == torch::kBFloat16 || y_NF.scalar_type() == torch::kFloat32),
              op, ": y must be a 2-D bf16 or float32 CPU tensor");
  TORCH_CHECK(!bias_F.defined() ||
                  (bias_F.scalar_type() == torch::kFloat32 && bias_F.numel() == y_NF.size(1)),
              op, ": bias must be float32 (", y_NF.size(1), ") or undefined");
}

// An autograd input for an absent bias or gate.
torch::Tensor Placeholder() { return torch::empty({0}); }

}  // namespace

torch::Tensor BiasGelu(const torch::Tensor& y_NF, const torch::Tensor& bias_F) {
  CheckInputs(y_NF, bias_F, "BiasGelu");
  const bool has_bias = bias_F.defined();
  return BiasGeluFunction::apply(y_NF, has_bias ? bias_F : Placeholder(), Placeholder(), has_bias,
                                 false);
}

torch::Tensor BiasGeluGate(const torch::Tensor& y_NF, const torch::Tensor& bias_F,
                           const torch::Tensor& gate_NF) {
  CheckInputs(y_NF, bias_F, "BiasGeluGate");
  TORCH_CHECK(gate_NF.scalar_type() == y_NF.scalar_type() && gate_NF.sizes() == y_NF.sizes(),
              "BiasGeluGate: gate must be ", y_NF.scalar_type(), " ", y_NF.sizes(), ", got ",
              gate_NF.scalar_type(), " ", gate_NF.sizes());
  const bool has_bias = bias_F.defined();
  return BiasGeluFunction::apply(y_NF, has_bias ? bias_F : Placeholder(), gate_NF, has_bias, true);
}

}  // namespace gmlp::kernels::cpu
