// tokenizer_bench: corpus reader and tokenizer throughput on the shared Wikipedia extract, each
// against a reference measured in the same run:
//   - CorpusReader on the decompressed text (MB/s), as a ratio to a bare read()+memchr line scan;
//   - CorpusReader on the .xz file, as a ratio to liblzma decoding alone (ByteSource);
//   - Tokenizer::Encode with 1 and 2 threads, as a ratio to `spm_encode` on the same text and
//     model (the figure `gmlp prepare` must beat by 1.5x with 2 workers).
// Usage: tokenizer_bench [corpus.xz] [encode_megabytes] [model]  (without a model, one with
// vocab 8k is trained on a sample first).
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tokenizer/byte_source.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::tokenizer {
namespace {

double CpuNow() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Die(const absl::Status& st) {
  std::fprintf(stderr, "tokenizer_bench: %s\n", std::string(st.message()).c_str());
  std::exit(1);
}

// Bytes read and seconds taken by a full CorpusReader pass.
std::pair<int64_t, double> ReadAll(const std::string& path) {
  const double t0 = Now();
  auto reader = CorpusReader::Open(path);
  if (!reader.ok()) Die(reader.status());
  std::string text;
  bool new_doc;
  int64_t pieces = 0;
  for (;;) {
    auto more = (*reader)->Next(&text, &new_doc);
    if (!more.ok()) Die(more.status());
    if (!*more) break;
    ++pieces;
  }
  return {(*reader)->stats().bytes, Now() - t0};
}

int Main(int argc, char** argv) {
  const std::string corpus = argc > 1 ? argv[1]
                                      : GMLP_SOURCE_DIR
                                 "/../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz";
  const int64_t encode_mb = argc > 2 ? std::atoll(argv[2]) : 16;
  char tmpl[] = "/tmp/gmlp_tokenizer_bench_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string plain = dir + "/corpus.txt";

  // Decompress once (ByteSource alone: the xz reference), keeping the plain text for the rest.
  double t0 = Now();
  int64_t xz_bytes = 0;
  {
    auto src = ByteSource::Open(corpus);
    if (!src.ok()) Die(src.status());
    std::FILE* f = std::fopen(plain.c_str(), "wb");
    std::vector<char> buf(1 << 20);
    for (;;) {
      auto n = (*src)->Read(buf.data(), buf.size());
      if (!n.ok()) Die(n.status());
      if (*n == 0) break;
      std::fwrite(buf.data(), 1, *n, f);
      xz_bytes += static_cast<int64_t>(*n);
    }
    std::fclose(f);
  }
  const double xz_decode_s = Now() - t0;

  // Reference for plain text: read() + memchr over every line, nothing else.
  t0 = Now();
  int64_t scan_lines = 0, scan_bytes = 0;
  {
    const int fd = ::open(plain.c_str(), O_RDONLY);
    std::vector<char> buf(1 << 20);
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
      scan_bytes += n;
      const char* p = buf.data();
      const char* end = p + n;
      while ((p = static_cast<const char*>(std::memchr(p, '\n', end - p))) != nullptr) {
        ++scan_lines;
        ++p;
      }
    }
    ::close(fd);
  }
  const double scan_s = Now() - t0;
  const auto [plain_bytes, plain_s] = ReadAll(plain);
  const auto [xz_read_bytes, xz_read_s] = ReadAll(corpus);

  std::printf("corpus: %s (%.1f MB decompressed, %lld lines)\n", corpus.c_str(), xz_bytes / 1e6,
              static_cast<long long>(scan_lines));
  std::printf("read()+memchr scan (reference) : %8.1f MB/s\n", scan_bytes / 1e6 / scan_s);
  std::printf("CorpusReader, plain text        : %8.1f MB/s  (%.2fx the bare scan)\n",
              plain_bytes / 1e6 / plain_s, (plain_bytes / plain_s) / (scan_bytes / scan_s));
  std::printf("liblzma decode alone (reference): %8.1f MB/s\n", xz_bytes / 1e6 / xz_decode_s);
  std::printf("CorpusReader, .xz               : %8.1f MB/s  (%.2fx liblzma alone)\n",
              xz_read_bytes / 1e6 / xz_read_s,
              (xz_read_bytes / xz_read_s) / (xz_bytes / xz_decode_s));

  // A vocab-8k model, as the default pipeline trains it (sampled).
  std::string model = argc > 3 ? argv[3] : "";
  if (model.empty()) {
    TrainOptions train;
    train.inputs = {plain};
    train.model_prefix = dir + "/spm";
    train.vocab_size = 8192;
    // A sample keeps the bench short; training on all of it takes minutes on 2 cores.
    train.input_sentence_size = 40000;
    train.num_threads = 2;
    TrainStats stats;
    const absl::Status st = Train(train, &stats);
    if (!st.ok()) Die(st);
    std::printf("train unigram 8k on %lld sampled of %lld sentences, 2 threads: %.1f s\n",
                static_cast<long long>(stats.sampled_sentences),
                static_cast<long long>(stats.sentences), stats.seconds);
    model = train.model_prefix + ".model";
  }
  auto tok = Tokenizer::Load(model);
  if (!tok.ok()) Die(tok.status());

  // The first encode_mb MB of document text (as prepare sees it), one line per piece.
  std::vector<std::string> lines;
  int64_t text_bytes = 0;
  {
    auto reader = CorpusReader::Open(plain);
    if (!reader.ok()) Die(reader.status());
    std::string text;
    bool new_doc;
    while (text_bytes < encode_mb * 1000000) {
      auto more = (*reader)->Next(&text, &new_doc);
      if (!more.ok()) Die(more.status());
      if (!*more) break;
      text_bytes += static_cast<int64_t>(text.size()) + 1;
      lines.push_back(text);
    }
  }
  const std::string lines_path = dir + "/lines.txt";
  {
    std::FILE* f = std::fopen(lines_path.c_str(), "wb");
    for (const std::string& l : lines) {
      std::fwrite(l.data(), 1, l.size(), f);
      std::fputc('\n', f);
    }
    std::fclose(f);
  }

  // Encodes every line with `threads` threads; returns (ids, wall s, CPU s) and a hash of each
  // line's ids (to check that the cached and uncached paths agree).
  auto encode_with = [&](int threads, bool cached, std::vector<uint64_t>* hashes) {
    hashes->assign(lines.size(), 0);
    std::atomic<size_t> next{0};
    std::atomic<int64_t> ids{0};
    const double start = Now();
    const double cpu_start = CpuNow();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        std::vector<int32_t> out;
        int64_t local = 0;
        for (size_t i; (i = next.fetch_add(64)) < lines.size();) {
          for (size_t k = i; k < std::min(lines.size(), i + 64); ++k) {
            out.clear();
            const absl::Status s =
                cached ? (*tok)->Encode(lines[k], &out) : (*tok)->EncodeUncached(lines[k], &out);
            if (!s.ok()) Die(s);
            uint64_t h = 1469598103934665603ull;
            for (int32_t id : out) h = (h ^ static_cast<uint32_t>(id)) * 1099511628211ull;
            (*hashes)[k] = h;
            local += static_cast<int64_t>(out.size());
          }
        }
        ids += local;
      });
    }
    for (auto& th : pool) th.join();
    return std::make_tuple(ids.load(), Now() - start, CpuNow() - cpu_start);
  };
  std::vector<uint64_t> h_direct, h_cached1, h_cached2;
  const auto [ids0, enc0_s, cpu0_s] = encode_with(1, false, &h_direct);
  const auto [ids1, enc1_s, cpu1_s] = encode_with(1, true, &h_cached1);
  const auto [ids2, enc2_s, cpu2_s] = encode_with(2, true, &h_cached2);

  double spm_s = 0, spm_cpu_s = 0;
  bool spm_ok = ::access("/usr/bin/spm_encode", X_OK) == 0;
  if (spm_ok) {
    const std::string cmd =
        absl::StrCat("/usr/bin/spm_encode --model=", model, " --output_format=id < ", lines_path,
                     " > ", dir, "/spm_ids.txt");
    struct rusage before, after;
    ::getrusage(RUSAGE_CHILDREN, &before);
    t0 = Now();
    spm_ok = std::system(cmd.c_str()) == 0;
    spm_s = Now() - t0;
    ::getrusage(RUSAGE_CHILDREN, &after);
    auto secs = [](const timeval& tv) { return tv.tv_sec + 1e-6 * tv.tv_usec; };
    spm_cpu_s =
        secs(after.ru_utime) + secs(after.ru_stime) - secs(before.ru_utime) - secs(before.ru_stime);
  }
  const double mb = text_bytes / 1e6;
  std::printf("encode %.1f MB of document text (%lld ids), vocab %d:\n", mb,
              static_cast<long long>(ids0), (*tok)->vocab_size());
  auto row = [&](const char* name, double wall, double cpu) {
    std::printf("  %-34s %6.2f MB/s  %.3f CPU s/MB", name, mb / wall, cpu / mb);
    if (spm_ok) std::printf("  (%.2fx spm_encode wall, %.2fx CPU)", spm_s / wall, spm_cpu_s / cpu);
    std::printf("\n");
  };
  if (spm_ok) {
    std::printf("  %-34s %6.2f MB/s  %.3f CPU s/MB\n", "spm_encode (reference, 1 thread)",
                mb / spm_s, spm_cpu_s / mb);
  }
  row("EncodeUncached (shim), 1 thread", enc0_s, cpu0_s);
  row("Encode (word cache), 1 thread", enc1_s, cpu1_s);
  row("Encode (word cache), 2 threads", enc2_s, cpu2_s);
  const bool same = h_direct == h_cached1 && h_direct == h_cached2 && ids0 == ids1 && ids0 == ids2;
  std::printf("  cached ids identical to SentencePiece's on every line: %s\n", same ? "yes" : "NO");
  int shown = 0;
  for (size_t k = 0; k < lines.size() && shown < 3; ++k) {
    if (h_direct[k] == h_cached1[k] && h_direct[k] == h_cached2[k]) continue;
    ++shown;
    std::vector<int32_t> a, b;
    (void)(*tok)->EncodeUncached(lines[k], &a);
    (void)(*tok)->Encode(lines[k], &b);
    size_t first = 0;
    while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
    const size_t from = first > 6 ? first - 6 : 0;
    std::string pa, pb;
    for (size_t q = from; q < std::min(a.size(), first + 8); ++q)
      absl::StrAppend(&pa, (*tok)->IdToPiece(a[q]), "|");
    for (size_t q = from; q < std::min(b.size(), first + 8); ++q)
      absl::StrAppend(&pb, (*tok)->IdToPiece(b[q]), "|");
    std::printf("  line %zu differs (1-thread %s): %s\n    spm:    %s\n    cached: %s\n", k,
                h_direct[k] == h_cached1[k] ? "same" : "differs", lines[k].substr(0, 300).c_str(),
                pa.substr(0, 600).c_str(), pb.substr(0, 600).c_str());
  }
  // CPU s/MB equal for 1 and 2 threads means no contention inside the encoder; a wall-clock
  // shortfall is then other processes taking the cores.

  std::system(absl::StrCat("rm -rf ", dir).c_str());
  return 0;
}

}  // namespace
}  // namespace gmlp::tokenizer

int main(int argc, char** argv) { return gmlp::tokenizer::Main(argc, argv); }
