#include "study/config.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/field_json.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/manifest.h"
#include "kernels/policy.h"
#include "model/arch.h"
#include "model/config.h"
#include "study/probe.h"
#include "study/roles.h"
#include "study/tasks.h"

namespace gmlp::study {

namespace {

// A size is a tensor dimension: the model's bound (model/config.cc).
constexpr int64_t kMaxSize = int64_t{1} << 20;

// probe_max_sentence_bytes 0 resolved for `max_len`: DefaultSentenceBytes, or still 0 where that
// leaves no usable sentence (max_len < 16; a study that uses the probe is refused then, see
// CheckProbeFits).
int64_t DerivedSentenceBytes(int64_t max_len) {
  const int64_t bytes = DefaultSentenceBytes(max_len);
  return bytes >= 8 ? bytes : 0;
}

// A study with the probe whose default sentence length follows a finetuning max_len too short
// for it: one line naming the setting that made max_len (its own key, or seq_len it follows).
absl::Status CheckProbeFits(const StudyConfig& c, int64_t max_len, const std::string& subject) {
  const std::vector<uint64_t> shifts = ProbeShifts(c.tasks);
  if (!shifts.empty()) {
    const int64_t need = ShiftPairTokens(c.probe.segment_pieces, c.probe.filler_pieces);
    if (need > max_len) {
      return absl::InvalidArgumentError(
          absl::StrCat(subject, " is under the shift-k probe's ", need, " tokens (3 + 2 x ",
                       c.origins.Mention("probe_segment_pieces", c.probe.segment_pieces), " + ",
                       c.origins.Mention("probe_filler_pieces", c.probe.filler_pieces),
                       "): raise it, or lower probe_segment_pieces or probe_filler_pieces"));
    }
  }
  if (!UsesProbe(c) || c.probe.max_sentence_bytes != 0 || DerivedSentenceBytes(max_len) != 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      subject, " leaves the alignment probe's sentences ", DefaultSentenceBytes(max_len),
      " bytes (max_len - 8); they need at least 8: raise it, set --probe_max_sentence_bytes, or "
      "leave the probe tasks out"));
}

// One line naming `key` as its source set it (a --config file, --smoke or a flag), then `parts`.
template <typename... Parts>
absl::Status Bad(const StudyConfig& c, const char* key, const nlohmann::json& value,
                 Parts&&... parts) {
  return absl::InvalidArgumentError(
      absl::StrCat(c.origins.Subject(key, value), std::forward<Parts>(parts)...));
}

// The grid: encoders, sizes, SGU variants, Transformer positions and aMLP widths, tasks, seeds.
absl::Status CheckGrid(const StudyConfig& c) {
  auto bad = [&c](auto&&... args) { return Bad(c, args...); };
  if (c.archs.empty()) return bad("archs", c.archs, " is empty; name at least one encoder");
  if (c.sizes.empty()) return bad("sizes", c.sizes, " is empty; name at least one size");
  for (const std::string& a : c.archs) {
    for (const std::string& s : c.sizes) {
      auto p = model::Preset(absl::StrCat(a, "-", s));
      if (!p.ok()) {
        return bad("archs", c.archs, " with ", c.origins.Mention("sizes", c.sizes), ": no preset '",
                   a, "-", s, "' (", p.status().message(), ")");
      }
    }
  }
  const std::vector<std::string>& variants = model::SguVariants();
  for (const std::string& v : c.sgu_variants) {
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) {
      return bad("sgu_variants", c.sgu_variants, ": '", v,
                 "' is not one of split, multiplicative, additive, linear");
    }
  }
  for (const std::string& t : c.tasks) {
    if (absl::Status st = FindStudyTask(t).status(); !st.ok()) {
      return bad("tasks", c.tasks, ": ", st.message());
    }
  }
  if (c.seeds.empty()) return bad("seeds", c.seeds, " is empty");
  if (!(c.holdout_fraction > 0 && c.holdout_fraction < 0.5)) {
    return bad("holdout_fraction", c.holdout_fraction, " must be in (0, 0.5)");
  }
  if (c.transformer_positions.empty()) {
    return bad("transformer_positions", c.transformer_positions,
               " is empty; name alibi, learned or both (the first is the baseline)");
  }
  for (size_t i = 0; i < c.transformer_positions.size(); ++i) {
    const std::string& p = c.transformer_positions[i];
    const std::vector<std::string>& schemes = model::PositionSchemes();
    if (std::find(schemes.begin(), schemes.end(), p) == schemes.end()) {
      return bad("transformer_positions", c.transformer_positions, ": '", p, "' is not one of ",
                 absl::StrJoin(schemes, ", "));
    }
    if (std::find(c.transformer_positions.begin(), c.transformer_positions.begin() + i, p) !=
        c.transformer_positions.begin() + i) {
      return bad("transformer_positions", c.transformer_positions, " names '", p, "' twice");
    }
  }
  if (c.amlp_attn_sizes.empty())
    return bad("amlp_attn_sizes", c.amlp_attn_sizes, " is empty; the paper's is 64");
  for (const uint64_t a : c.amlp_attn_sizes) {
    if (a < 1 || a > static_cast<uint64_t>(kMaxSize)) {
      return bad("amlp_attn_sizes", c.amlp_attn_sizes, ": ", a, " is not in [1, ", kMaxSize,
                 "] (2^20)");
    }
  }
  return absl::OkStatus();
}

