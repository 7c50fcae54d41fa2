// Bias + GELU (+ gate) on bf16 CPU activations (see gelu_bf16.h).
#include "model/gelu_bf16.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

#include "model/cpu_kernel_util.h"
#include "model/gelu_math.h"

namespace gmlp::model {
namespace {

// Rows per block of the bias gradient's partial sums: fixed, so the sums' order is too.
constexpr int64_t kBlockRows = 64;

// Rows [begin, end): out = GELU(y + b) [* gate]. gate may be null.
GMLP_VECTOR_CLONES
void ForwardRows(const uint16_t* y, const float* b, const uint16_t* gate, int64_t F, int64_t begin,
                 int64_t end, uint16_t* out) {
  for (int64_t i = begin; i < end; ++i) {
    const uint16_t* yi = y + i * F;
    uint16_t* oi = out + i * F;
    if (gate != nullptr) {
      const uint16_t* gi = gate + i * F;
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Bf16BitsToFloat(yi[j]) + b[j], &g, &s);
        oi[j] = FloatToBf16Bits(g * Bf16BitsToFloat(gi[j]));
      }
    } else {
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Bf16BitsToFloat(yi[j]) + b[j], &g, &s);
        oi[j] = FloatToBf16Bits(g);
      }
    }
  }
}

// Rows [begin, end) of one block: dy, dgate (when gate is not null) and the block's partial
// bias gradient (F).
GMLP_VECTOR_CLONES
void BackwardRows(const uint16_t* y, const float* b, const uint16_t* gate, const uint16_t* dout,
                  int64_t F, int64_t begin, int64_t end, uint16_t* dy, uint16_t* dgate,
                  float* db_part) {
  for (int64_t j = 0; j < F; ++j) db_part[j] = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const uint16_t* yi = y + i * F;
    const uint16_t* doi = dout + i * F;
    uint16_t* dyi = dy + i * F;
    if (gate != nullptr) {
      const uint16_t* gi = gate + i * F;
      uint16_t* dgi = dgate + i * F;
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Bf16BitsToFloat(yi[j]) + b[j], &g, &s);
        const float d = Bf16BitsToFloat(doi[j]);
        const float da = d * Bf16BitsToFloat(gi[j]) * s;
        dyi[j] = FloatToBf16Bits(da);
        dgi[j] = FloatToBf16Bits(d * g);
        db_part[j] += da;
      }
    } else {
      for (int64_t j = 0; j < F; ++j) {
        float g, s;
        GeluAndSlope(Bf16BitsToFloat(yi[j]) + b[j], &g, &s);
        const float da = Bf16BitsToFloat(doi[j]) * s;
        dyi[j] = FloatToBf16Bits(da);
        db_part[j] += da;
      }
    }
  }
}

uint16_t* BitsOrNull(const torch::Tensor& t) { return t.defined() ? Bf16Bits(t) : nullptr; }

class BiasGeluFunction : public torch::autograd::Function<BiasGeluFunction> {
 public:
  // gate_NF is ignored (an empty placeholder: autograd's inputs must be defined) unless gated.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y_NF,
                               const torch::Tensor& bias_F, const torch::Tensor& gate_NF,
                               bool gated) {
    const torch::Tensor y = y_NF.contiguous(), b = bias_F.contiguous();
    const torch::Tensor gate = gated ? gate_NF.contiguous() : torch::Tensor();
    const int64_t N = y.size(0), F = y.size(1);
    torch::Tensor out = torch::empty_like(y);
    const float* bp = b.data_ptr<float>();
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(F, 1));
    at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
      ForwardRows(Bf16Bits(y), bp, BitsOrNull(gate), F, begin, end, Bf16Bits(out));
    });
    ctx->save_for_backward({y, b});
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
    const torch::Tensor dout = grads[0].to(torch::kBFloat16).contiguous();
    const int64_t N = y.size(0), F = y.size(1);
    const int64_t blocks = (N + kBlockRows - 1) / kBlockRows;
    torch::Tensor dy = torch::empty_like(y);
    torch::Tensor dgate = gate.defined() ? torch::empty_like(gate) : torch::Tensor();
    torch::Tensor parts = torch::empty({blocks, F}, b.options());
    float* db_parts = parts.data_ptr<float>();
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t blk = first; blk < last; ++blk) {
        BackwardRows(Bf16Bits(y), b.data_ptr<float>(), BitsOrNull(gate), Bf16Bits(dout), F,
                     blk * kBlockRows, std::min(N, (blk + 1) * kBlockRows), Bf16Bits(dy),
                     BitsOrNull(dgate), db_parts + blk * F);
      }
    });
    torch::Tensor db = torch::empty({F}, b.options());
    SumBlocksInOrder(db_parts, blocks, F, db.data_ptr<float>());
    return {dy, db, dgate, torch::Tensor()};
  }
};

void CheckInputs(const torch::Tensor& y_NF, const torch::Tensor& bias_F) {
  TORCH_CHECK(y_NF.dim() == 2 && y_NF.scalar_type() == torch::kBFloat16 && y_NF.is_cpu(),
              "BiasGeluBf16: y must be a 2-D bf16 CPU tensor");
  TORCH_CHECK(bias_F.scalar_type() == torch::kFloat32 && bias_F.numel() == y_NF.size(1),
              "BiasGeluBf16: bias must be float32 (", y_NF.size(1), ")");
}

}  // namespace

torch::Tensor BiasGeluBf16(const torch::Tensor& y_NF, const torch::Tensor& bias_F) {
  CheckInputs(y_NF, bias_F);
  return BiasGeluFunction::apply(y_NF, bias_F, torch::empty({0}, y_NF.options()), false);
}

torch::Tensor BiasGeluGateBf16(const torch::Tensor& y_NF, const torch::Tensor& bias_F,
                               const torch::Tensor& gate_NF) {
  CheckInputs(y_NF, bias_F);
  TORCH_CHECK(gate_NF.scalar_type() == torch::kBFloat16 && gate_NF.sizes() == y_NF.sizes(),
              "BiasGeluGateBf16: gate must be bf16 ", y_NF.sizes(), ", got ", gate_NF.scalar_type(),
              " ", gate_NF.sizes());
  return BiasGeluFunction::apply(y_NF, bias_F, gate_NF, true);
}

}  // namespace gmlp::model
