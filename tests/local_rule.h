// A synthetic masked-token task whose answer is fixed by the neighbouring tokens, for checking
// that an encoder learns from context at all and for measuring how long it takes
// (tests/model_learn_test.cc, bench/context_bench.cc).
//
// Rows are [CLS] then a run "a, a+1, a+2, ..." (mod the token range) from a random start, so a
// masked token is its left neighbour + 1 and its right neighbour - 1. About 15% of the run's
// positions (at least one per row) are replaced by [MASK] and nothing else marks which token was
// there, so the best prediction that ignores the other positions is uniform over the range: the
// context-free floor is ln(range). A model whose held-out loss stays at that floor has learned
// nothing from context. ([CLS] first, as in the study's sequences: it lets a model without
// absolute positions, like ALiBi's, tell left from right.)
#ifndef GMLP_TESTS_LOCAL_RULE_H_
#define GMLP_TESTS_LOCAL_RULE_H_

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/encoder.h"
#include "model/heads.h"

namespace gmlp::model::testing {

struct LocalRuleTask {
  int64_t vocab = 32;
  int64_t first_id = 4;  // ids below are "special" and never appear as tokens
  int64_t mask_id = 3;
  int64_t cls_id = 2;
  int64_t len = 16;
  int64_t batch = 32;

  int64_t range() const { return vocab - first_id; }
  double floor() const { return std::log(static_cast<double>(range())); }
};

struct MaskedBatch {
  EncoderInput input;
  torch::Tensor masked_index;  // (M,) flat b * n + i
  torch::Tensor labels;        // (M,)
};

inline MaskedBatch MakeLocalRuleBatch(const LocalRuleTask& t, torch::Generator& gen) {
  const torch::Tensor start = torch::randint(0, t.range(), {t.batch, 1}, gen, torch::kLong);
  const torch::Tensor run =
      t.first_id +
      torch::remainder(start + torch::arange(t.len - 1, torch::kLong).unsqueeze(0), t.range());
  const torch::Tensor ids =
      torch::cat({torch::full({t.batch, 1}, t.cls_id, torch::kLong), run}, /*dim=*/1);
  torch::Tensor masked = torch::rand({t.batch, t.len}, gen) < 0.15;
  masked.select(1, 0).fill_(false);
  const torch::Tensor forced = torch::randint(1, t.len, {t.batch}, gen, torch::kLong);
  masked.index_put_({torch::arange(t.batch), forced}, true);
  MaskedBatch out;
  out.masked_index = masked.flatten().nonzero().squeeze(1);
  out.labels = ids.flatten().index_select(0, out.masked_index);
  out.input.input_ids = ids.masked_fill(masked, t.mask_id);
  out.input.segment_ids = torch::zeros_like(ids);
  out.input.pad_mask = torch::ones({t.batch, t.len}, torch::kBool);
  return out;
}

// `config` resized to the task: its vocabulary and length, d_model 32, two heads of 16, d_ffn 64
// (the aMLP attention 16 wide, the mixer's token MLP 32). Other fields are kept.
inline EncoderConfig LocalRuleConfig(EncoderConfig c, const LocalRuleTask& t) {
  c.vocab_size = t.vocab;
  c.max_seq_len = t.len;
  c.d_model = 32;
  c.d_ffn = 64;
  c.n_heads = 2;
  c.attn_size = 16;
  c.token_mlp_dim = 32;
  return c;
}

// Mean masked-token loss of `model` (eval mode) on `batches` fixed held-out batches.
inline double LocalRuleHeldOutLoss(MlmModel& model, const LocalRuleTask& t, int batches = 4) {
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Generator gen = torch::make_generator<torch::CPUGeneratorImpl>(12345);
  double loss = 0;
  for (int i = 0; i < batches; ++i) {
    const MaskedBatch b = MakeLocalRuleBatch(t, gen);
    loss +=
        torch::cross_entropy_loss(model->forward(b.input, b.masked_index), b.labels).item<double>();
  }
  model->train();
  return loss / batches;
}

// Trains a fresh model of `config` (init seed 7) with AdamW at a constant `lr`, `steps` steps,
// measuring the held-out loss every `eval_every` steps (and after the last). Returns
// (step, held-out loss) pairs. Stops early once the loss is below `stop_below` (if > 0).
inline std::vector<std::pair<int, double>> TrainOnLocalRule(const EncoderConfig& config,
                                                            const LocalRuleTask& t, int steps,
                                                            double lr, int eval_every,
                                                            double stop_below = 0) {
  torch::manual_seed(7);
  MlmModel model(config);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(lr));
  torch::Generator gen = torch::make_generator<torch::CPUGeneratorImpl>(11);
  std::vector<std::pair<int, double>> curve;
  for (int step = 1; step <= steps; ++step) {
    const MaskedBatch b = MakeLocalRuleBatch(t, gen);
    optimizer.zero_grad();
    torch::cross_entropy_loss(model->forward(b.input, b.masked_index), b.labels).backward();
    optimizer.step();
    if (step % eval_every == 0 || step == steps) {
      curve.emplace_back(step, LocalRuleHeldOutLoss(model, t));
      if (stop_below > 0 && curve.back().second < stop_below) break;
    }
  }
  return curve;
}

}  // namespace gmlp::model::testing

#endif  // GMLP_TESTS_LOCAL_RULE_H_