// The pretraining recipe, every cell's lr included (pretrain_lr too when pretrain_lr_by_size
// covers every size): a config is checked whole, before any work.
absl::Status CheckPretraining(const StudyConfig& c) {
  auto bad = [&c](auto&&... args) { return Bad(c, args...); };
  if (!kernels::ParsePolicy(c.pretraining.kernels)) {
    return bad("pretrain_kernels", c.pretraining.kernels, " is not one of auto, aten");
  }
  if (!(c.pretraining.lr > 0 && c.pretraining.lr <= 1)) {
    return bad("pretrain_lr", c.pretraining.lr, " must be in (0, 1]");
  }
  for (size_t i = 0; i < c.pretrain_lr_by_size.size(); ++i) {
    const std::string size = c.pretrain_lr_by_size[i].substr(0, c.pretrain_lr_by_size[i].find('='));
    GMLP_RETURN_IF_ERROR(c.PretrainLr(size).status());
    if (!model::Preset(absl::StrCat(c.archs.front(), "-", size)).ok()) {
      return bad("pretrain_lr_by_size", c.pretrain_lr_by_size, ": no size '", size,
                 "' (no preset '", c.archs.front(), "-", size, "')");
    }
    for (size_t k = 0; k < i; ++k) {
      if (absl::StartsWith(c.pretrain_lr_by_size[k], size + "=")) {
        return bad("pretrain_lr_by_size", c.pretrain_lr_by_size, " names size '", size, "' twice");
      }
    }
  }
  if (c.pretraining.steps < 0) {
    return bad("pretrain_steps", c.pretraining.steps, " must be >= 1, or 0 (sized by --budget)");
  }
  if (!(c.budget_minutes >= 0) || c.budget_minutes > 1e6) {
    return bad("budget", c.budget_minutes, " must be minutes in [0, 1e6]");
  }
  if (c.pretraining.steps == 0 && c.budget_minutes == 0) {
    return bad("pretrain_steps", c.pretraining.steps,
               " sizes pretraining by --budget, which is 0: give --budget=MINUTES or "
               "--pretrain_steps=N");
  }
  if (c.pretraining.global_batch < 1 || c.pretraining.global_batch > kMaxSize) {
    return bad("pretrain_batch", c.pretraining.global_batch, " must be in [1, ", kMaxSize,
               "] (2^20)");
  }
  if (c.pretraining.warmup_steps < 0)
    return bad("pretrain_warmup", c.pretraining.warmup_steps, " must be >= 0");
  if (c.pretraining.eval_batches < 1)
    return bad("ppl_batches", c.pretraining.eval_batches, " must be >= 1");
  if (c.curve_points < 1) return bad("curve_points", c.curve_points, " must be >= 1");
  return absl::OkStatus();
}

