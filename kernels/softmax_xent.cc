// Fused softmax cross-entropy (see softmax_xent.h).
#include "kernels/softmax_xent.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/cpu_kernel_util.h"

namespace gmlp::kernels::cpu {
namespace {

// Each row's reductions run in kLanes independent accumulators (lane k takes the elements
// j = k mod kLanes), combined in a fixed order at the end: GCC vectorizes that without being
// allowed to reassociate float sums, and every clone adds in the same order, so the same bits.
constexpr int64_t kLanes = 16;

// The row's maximum and the first index holding it (lane by lane: each lane keeps its first
// maximum; among lanes with the row's maximum, the smallest index wins). NaN never wins.
template <typename T>
inline void RowMax(const T* x, int64_t V, float* max_out, int64_t* argmax_out) {
  float m[kLanes];
  int32_t at[kLanes];
  for (int64_t k = 0; k < kLanes; ++k) {
    m[k] = -std::numeric_limits<float>::infinity();
    at[k] = -1;
  }
  const int64_t full = V - V % kLanes;
  for (int64_t j = 0; j < full; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      const float v = Widen(x[j + k]);
      const bool more = v > m[k];
      m[k] = more ? v : m[k];
      at[k] = more ? static_cast<int32_t>(j + k) : at[k];
    }
  }
  for (int64_t j = full; j < V; ++j) {
    const int64_t k = j - full;
    const float v = Widen(x[j]);
    if (v > m[k]) {
      m[k] = v;
      at[k] = static_cast<int32_t>(j);
    }
  }
  float best = m[0];
  int64_t best_at = at[0];
  for (int64_t k = 1; k < kLanes; ++k) {
    if (m[k] > best || (m[k] == best && at[k] >= 0 && (best_at < 0 || at[k] < best_at))) {
      best = m[k];
      best_at = at[k];
    }
  }
  *max_out = best;
  *argmax_out = best_at < 0 ? 0 : best_at;  // every element NaN or -inf
}

// sum_j exp(x_j - shift), in lanes.
template <typename T>
inline float RowSumExp(const T* x, int64_t V, float shift) {
  float s[kLanes] = {};
  const int64_t full = V - V % kLanes;
  for (int64_t j = 0; j < full; j += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) s[k] += ExpNonPositive(Widen(x[j + k]) - shift);
  }
  for (int64_t j = full; j < V; ++j) s[j - full] += ExpNonPositive(Widen(x[j]) - shift);
  float total = 0;
  for (int64_t k = 0; k < kLanes; ++k) total += s[k];
  return total;
}

// Rows [begin, end): loss, log-sum-exp and argmax. A NaN or +inf logit makes the sum NaN.
template <typename T>
inline void ForwardRows(const T* logits, const int64_t* labels, int64_t V, int64_t begin,
                        int64_t end, float* loss, float* lse, int64_t* argmax) {
  for (int64_t i = begin; i < end; ++i) {
    const T* x = logits + i * V;
    float m;
    RowMax(x, V, &m, &argmax[i]);
    // A row of -inf (or NaN) has no finite maximum: its sum is NaN, so are its loss and
    // gradient.
    const float shift = std::isfinite(m) ? m : std::numeric_limits<float>::quiet_NaN();
    const float sum = RowSumExp(x, V, shift);
    lse[i] = shift + std::log(sum);
    loss[i] = lse[i] - Widen(x[labels[i]]);
  }
}

// d logits = (exp(x - lse) - onehot(label)) * g, in the logits' dtype.
template <typename T>
inline void BackwardRows(const T* logits, const int64_t* labels, const float* lse, const float* g,
                         int64_t V, int64_t begin, int64_t end, T* grad) {
  for (int64_t i = begin; i < end; ++i) {
    const T* x = logits + i * V;
    T* d = grad + i * V;
    const float shift = lse[i], gi = g[i];
    for (int64_t j = 0; j < V; ++j) Store(ExpNonPositive(Widen(x[j]) - shift) * gi, &d[j]);
    const int64_t y = labels[i];
    Store((ExpNonPositive(Widen(x[y]) - shift) - 1.0f) * gi, &d[y]);
  }
}

GMLP_VECTOR_CLONES
void ForwardFloat(const float* logits, const int64_t* labels, int64_t V, int64_t begin, int64_t end,
                  float* loss, float* lse, int64_t* argmax) {
  ForwardRows(logits, labels, V, begin, end, loss, lse, argmax);
}

GMLP_VECTOR_CLONES
void ForwardBFloat16(const uint16_t* logits, const int64_t* labels, int64_t V, int64_t begin,
                     int64_t end, float* loss, float* lse, int64_t* argmax) {
  ForwardRows(logits, labels, V, begin, end, loss, lse, argmax);
}

