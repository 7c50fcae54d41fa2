// CorpusReader and its byte sources: each layout (text, WikiExtractor, JSON lines) and compression
// (plain, gzip, xz, zstd, recognised by magic bytes), bounded pieces of huge lines, invalid UTF-8
// in both modes, and the one-line errors for missing, corrupt, unread and malformed files.
#include <sys/resource.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/tokenizer_test_util.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/utf8.h"

namespace gmlp::tokenizer {
namespace {

using testing::GzipCompress;
using testing::MakeTempDir;
using testing::WriteBytes;
using testing::XzCompress;
using testing::ZstdCompress;

struct Piece {
  std::string text;
  bool new_document;
  bool operator==(const Piece& o) const { return text == o.text && new_document == o.new_document; }
};

std::ostream& operator<<(std::ostream& os, const Piece& p) {
  return os << (p.new_document ? "[doc] " : "") << '"' << p.text << '"';
}

absl::StatusOr<std::vector<Piece>> ReadAll(const std::string& path, const CorpusOptions& options,
                                           CorpusStats* stats = nullptr) {
  auto reader = CorpusReader::Open(path, options);
  if (!reader.ok()) return reader.status();
  std::vector<Piece> out;
  std::string text;
  bool new_document = false;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&text, &new_document);
    if (!more.ok()) return more.status();
    if (!*more) break;
    out.push_back({text, new_document});
  }
  if (stats != nullptr) *stats = (*reader)->stats();
  return out;
}

class CorpusReaderTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, absl::string_view bytes) {
    const std::string path = dir_ + "/" + name;
    WriteBytes(path, bytes);
    return path;
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }
  const std::string dir_ = MakeTempDir("corpus_reader_test");
};

constexpr char kPlain[] =
    "First line of doc one.\n"
    "Second line.\r\n"
    "\n"
    "   \n"
    "Doc two.\n"
    "\n"
    "Doc three, no newline at the end";

const std::vector<Piece> kPlainPieces = {{"First line of doc one.", true},
                                         {"Second line.", false},
                                         {"Doc two.", true},
                                         {"Doc three, no newline at the end", true}};

constexpr char kWiki[] =
    "<doc id=\"1\" url=\"?curid=1\" title=\"Alpha\">\n"
    "Alpha\n"
    "\n"
    "Alpha is a letter.\n"
    "It comes first.\n"
    "\n"
    "</doc>\n"
    "<doc id=\"2\" url=\"?curid=2\" title=\"Empty\">\n"
    "Empty\n"
    "\n"
    "\n"
    "</doc>\n"
    "<doc id=\"3\" url=\"?curid=3\" title=\"Beta\">\n"
    "Beta\n"
    "\n"
    "Beta follows.\n"
    "</doc>\n";

const std::vector<Piece> kWikiPieces = {
    {"Alpha is a letter.", true}, {"It comes first.", false}, {"Beta follows.", true}};

TEST_F(CorpusReaderTest, PlainTextBlankLinesSeparateDocuments) {
  CorpusStats stats;
  auto pieces = ReadAll(Write("plain.txt", kPlain), {}, &stats);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  EXPECT_EQ(*pieces, kPlainPieces);
  EXPECT_EQ(stats.lines, 7);
  EXPECT_EQ(stats.documents, 3);
  EXPECT_EQ(stats.bytes, static_cast<int64_t>(sizeof(kPlain) - 1));
  EXPECT_EQ(stats.invalid_utf8_lines, 0);
}

TEST_F(CorpusReaderTest, WikiExtractorDropsTitlesAndEmptyDocuments) {
  CorpusStats stats;
  auto pieces = ReadAll(Write("wiki.txt", kWiki), {}, &stats);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  EXPECT_EQ(*pieces, kWikiPieces);
  EXPECT_EQ(stats.documents, 2);  // the empty article yields nothing
}

