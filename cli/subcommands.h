// Entry points of the `gmlp` subcommands. Each takes argv with argv[0] = the subcommand name and
// is defined in that stage's *_main.cc, which also holds the stage's flags.
#ifndef GMLP_CLI_SUBCOMMANDS_H_
#define GMLP_CLI_SUBCOMMANDS_H_

namespace gmlp::cli {

int TokenizerMain(int argc, char** argv);  // tokenizer/tokenizer_main.cc
int PrepareMain(int argc, char** argv);    // data/prepare_main.cc
int PretrainMain(int argc, char** argv);   // pretrain/pretrain_main.cc
int FinetuneMain(int argc, char** argv);   // finetune/finetune_main.cc
int PredictMain(int argc, char** argv);    // finetune/predict_main.cc
int ExportMain(int argc, char** argv);     // export/export_main.cc
int StudyMain(int argc, char** argv);      // study/study_main.cc
int ProbeMain(int argc, char** argv);      // study/probe_main.cc

}  // namespace gmlp::cli

#endif  // GMLP_CLI_SUBCOMMANDS_H_
