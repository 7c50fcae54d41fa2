// `gmlp export` (see export.h).
#include "export/export.h"

#include <unistd.h>

#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "common/version.h"
#include "export/hf_tokenizer.h"
#include "finetune/saved_model.h"
#include "model/arch.h"
#include "model/encoder.h"
#include "model/flops.h"
#include "model/heads.h"
#include "model/provenance.h"
#include "model/safetensors.h"
#include "model/serialize.h"
#include "model/weights_folder.h"
#include "pretrain/checkpoint.h"
#include "pretrain/checkpoint_state.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::exporter {
namespace {

constexpr char kCardFile[] = "README.md";

// The newest eval line at or before `step` in a run's metrics.jsonl; null when there is none.
nlohmann::json HeldOutLoss(const std::string& run_dir, int64_t step) {
  std::ifstream in(JoinPath(run_dir, "metrics.jsonl"));
  nlohmann::json best;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "eval" || !j.contains("step") ||
        !j["step"].is_number_integer() || j["step"].get<int64_t>() > step) {
      continue;
    }
    best = {{"step", j["step"]},
            {"eval_loss", j.value("eval_loss", 0.0)},
            {"eval_perplexity", j.value("eval_perplexity", 0.0)},
            {"eval_accuracy", j.value("eval_accuracy", 0.0)}};
  }
  return best;
}

std::string Card(const ExportSource& s, const nlohmann::ordered_json& made_by,
                 const std::string& dtype, const std::string& format, const std::string& dir) {
  const model::ParamCount count = model::CountParameters(s.config);
  const bool mlm = s.kind == model::kKindMlm;
  std::string card = absl::StrCat(
      "# ", model::ArchLabel(s.config.arch), mlm ? " MLM model" : " sequence classifier",
      " (exported by gmlp)\n\n", "| | |\n|---|---|\n", "| architecture | ", s.config.arch,
      ": d_model ", s.config.d_model, ", ", s.config.n_layers, " layers, d_ffn ", s.config.d_ffn,
      ", max_seq_len ", s.config.max_seq_len, " |\n", "| parameters (encoder) | ", count.total,
      " (", count.total - count.embedding, " non-embedding) |\n",
      "| weights | `model.safetensors`, ", dtype == "bf16" ? "bfloat16" : "float32", ", ",
      format == "hf" ? "Hugging Face BERT names" : "gmlp's tensor names (model/README.md)", " |\n",
      "| tokenizer | `tokenizer.model` (SentencePiece, vocab ", s.config.vocab_size,
      "; [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4)", format == "hf" ? " and `tokenizer.json`" : "",
      " |\n");
  for (const auto& [key, value] : s.trained.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (value.is_object() && value.contains("eval_loss")) {
      text =
          absl::StrFormat("%.4f nats (perplexity %.1f, accuracy %.3f) at step %d",
                          value["eval_loss"].get<double>(), value["eval_perplexity"].get<double>(),
                          value["eval_accuracy"].get<double>(), value["step"].get<int64_t>());
    }
    absl::StrAppend(&card, "| ", key, " | ", text, " |\n");
  }
  if (!mlm) {
    absl::StrAppend(&card, "| task | ", s.task.dump(), " |\n");
  }
  absl::StrAppend(&card, "| made by | ", model::ProvenanceLine(made_by),
                  " |\n\n## Loading\n\n```python\n");
  if (format == "hf") {
    absl::StrAppend(&card, "from transformers import AutoTokenizer, ",
                    mlm ? "BertForMaskedLM" : "AutoModelForSequenceClassification",
                    "\ntokenizer = AutoTokenizer.from_pretrained(\"DIR\")\nmodel = ",
                    mlm ? "BertForMaskedLM" : "AutoModelForSequenceClassification",
                    ".from_pretrained(\"DIR\")\nbatch = tokenizer([\"Call me Ishmael.\"], "
                    "return_tensors=\"pt\")\noutput = model(**batch)\n```\n");
  } else {
    absl::StrAppend(&card,
                    "import gmlp  # pip install ./python (in the gmlp repository)\n"
                    "model = gmlp.load(\"DIR\")  # torch.nn.Module, eval mode\n"
                    "tokenizer = gmlp.Tokenizer(\"DIR\")  # needs the sentencepiece package\n"
                    "output = model(**tokenizer([\"Call me Ishmael.\"]))\n```\n");
  }
  return absl::StrReplaceAll(card, {{"DIR", dir}});
}