TEST_F(CorpusReaderTest, GzipAndXzReadLikePlainText) {
  for (const auto& [text, expected] : {std::make_pair(std::string(kPlain), kPlainPieces),
                                       std::make_pair(std::string(kWiki), kWikiPieces)}) {
    auto gz = ReadAll(Write("a.gz", GzipCompress(text)), {});
    ASSERT_TRUE(gz.ok()) << gz.status();
    EXPECT_EQ(*gz, expected);
    auto xz = ReadAll(Write("a.xz", XzCompress(text)), {});
    ASSERT_TRUE(xz.ok()) << xz.status();
    EXPECT_EQ(*xz, expected);
    // The format comes from the magic bytes, not the name.
    auto named_txt = ReadAll(Write("really_xz.txt", XzCompress(text)), {});
    ASSERT_TRUE(named_txt.ok()) << named_txt.status();
    EXPECT_EQ(*named_txt, expected);
  }
}

TEST_F(CorpusReaderTest, ConcatenatedCompressedStreamsAreOneText) {
  const std::string a = "one\ntwo\n", b = "\nthree\n";
  const std::vector<Piece> expected = {{"one", true}, {"two", false}, {"three", true}};
  auto gz = ReadAll(Write("cat.gz", GzipCompress(a) + GzipCompress(b)), {});
  ASSERT_TRUE(gz.ok()) << gz.status();
  EXPECT_EQ(*gz, expected);
  auto xz = ReadAll(Write("cat.xz", XzCompress(a) + XzCompress(b)), {});
  ASSERT_TRUE(xz.ok()) << xz.status();
  EXPECT_EQ(*xz, expected);
}

TEST_F(CorpusReaderTest, LongLineIsCutAtWhitespaceIntoBoundedPieces) {
  std::string line;
  for (int i = 0; line.size() < 200000; ++i)
    absl::StrAppend(&line, i % 7 == 0 ? "longerword" : "w", i, " ");
  line.pop_back();
  CorpusOptions options;
  options.max_piece_bytes = 4096;
  CorpusStats stats;
  auto pieces = ReadAll(Write("long.txt", "before\n" + line + "\nafter\n"), options, &stats);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ASSERT_GT(pieces->size(), 200000u / 4096);
  EXPECT_EQ(pieces->front(), (Piece{"before", true}));
  EXPECT_EQ(pieces->back(), (Piece{"after", false}));
  std::vector<std::string> middle;
  for (size_t i = 1; i + 1 < pieces->size(); ++i) {
    const Piece& p = (*pieces)[i];
    EXPECT_LE(p.text.size(), 4096u);
    EXPECT_FALSE(p.new_document);
    EXPECT_NE(p.text.front(), ' ');  // cut at whitespace: no word is split
    EXPECT_NE(p.text.back(), ' ');
    middle.push_back(p.text);
  }
  EXPECT_EQ(absl::StrJoin(middle, " "), line);
  EXPECT_EQ(stats.lines, 3);
}

TEST_F(CorpusReaderTest, LongLineWithoutWhitespaceIsCutAtCharacterBoundaries) {
  std::string line;
  while (line.size() < 50000)
    line +=
        "\xC3\xA9\xE2\x82\xAC"
        "a\xF0\x9F\x98\x80";  // é € a 😀
  CorpusOptions options;
  options.max_piece_bytes = 1000;
  auto pieces = ReadAll(Write("nospace.txt", line), options);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  std::string joined;
  for (const Piece& p : *pieces) {
    EXPECT_LE(p.text.size(), 1000u);
    EXPECT_GE(p.text.size(), 997u * (&p != &pieces->back()));
    EXPECT_TRUE(IsValidUtf8(p.text.data(), p.text.size()));
    joined += p.text;
  }
  EXPECT_EQ(joined, line);
}

