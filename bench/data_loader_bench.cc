// Loader throughput in masked sequences per second per rank, synchronous and with prefetch, plain
// and whole-word masking, as a ratio to what the tiny model trains per second.
//
//   data_loader_bench [shard_dir] [tiny_model_seq_per_s]
//
// Without shard_dir it writes 100k synthetic sequences of 128 ids (vocab 8192) to a temp dir.
// The reference rate defaults to 230 seq/s: PyTorch eager tiny gMLP at B=32, n=128 on this
// machine (/work/shared/PERF-NOTES.md, 30k tokens/s); pass the pretrainer's own figure to update.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "data/random.h"
#include "data/shard.h"
#include "tokenizer/tokenizer.h"

namespace {

using gmlp::data::LoaderOptions;
using gmlp::data::MlmLoader;

std::string WriteSynthetic() {
  char tmpl[] = "/tmp/gmlp_data_loader_bench_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const int64_t n = 128, vocab = 8192, per_shard = 10000, total = 100000;
  gmlp::data::Manifest m;
  m.tokenizer = "synthetic";
  m.tokenizer_checksum = "crc32:00000000";
  m.vocab_size = vocab;
  m.seq_len = n;
  m.token_bytes = 2;
  m.word_starts.resize(vocab);
  for (int64_t id = gmlp::tokenizer::kNumSpecialIds; id < vocab; ++id) {
    m.word_starts[id] = id % 3 != 0;  // words of ~1.5 pieces, as SentencePiece gives on English
  }
  gmlp::data::Rng rng(1);
  for (int64_t s = 0; s * per_shard < total; ++s) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < per_shard; ++i) {
      ids.push_back(gmlp::tokenizer::kClsId);
      for (int64_t t = 1; t < n; ++t) {
        ids.push_back(t % 50 == 0 ? gmlp::tokenizer::kSepId
                                  : static_cast<int32_t>(5 + rng.Uniform(vocab - 5)));
      }
    }
    gmlp::data::ShardMeta meta{n, per_shard, vocab, m.tokenizer_checksum, 2};
    const std::string file = absl::StrCat("train-00000-", s, ".bin");
    auto checksum = gmlp::data::WriteShard(dir + "/" + file, meta, ids);
    if (!checksum.ok()) {
      std::fprintf(stderr, "%s\n", std::string(checksum.status().message()).c_str());
      std::exit(1);
    }
    m.shards.push_back({file, "train", per_shard, per_shard * n, *checksum});
  }
  m.documents = total;
  if (!gmlp::data::WriteManifest(dir + "/manifest.json", m).ok()) std::exit(1);
  return dir;
}

void RemoveFlatDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
  ::rmdir(dir.c_str());
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : WriteSynthetic();
  const double reference = argc > 2 ? std::atof(argv[2]) : 230.0;

  LoaderOptions base;
  base.shard_dir = dir;
  base.batch_size = 32;
  base.world_size = 1;
  const auto open_start = std::chrono::steady_clock::now();
  auto probe = MlmLoader::Open(base);
  if (!probe.ok()) {
    std::fprintf(stderr, "data_loader_bench: %s\n", std::string(probe.status().message()).c_str());
    return 1;
  }
  const double open_s = SecondsSince(open_start);
  std::printf("shards: %s (%lld sequences of %lld); open + verify: %.3f s\n", dir.c_str(),
              static_cast<long long>((*probe)->num_sequences()),
              static_cast<long long>((*probe)->seq_len()), open_s);
  probe->reset();

  std::printf("%-34s %12s %12s\n", "loader (B=32, rank 0 of 1)", "seq/s", "x tiny model");
  for (const bool whole_word : {false, true}) {
    for (const int prefetch : {0, 4}) {
      LoaderOptions o = base;
      o.prefetch = prefetch;
      o.masking.whole_word = whole_word;
      auto loader = MlmLoader::Open(o);
      if (!loader.ok()) return 1;
      int64_t masked = 0;
      const int batches = 1500;
      // Warm the page cache and the prefetch queue first.
      for (int i = 0; i < 50; ++i) (void)(*loader)->Next();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < batches; ++i) masked += (*loader)->Next()->masked_index.size();
      const double s = SecondsSince(start);
      const double seq_per_s = batches * o.batch_size / s;
      std::printf(
          "%-34s %12.0f %12.1f   (%.1f%% masked)\n",
          absl::StrCat(whole_word ? "whole-word" : "token", " masking, prefetch ", prefetch)
              .c_str(),
          seq_per_s, seq_per_s / reference,
          100.0 * masked / (static_cast<double>(batches) * o.batch_size * (*loader)->seq_len()));
    }
  }
  std::printf("reference: tiny model trains %.0f seq/s (target: loader >= 50x)\n", reference);
  if (argc <= 1) RemoveFlatDir(dir);
  return 0;
}
