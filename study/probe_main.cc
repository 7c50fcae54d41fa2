// `gmlp probe`: writes the alignment probe (study/probe.h), an aligned and a shifted version of
// one sentence-pair task drawn from a held-out slice of a corpus, as task specs that
// `gmlp finetune --task_spec` runs.
#include <cstdio>
#include <string>

#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "common/file_util.h"
#include "study/probe.h"

namespace gmlp::cli {
namespace {

constexpr char kUsage[] =
    "gmlp probe --corpus=../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz "
    "--output=runs/probe [--seed=1 --holdout_fraction=0.1]\n\n"
    "Generates the alignment probe from the last --holdout_fraction of the corpus's documents "
    "(train the tokenizer and pretrain only on the documents before it; probe.json says where "
    "the slice starts): 'is segment 2 the same as segment 1, or segment 1 with one word "
    "replaced?', in an aligned version (segment 2 starts right after [SEP]) and a shifted one "
    "(1..--max_shift filler words first). Writes <output>/{aligned,shifted}/{train,dev,test}.tsv "
    "and task.json, and <output>/probe.json. With --shifts=0,1,2,4,8,16 and --tokenizer, also "
    "the shift-k versions in <output>/shift-<k>/ (task probe-shift-<k>): both segments exactly "
    "--segment_pieces pieces, segment 2 the second segment and --filler_pieces one-piece filler "
    "words, k of them before it and the rest after (every version the same length). The same "
    "flags give the same bytes.";

}  // namespace

int ProbeMain(int argc, char** argv) {
  study::ProbeOptions o;
  FlagSet flags(argv[0], kUsage);
  study::ProbeOptions::ForEachField(
      o, [&](const char* name, auto& field, const char* help) { flags.Add(name, &field, help); });
  flags.SetDefaultText("max_sentence_bytes", "--max_len - 8 (120 at --max_len=128)");
  ParseSubcommandFlags(flags, argc, argv);
  auto data = study::WriteProbe(o);
  if (!data.ok()) return Fail(argv[0], data.status());
  std::printf(
      "probe: %lld usable sentences and %lld vocabulary words in the last %lld of %lld "
      "documents; %lld/%lld/%lld pairs per version\n",
      static_cast<long long>(data->candidate_sentences),
      static_cast<long long>(data->vocabulary_words),
      static_cast<long long>(data->holdout.documents - data->holdout.first_holdout_document),
      static_cast<long long>(data->holdout.documents), static_cast<long long>(o.train_examples),
      static_cast<long long>(o.dev_examples), static_cast<long long>(o.test_examples));
  if (o.word_versions) {
    std::printf("probe: task specs %s and %s\n", JoinPath(o.output, "aligned/task.json").c_str(),
                JoinPath(o.output, "shifted/task.json").c_str());
  }
  for (const uint64_t k : o.shifts) {
    std::printf("probe: task spec %s\n",
                JoinPath(o.output, "shift-" + std::to_string(k) + "/task.json").c_str());
  }
  if (!o.shifts.empty()) {
    std::printf(
        "probe: shift-k versions: %lld one-piece vocabulary words; %lld sentences "
        "skipped\n",
        static_cast<long long>(data->one_piece_words),
        static_cast<long long>(data->skipped_sentences));
  }
  return 0;
}

}  // namespace gmlp::cli