TEST_F(CorpusReaderTest, LineOfHundredsOfMegabytesStreamsInBoundedMemory) {
  // 256 MiB of text on one line, gzip-compressed in chunks so the fixture itself stays small.
  const std::string path = dir_ + "/huge.gz";
  {
    gzFile gz = gzopen(path.c_str(), "wb1");
    ASSERT_NE(gz, nullptr);
    std::string chunk;
    while (chunk.size() < (1 << 20)) chunk += "lorem ipsum dolor sit amet ";
    chunk.resize(1 << 20);
    chunk.back() = ' ';
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(gzwrite(gz, chunk.data(), chunk.size()), static_cast<int>(chunk.size()));
    gzwrite(gz, "end\nnext line\n", 14);
    gzclose(gz);
  }
  struct rusage before;
  getrusage(RUSAGE_SELF, &before);
  auto reader = CorpusReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string text;
  bool new_document = false;
  int64_t pieces = 0, bytes = 0;
  size_t longest = 0;
  std::string last;
  for (;;) {
    auto more = (*reader)->Next(&text, &new_document);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++pieces;
    bytes += static_cast<int64_t>(text.size());
    longest = std::max(longest, text.size());
    last = text;
  }
  struct rusage after;
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LE(longest, static_cast<size_t>(CorpusOptions().max_piece_bytes));
  EXPECT_GE(pieces, 256);
  EXPECT_EQ(last, "next line");
  EXPECT_EQ((*reader)->stats().lines, 2);
  EXPECT_EQ((*reader)->stats().bytes, 256ll * (1 << 20) + 14);
  // Peak resident memory grew by far less than the line (ru_maxrss is in KiB).
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32 * 1024);
}

TEST_F(CorpusReaderTest, InvalidUtf8LinesAreCountedAndSkippedByDefault) {
  const std::string text = "good one\nbad \xFF byte\nalso bad \xC0\xAF (overlong)\ngood two\n";
  CorpusStats stats;
  auto pieces = ReadAll(Write("bad.txt", text), {}, &stats);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  EXPECT_EQ(*pieces, (std::vector<Piece>{{"good one", true}, {"good two", false}}));
  EXPECT_EQ(stats.invalid_utf8_lines, 2);
}

TEST_F(CorpusReaderTest, InvalidUtf8IsAnErrorNamingFileAndLineWhenStrict) {
  const std::string path = Write("bad.txt", "good one\n\nsecond \xFF\n");
  CorpusOptions options;
  options.strict_utf8 = true;
  auto pieces = ReadAll(path, options);
  ASSERT_FALSE(pieces.ok());
  EXPECT_EQ(pieces.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pieces.status().message().find(path + ":3: invalid UTF-8 at byte 7"),
            absl::string_view::npos)
      << pieces.status();
}

TEST_F(CorpusReaderTest, MissingFileIsNotFoundNamingIt) {
  auto reader = CorpusReader::Open(dir_ + "/nope.txt");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find(dir_ + "/nope.txt"), absl::string_view::npos);
}

TEST_F(CorpusReaderTest, EmptyCorpusIsDetectableFromStats) {
  CorpusStats stats;
  auto pieces =
      ReadAll(Write("empty.txt", "\n  \n<doc id=\"1\">\nTitle only\n</doc>\n"), {}, &stats);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  EXPECT_TRUE(pieces->empty());
  EXPECT_EQ(stats.documents, 0);
  auto none = ReadAll(Write("zero.txt", ""), {}, &stats);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(stats.bytes, 0);
}

TEST_F(CorpusReaderTest, CorruptXzNamesFileAndOffset) {
  std::string text;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&text, "line number ", i, " of the corpus\n");
  std::string xz = XzCompress(text);
  std::string flipped = xz;
  flipped[xz.size() / 2] ^= 0x55;
  const std::string path = Write("flipped.xz", flipped);
  auto pieces = ReadAll(path, {});
  ASSERT_FALSE(pieces.ok());
  EXPECT_EQ(pieces.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(pieces.status().message().find(path + ": corrupt xz data at compressed byte offset "),
            absl::string_view::npos)
      << pieces.status();

  const std::string truncated = Write("truncated.xz", xz.substr(0, xz.size() - 100));
  pieces = ReadAll(truncated, {});
  ASSERT_FALSE(pieces.ok());
  EXPECT_NE(pieces.status().message().find(truncated + ": truncated xz data"),
            absl::string_view::npos)
      << pieces.status();
}

TEST_F(CorpusReaderTest, CorruptGzipNamesFileAndOffset) {
  std::string text;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&text, "line number ", i, " of the corpus\n");
  std::string gz = GzipCompress(text);
  std::string flipped = gz;
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 8; ++i) flipped[i] ^= 0x55;
  const std::string path = Write("flipped.gz", flipped);
  auto pieces = ReadAll(path, {});
  ASSERT_FALSE(pieces.ok());
  EXPECT_EQ(pieces.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(pieces.status().message().find(path + ": corrupt gzip data at compressed byte offset "),
            absl::string_view::npos)
      << pieces.status();

  const std::string truncated = Write("truncated.gz", gz.substr(0, gz.size() / 2));
  pieces = ReadAll(truncated, {});
  ASSERT_FALSE(pieces.ok());
  EXPECT_NE(
      pieces.status().message().find(truncated + ": truncated gzip data at compressed byte offset"),
      absl::string_view::npos)
      << pieces.status();
}