// A `gmlp finetune` output (task.json beside model.pt, or under model/).
absl::Status LoadFinetuned(const std::string& path, ExportSource* s,
                           std::shared_ptr<torch::nn::Module>* holder) {
  GMLP_ASSIGN_OR_RETURN(finetune::FinetunedModel m, finetune::LoadFinetunedModel(path));
  const std::string dir = PathExists(JoinPath(path, "task.json")) ? path : JoinPath(path, "model");
  s->kind = model::kKindClassifier;
  s->config = m.config;
  s->tokenizer_path = JoinPath(dir, "tokenizer.model");
  s->task = {{"name", m.task.name},
             {"labels", m.task.is_regression() ? std::vector<std::string>{"score"} : m.task.labels},
             {"max_len", m.max_len},
             {"pair", m.task.is_pair()}};
  s->trained = {{"source", dir}};
  const std::string results = JoinPath(path, "results.json");
  if (PathExists(results)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json r, ReadJsonFile(results, "re-run gmlp finetune"));
    if (r.contains("summary")) s->trained["finetuned (dev, every seed)"] = r["summary"];
  }
  *holder = m.classifier.ptr();
  s->module = holder->get();
  return absl::OkStatus();
}

// A `gmlp pretrain` run or one of its checkpoints.
absl::Status LoadPretrained(const std::string& path, ExportSource* s,
                            std::shared_ptr<torch::nn::Module>* holder) {
  GMLP_ASSIGN_OR_RETURN(const std::string dir, pretrain::ResolveCheckpoint(path));
  const std::string config_path = JoinPath(dir, pretrain::kConfigFile);
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json j,
                        ReadJsonFile(config_path, "the checkpoint is damaged"));
  if (!j.is_object() || !j.contains("model")) {
    return absl::DataLossError(
        absl::StrCat(config_path, ": not a pretraining config (no \"model\" section)"));
  }
  auto config = model::EncoderConfig::FromJson(j.at("model"));
  if (!config.ok()) {
    return absl::DataLossError(absl::StrCat(config_path, ": ", config.status().message()));
  }
  s->kind = model::kKindMlm;
  s->config = *config;
  model::MlmModel mlm(s->config);
  GMLP_RETURN_IF_ERROR(model::LoadModule(*mlm, JoinPath(dir, pretrain::kModelFile)));
  mlm->eval();
  s->tokenizer_path = JoinPath(dir, pretrain::kTokenizerFile);
  const std::string state_path = JoinPath(dir, pretrain::kStateFile);
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json state_json,
                        ReadJsonFile(state_path, "the checkpoint is damaged"));
  GMLP_ASSIGN_OR_RETURN(const pretrain::CheckpointState state,
                        pretrain::ParseCheckpointState(state_json, state_path));
  const std::string run_dir = Dirname(Dirname(dir));  // <run>/checkpoints/step_N
  s->trained = {{"source", dir}, {"pretraining steps", state.step}};
  for (const char* key : {"shard_dir", "micro_batch", "seq_len", "lr"}) {
    if (j.contains(key)) s->trained[absl::StrCat("pretraining ", key)] = j[key];
  }
  const nlohmann::json held_out = HeldOutLoss(run_dir, state.step);
  s->trained["held-out MLM loss"] = held_out.is_null() ? nlohmann::json("not evaluated") : held_out;
  *holder = mlm.ptr();
  s->module = holder->get();
  return absl::OkStatus();
}

// Loads what `path` names: a finetuned model or a pretraining run/checkpoint. `holder` keeps the
// module alive.
absl::Status LoadSource(const std::string& path, ExportSource* s,
                        std::shared_ptr<torch::nn::Module>* holder) {
  if (!PathExists(path)) {
    return absl::NotFoundError(
        absl::StrCat("--model=", path,
                     " does not exist: pass a `gmlp pretrain` run or checkpoint directory, "
                     "or a `gmlp finetune` output directory"));
  }
  if (PathExists(JoinPath(path, "task.json")) || PathExists(JoinPath(path, "model/task.json"))) {
    return LoadFinetuned(path, s, holder);
  }
  return LoadPretrained(path, s, holder);
}

// The module's tensors on the CPU; --dtype=bf16 casts the weights, while buffers (ALiBi's
// slopes) keep their precision.
model::TensorList ExportTensors(const ExportSource& s, const std::string& dtype) {
  model::TensorList tensors = model::ModuleTensors(*s.module);
  const size_t num_parameters = s.module->named_parameters(/*recurse=*/true).size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    torch::Tensor& t = tensors[i].second;
    t = t.detach().cpu();
    if (dtype == "bf16" && t.is_floating_point() && i < num_parameters) t = t.to(torch::kBFloat16);
  }
  return tensors;
}

// config.json of a Hugging Face BERT export: BertConfig's keys, gmlp's own under "gmlp".
nlohmann::ordered_json HfExportConfig(const ExportSource& s, const std::string& dtype,
                                      const nlohmann::ordered_json& made_by) {
  std::vector<std::string> labels;
  if (s.kind == model::kKindClassifier) labels = s.task["labels"].get<std::vector<std::string>>();
  nlohmann::ordered_json config = model::HfBertConfig(s.config, s.kind, labels);
  config["dtype"] = dtype == "bf16" ? "bfloat16" : "float32";
  config["gmlp"] = {{"model", s.config.ToJson()}, {model::kMadeByKey, made_by}};
  if (s.kind == model::kKindClassifier) config["gmlp"]["task"] = s.task;
  return config;
}

