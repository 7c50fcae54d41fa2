// EncoderConfig: JSON round trip, Validate errors, presets.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "model/arch.h"
#include "model/config.h"

namespace gmlp::model {
namespace {

TEST(EncoderConfigTest, DefaultValidates) { EXPECT_TRUE(EncoderConfig().Validate().ok()); }

TEST(EncoderConfigTest, JsonRoundTripKeepsEveryField) {
  EncoderConfig c;
  c.arch = "amlp";
  c.vocab_size = 1234;
  c.max_seq_len = 77;
  c.type_vocab_size = 3;
  c.d_model = 40;
  c.n_layers = 3;
  c.d_ffn = 98;
  c.n_heads = 5;
  c.sgu = "additive";
  c.attn_size = 16;
  c.attn_input = "expanded";
  c.token_mlp_dim = 33;
  c.pre_ln = true;
  c.position = "alibi";
  c.dropout = 0.25;
  c.layer_norm_eps = 1e-6;
  c.init_std = 0.05;
  c.sgu_init_eps = 0.01;
  const nlohmann::json j = c.ToJson();
  auto back = EncoderConfig::FromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), j);
  EXPECT_EQ(back->attn_input, "expanded");
  EXPECT_EQ(back->d_ffn, 98);
  EXPECT_DOUBLE_EQ(back->sgu_init_eps, 0.01);
  EXPECT_TRUE(back->pre_ln);
  EXPECT_EQ(back->position, "alibi");
}

