// `gmlp prepare` (data::Prepare, the code the subcommand runs) on the same documents as plain text
// and as zstd-compressed JSON lines, in one run: MB/s of document text for each, their ratio
// (target >= 0.9x), and whether the shards are byte-identical (they must be).
//
//   data_corpus_format_bench [MB=30] [model] [rounds=3] [workers=2]
//
// The documents are the first MB megabytes of text of the shared Wikipedia extract
// (../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz), read with CorpusReader. They are
// written as blank-line-separated plain text and as `{"id": n, "text": "..."}` lines compressed
// with libzstd (level 3, the zstd CLI's default). Without `model`, a vocab-8192 unigram model is
// trained on the first 10 MB first. Rounds alternate text and JSONL; the best of each is reported,
// in wall-clock MB/s and in MB per CPU-second (user + sys of this process), which a loaded
// machine disturbs less.
#include <sys/resource.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "data/prepare.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/tokenizer.h"

namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string Run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "data_corpus_format_bench: %s\n", std::string(s.message()).c_str());
  return 1;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  const double mb = argc > 1 ? std::atof(argv[1]) : 30;
  std::string model = argc > 2 ? argv[2] : "";
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  const int workers = argc > 4 ? std::atoi(argv[4]) : 2;
  const std::string xz =
      std::string(GMLP_SOURCE_DIR) + "/../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz";
  char tmpl[] = "/tmp/gmlp_corpus_format_bench_XXXXXX";
  const std::string dir = mkdtemp(tmpl);

  // The documents: whole documents until `mb` MB of text.
  std::vector<std::string> docs;
  {
    gmlp::tokenizer::CorpusOptions read;
    read.format = "text";
    auto reader = gmlp::tokenizer::CorpusReader::Open(xz, read);
    if (!reader.ok()) return Fail(reader.status());
    std::string piece;
    bool new_doc = false;
    int64_t bytes = 0;
    for (;;) {
      auto more = (*reader)->Next(&piece, &new_doc);
      if (!more.ok()) return Fail(more.status());
      if (!*more) break;
      if (new_doc) {
        if (bytes >= mb * 1e6) break;
        docs.emplace_back();
      } else {
        docs.back() += '\n';
      }
      docs.back() += piece;
      bytes += static_cast<int64_t>(piece.size());
    }
  }
  std::string plain, jsonl;
  for (size_t i = 0; i < docs.size(); ++i) {
    plain += docs[i] + "\n\n";
    nlohmann::json j;
    j["id"] = i;
    j["text"] = docs[i];
    jsonl += j.dump() + "\n";
  }
  std::string zst(ZSTD_compressBound(jsonl.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), jsonl.data(), jsonl.size(), 3));
  const std::string text_file = dir + "/wiki.txt";
  const std::string zst_file = dir + "/wiki.jsonl.zst";
  if (!WriteFile(text_file, plain) || !WriteFile(zst_file, zst)) {
    std::fprintf(stderr, "data_corpus_format_bench: cannot write %s\n", dir.c_str());
    return 1;
  }
  if (model.empty()) {
    WriteFile(dir + "/sample.txt", plain.substr(0, 10'000'000));
    gmlp::tokenizer::TrainOptions t;
    t.inputs = {dir + "/sample.txt"};
    t.model_prefix = dir + "/spm";
    t.vocab_size = 8192;
    t.num_threads = 2;
    if (absl::Status st = gmlp::tokenizer::Train(t); !st.ok()) return Fail(st);
    model = dir + "/spm.model";
  }

  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("date: %s; commit %s; %s; %d cores; AVX-512 BF16: %s, AMX: %s; load average %s\n",
              date,
              Run(absl::StrCat("git -C ", GMLP_SOURCE_DIR, " rev-parse --short HEAD")).c_str(),
              Run("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'").c_str(),
              std::atoi(Run("nproc").c_str()),
              Run("grep -qw avx512_bf16 /proc/cpuinfo && echo yes || echo no").c_str(),
              Run("grep -qw amx_tile /proc/cpuinfo && echo yes || echo no").c_str(),
              Run("cut -d' ' -f1-3 /proc/loadavg").c_str());
  std::printf(
      "documents: %zu, text %.1f MB; plain file %.1f MB; JSONL %.1f MB, as .zst %.1f MB; "
      "model %s; workers %d; %d rounds\n",
      docs.size(), plain.size() / 1e6, plain.size() / 1e6, jsonl.size() / 1e6, zst.size() / 1e6,
      model.c_str(), workers, rounds);

  // The reader alone (CorpusReader::Next over the whole file, one thread): what JSON parsing and
  // zstd decoding cost before any tokenizing.
  double reader_mb_s[2] = {0, 0};
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const double cpu0 = CpuSeconds();
      auto reader = gmlp::tokenizer::CorpusReader::Open(k == 0 ? text_file : zst_file);
      if (!reader.ok()) return Fail(reader.status());
      std::string piece;
      bool new_doc = false;
      int64_t bytes = 0;
      for (;;) {
        auto more = (*reader)->Next(&piece, &new_doc);
        if (!more.ok()) return Fail(more.status());
        if (!*more) break;
        bytes += static_cast<int64_t>(piece.size());
      }
      reader_mb_s[k] = std::max(reader_mb_s[k], bytes / 1e6 / (CpuSeconds() - cpu0));
    }
  }
  std::printf("reader alone (best of %d, MB of text per CPU-s): plain %.0f, jsonl.zst %.0f\n",
              rounds, reader_mb_s[0], reader_mb_s[1]);

  double best_wall[2] = {0, 0}, best_cpu[2] = {0, 0};
  std::vector<std::string> checksums[2];
  const char* names[2] = {"plain text", "jsonl.zst"};
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      gmlp::data::PrepareOptions o;
      o.tokenizer = model;
      o.output = absl::StrCat(dir, "/out", k);
      o.workers = workers;
      o.input = {k == 0 ? text_file : zst_file};
      o.progress = false;
      gmlp::RemoveTree(o.output).IgnoreError();
      const double cpu0 = CpuSeconds();
      const auto start = std::chrono::steady_clock::now();
      auto r = gmlp::data::Prepare(o);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double cpu = CpuSeconds() - cpu0;
      if (!r.ok()) return Fail(r.status());
      const double text_mb = r->text_bytes / 1e6;
      best_wall[k] = std::max(best_wall[k], text_mb / s);
      best_cpu[k] = std::max(best_cpu[k], text_mb / cpu);
      std::printf("round %d %-10s: %.1f MB of text in %.2f s = %.2f MB/s, %.2f MB/CPU-s\n", round,
                  names[k], text_mb, s, text_mb / s, text_mb / cpu);
      std::fflush(stdout);
      checksums[k].clear();
      for (const auto& e : r->manifest.shards) checksums[k].push_back(e.file + " " + e.checksum);
    }
  }
  const bool same = checksums[0] == checksums[1] && !checksums[0].empty();
  std::printf(
      "best: plain %.2f MB/s (%.2f MB/CPU-s), jsonl.zst %.2f MB/s (%.2f MB/CPU-s); ratio "
      "jsonl.zst/plain %.2fx wall, %.2fx per CPU-second (target >= 0.9x); shards identical: %s "
      "(%zu shards)\n",
      best_wall[0], best_cpu[0], best_wall[1], best_cpu[1], best_wall[1] / best_wall[0],
      best_cpu[1] / best_cpu[0], same ? "yes" : "NO", checksums[0].size());
  gmlp::RemoveTree(dir).IgnoreError();
  return same ? 0 : 1;
}