TEST_F(CorpusReaderTest, CompressedNameWithoutMagicIsAnError) {
  const std::string path = Write("plain.xz", "not compressed\n");
  auto reader = CorpusReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find(path + ": corrupt xz data at compressed byte offset 0"),
            absl::string_view::npos)
      << reader.status();
}

// The same documents as blank-line plain text and as JSON lines.
constexpr absl::string_view kPlainDocs =
    "First document, line one.\nLine two of it.\n\nSecond document\r\n\nThird, with caf\xC3\xA9.\n";
constexpr absl::string_view kJsonlDocs =
    "{\"id\": 1, \"text\": \"First document, line one.\\nLine two of it.\", \"meta\": {}}\n"
    "\n"
    "{\"text\": \"Second document\\r\\n\\n\", \"id\": 2}\n"
    "{\"text\": \"\"}\n"
    "{\"text\": \"Third, with caf\\u00e9.\"}\r\n";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_F(CorpusReaderTest, JsonLinesGiveTheSameDocumentsAsPlainText) {
  CorpusStats text_stats, json_stats;
  auto expected = ReadAll(Write("docs.txt", kPlainDocs), {}, &text_stats);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(expected->size(), 4u);
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"docs.jsonl", std::string(kJsonlDocs)},
           {"docs.jsonl.zst", ZstdCompress(kJsonlDocs)},
           {"docs.jsonl.gz", GzipCompress(kJsonlDocs)},
           {"docs.jsonl.xz", XzCompress(kJsonlDocs)},
           {"zstd_named.txt", ZstdCompress(kJsonlDocs)}}) {
    auto got = ReadAll(Write(name, bytes), {}, &json_stats);  // --format=auto
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, *expected) << name;
    EXPECT_EQ(json_stats.documents, text_stats.documents) << name;
    EXPECT_EQ(json_stats.lines, 5) << name;
    EXPECT_EQ(json_stats.bytes, static_cast<int64_t>(kJsonlDocs.size())) << name;
  }
  CorpusOptions jsonl;
  jsonl.format = "jsonl";
  auto got = ReadAll(Write("explicit.json", kJsonlDocs), jsonl);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *expected);
}

TEST_F(CorpusReaderTest, JsonTextIsCutIntoPiecesLikePlainText) {
  std::string line;
  for (int i = 0; i < 300; ++i) absl::StrAppend(&line, "word", i, " ");
  CorpusOptions options;
  options.max_piece_bytes = 100;
  auto expected = ReadAll(Write("long.txt", line + "\n"), options);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_GT(expected->size(), 10u);
  auto got = ReadAll(Write("long.jsonl", "{\"text\": \"" + line + "\"}\n"), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *expected);
}

TEST_F(CorpusReaderTest, TextFieldIsADottedPath) {
  CorpusOptions options;
  options.text_field = "meta.body";
  auto got = ReadAll(Write("nested.jsonl",
                           "{\"meta\": {\"body\": \"one\\ntwo\"}, \"text\": 5}\n"
                           "{\"meta\": {\"body\": \"three\"}}\n"),
                     options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, (std::vector<Piece>{{"one", true}, {"two", false}, {"three", true}}));
}