// The corpus, tokenizer, shards and probe.
absl::Status CheckData(const StudyConfig& c) {
  auto bad = [&c](auto&&... args) { return Bad(c, args...); };
  if (c.corpus_mb < 0) return bad("corpus_mb", c.corpus_mb, " must be >= 0 (0 = all)");
  if (c.tokenizer_training.vocab_size < 8)
    return bad("vocab_size", c.tokenizer_training.vocab_size, " must be >= 8");
  if (c.sharding.seq_len < 8 || c.sharding.seq_len > kMaxSize) {
    return bad("seq_len", c.sharding.seq_len, " must be in [8, ", kMaxSize, "] (2^20)");
  }
  // The probe's own bounds (study/probe.cc ProbeOptions::Validate), named as the study's keys.
  for (const auto& [key, n] :
       {std::pair<const char*, int64_t>{"probe_train_examples", c.probe.train_examples},
        {"probe_dev_examples", c.probe.dev_examples},
        {"probe_test_examples", c.probe.test_examples}}) {
    if (n < 2) return bad(key, n, " must be >= 2");
  }
  if (c.probe.max_sentence_bytes != 0 && c.probe.max_sentence_bytes < 8) {
    return bad("probe_max_sentence_bytes", c.probe.max_sentence_bytes,
               " must be >= 8 (or 0: --max_len - 8)");
  }
  if (c.probe.segment_pieces < 4 || c.probe.segment_pieces > kMaxSize) {
    return bad("probe_segment_pieces", c.probe.segment_pieces, " must be in [4, ", kMaxSize, "]");
  }
  if (c.probe.filler_pieces < 0 || c.probe.filler_pieces > kMaxProbeShift) {
    return bad("probe_filler_pieces", c.probe.filler_pieces, " must be in [0, ", kMaxProbeShift,
               "]");
  }
  const std::vector<uint64_t> shifts = ProbeShifts(c.tasks);
  if (!shifts.empty()) {
    const int64_t k = static_cast<int64_t>(*std::max_element(shifts.begin(), shifts.end()));
    if (k > c.probe.filler_pieces) {
      return bad("probe_filler_pieces", c.probe.filler_pieces, " is under the task probe-shift-", k,
                 "'s ", k, " filler pieces before B: raise it to at least ", k);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool UsesProbe(const StudyConfig& config) {
  for (const std::string& t : config.tasks) {
    if (IsProbeTask(t)) return true;
  }
  return false;
}

absl::Status StudyConfig::Validate() const {
  if (output.empty()) return Bad(*this, "output", output, " is empty");
  GMLP_RETURN_IF_ERROR(CheckGrid(*this));
  GMLP_RETURN_IF_ERROR(CheckPretraining(*this));
  GMLP_RETURN_IF_ERROR(CheckData(*this));
  if (max_train_examples < 0) {
    return Bad(*this, "max_train_examples", max_train_examples, " must be >= 0 (0 = all)");
  }
  if (probe_epochs < 0 || probe_epochs > 1000) {
    return Bad(*this, "probe_epochs", probe_epochs, " must be in [0, 1000] (0 = --epochs)");
  }
  for (double lr : lr_grid) {
    if (!finetune::IsValidLr(lr)) {
      return Bad(*this, "lr_grid", lr_grid, " holds ", lr, "; each lr must be in (0, 1]");
    }
  }
  if (!(probe_lr >= 0 && probe_lr <= 1)) {
    return Bad(*this, "probe_lr", probe_lr, " must be in [0, 1] (0 = --lr)");
  }
  if (max_eval_examples < 0) {
    return Bad(*this, "max_eval_examples", max_eval_examples, " must be >= 0 (0 = all)");
  }
  if (finetune.max_len > sharding.seq_len && shards.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(finetune_origins.Subject("max_len", finetune.max_len), " exceeds ",
                     origins.Mention("seq_len", sharding.seq_len), " (the encoders' max_seq_len)"));
  }
  GMLP_RETURN_IF_ERROR(finetune.Validate(finetune_origins));
  if (finetune.max_len != 0) {
    return CheckProbeFits(*this, finetune.max_len,
                          finetune_origins.Subject("max_len", finetune.max_len));
  }
  // max_len follows seq_len (with `shards`, the manifest's: WithDerivedDefaults checks it).
  if (shards.empty()) {
    return CheckProbeFits(*this, sharding.seq_len, origins.Subject("seq_len", sharding.seq_len));
  }
  return absl::OkStatus();
}

absl::StatusOr<StudyConfig> StudyConfig::WithDerivedDefaults() const {
  StudyConfig c = *this;
  if (c.finetune.max_len == 0) {
    c.finetune.max_len = c.sharding.seq_len;
    if (!c.shards.empty()) {
      GMLP_ASSIGN_OR_RETURN(const data::Manifest manifest,
                            data::ReadManifest(JoinPath(c.shards, "manifest.json")));
      c.finetune.max_len = manifest.seq_len;
      GMLP_RETURN_IF_ERROR(CheckProbeFits(
          c, manifest.seq_len,
          absl::StrCat(JoinPath(c.shards, "manifest.json"), ": seq_len ", manifest.seq_len)));
    }
  }
  if (c.probe.max_sentence_bytes == 0) {
    c.probe.max_sentence_bytes = DerivedSentenceBytes(c.finetune.max_len);
  }
  return c;
}

absl::StatusOr<double> StudyConfig::PretrainLr(const std::string& size) const {
  for (const std::string& entry : pretrain_lr_by_size) {
    const size_t eq = entry.find('=');
    double lr = 0;
    if (eq == std::string::npos || eq == 0 || !absl::SimpleAtod(entry.substr(eq + 1), &lr) ||
        !(lr > 0 && lr <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(origins.Subject("pretrain_lr_by_size", pretrain_lr_by_size), ": '", entry,
                       "' is not size=lr with lr in (0, 1] (e.g. mini=0.001)"));
    }
    if (entry.compare(0, eq, size) == 0 && eq == size.size()) return lr;
  }
  return pretraining.lr;
}

nlohmann::json StudyConfig::ToJson() const {
  nlohmann::json j;
  ForEachField(*this, [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  j["finetune"] = finetune.ToJson();
  return j;
}

absl::Status StudyConfig::MergeJson(const nlohmann::json& j, const std::string& origin) {
  // A study's own study.json is a settings file too: its "timings" and "made_by" are not
  // settings.
  GMLP_RETURN_IF_ERROR(
      FieldsFromJson(j, origin, this, {"finetune", "comment", "timings", "made_by"}));
  if (j.contains("finetune")) {
    GMLP_RETURN_IF_ERROR(
        FieldsFromJson(j.at("finetune"), absl::StrCat(origin, " \"finetune\""), &finetune, {}));
  }
  origins.SetAll(j, origin);
  if (j.contains("finetune"))
    finetune_origins.SetAll(j.at("finetune"), absl::StrCat(origin, " \"finetune\""));
  // A finetuning lr without a grid is that lr alone (also every study.json from before the grid).
  if (!j.contains("lr_grid") && j.contains("finetune") && j.at("finetune").is_object() &&
      j.at("finetune").contains("lr")) {
    lr_grid.clear();
    origins.Set("lr_grid", origin);
  }
  return absl::OkStatus();
}

std::string TransformerEncoder(const std::string& position) {
  const std::string& arch = Roles().baseline;
  return position == "learned" ? arch : absl::StrCat(arch, "-", position);
}

std::string BaselineEncoder(const StudyConfig& config) {
  return TransformerEncoder(
      config.transformer_positions.empty() ? "learned" : config.transformer_positions.front());
}

absl::Status ApplyStudyConfigFile(const std::string& path, StudyConfig* config) {
  GMLP_ASSIGN_OR_RETURN(nlohmann::json j,
                        ReadJsonFile(path, "fix the file (a JSON object of `gmlp study` flags)"));
  return config->MergeJson(j, path);
}

namespace {

// The settings that follow others, filled in on a ToJson() (a recording made before they did,
// or an unresolved config): finetune.max_len 0 = seq_len, probe_max_sentence_bytes 0 =
// max_len - 8. (With --shards, RunStudy resolved max_len from the manifest before recording it.)
nlohmann::json WithDerivedJson(nlohmann::json j) {
  nlohmann::json& max_len = j["finetune"]["max_len"];
  if (max_len == 0) max_len = j["seq_len"];
  if (j["probe_max_sentence_bytes"] == 0 && max_len.is_number_integer()) {
    j["probe_max_sentence_bytes"] = DerivedSentenceBytes(max_len.get<int64_t>());
  }
  return j;
}

}  // namespace

std::string SettingsChanges(const nlohmann::json& recorded, const StudyConfig& now) {
  nlohmann::json old = Fingerprint(StudyConfig().ToJson());
  old.merge_patch(Fingerprint(recorded));  // recursive: "finetune" too
  // Studies recorded before the grid finetuned at their lr alone.
  if (!recorded.contains("lr_grid")) old["lr_grid"] = nlohmann::json::array();
  old = WithDerivedJson(std::move(old));
  const nlohmann::json current = WithDerivedJson(Fingerprint(now.ToJson()));
  std::string diff;
  for (const auto& [k, v] : current.items()) {
    if (!old.contains(k) || old[k] != v) {
      absl::StrAppend(&diff, " ", k, ": ", old.contains(k) ? JsonForMessage(old[k]) : "(unset)",
                      " -> ", JsonForMessage(v), ";");
    }
  }
  return diff;
}

nlohmann::json Fingerprint(nlohmann::json j) {
  // Which cells and tasks run, and where, do not change any one cell's numbers.
  // pretrain_lr_by_size is checked per cell (study.cc: CheckCellLearningRates).
  for (const char* k : {"output", "archs", "sizes", "sgu_variants", "tasks", "data_dir", "controls",
                        "probe_scratch", "amlp_attn_sizes", "transformer_positions", "timings",
                        "pretrain_lr_by_size", "made_by", "budget"}) {
    j.erase(k);
  }
  return j;
}

absl::Status ApplyStudyPreset(const std::string& name, StudyConfig* c) {
  if (name == "default-small" || name.empty()) return absl::OkStatus();
  if (name == "smoke") {
    const nlohmann::json before = c->ToJson();
    c->corpus_mb = 1;
    c->tokenizer_training.vocab_size = 2000;
    c->sharding.seq_len = 128;  // the probe's pairs need up to 128 tokens
    c->archs = {"transformer", "gmlp"};
    c->sizes = {"tiny"};
    c->sgu_variants = {};
    c->model_overrides = "n_layers=1,d_model=64,d_ffn=128";
    c->pretraining.steps = 10;
    c->pretraining.global_batch = 8;
    c->pretraining.warmup_steps = 2;
    c->pretraining.eval_batches = 2;
    c->curve_points = 2;
    c->tasks = {"SST-2", "MNLI-like", "probe-aligned", "probe-shifted"};
    c->probe.train_examples = 64;
    c->probe.dev_examples = 32;
    c->probe.test_examples = 64;
    c->probe.max_sentence_bytes = 80;  // the 2k vocabulary cuts words into more pieces
    c->seeds = {1, 2};
    c->max_train_examples = 64;
    c->max_eval_examples = 64;
    c->finetune.epochs = 1;
    c->finetune.batch_size = 16;
    const nlohmann::json after = c->ToJson();  // items() does not own it
    for (const auto& [key, value] : after.items()) {
      if (before.at(key) != value) c->origins.Set(key, "--smoke");
    }
    for (const auto& [key, value] : after.at("finetune").items()) {
      if (before.at("finetune").at(key) != value) c->finetune_origins.Set(key, "--smoke");
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--preset: unknown study preset '", name, "'; use default-small or smoke"));
}

}  // namespace gmlp::study
