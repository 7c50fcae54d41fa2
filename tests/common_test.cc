#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checksum.h"
#include "common/field_json.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/process.h"
#include "gtest/gtest.h"
#include "tests/file_test_util.h"

namespace gmlp {
namespace {

TEST(Checksum, KnownCrc32) {
  // The standard CRC-32 check value.
  EXPECT_EQ(Crc32Of("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32Hex(0xCBF43926u), "crc32:cbf43926");
}

TEST(Checksum, IncrementalEqualsWhole) {
  Crc32 c;
  c.Update("1234");
  c.Update("56789");
  EXPECT_EQ(c.value(), Crc32Of("123456789"));
}

TEST(Checksum, AppendingAPiecesCrcEqualsUpdatingWithThePiece) {
  Crc32 c;
  c.Update("1234");
  c.Append(Crc32Of("56789"), 5);
  EXPECT_EQ(c.value(), Crc32Of("123456789"));
  Crc32 empty;
  empty.Append(Crc32Of("123456789"), 9);
  EXPECT_EQ(empty.value(), Crc32Of("123456789"));
}

TEST(FileUtil, AtomicWriteReplacesAndLeavesNoTemporary) {
  const testing::ScopedTempDir tmp("common_test");
  const std::string& dir = tmp.path();
  const std::string path = JoinPath(dir, "f.txt");
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second").ok());
  auto read = ReadFile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "second");
  auto files = ExpandGlobs({JoinPath(dir, "*")});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 1u);
}

TEST(FileUtil, AtomicWriteIntoMissingDirectoryFailsCleanly) {
  const testing::ScopedTempDir tmp("common_test");
  const std::string& dir = tmp.path();
  absl::Status st = WriteFileAtomic(JoinPath(dir, "no/such/dir/f"), "x");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no/such/dir"), std::string::npos);
}

TEST(FileUtil, MissingFileIsNotFoundNamingThePath) {
  auto read = ReadFile("/nonexistent/gmlp/file");
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(absl::IsNotFound(read.status()));
  EXPECT_NE(read.status().message().find("/nonexistent/gmlp/file"), std::string::npos);
}

TEST(FileUtil, GlobThatMatchesNothingIsAnError) {
  auto files = ExpandGlobs({"/nonexistent/*.txt"});
  EXPECT_TRUE(absl::IsNotFound(files.status()));
}

TEST(FileUtil, JoinPath) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "/b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
}

// Bytes after the JSON value are refused like any other damage: nlohmann's parser stops at a
// NUL as if the text ended there, so "{}\0\0garbage" would otherwise read as "{}".
TEST(JsonFile, TrailingBytesAfterTheValueAreAnErrorNamingFileAndOffset) {
  const testing::ScopedTempDir tmp("common_test");
  const std::string& dir = tmp.path();
  const std::string path = JoinPath(dir, "c.json");
  ASSERT_TRUE(WriteFileAtomic(path, std::string("{\"a\": 1}\n\0\0garbage", 18)).ok());
  auto j = ReadJsonFile(path, "fix it");
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(absl::IsDataLoss(j.status()));
  EXPECT_NE(j.status().message().find(path), std::string::npos) << j.status();
  EXPECT_NE(j.status().message().find("byte 9"), std::string::npos) << j.status();
  EXPECT_NE(j.status().message().find("fix it"), std::string::npos) << j.status();

  ASSERT_TRUE(WriteFileAtomic(path, "{\"a\": 1}}}extra").ok());
  EXPECT_TRUE(absl::IsDataLoss(ReadJsonFile(path, "").status()));

  // A number no double holds: nlohmann throws out_of_range (not parse_error) for it, which
  // escaped as an uncaught exception (found by tests/fuzz/json_file_fuzz).
  ASSERT_TRUE(WriteFileAtomic(path, "{\"lr\": 1e99999}").ok());
  auto overflow = ReadJsonFile(path, "fix it");
  ASSERT_FALSE(overflow.ok());
  EXPECT_TRUE(absl::IsDataLoss(overflow.status()));
  EXPECT_NE(overflow.status().message().find(path + ": not valid JSON"), std::string::npos)
      << overflow.status();
  EXPECT_NE(overflow.status().message().find("number overflow"), std::string::npos)
      << overflow.status();

  ASSERT_TRUE(WriteFileAtomic(path, "{\"a\": 1}\n \t\r\n").ok());
  auto ok = ReadJsonFile(path, "");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->at("a"), 1);
  (void)RemoveTree(dir);
}

