// `gmlp predict`: label sentences (or sentence pairs) with a model `gmlp finetune` saved.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "finetune/saved_model.h"

namespace gmlp::cli {

int PredictMain(int argc, char** argv) {
  std::string model_dir;
  std::string input = "-";
  FlagSet flags(argv[0],
                "gmlp predict --model=runs/ft/sst2 [--input=file|-]\n\n"
                "Prints one label (or score, for regression tasks) per input line. Pair tasks "
                "read 'sentence1<TAB>sentence2' lines.");
  flags.Add("model", &model_dir, "A `gmlp finetune` output directory (its model/ is loaded).");
  flags.Add("input", &input, "File of sentences, one per line; '-' = stdin.");
  ParseSubcommandFlags(flags, argc, argv);
  if (model_dir.empty()) {
    return Fail(argv[0], absl::InvalidArgumentError(
                             "--model is required: the --output directory of `gmlp finetune`"));
  }
  std::vector<std::string> lines;
  {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (input != "-") {
      file.open(input);
      if (!file) {
        return Fail(argv[0], absl::NotFoundError(
                                 absl::StrCat(input,
                                              ": cannot open; check the path (or use --input=- for "
                                              "stdin)")));
      }
      in = &file;
    }
    std::string line;
    while (std::getline(*in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (lines.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
      lines.push_back(line);
    }
  }
  auto model = finetune::LoadFinetunedModel(model_dir);
  if (!model.ok()) return Fail(argv[0], model.status());
  auto labels = finetune::PredictLines(*model, lines, input == "-" ? "<stdin>" : input,
                                       /*batch_size=*/64);
  if (!labels.ok()) return Fail(argv[0], labels.status());
  for (const std::string& l : *labels) std::printf("%s\n", l.c_str());
  return 0;
}

}  // namespace gmlp::cli
