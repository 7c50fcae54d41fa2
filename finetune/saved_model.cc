#include "finetune/saved_model.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "finetune/encode.h"
#include "finetune/reader.h"
#include "finetune/trainer.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"

namespace gmlp::finetune {
namespace {

constexpr char kModelPt[] = "model.pt";
constexpr char kConfigJson[] = "config.json";
constexpr char kTaskJson[] = "task.json";
constexpr char kTokenizerModel[] = "tokenizer.model";

absl::StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  return ReadJsonFile(path, "the model directory is damaged");
}

}  // namespace

absl::Status SaveFinetunedModel(const std::string& dir, const model::SequenceClassifierImpl& clf,
                                const model::EncoderConfig& config, const TaskSpec& task,
                                int64_t max_len, const std::string& tokenizer_path) {
  const std::string tmp = absl::StrCat(dir, ".tmp.", ::getpid());
  if (PathExists(tmp)) GMLP_RETURN_IF_ERROR(RemoveTree(tmp));
  GMLP_RETURN_IF_ERROR(MakeDirs(tmp));
  GMLP_RETURN_IF_ERROR(model::SaveModule(clf, JoinPath(tmp, kModelPt)));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(tmp, kConfigJson), config.ToJson().dump(2) + "\n"));
  const nlohmann::json task_json = {{"task", task.ToJson()}, {"max_len", max_len}};
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(tmp, kTaskJson), task_json.dump(2) + "\n"));
  GMLP_ASSIGN_OR_RETURN(std::string tok, ReadFile(tokenizer_path));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(tmp, kTokenizerModel), tok));
  return ReplaceDirectory(tmp, dir);
}

absl::StatusOr<FinetunedModel> LoadFinetunedModel(const std::string& path) {
  std::string dir = path;
  if (!PathExists(JoinPath(dir, kModelPt)) && PathExists(JoinPath(dir, "model/model.pt"))) {
    dir = JoinPath(dir, "model");
  }
  if (!PathExists(JoinPath(dir, kModelPt))) {
    return absl::NotFoundError(absl::StrCat(
        path, ": no finetuned model here (no model.pt); pass the --output of `gmlp finetune`"));
  }
  FinetunedModel m;
  GMLP_ASSIGN_OR_RETURN(nlohmann::json cj, ReadJson(JoinPath(dir, kConfigJson)));
  GMLP_ASSIGN_OR_RETURN(m.config, model::EncoderConfig::FromJson(cj));
  GMLP_ASSIGN_OR_RETURN(nlohmann::json tj, ReadJson(JoinPath(dir, kTaskJson)));
  if (!tj.contains("task") || !tj.contains("max_len")) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(dir, kTaskJson), ": needs \"task\" and \"max_len\""));
  }
  GMLP_ASSIGN_OR_RETURN(m.task, TaskSpec::FromJson(tj["task"], JoinPath(dir, kTaskJson)));
  m.max_len = tj["max_len"].get<int64_t>();
  m.classifier = model::SequenceClassifier(model::MakeEncoder(m.config), m.task.num_outputs());
  GMLP_RETURN_IF_ERROR(model::LoadModule(*m.classifier, JoinPath(dir, kModelPt)));
  m.classifier->eval();
  GMLP_ASSIGN_OR_RETURN(m.tokenizer, tokenizer::Tokenizer::Load(JoinPath(dir, kTokenizerModel)));
  return m;
}

absl::StatusOr<std::vector<std::string>> PredictLines(FinetunedModel& m,
                                                      const std::vector<std::string>& lines,
                                                      const std::string& origin,
                                                      int64_t batch_size) {
  const bool pair = m.task.is_pair();
  std::vector<EncodedExample> examples;
  examples.reserve(lines.size());
  std::vector<int32_t> a, b;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> fields = SplitTsvLine(lines[i]);
    if (pair && fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", i + 1, ": task ", m.task.name,
                       " is a sentence-pair task: expected 'sentence1<TAB>sentence2', found ",
                       fields.size(), " tab-separated field(s)"));
    }
    const std::string text_a = pair ? fields[0] : std::string(lines[i]);
    a.clear();
    b.clear();
    GMLP_RETURN_IF_ERROR(m.tokenizer->Encode(text_a, &a));
    if (pair) GMLP_RETURN_IF_ERROR(m.tokenizer->Encode(fields[1], &b));
    examples.push_back(PackExample(a, b, pair, m.max_len));
  }
  SplitPredictions p = Predict(m.classifier, m.task.is_regression(), examples, batch_size);
  std::vector<std::string> out;
  for (size_t i = 0; i < examples.size(); ++i) {
    out.push_back(m.task.is_regression() ? absl::StrFormat("%.3f", p.score[i])
                                         : m.task.labels[p.label[i]]);
  }
  return out;
}

}  // namespace gmlp::finetune
