// `gmlp export`: a pretrained or finetuned model as a folder of safetensors weights, config,
// tokenizer and model card (export/export.h).
#include <cstdio>
#include <string>

#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "export/export.h"

namespace gmlp::cli {

int ExportMain(int argc, char** argv) {
  const std::string usage =
      "gmlp export --model=runs/pretrain/gmlp-tiny --output=exports/gmlp-tiny [--dtype=bf16]\n"
      "gmlp export --model=runs/ft/sst2 --output=exports/bert-sst2 --format=hf\n\n"
      "Writes a pretrained (MLM) or finetuned (classifier) model as a folder: model.safetensors, "
      "config.json, tokenizer.model and a model card (README.md). --format=gmlp keeps gmlp's "
      "tensor names, for the PyTorch twin (pip install ./python) and for `--init`; --format=hf "
      "writes a Hugging Face BERT folder (post-LN Transformer with learned positions) that "
      "transformers' from_pretrained and AutoTokenizer load.";
  exporter::ExportOptions options;
  FlagSet flags(argv[0], usage);
  exporter::ExportOptions::ForEachField(
      options,
      [&flags](const char* name, auto& field, const char* help) { flags.Add(name, &field, help); });
  ParseSubcommandFlags(flags, argc, argv);
  const absl::Status st = exporter::Export(options);
  if (!st.ok()) return Fail(argv[0], st);
  std::printf("export: wrote %s (%s format, %s)\n", options.output.c_str(), options.format.c_str(),
              options.dtype.c_str());
  return 0;
}

}  // namespace gmlp::cli