TEST(EncoderConfigTest, MissingKeysTakeDefaults) {
  auto c = EncoderConfig::FromJson(nlohmann::json{{"arch", "mixer"}, {"d_model", 64}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, "mixer");
  EXPECT_EQ(c->d_model, 64);
  EXPECT_EQ(c->d_ffn, EncoderConfig().d_ffn);
}

TEST(EncoderConfigTest, FromJsonRejectsUnknownKeysAndWrongTypes) {
  auto unknown = EncoderConfig::FromJson(nlohmann::json{{"d_modle", 64}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("d_modle"), std::string::npos);

  auto wrong_type = EncoderConfig::FromJson(nlohmann::json{{"d_model", "64"}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("d_model"), std::string::npos);

  auto not_object = EncoderConfig::FromJson(nlohmann::json::array());
  EXPECT_FALSE(not_object.ok());

  auto invalid = EncoderConfig::FromJson(nlohmann::json{{"arch", "lstm"}});
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find("lstm"), std::string::npos);
}

// Each broken config names the offending knob.
TEST(EncoderConfigTest, ValidateNamesTheBadField) {
  struct Case {
    std::string field;
    EncoderConfig config;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& field, auto edit) {
    EncoderConfig c;
    edit(c);
    cases.push_back({field, c});
  };
  add("arch", [](EncoderConfig& c) { c.arch = "rnn"; });
  add("vocab_size", [](EncoderConfig& c) { c.vocab_size = 0; });
  add("max_seq_len", [](EncoderConfig& c) { c.max_seq_len = -1; });
  add("d_model", [](EncoderConfig& c) { c.d_model = 0; });
  add("n_layers", [](EncoderConfig& c) { c.n_layers = 0; });
  add("d_ffn", [](EncoderConfig& c) { c.d_ffn = 767; });  // split needs an even d_ffn
  add("sgu", [](EncoderConfig& c) { c.sgu = "gated"; });
  add("dropout", [](EncoderConfig& c) { c.dropout = 1.0; });
  add("layer_norm_eps", [](EncoderConfig& c) { c.layer_norm_eps = 0.0; });
  add("n_heads", [](EncoderConfig& c) {
    c.arch = "transformer";
    c.n_heads = 3;  // 128 % 3 != 0
  });
  add("attn_size", [](EncoderConfig& c) {
    c.arch = "amlp";
    c.attn_size = 0;
  });
  add("attn_input", [](EncoderConfig& c) {
    c.arch = "amlp";
    c.attn_input = "both";
  });
  add("position", [](EncoderConfig& c) {
    c.arch = "transformer";
    c.position = "rotary";
  });
  add("token_mlp_dim", [](EncoderConfig& c) {
    c.arch = "mixer";
    c.token_mlp_dim = 0;
  });
  for (const Case& cs : cases) {
    const absl::Status s = cs.config.Validate();
    EXPECT_FALSE(s.ok()) << cs.field;
    EXPECT_NE(s.message().find(cs.field), std::string::npos) << s.message();
  }
  // An odd d_ffn is fine for the variants that do not halve Z.
  EncoderConfig odd;
  odd.sgu = "multiplicative";
  odd.d_ffn = 767;
  EXPECT_TRUE(odd.Validate().ok());
}

// Each arch reads only its own enum fields, but every one is saved in config.json: a value that
// no arch accepts is refused whatever the arch, naming the key and the allowed values.
TEST(EncoderConfigTest, EnumFieldsAreCheckedWhateverTheArch) {
  const std::pair<const char*, const char*> cases[] = {
      {"position", "position must be one of alibi|learned, got \"bogus\""},
      {"attn_input", "attn_input must be one of block|expanded, got \"bogus\""},
      {"sgu", "sgu must be one of split|multiplicative|additive|linear, got \"bogus\""}};
  for (const std::string& arch : ArchNames()) {
    for (const auto& [key, says] : cases) {
      auto c = EncoderConfig::FromJson({{"arch", arch}, {key, "bogus"}});
      ASSERT_FALSE(c.ok()) << arch << " " << key;
      EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status();
    }
  }
  auto path = EncoderConfig::FromJson({{"arch", "gmlp"}, {"attn_input", "../../etc/passwd"}});
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("attn_input must be one of block|expanded"),
            std::string::npos)
      << path.status();
}

// Sizes past what LibTorch can allocate (attn_size 2^62 reached it as a negative dimension),
// integers out of int64's range or with a fraction, and rates that are not rates are refused
// naming the key.
TEST(EncoderConfigTest, HugeSizesOverflowAndWildRatesAreRefusedNamingTheKey) {
  const std::pair<nlohmann::json, const char*> cases[] = {
      {{{"arch", "amlp"}, {"attn_size", int64_t{1} << 62}},
       "encoder config: attn_size must be in [1, 1048576] (2^20), got 4611686018427387904"},
      {{{"arch", "gmlp"}, {"n_heads", -(int64_t{1} << 62)}}, "n_heads must be in [1, 1048576]"},
      {{{"d_model", 1 << 20}, {"vocab_size", 1 << 20}},
       "vocab_size x d_model = 1099511627776 elements, more than 2147483648 (2^31)"},
      {{{"max_seq_len", 65536}}, "max_seq_len x max_seq_len = 4294967296 elements"},
      {nlohmann::json::parse(R"({"d_model": 9223372036854775808})"),
       "\"d_model\" is 9223372036854775808, out of range for an integer"},
      {{{"d_model", 1.5}}, "\"d_model\" is 1.5; expected an integer"},
      {{{"d_model", "64"}}, "\"d_model\" is \"64\"; expected an integer"},
      {{{"init_std", 1e300}}, "init_std must be in [0, 1], got 1e+300"},
      {{{"sgu_init_eps", -1.0}}, "sgu_init_eps must be in [0, 1], got -1"},
      {{{"layer_norm_eps", 2.0}}, "layer_norm_eps must be in (0, 1], got 2"}};
  for (const auto& [j, says] : cases) {
    auto c = EncoderConfig::FromJson(j);
    ASSERT_FALSE(c.ok()) << j.dump();
    EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status();
  }
  // A whole number written with an exponent is an integer.
  auto exp = EncoderConfig::FromJson(nlohmann::json::parse(R"({"d_model": 1.28e2})"));
  ASSERT_TRUE(exp.ok()) << exp.status();
  EXPECT_EQ(exp->d_model, 128);
}

TEST(PresetTest, EveryPresetValidatesAndRoundTrips) {
  const auto names = PresetNames();
  ASSERT_GE(names.size(), 12u);
  for (const std::string& name : names) {
    auto c = Preset(name);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status();
    EXPECT_EQ(name.substr(0, name.find('-')), c->arch) << name;
    auto back = EncoderConfig::FromJson(c->ToJson());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->ToJson(), c->ToJson());
  }
}

TEST(PresetTest, PaperShapes) {
  auto g = Preset("gmlp-base");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->d_model, 512);
  EXPECT_EQ(g->d_ffn, 3072);
  EXPECT_EQ(g->n_layers, 48);
  auto a = Preset("amlp-base");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->arch, "amlp");
  EXPECT_EQ(a->attn_size, 64);
  auto t = Preset("transformer-base");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->d_model, 768);
  EXPECT_EQ(t->n_layers, 12);
  EXPECT_EQ(t->n_heads, 12);
  EXPECT_EQ(t->d_ffn, 3072);
}

TEST(PresetTest, UnknownPresetListsKnownOnes) {
  auto c = Preset("gmlp-huge");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("gmlp-tiny"), std::string::npos);
}

}  // namespace
}  // namespace gmlp::model