// The default thread count follows the affinity mask (what taskset or Slurm's binding leave
// this process), not the machine's core count, and splits it among the local ranks.
TEST(Process, DefaultThreadsFollowAffinityAndLocalRanks) {
  ::unsetenv("LOCAL_WORLD_SIZE");
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(all), &all), 0);
  const int cpus = CPU_COUNT(&all);
  EXPECT_EQ(AvailableCpus(), cpus);
  EXPECT_EQ(DefaultThreadCount(), cpus);

  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(AvailableCpus(), 1);
  ASSERT_EQ(::sched_setaffinity(0, sizeof(all), &all), 0);

  ::setenv("LOCAL_WORLD_SIZE", "2", 1);
  EXPECT_EQ(DefaultThreadCount(), std::max(1, cpus / 2));
  ::setenv("LOCAL_WORLD_SIZE", "1000", 1);
  EXPECT_EQ(DefaultThreadCount(), 1);
  ::setenv("LOCAL_WORLD_SIZE", "two", 1);  // not a number: ignored
  EXPECT_EQ(DefaultThreadCount(), cpus);
  ::unsetenv("LOCAL_WORLD_SIZE");
}

}  // namespace
// Every config struct reads its integer, bool and number fields through FieldsFromJson: a value
// must fit the field exactly. nlohmann's get_to truncated 1.5, wrapped 2^63 to a negative step
// count and converted 3e37 to an integer (undefined behaviour; found by
// tests/fuzz/train_config_fuzz). A whole number written with an exponent is an integer.
struct Fields {
  int32_t threads = 1;
  int64_t steps = 1;
  uint64_t seed = 1;
  double lr = 1;
  bool bf16 = false;
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("threads", self.threads, "");
    visit("steps", self.steps, "");
    visit("seed", self.seed, "");
    visit("lr", self.lr, "");
    visit("bf16", self.bf16, "");
  }
};

TEST(FieldJson, ValuesMustFitTheFieldExactly) {
  Fields f;
  ASSERT_TRUE(FieldsFromJson(nlohmann::json::parse(R"({"threads": -2, "steps": 9223372036854775807,
      "seed": 18446744073709551615, "lr": 3, "bf16": true})"),
                             "c.json", &f)
                  .ok());
  EXPECT_EQ(f.threads, -2);
  EXPECT_EQ(f.steps, INT64_MAX);
  EXPECT_EQ(f.seed, UINT64_MAX);
  EXPECT_EQ(f.lr, 3.0);
  EXPECT_TRUE(f.bf16);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"steps": 3e37})",
       "\"steps\" is 3e+37, out of range for an integer (-9223372036854775808"},
      {R"({"steps": 1.5})", "\"steps\" is 1.5; expected an integer"},
      {R"({"steps": 9223372036854775808})",
       "\"steps\" is 9223372036854775808, out of range for an integer"},
      {R"({"threads": 2147483648})",
       "\"threads\" is 2147483648, out of range for an integer (-2147483648 to 2147483647)"},
      {R"({"seed": -1})", "\"seed\" is -1; expected a whole number >= 0"},
      {R"({"bf16": 1})", "\"bf16\" is 1; expected true or false"},
      {R"({"lr": "1e-3"})", "\"lr\" is \"1e-3\"; expected a number"},
      {R"({"steps": true})", "\"steps\" is true; expected an integer"},
  };

  for (const auto& [text, says] : refused) {
    const absl::Status st = FieldsFromJson(nlohmann::json::parse(text), "c.json", &f);
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << text;
    EXPECT_NE(st.message().find("c.json: " + says), std::string::npos) << st;
  }
  // Built in C++ rather than parsed: a positive int64 too large for an int32 field.
  EXPECT_FALSE(FieldsFromJson(nlohmann::json{{"threads", int64_t{1} << 40}}, "c", &f).ok());
  ASSERT_TRUE(FieldsFromJson(nlohmann::json::parse(R"({"steps": 1.28e2})"), "c", &f).ok());
  EXPECT_EQ(f.steps, 128);
}

}  // namespace gmlp