TEST_F(CorpusReaderTest, FormatAutoReadsTextUnlessTheFirstLineStartsWithABrace) {
  auto text = ReadAll(Write("notes.txt", "\n  \nplain {braces} here\n{\"text\": \"x\"}\n"), {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            (std::vector<Piece>{{"plain {braces} here", true}, {"{\"text\": \"x\"}", false}}));
  // --format=text reads JSON lines as text, when that is what is wanted.
  CorpusOptions as_text;
  as_text.format = "text";
  auto raw = ReadAll(Write("raw.jsonl", "{\"text\": \"x\"}\n"), as_text);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(*raw, (std::vector<Piece>{{"{\"text\": \"x\"}", true}}));
}

TEST_F(CorpusReaderTest, MalformedJsonLinesAreOneLineErrorsNamingFileAndLine) {
  struct Case {
    std::string second_line;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"this is not json", ":2: not a JSON object: syntax error at byte"},
      {"{\"text\": \"unterminated}", ":2: not a JSON object: syntax error"},
      // A number no double holds is the parser's out_of_range, not its parse_error (found by the
      // corpus_reader fuzzer, which aborted on it).
      {"{\"id\": 1e999, \"text\": \"x\"}",
       ":2: not a JSON object: [json.exception.out_of_range.406]"},
      {"[\"text\"]", ":2: not a JSON object but an array"},
      {"{\"id\": 7, \"body\": \"x\"}",
       ":2: no field \"text\" (--text_field); the line's keys: body, id"},
      {"{\"text\": 42}", ":2: field \"text\" is a number, not a string"},
      {"{\"text\": null}", ":2: field \"text\" is null, not a string"},
      {"{\"text\": [\"a\"]}", ":2: field \"text\" is an array, not a string"},
      // The JSON parser stops at a NUL: what follows it is refused, not dropped.
      {std::string("{\"text\": \"x\"}\0\0garbage", 22),
       ":2: bytes after the JSON object (a NUL at byte 13 of the line)"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string path = Write(absl::StrCat("bad", i++, ".jsonl.zst"),
                                   ZstdCompress("{\"text\": \"fine\"}\n" + c.second_line + "\n"));
    auto got = ReadAll(path, {});
    ASSERT_FALSE(got.ok()) << c.second_line;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(got.status()).find(path + c.message), std::string::npos) << got.status();
    EXPECT_EQ(Message(got.status()).find('\n'), std::string::npos);
  }
  CorpusOptions nested;
  nested.text_field = "meta.body";
  const std::string path = Write("flat.jsonl", "{\"meta\": \"flat\"}\n");
  auto got = ReadAll(path, nested);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(Message(got.status()).find(path + ":1: field \"meta\" is a string, not an object"),
            std::string::npos)
      << got.status();
}

TEST_F(CorpusReaderTest, InvalidUtf8JsonLinesFollowStrictUtf8) {
  const std::string path =
      Write("utf8.jsonl", "{\"text\": \"good\"}\n{\"text\": \"bad \xFF\"}\n{\"text\": \"ok\"}\n");
  CorpusStats stats;
  auto got = ReadAll(path, {}, &stats);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, (std::vector<Piece>{{"good", true}, {"ok", true}}));
  EXPECT_EQ(stats.invalid_utf8_lines, 1);
  CorpusOptions strict;
  strict.strict_utf8 = true;
  got = ReadAll(path, strict);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(Message(got.status()).find(path + ":2: invalid UTF-8 at byte 14"), std::string::npos)
      << got.status();
}

TEST_F(CorpusReaderTest, BadFormatFlagsAreRefused) {
  CorpusOptions bad;
  bad.format = "parquet";
  auto r = CorpusReader::Open(Write("x.txt", "x\n"), bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r.status()).find("--format=parquet: must be auto, text or jsonl"),
            std::string::npos);
  bad.format = "auto";
  bad.text_field = "meta..body";
  r = CorpusReader::Open(Write("y.txt", "x\n"), bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r.status()).find("--text_field=meta..body"), std::string::npos);
}

TEST_F(CorpusReaderTest, ZstdIsReadByMagicBytesWhateverTheName) {
  std::string text;
  for (int i = 0; i < 5000; ++i) {
    absl::StrAppend(&text, "line ", i, " of a zstd corpus", i % 7 == 6 ? "\n\n" : "\n");
  }
  auto expected = ReadAll(Write("z.txt", text), {});
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (const std::string name : {"z.zst", "z.txt.zst", "misnamed.txt", "misnamed.gz", "noext"}) {
    auto got = ReadAll(Write(name, ZstdCompress(text)), {});
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, *expected) << name;
  }
  // Concatenated frames (`cat a.zst b.zst`), and a skippable frame before them.
  const size_t half = text.size() / 2;
  const std::string skippable(
      "\x50\x2A\x4D\x18\x04\x00\x00\x00"
      "abcd",
      12);
  auto cat = ReadAll(Write("cat.zst", skippable + ZstdCompress(text.substr(0, half)) +
                                          ZstdCompress(text.substr(half))),
                     {});
  ASSERT_TRUE(cat.ok()) << cat.status();
  EXPECT_EQ(*cat, *expected);
  // gzip and xz under a .txt name are read as what they are, too.
  auto gz = ReadAll(Write("gz_named.txt", GzipCompress(text)), {});
  ASSERT_TRUE(gz.ok()) << gz.status();
  EXPECT_EQ(*gz, *expected);
}

