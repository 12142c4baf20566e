// Loaders of untrusted input: safetensors (every malformation is a clear error), UTF-8 decoding,
// the vocabulary, the config loader's messages, and atomic file replacement.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/config_loader.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "io/safetensors.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);  // x86-64 is little-endian, as the format
  return out + json + data;
}

std::string expect_safetensors_error(const std::string& bytes) {
  try {
    SafetensorsReader reader(bytes, "test.safetensors");
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_NE(std::string(e.what()).find("test.safetensors"), std::string::npos);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Safetensors, RoundTripsTensorsAndMetadata) {
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {-1, 0.5f};
  SafetensorsWriter writer;
  writer.add("a", Shape{2, 3}, a);
  writer.add("b.bias", Shape{2}, b);
  writer.set_metadata("config", "{\"x\": 1}");
  const std::string bytes = writer.serialize();
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u);  // data section aligned as the Python library writes it
  SafetensorsReader reader(bytes, "mem");
  float out[6];
  reader.read_into("a", Shape{2, 3}, out);
  EXPECT_EQ(std::memcmp(out, a, sizeof a), 0);
  reader.read_into("b.bias", Shape{2}, out);
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(reader.metadata("config"), "{\"x\": 1}");
  EXPECT_THROW(reader.read_into("a", Shape{3, 2}, out), UserError);
  EXPECT_THROW(reader.read_into("missing", Shape{1}, out), UserError);
  EXPECT_THROW(reader.metadata("vocab"), UserError);
}

// BF16 tensors hold each float rounded as dtype "bfloat16" rounds product inputs (ties to even,
// subnormals to signed zero) and read back widened to float32 exactly.
TEST(Safetensors, Bfloat16TensorsAreRoundedLikeProductInputsAndReadBackWidened) {
  const float values[8] = {1.0f, 1.0f + 0x1.0p-8f, 1.0f + 0x3.0p-8f, -2.5f, 3.14159f, 1e-40f, -1e-40f, -0.0f};
  const float expected[8] = {1.0f, 1.0f, 1.0f + 0x1.0p-6f, -2.5f, 3.140625f, 0.0f, -0.0f, -0.0f};
  SafetensorsWriter writer;
  writer.add_bfloat16("w", Shape{2, 4}, values);
  writer.add("f", Shape{2}, values);
  const std::string bytes = writer.serialize();
  SafetensorsReader reader(bytes, "mem");
  EXPECT_EQ(reader.entries().at("w").end - reader.entries().at("w").begin, 16u);
  EXPECT_TRUE(reader.entries().at("w").bfloat16);
  EXPECT_FALSE(reader.entries().at("f").bfloat16);
  float out[8];
  reader.read_into("w", Shape{2, 4}, out);
  EXPECT_EQ(std::memcmp(out, expected, sizeof out), 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(std::signbit(out[i]), std::signbit(expected[i])) << i;
  reader.read_into("f", Shape{2}, out);
  EXPECT_EQ(out[1], values[1]);
  const std::string data(8, '\0');
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", data))
                .find("needs 4"),
            std::string::npos);
}

TEST(Safetensors, RejectsEveryMalformation) {
  const std::string data(8, '\0');
  EXPECT_NE(expect_safetensors_error("abc").find("truncated"), std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header("{}", "").substr(0, 6)).find("truncated"), std::string::npos);
  std::string past_end = with_header("{}", "");
  past_end[0] = 100;
  EXPECT_NE(expect_safetensors_error(past_end).find("runs past the end"), std::string::npos);
  std::string huge = with_header("{}", "");
  huge[7] = 0x7F;
  EXPECT_NE(expect_safetensors_error(huge).find("implausibly large"), std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header("{not json", "")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header("[1]", "")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", data))
                .find("expected F32 or BF16"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data))
                .find("non-negative"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", data))
                .find("runs past the data"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data))
                .find("needs 12"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data))
                .find("begin after end"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                                                 data))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"__metadata__":{"k":1}})", "")).find("not a string"),
            std::string::npos);
  EXPECT_NE(expect_safetensors_error(with_header(R"({"a":{"dtype":"F32","shape":[2]}})", data)).find("data_offsets"),
            std::string::npos);
}