GMLP_VECTOR_CLONES
void BackwardFloat(const float* logits, const int64_t* labels, const float* lse, const float* g,
                   int64_t V, int64_t begin, int64_t end, float* grad) {
  BackwardRows(logits, labels, lse, g, V, begin, end, grad);
}

GMLP_VECTOR_CLONES
void BackwardBFloat16(const uint16_t* logits, const int64_t* labels, const float* lse,
                      const float* g, int64_t V, int64_t begin, int64_t end, uint16_t* grad) {
  BackwardRows(logits, labels, lse, g, V, begin, end, grad);
}

// Rows per task: about 64k logits.
int64_t RowGrain(int64_t V) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(V, 1));
}

class XentFunction : public torch::autograd::Function<XentFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& logits_MV,
                                                const torch::Tensor& labels_M) {
    const torch::Tensor x = logits_MV.contiguous();
    const torch::Tensor y = labels_M.contiguous();
    const int64_t M = x.size(0), V = x.size(1);
    const auto f32 = x.options().dtype(torch::kFloat32);
    torch::Tensor loss = torch::empty({M}, f32), lse = torch::empty({M}, f32);
    torch::Tensor argmax = torch::empty({M}, x.options().dtype(torch::kInt64));
    const int64_t* lab = y.data_ptr<int64_t>();
    float* loss_p = loss.data_ptr<float>();
    float* lse_p = lse.data_ptr<float>();
    int64_t* arg_p = argmax.data_ptr<int64_t>();
    const bool bf16 = x.scalar_type() == torch::kBFloat16;
    at::parallel_for(0, M, RowGrain(V), [&](int64_t begin, int64_t end) {
      if (bf16) {
        ForwardBFloat16(Bf16Bits(x), lab, V, begin, end, loss_p, lse_p, arg_p);
      } else {
        ForwardFloat(x.data_ptr<float>(), lab, V, begin, end, loss_p, lse_p, arg_p);
      }
    });
    ctx->save_for_backward({x, y});
    ctx->saved_data["lse"] = lse;
    ctx->mark_non_differentiable({argmax});
    return {loss, argmax};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& y = saved[1];
    const torch::Tensor lse = ctx->saved_data["lse"].toTensor();
    const torch::Tensor g =
        grads[0].defined() ? grads[0].to(torch::kFloat32).contiguous() : torch::zeros_like(lse);
    const int64_t M = x.size(0), V = x.size(1);
    torch::Tensor grad = torch::empty_like(x);
    const int64_t* lab = y.data_ptr<int64_t>();
    const float* lse_p = lse.data_ptr<float>();
    const float* g_p = g.data_ptr<float>();
    const bool bf16 = x.scalar_type() == torch::kBFloat16;
    at::parallel_for(0, M, RowGrain(V), [&](int64_t begin, int64_t end) {
      if (bf16) {
        BackwardBFloat16(Bf16Bits(x), lab, lse_p, g_p, V, begin, end, Bf16Bits(grad));
      } else {
        BackwardFloat(x.data_ptr<float>(), lab, lse_p, g_p, V, begin, end, grad.data_ptr<float>());
      }
    });
    return {grad, torch::Tensor()};
  }
};

}  // namespace

SoftmaxXent SoftmaxCrossEntropy(const torch::Tensor& logits_MV, const torch::Tensor& labels_M) {
  TORCH_CHECK(logits_MV.dim() == 2 && logits_MV.size(1) > 0, "logits must be (M, V), got ",
              logits_MV.sizes());
  TORCH_CHECK(logits_MV.device().is_cpu(), "SoftmaxCrossEntropy runs on the CPU");
  TORCH_CHECK(
      logits_MV.scalar_type() == torch::kFloat32 || logits_MV.scalar_type() == torch::kBFloat16,
      "logits must be float32 or bfloat16, got ", logits_MV.scalar_type());
  TORCH_CHECK(labels_M.dim() == 1 && labels_M.size(0) == logits_MV.size(0) &&
                  labels_M.scalar_type() == torch::kInt64,
              "labels must be int64 (M) with M = ", logits_MV.size(0));
  if (labels_M.numel() > 0) {
    const auto [lo, hi] = torch::aminmax(labels_M);
    TORCH_CHECK(lo.item<int64_t>() >= 0 && hi.item<int64_t>() < logits_MV.size(1),
                "labels must lie in [0, ", logits_MV.size(1), ")");
  }
  const torch::autograd::variable_list out = XentFunction::apply(logits_MV, labels_M);
  return {out[0], out[1]};
}

}  // namespace gmlp::kernels::cpu
