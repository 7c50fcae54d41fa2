// CorpusReader over a fuzzed corpus file, plain or gzip/xz/zstd (recognised by its magic bytes),
// text or JSON lines (format auto: seeds starting with `{` take the JSONL path):
// what `gmlp tokenizer train`, `gmlp prepare` and `gmlp probe` read.
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "tokenizer/corpus_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("corpus.txt", data, size);
  gmlp::tokenizer::CorpusOptions options;
  options.max_piece_bytes = 4096;
  auto reader = gmlp::tokenizer::CorpusReader::Open(path, options);
  if (!reader.ok()) return 0;
  std::string text;
  bool new_document = false;
  for (int pieces = 0; pieces < 100000; ++pieces) {
    auto more = (*reader)->Next(&text, &new_document);
    if (!more.ok() || !*more) break;
  }
  return 0;
}