TEST_F(CorpusReaderTest, TruncatedOrCorruptZstdNamesTheFile) {
  std::string text;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&text, "line number ", i, " of the corpus\n");
  const std::string zst = ZstdCompress(text);
  for (size_t keep : {zst.size() - 1, zst.size() / 2, size_t{6}}) {
    const std::string path = Write(absl::StrCat("truncated", keep, ".txt"), zst.substr(0, keep));
    auto got = ReadAll(path, {});
    ASSERT_FALSE(got.ok()) << keep;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(Message(got.status()).find(path + ": truncated zstd data at compressed byte offset "),
              std::string::npos)
        << got.status();
  }
  std::string flipped = zst;
  for (size_t i = zst.size() / 2; i < zst.size() / 2 + 8; ++i) flipped[i] ^= 0x55;
  const std::string path = Write("flipped.zst", flipped);
  auto got = ReadAll(path, {});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(Message(got.status()).find(path + ": corrupt zstd data"), std::string::npos)
      << got.status();
  const std::string plain = Write("plain.zst", "not compressed\n");
  auto r = CorpusReader::Open(plain);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r.status()).find(plain + ": corrupt zst data at compressed byte offset 0"),
            std::string::npos)
      << r.status();
}

TEST_F(CorpusReaderTest, CompressionsGmlpDoesNotReadAreRefusedNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("BZh91AY&SY\x01\x02", 12), "is bzip2 data; decompress it"},
      {std::string("\x04\x22\x4D\x18\x64\x40\xA7", 7), "is LZ4 data"},
      {std::string("PK\x03\x04\x14\x00", 6), "is a zip archive"},
      {std::string("7z\xBC\xAF\x27\x1C\x00\x04", 8), "is a 7-Zip archive"},
      {std::string("PAR1\x15\x04", 6), "is a Parquet file; convert it to JSON lines"},
  };
  int i = 0;
  for (const auto& [bytes, what] : cases) {
    const std::string path = Write(absl::StrCat("corpus", i++, ".txt"), bytes + "more bytes\n");
    auto r = CorpusReader::Open(path);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(r.status()).find(path + ": " + what), std::string::npos) << r.status();
    EXPECT_NE(Message(r.status()).find("gmlp reads plain text, gzip, xz and zstd"),
              std::string::npos);
  }
  // Text that merely starts with such letters is text.
  auto text = ReadAll(Write("bzh.txt", "BZh, PAR1 and LZIP are words here.\n"), {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->size(), 1u);
}

TEST(Utf8Test, AcceptsWellFormedAndRejectsEachIllFormedKind) {
  const std::string good =
      "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80, \xF4\x8F\xBF\xBF";
  EXPECT_TRUE(IsValidUtf8(good.data(), good.size()));
  const std::pair<std::string, size_t> bad[] = {
      {"abc\xFF", 3},              // never valid
      {"ab\xC0\xAF", 2},           // overlong '/'
      {"a\xE0\x80\xAF", 1},        // overlong 3-byte
      {"\xED\xA0\x80", 0},         // surrogate
      {"x\xF4\x90\x80\x80", 1},    // above U+10FFFF
      {"0123456789\xE2\x82", 10},  // truncated at the end
      {"\x80", 0},                 // stray continuation byte
      {"ab\xE2(\xA1", 2},          // bad continuation
  };
  for (const auto& [s, offset] : bad) {
    size_t at = 999;
    EXPECT_FALSE(IsValidUtf8(s.data(), s.size(), &at)) << s;
    EXPECT_EQ(at, offset) << s;
  }
}

}  // namespace
}  // namespace gmlp::tokenizer