// config.json of a gmlp-format export.
nlohmann::ordered_json GmlpExportConfig(const ExportSource& s, const std::string& dtype,
                                        const nlohmann::ordered_json& made_by) {
  nlohmann::ordered_json config = {{"gmlp_export", model::kWeightsFormatVersion},
                                   {"kind", s.kind},
                                   {"model", s.config.ToJson()},
                                   {"dtype", dtype == "bf16" ? "bfloat16" : "float32"},
                                   {"tokenizer",
                                    {{"file", model::kWeightsTokenizerFile},
                                     {"pad_id", tokenizer::kPadId},
                                     {"unk_id", tokenizer::kUnkId},
                                     {"cls_id", tokenizer::kClsId},
                                     {"sep_id", tokenizer::kSepId},
                                     {"mask_id", tokenizer::kMaskId}}}};
  if (s.kind == model::kKindClassifier) config["task"] = s.task;
  config["trained"] = s.trained;
  config[model::kMadeByKey] = made_by;
  return config;
}

}  // namespace

absl::Status WriteExport(const ExportSource& s, const std::string& output, const std::string& dtype,
                         const std::string& format) {
  if (dtype != "fp32" && dtype != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat("--dtype=", dtype, " is not one of fp32, bf16"));
  }
  if (format != "gmlp" && format != "hf") {
    return absl::InvalidArgumentError(absl::StrCat("--format=", format, " is not one of gmlp, hf"));
  }
  if (format == "hf") GMLP_RETURN_IF_ERROR(model::CheckHfBertCompatible(s.config));
  model::TensorList tensors = ExportTensors(s, dtype);
  const nlohmann::ordered_json made_by = model::Provenance();
  nlohmann::ordered_json config;
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (format == "hf") {
    tensors = model::ToHfBert(tensors);
    config = HfExportConfig(s, dtype, made_by);
  } else {
    config = GmlpExportConfig(s, dtype, made_by);
    // A lone model.safetensors still says what it is (ReadInitWeights reads it).
    metadata["gmlp_export"] = std::to_string(model::kWeightsFormatVersion);
    metadata["kind"] = s.kind;
    metadata["model"] = s.config.ToJson().dump();
    metadata["gmlp_version"] = GmlpVersion();
  }

  const std::string tmp = absl::StrCat(output, ".tmp.", ::getpid());
  auto write_all = [&]() -> absl::Status {
    if (PathExists(tmp)) GMLP_RETURN_IF_ERROR(RemoveTree(tmp));
    GMLP_RETURN_IF_ERROR(MakeDirs(tmp));
    GMLP_RETURN_IF_ERROR(
        model::WriteSafetensors(JoinPath(tmp, model::kWeightsFile), tensors, metadata));
    GMLP_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(tmp, model::kWeightsConfigFile), config.dump(2) + "\n"));
    GMLP_RETURN_IF_ERROR(CopyFile(s.tokenizer_path, JoinPath(tmp, model::kWeightsTokenizerFile)));
    if (format == "hf") {  // the same tokenizer for AutoTokenizer, cutting where the model does
      const int64_t max_len =
          s.task.contains("max_len") ? s.task["max_len"].get<int64_t>() : s.config.max_seq_len;
      GMLP_RETURN_IF_ERROR(WriteHfTokenizerFiles(s.tokenizer_path, tmp, max_len));
    }
    GMLP_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(tmp, kCardFile), Card(s, made_by, dtype, format, output)));
    return ReplaceDirectory(tmp, output);
  };
  const absl::Status st = write_all();
  if (!st.ok() && PathExists(tmp)) RemoveTree(tmp).IgnoreError();
  return st;
}

absl::Status Export(const ExportOptions& options) {
  if (options.model.empty() || options.output.empty()) {
    return absl::InvalidArgumentError(
        "--model and --output are required: gmlp export --model=runs/pretrain/gmlp-tiny "
        "--output=exports/gmlp-tiny");
  }
  ExportSource source;
  std::shared_ptr<torch::nn::Module> holder;
  GMLP_RETURN_IF_ERROR(LoadSource(options.model, &source, &holder));
  if (source.kind == model::kKindMlm && !PathExists(source.tokenizer_path)) {
    return absl::NotFoundError(
        absl::StrCat(source.tokenizer_path, " is missing: the checkpoint has no tokenizer copy"));
  }
  return WriteExport(source, options.output, options.dtype, options.format);
}

}  // namespace gmlp::exporter