TEST(Utf8, DecodesAndRejectsWithByteOffsets) {
  std::vector<char32_t> out;
  Utf8Error error;
  ASSERT_TRUE(decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", out, error));
  EXPECT_EQ(out, (std::vector<char32_t>{'a', 0xE9, 0x20AC, 0x1F600}));
  std::string round;
  for (char32_t c : out) append_utf8(c, round);
  EXPECT_EQ(round, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::pair<std::string, std::size_t> bad[] = {{"ab\x80", 2},            // lone continuation
                                                     {"abc\xC3", 3},           // truncated
                                                     {"\xC0\xAF", 0},          // overlong '/'
                                                     {"x\xED\xA0\x80", 1},     // surrogate
                                                     {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
                                                     {"ok\xE2\x28\xA1", 2},    // bad continuation
                                                     {"\xFF", 0}};
  for (const auto& [bytes, offset] : bad) {
    EXPECT_FALSE(decode_utf8(bytes, out, error)) << bytes;
    EXPECT_EQ(error.byte_offset, offset) << bytes;
  }
}

TEST(Vocab, SortedIdsJsonRoundTripAndUnknownCharacters) {
  std::vector<char32_t> text;
  Utf8Error error;
  ASSERT_TRUE(decode_utf8("hello, world\n\xC3\xA9", text, error));
  const Vocab v = Vocab::from_text(text);
  EXPECT_EQ(v.size(), 11);  // \n space , d e h l o r w é
  EXPECT_EQ(v.symbol(0), U'\n');
  EXPECT_EQ(*v.id_of(U'w'), 9);
  const Vocab back = Vocab::from_json(v.to_json(), "x");
  EXPECT_EQ(back, v);
  EXPECT_THROW(Vocab::from_json("[\"ab\"]", "x"), UserError);
  EXPECT_THROW(Vocab::from_json("[\"b\", \"a\"]", "x"), UserError);
  try {
    v.encode({U'h', U'Z'}, "prompt");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'Z' at position 1"), std::string::npos) << e.what();
  }
}

TEST(ConfigLoader, DefaultsOverridesAndNearestKey) {
  const TrainConfig c = parse_train_config(R"({"data_path": "x.txt", "n_layer": 4, "max_iters": 2000.0})", "c.json");
  EXPECT_EQ(c.model.n_layer, 4);
  EXPECT_EQ(c.max_iters, 2000);
  EXPECT_EQ(c.model.n_embd, 384);  // default
  EXPECT_EQ(nearest_config_key("lerning_rate"), "learning_rate");
  EXPECT_EQ(nearest_config_key("nlayer"), "n_layer");
  testing::ScratchDir dir;
  const std::string path = dir.write("c.json", R"({"data_path": "x.txt"})");
  const TrainConfig o =
      load_train_config(path, {{"n_head", "4"}, {"n_embd", "128"}, {"bias", "true"}, {"dropout", "0"}});
  EXPECT_EQ(o.model.n_head, 4);
  EXPECT_TRUE(o.model.bias);
  EXPECT_EQ(o.model.dropout, 0.0);
}

// "dtype": "auto" is a setting of its own, kept as written until a run resolves it; the Dtypes
// parse as themselves, anything else is no setting.
TEST(ConfigLoader, DtypeAutoIsASettingUntilTheRunResolvesIt) {
  const TrainConfig c = parse_train_config(R"({"data_path": "x.txt", "dtype": "auto"})", "c.json");
  EXPECT_EQ(c.dtype, DtypeSetting::automatic);
  EXPECT_EQ(to_json(c)["dtype"], "auto");
  EXPECT_THROW(c.matmul_dtype(), InternalError);
  EXPECT_EQ(parse_dtype_setting("bfloat16"), DtypeSetting::bfloat16);
  EXPECT_EQ(parse_dtype_setting("float32"), DtypeSetting::float32);
  EXPECT_EQ(parse_dtype_setting("Auto"), std::nullopt);
  EXPECT_EQ(fixed_dtype(DtypeSetting::automatic), std::nullopt);
  EXPECT_EQ(parse_train_config(R"({"data_path": "x.txt", "dtype": "bfloat16"})", "c.json").matmul_dtype(),
            Dtype::bfloat16);
}

// Each number's range is declared with its key (in the key's terms: durations in hours), its
// defaults lie inside, and a value outside is refused from a file or a flag, naming the key.
TEST(ConfigLoader, EveryNumericKeyHasARangeItsDefaultIsIn) {
  TrainConfig defaults;
  int ranged = 0;
  for (const ConfigKey& key : config_keys()) {
    if (!key.range) continue;
    ++ranged;
    EXPECT_EQ(range_problem(key, defaults), "") << key.name;
  }
  EXPECT_GE(ranged, 30);
  const auto key = [](const char* name) {
    for (const ConfigKey& k : config_keys())
      if (std::string(k.name) == name) return k;
    throw std::logic_error(name);
  };
  EXPECT_EQ(range_text(key("max_time")), "[0, 8760h]");
  EXPECT_EQ(range_text(key("dropout")), "[0, 1)");
  EXPECT_EQ(range_text(key("val_fraction")), "(0, 1)");
  EXPECT_EQ(range_text(key("data_path")), "");
  TrainConfig c;
  c.max_time = {HUGE_VAL};
  EXPECT_EQ(find_config_problem(c).key, "max_time");
  EXPECT_EQ(find_config_problem(c).message, "expected a duration in [0, 8760h]");
  try {
    parse_train_config("{\"max_time\": \"1e308h\"}", "x.json");
    FAIL() << "an infinite budget";
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_STREQ(e.what(), "x.json: key \"max_time\": expected a duration in [0, 8760h], got string \"1e308h\"");
  }
}

// Every config the project ships loads, with every value in range: a user's first command.
TEST(ConfigLoader, EveryShippedConfigLoadsWithValidValues) {
  const char* root = std::getenv("GPT_SOURCE_DIR");
  const std::filesystem::path configs = std::filesystem::path(root ? root : ".") / "configs";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(configs)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const TrainConfig config = load_train_config(entry.path().string(), {});
    EXPECT_EQ(find_config_problem(config).key, "") << find_config_problem(config).message;
    ++count;
  }
  EXPECT_GE(count, 7);  // quickstart, cpu, 10.7M, llama, 10min, modern, induction_head
}

TEST(ConfigLoader, NumbersTooLargeForADoubleAreAnError) {
  // Regression: found by tools/fuzz.sh config; nlohmann's out_of_range escaped as a crash.
  for (const char* text : {"777777777e77777", "{\"max_iters\": 1e99999}", "[1e400]"}) {
    try {
      parse_train_config(text, "c.json");
      ADD_FAILURE() << text;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: invalid JSON"), std::string::npos) << e.what();
      EXPECT_EQ(e.exit_code(), 2);
    }
  }
}

TEST(AtomicFile, ReplacesWholeAndKeepsTheOldFileOnFailure) {
  testing::ScratchDir dir;
  const std::string path = dir.file("f.bin");
  write_file_atomically(path, "first");
  write_file_atomically(path, "second version");
  EXPECT_EQ(read_whole_file(path), "second version");
  // A folder that does not exist: the write fails with the file's name, nothing is created.
  try {
    write_file_atomically(dir.file("no/such/folder/f.bin"), "x");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/folder/f.bin"), std::string::npos);
    EXPECT_EQ(e.exit_code(), 1);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir.file("")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "stray temporary file";
}

}  // namespace
}  // namespace gpt
