// The gpt binary as a user meets it: exit codes and messages for bad configs and data, and a
// tiny train -> eval round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_runner.h"
#include "io/safetensors.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Cli : public ::testing::Test {
 protected:
  ScratchDir dir;
  std::string corpus = dir.write("corpus.txt", generated_corpus(8000));
  std::string config(const std::string& json) { return dir.write("config.json", json); }
  // The corpus's first characters: a prompt in its alphabet, shorter than the tiny block_size.
  std::string corpus_prompt() const {
    const std::string text = read_text(corpus);
    std::string prompt;
    for (char c : text.substr(0, 4))
      if (c != '\'' && c != '\n') prompt.push_back(c);
    return prompt;
  }
  // A valid tiny config with `extra` spliced in.
  std::string tiny(const std::string& extra = "") {
    return config("{\"data_path\": \"" + corpus + "\", \"out_dir\": \"" + dir.file("out") +
                  "\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 8, \"batch_size\": 4,"
                  " \"max_iters\": 30, \"eval_interval\": 10, \"eval_iters\": 2, \"log_interval\": 10,"
                  " \"warmup_iters\": 2, \"lr_decay_iters\": 30" +
                  extra + "}");
  }
  void expect_error(const std::string& args, int code, std::initializer_list<std::string> fragments,
                    const std::string& environment = "") {
    const CommandResult r = run_gpt(args, false, environment);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.output;
    for (const std::string& f : fragments)
      EXPECT_NE(r.output.find(f), std::string::npos) << "missing \"" << f << "\" in:\n" << r.output;
  }
};

TEST_F(Cli, VersionHelpAndUsageErrors) {
  EXPECT_EQ(run_gpt("--version").exit_code, 0);
  EXPECT_NE(run_gpt("--version").output.find("gpt "), std::string::npos);
  EXPECT_EQ(run_gpt("--help").exit_code, 0);
  expect_error("", 2, {"subcommand"});
  expect_error("frobnicate", 2, {});
  expect_error("train --no_such_flag 3", 2, {"no_such_flag"});
  expect_error("train --config " + dir.file("missing.json"), 2, {"missing.json"});
}

TEST_F(Cli, InvalidJsonNamesLineAndColumn) {
  const std::string path = config("{\n  \"n_layer\": 4,\n  \"n_head\": 4\n  \"n_embd\": 128\n}");
  expect_error("train --config " + path, 2, {path + ":4:10", "invalid JSON", "expected '}'"});
}

TEST_F(Cli, UnknownKeySuggestsTheNearestName) {
  expect_error("train --config " + tiny(", \"n_layers\": 4"), 2,
               {"unknown key \"n_layers\"", "did you mean \"n_layer\""});
  expect_error("train --config " + tiny(", \"learnig_rate\": 1e-3"), 2, {"did you mean \"learning_rate\""});
}

TEST_F(Cli, WrongTypesAndRangesNameFileAndKey) {
  expect_error("train --config " + tiny(", \"bias\": \"yes\""), 2,
               {"config.json", "\"bias\"", "expected true or false"});
  expect_error("train --config " + tiny(", \"dropout\": 1.5"), 2, {"config.json", "\"dropout\"", "[0, 1)"});
  expect_error("train --config " + tiny(", \"batch_size\": 0"), 2,
               {"config.json: key \"batch_size\": expected an integer in [1, 1048576], got integer 0"});
  // Every number has a range, in the key's terms; the error names where the value came from.
  expect_error("train --config " + tiny() + " --max_iters 0 --n_layer 5000", 2,
               {"command line: --n_layer: key \"n_layer\": expected an integer in [1, 1000], got \"5000\""});
  expect_error("train --config " + tiny(", \"seed\": 18446744073709551615"), 2,
               {"key \"seed\": expected an integer in [0, 9007199254740991]"});
  expect_error("train --config " + tiny(", \"learning_rate\": 1e31"), 2,
               {"key \"learning_rate\": expected a number in (0, 1e+30], got number 1e+31"});
  expect_error("train --config " + tiny(", \"val_fraction\": 1"), 2, {"expected a number in (0, 1)"});
  expect_error("train --config " + tiny(", \"n_embd\": 17"), 2, {"\"n_head\"", "divide n_embd"});
  expect_error("train --config " + tiny(", \"max_iters\": 2.5"), 2, {"\"max_iters\"", "expected an integer"});
  expect_error("train --config " + tiny(", \"init_from\": \"gpt2\""), 2, {"\"init_from\"", "scratch"});
  expect_error("train --config " + tiny() + " --max_iters abc", 2, {"--max_iters", "expected an integer"});
  expect_error("train --config " + tiny() + " --dropout -0.1", 2, {"command line: --dropout", "[0, 1)"});
  expect_error("train --config " + config("{\"n_layer\": 2}"), 2, {"\"data_path\"", "required"});
  expect_error("train --config " + config("[1, 2]"), 2, {"expected a JSON object"});
}

TEST_F(Cli, BadTextFilesAreReportedBeforeTraining) {
  const std::string invalid = dir.write("invalid.txt", std::string("hello\xC3\x28 world", 13));
  expect_error("train --config " + tiny() + " --data_path " + invalid, 2,
               {"invalid.txt", "invalid UTF-8 at byte offset 5"});
  const std::string empty = dir.write("empty.txt", "");
  expect_error("train --config " + tiny() + " --data_path " + empty, 2, {"empty.txt", "empty"});
  // A folder is joined from its files: the invalid one is named.
  expect_error("train --config " + tiny() + " --data_path " + dir.file(""), 2,
               {"invalid.txt", "invalid UTF-8", "skip_invalid_files"});
  expect_error("train --config " + tiny() + " --data_path " + dir.file("nope.txt"), 2,
               {"data_path", "nope.txt", "does not exist"});
  const std::string short_text = dir.write("short.txt", "The king and the queen.\n");
  expect_error("train --config " + tiny() + " --data_path " + short_text, 2, {"val split", "smaller block_size"});
}

// With ema_decay the closing line says the losses are the average's: the resume point's weights
// were never evaluated.
TEST_F(Cli, TrainWithAnAverageSaysWhatItsLossesMeasured) {
  const CommandResult plain = run_gpt("train --config " + tiny() + " --max_iters 4 --eval_interval 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("average"), std::string::npos) << plain.output;
  const CommandResult averaged =
      run_gpt("train --config " + tiny() + " --max_iters 4 --eval_interval 2 --ema_decay 0.9");
  ASSERT_EQ(averaged.exit_code, 0) << averaged.output;
  EXPECT_NE(averaged.output.find("evaluating and saving the weights' average (ema_decay 0.9)"), std::string::npos)
      << averaged.output;
  EXPECT_NE(averaged.output.find(") of the weights' average: "), std::string::npos) << averaged.output;
  EXPECT_NE(averaged.output.find("last iteration 4 (its average's val loss"), std::string::npos) << averaged.output;
}

TEST_F(Cli, TrainThenEvalRoundTrip) {
  const CommandResult train = run_gpt("train --config " + tiny());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("step 30: train loss"), std::string::npos) << train.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/model.safetensors")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/metrics.jsonl")));
  const auto written = nlohmann::json::parse(std::ifstream(dir.file("out/config.json")));
  EXPECT_EQ(written["max_iters"], 30);
  EXPECT_EQ(written["learning_rate"], 1e-3);  // a default, written out

  const CommandResult a = run_gpt("eval --out_dir " + dir.file("out") + " --data " + corpus + " --json", true);
  const CommandResult b =
      run_gpt("eval --checkpoint " + dir.file("out/model.safetensors") + " --data " + corpus + " --json", true);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  const auto result = nlohmann::json::parse(a.output);
  EXPECT_GT(result["loss"].get<double>(), 0.0);
  const auto n = static_cast<int64_t>(generated_corpus(8000).size());  // ASCII: bytes = characters
  EXPECT_EQ(result["tokens"].get<int64_t>(), (n - 1) / 8 * 8);         // every full window of block_size 8

  const std::string foreign = dir.write("foreign.txt", "The king§ and queen");
  expect_error("eval --out_dir " + dir.file("out") + " --data " + foreign, 2,
               {"'§' (U+00A7)", "position 8", "vocabulary"});
  expect_error("eval --out_dir " + dir.file("nowhere") + " --data " + corpus, 2, {"no checkpoint"});
}

// GPT_MAX_ISA: --version, the training log and gpt bench --json name the capped kernels and the
// cap; an unknown value is refused before any subcommand, --version included.
TEST_F(Cli, MaxIsaNamesTheCappedKernelsAndAnUnknownValueIsRefused) {
  for (const std::string& args : {std::string("--version"), "train --config " + tiny()})
    expect_error(args, 2, {"GPT_MAX_ISA=bogus", "portable, avx2, avx512, avx512_bf16, amx, neon"}, "GPT_MAX_ISA=bogus");
  const CommandResult portable = run_gpt("--version", false, "GPT_MAX_ISA=portable");
  EXPECT_EQ(portable.exit_code, 0);
  EXPECT_NE(
      portable.output.find("(kernels: float32 portable, bfloat16 portable-bf16, rows baseline; GPT_MAX_ISA=portable)"),
      std::string::npos)
      << portable.output;
  if (!cpu_features().avx2 || !cpu_features().fma) GTEST_SKIP() << "this CPU has no AVX2";
  const CommandResult avx2 = run_gpt("--version", false, "GPT_MAX_ISA=AVX2");
  EXPECT_NE(avx2.output.find("(kernels: float32 avx2-fma, bfloat16 avx2-fma-bf16, rows avx2; GPT_MAX_ISA=avx2)"),
            std::string::npos)
      << avx2.output;
  const CommandResult bench =
      run_gpt("bench --config " + tiny() + " --iters 1 --warmup 0 --peak_gflops 1 --json", true, "GPT_MAX_ISA=avx2");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  const auto result = nlohmann::json::parse(bench.output);
  EXPECT_EQ(result["kernel"], "avx2-fma");
  EXPECT_EQ(result["max_isa"], "avx2");
}

// The cap changes which kernels run, never the bits: the same losses and checkpoint uncapped, under
// avx2 and portable; float32 with dropout (whose masks have vector paths of their own), and bfloat16
// in the sequential arithmetic ("auto" picks AMX's tiles by the capped CPU, other bits).
TEST_F(Cli, MaxIsaChangesTheKernelsNeverTheBits) {
  const std::string out = dir.file("out");
  for (const std::string dtype : {"float32", "bfloat16 --bf16_arithmetic sequential"}) {
    std::optional<LoggedRun> uncapped;
    std::string uncapped_weights;
    for (const std::string cap : {"", "avx2", "portable"}) {
      std::filesystem::remove_all(out);
      const CommandResult train = run_gpt("train --config " + tiny() + " --max_iters 10 --dropout 0.1 --dtype " + dtype,
                                          false, "GPT_MAX_ISA=" + cap);
      ASSERT_EQ(train.exit_code, 0) << train.output;
      if (!cap.empty()) {
        EXPECT_NE(train.output.find("; GPT_MAX_ISA=" + cap + ")"), std::string::npos) << train.output;
      }
      const LoggedRun run = read_metrics(out);
      const std::string weights = read_text(out + "/model.safetensors");
      ASSERT_FALSE(run.train.empty());
      if (!uncapped) {
        uncapped = run;
        uncapped_weights = weights;
        continue;
      }
      EXPECT_EQ(run.train, uncapped->train) << dtype << ", GPT_MAX_ISA=" << cap;
      EXPECT_EQ(run.val, uncapped->val) << dtype << ", GPT_MAX_ISA=" << cap;
      EXPECT_TRUE(weights == uncapped_weights) << dtype << ", GPT_MAX_ISA=" << cap;
    }
  }
}

// dtype bfloat16 from the command line: logged, recorded in the checkpoint, used by sample and eval
// unless --dtype says otherwise (which changes the numbers), and rejected when misspelt.
TEST_F(Cli, Bfloat16TrainsAndTheCheckpointKeepsItsDtype) {
  const CommandResult train = run_gpt("train --config " + tiny() + " --dtype bfloat16");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("matrix products: bfloat16 inputs, float32 sums"), std::string::npos) << train.output;
  const std::string out = "--out_dir " + dir.file("out");
  const CommandResult logged = run_gpt("sample " + out + " --max_new_tokens 5");
  EXPECT_NE(logged.output.find("bfloat16 inputs"), std::string::npos) << logged.output;
  const std::string eval = "eval " + out + " --data " + corpus + " --json";
  const CommandResult own = run_gpt(eval, true), bf16 = run_gpt(eval + " --dtype bfloat16", true);
  const CommandResult f32 = run_gpt(eval + " --dtype float32", true);
  ASSERT_EQ(own.exit_code, 0) << own.output;
  EXPECT_EQ(own.output, bf16.output);
  EXPECT_NE(own.output, f32.output);
  expect_error("train --config " + tiny() + " --dtype float16", 2,
               {"dtype", "\"float32\", \"bfloat16\" or \"auto\", got \"float16\""});
  expect_error("sample " + out + " --dtype half", 2, {"--dtype must be \"float32\", \"bfloat16\" or \"auto\""});
  expect_error("train --config " + tiny() + " --dtype bfloat16 --bf16_arithmetic fast", 2,
               {"bf16_arithmetic", "\"auto\", \"sequential\" or \"tiles\""});
}

// dtype "auto" under GPT_MAX_ISA=avx2: no native bfloat16 products, so float32, logged with the
// reason and recorded as what ran (the checkpoints, config.json, gpt bench --json); eval's --dtype
// auto follows the same rule.
TEST_F(Cli, DtypeAutoIsFloat32UnderAnAvx2CapAndSaysWhy) {
  const std::string cap = "GPT_MAX_ISA=avx2";
  const CommandResult train = run_gpt("train --config " + tiny() + " --dtype auto", false, cap);
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("dtype auto: float32 (no native bfloat16 products under GPT_MAX_ISA=avx2)"),
            std::string::npos)
      << train.output;
  EXPECT_NE(train.output.find("matrix products: float32"), std::string::npos) << train.output;
  for (const char* file : {"model.safetensors", "resume.safetensors"})
    EXPECT_EQ(SafetensorsReader::open(dir.file("out/") + file).metadata("dtype"), "float32") << file;
  EXPECT_EQ(nlohmann::json::parse(read_text(dir.file("out/config.json")))["dtype"], "float32");

  const std::string eval = "eval --out_dir " + dir.file("out") + " --data " + corpus + " --json";
  const CommandResult automatic = run_gpt(eval + " --dtype auto", true, cap);
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  EXPECT_EQ(automatic.output, run_gpt(eval + " --dtype float32", true, cap).output);
  EXPECT_NE(automatic.output, run_gpt(eval + " --dtype bfloat16", true, cap).output);

  const CommandResult bench =
      run_gpt("bench --config " + tiny() + " --dtype auto --iters 1 --warmup 0 --peak_gflops 1 --json", true, cap);
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_EQ(nlohmann::json::parse(bench.output)["dtype"], "float32");
}

// Uncapped, on a CPU that multiplies bfloat16 natively (AVX512_BF16 faster than its FMAs, or AMX),
// dtype "auto" is bfloat16; resumed under a cap that leaves no native products, the run continues
// in float32, says so, and its checkpoint records float32.
TEST_F(Cli, DtypeAutoIsBfloat16WhereTheCpuMultipliesItNatively) {
  if (!runs_amx_tiles(cpu_features()) && !vdpbf16ps_outruns_fmas())
    GTEST_SKIP() << "this CPU does not multiply bfloat16 natively";
  const CommandResult train = run_gpt("train --config " + tiny() + " --dtype auto --max_iters 10");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("dtype auto: bfloat16 (this CPU multiplies bfloat16 natively: "), std::string::npos)
      << train.output;
  EXPECT_EQ(SafetensorsReader::open(dir.file("out/resume.safetensors")).metadata("dtype"), "bfloat16");
  const std::string eval = "eval --out_dir " + dir.file("out") + " --data " + corpus + " --json";
  EXPECT_EQ(run_gpt(eval + " --dtype auto", true).output, run_gpt(eval + " --dtype bfloat16", true).output);

  const CommandResult resumed = run_gpt("train --config " + tiny() + " --dtype auto --init_from resume --max_iters 20",
                                        false, "GPT_MAX_ISA=avx2");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("was trained with bfloat16 matrix products; the run continues with float32 ones "
                                "(dtype auto on this machine)"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(SafetensorsReader::open(dir.file("out/resume.safetensors")).metadata("dtype"), "float32");

  // A bfloat16 run of the other arithmetic (as if trained on another machine), resumed under
  // "auto", takes this machine's fastest instead of keeping the recorded one.
  const std::string fastest = bf16_arithmetic_name(fastest_bf16_arithmetic());
  const std::string other = fastest == "tiles" ? "sequential" : "tiles";
  ASSERT_EQ(
      run_gpt("train --config " + tiny() + " --dtype bfloat16 --max_iters 4 --bf16_arithmetic " + other).exit_code, 0);
  const CommandResult switched = run_gpt("train --config " + tiny() + " --dtype auto --init_from resume --max_iters 8");
  ASSERT_EQ(switched.exit_code, 0) << switched.output;
  EXPECT_NE(switched.output.find("dtype auto: resuming with the \"" + fastest + "\" bfloat16 arithmetic"),
            std::string::npos)
      << switched.output;
  EXPECT_EQ(SafetensorsReader::open(dir.file("out/resume.safetensors")).metadata("bf16_arithmetic"), fastest);
}

// The export holds the Linear weights in BF16 and samples, with the bfloat16 products it
// records, exactly as the float32 checkpoint does with --dtype bfloat16.
TEST_F(Cli, ExportWritesBfloat16LinearsThatSampleAsTheCheckpointDoesInBfloat16) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const std::string out = dir.file("out"), exported = dir.file("shared/model-small.safetensors");
  std::filesystem::create_directories(dir.file("shared"));
  const CommandResult r = run_gpt("export --out_dir " + out + " --out " + exported);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gpt sample --checkpoint " + exported), std::string::npos) << r.output;
  const SafetensorsReader file = SafetensorsReader::open(exported);
  EXPECT_EQ(file.metadata("dtype"), "bfloat16");
  EXPECT_FALSE(file.has_metadata("train_state"));
  for (const auto& [name, entry] : file.entries()) {
    const bool linear =
        entry.shape.size() == 2 && name.find("wte") == std::string::npos && name.find("wpe") == std::string::npos;
    EXPECT_EQ(entry.bfloat16, linear) << name;
  }
  const std::string sample = " --prompt The --max_new_tokens 60 --seed 3 --quiet";
  const CommandResult original = run_gpt("sample --out_dir " + out + " --dtype bfloat16" + sample);
  ASSERT_EQ(original.exit_code, 0) << original.output;
  EXPECT_EQ(run_gpt("sample --checkpoint " + exported + sample).output, original.output);
  // Losses show what samples of a tiny model may not: the dtype matters, and the file gives its bits.
  const std::string eval = " --data " + corpus + " --json";
  const CommandResult bf16_loss = run_gpt("eval --out_dir " + out + " --dtype bfloat16" + eval, true);
  ASSERT_EQ(bf16_loss.exit_code, 0) << bf16_loss.output;
  EXPECT_EQ(run_gpt("eval --checkpoint " + exported + eval, true).output, bf16_loss.output);
  EXPECT_NE(run_gpt("eval --out_dir " + out + " --dtype float32" + eval, true).output, bf16_loss.output);
  // The default file name, beside the checkpoint; float32 keeps the weights' bits.
  ASSERT_EQ(run_gpt("export --out_dir " + out + " --dtype float32 --quiet").exit_code, 0);
  EXPECT_EQ(run_gpt("sample --checkpoint " + out + "/model-float32.safetensors" + sample + " --dtype bfloat16").output,
            original.output);
  expect_error("export --out_dir " + out + " --dtype float16", 2, {"--dtype must be \"float32\" or \"bfloat16\""});
  expect_error("export --out_dir " + out + " --out " + out + "/model.safetensors", 2, {"is the checkpoint"});
  expect_error("export --out_dir " + dir.file("none"), 2, {"no checkpoint"});
}

// --format gguf writes a GGUF file (tests/test_gguf.cpp checks its contents, tools/check_gguf.sh runs
// it in llama.cpp), or refuses a model llama.cpp cannot run with exit code 2 and no file; sample
// --logprobs writes what check_gguf.sh compares: a row of log-probabilities per position.
TEST_F(Cli, ExportGgufAndSampleLogprobs) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const std::string out = dir.file("out"), gguf = dir.file("model.gguf");
  const CommandResult r = run_gpt("export --out_dir " + out + " --format gguf --tensor_type q8_0 --out " + gguf);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("llama.cpp architecture gpt2, Q8_0 weights"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(gguf).substr(0, 4), "GGUF");
  ASSERT_EQ(run_gpt("export --out_dir " + out + " --format gguf --quiet").exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(out + "/model-f32.gguf"));
  expect_error("export --out_dir " + out + " --format gguf --tensor_type Q4_0", 2, {"--tensor_type must be F32"});
  expect_error("export --out_dir " + out + " --format gguf --dtype float32", 2, {"--dtype is for"});
  expect_error("export --out_dir " + out + " --format onnx", 2, {"--format must be"});
  expect_error("export --out_dir " + out + " --tensor_type F16", 2, {"--tensor_type is for --format gguf"});

  const std::string json = dir.file("logprobs.json"), prompt = corpus_prompt();
  const CommandResult sampled = run_gpt("sample --out_dir " + out + " --prompt '" + prompt +
                                        "' --temperature 0 --max_new_tokens 5 --quiet --logprobs " + json);
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  const nlohmann::json doc = nlohmann::json::parse(read_text(json));
  const std::size_t n = doc["prompt_tokens"].get<std::size_t>(), V = doc["vocab_size"].get<std::size_t>();
  EXPECT_EQ(n, prompt.size());
  ASSERT_EQ(doc["tokens"].size(), n + 5);
  ASSERT_EQ(doc["logprobs"].size(), n + 4);
  for (std::size_t i = 0; i + 1 < doc["tokens"].size(); ++i) {
    const std::vector<double> row = doc["logprobs"][i].get<std::vector<double>>();
    ASSERT_EQ(row.size(), V);
    double total = 0;
    for (double lp : row) total += std::exp(lp);
    EXPECT_NEAR(total, 1.0, 1e-6) << i;
    if (i + 1 >= n) {  // a generated token: greedy, the row's argmax
      const auto best = std::max_element(row.begin(), row.end()) - row.begin();
      EXPECT_EQ(doc["tokens"][i + 1].get<int64_t>(), best) << i;
    }
  }
  expect_error("sample --out_dir " + out + " --num_samples 2 --logprobs " + json, 2, {"--logprobs needs"});

  // A model llama.cpp cannot run: refused, the keys named, nothing written.
  const std::string refused_dir = dir.file("refused");
  ASSERT_EQ(run_gpt("train --config " + tiny() + " --out_dir " + refused_dir +
                    " --pos_encoding rope --norm rmsnorm --mlp relu2 --logit_softcap 30 --max_iters 1")
                .exit_code,
            0);
  expect_error("export --out_dir " + refused_dir + " --format gguf --out " + dir.file("refused.gguf"), 2,
               {"cannot be exported to GGUF", "logit_softcap", "mlp \"relu2\""});
  EXPECT_FALSE(std::filesystem::exists(dir.file("refused.gguf")));
}

// The export records the bfloat16 arithmetic the checkpoint was trained with, not the one this
// machine would pick (a run trained with the other keeps its own, so a resume continues its bits).
TEST_F(Cli, ExportRecordsTheCheckpointsBfloat16Arithmetic) {
  const char* other = fastest_bf16_arithmetic() == Bf16Arithmetic::tiles ? "sequential" : "tiles";
  const CommandResult train =
      run_gpt("train --config " + tiny() + " --max_iters 2 --dtype bfloat16 --bf16_arithmetic " + other);
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string out = dir.file("out");
  ASSERT_EQ(SafetensorsReader::open(out + "/model.safetensors").metadata("bf16_arithmetic"), other);
  for (const char* dtype : {"bfloat16", "float32"}) {
    const CommandResult r = run_gpt("export --out_dir " + out + " --dtype " + dtype);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const SafetensorsReader exported = SafetensorsReader::open(out + "/model-" + dtype + ".safetensors");
    ASSERT_TRUE(exported.has_metadata("bf16_arithmetic")) << dtype;
    EXPECT_EQ(exported.metadata("bf16_arithmetic"), other) << dtype;
  }
}

TEST_F(Cli, SampleStreamsTextAndRejectsBadInput) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const std::string out = "--out_dir " + dir.file("out");
  const CommandResult a = run_gpt("sample " + out + " --prompt The --max_new_tokens 40 --num_samples 2 --quiet");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  // nanoGPT's shape: prompt + 40 new characters, a line of dashes, twice; nothing else with --quiet.
  const auto first = a.output.find("\n---------------\n");
  ASSERT_NE(first, std::string::npos) << a.output;
  EXPECT_EQ(a.output.rfind("The", 0), 0u);
  EXPECT_EQ(a.output.find("---------------\nThe", first), first + 1);
  EXPECT_EQ(a.output,
            run_gpt("sample " + out + " --prompt The --max_new_tokens 40 --num_samples 2 --quiet --threads 1").output);
  EXPECT_NE(a.output,
            run_gpt("sample " + out + " --prompt The --max_new_tokens 40 --num_samples 2 --quiet --seed 7").output);
  const CommandResult greedy = run_gpt("sample " + out + " --prompt The --max_new_tokens 20 --temperature 0 --quiet");
  EXPECT_EQ(greedy.output,
            run_gpt("sample " + out + " --prompt The --max_new_tokens 20 --temperature 0 --seed 9 --quiet").output);
  const CommandResult logged = run_gpt("sample " + out + " --max_new_tokens 5");
  EXPECT_NE(logged.output.find("tokens/s"), std::string::npos);

  expect_error("sample " + out + " --prompt 'The §'", 2, {"'§' (U+00A7) at position 4", "the vocabulary is:", "'T'"});
  expect_error("sample " + out + " --max_new_tokens -1", 2, {"--max_new_tokens must be >= 0"});
  expect_error("sample " + out + " --temperature -0.5", 2, {"--temperature must be >= 0"});
  expect_error("sample " + out + " --top_p 0", 2, {"--top_p must be in (0, 1]"});
  expect_error("sample " + out + " --top_p 1.5", 2, {"--top_p must be in (0, 1]"});
  expect_error("sample " + out + " --context_shift 9", 2, {"--context_shift must be at most block_size"});
  expect_error("sample " + out + " --prompt_file " + dir.file("missing.txt"), 2, {"missing.txt"});
  expect_error("sample --out_dir " + dir.file("none"), 2, {"no checkpoint"});
  const std::string long_prompt = dir.write("long.txt", generated_corpus(100));
  const CommandResult cropped = run_gpt("sample " + out + " --prompt_file " + long_prompt + " --max_new_tokens 3");
  EXPECT_EQ(cropped.exit_code, 0);
  EXPECT_NE(cropped.output.find("only its last 8 (block_size)"), std::string::npos) << cropped.output;
}

TEST_F(Cli, PrepareThenTrainOnTheDatasetAndEvaluateItsSplits) {
  const std::string prepared = dir.file("prepared");
  const CommandResult prep = run_gpt("prepare --data " + corpus + " --out " + prepared + " --val_fraction 0.2");
  ASSERT_EQ(prep.exit_code, 0) << prep.output;
  const auto n = static_cast<int64_t>(generated_corpus(8000).size());
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * 0.8);
  EXPECT_NE(prep.output.find(std::to_string(n_train) + " train + " + std::to_string(n - n_train) + " val tokens"),
            std::string::npos)
      << prep.output;
  const CommandResult train = run_gpt("train --config " + tiny() + " --data_path " + prepared);
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("token files in " + prepared), std::string::npos) << train.output;
  const CommandResult val = run_gpt("eval --out_dir " + dir.file("out") + " --data " + prepared + " --json", true);
  ASSERT_EQ(val.exit_code, 0) << val.output;
  EXPECT_EQ(nlohmann::json::parse(val.output)["tokens"].get<int64_t>(), (n - n_train - 1) / 8 * 8);
  const CommandResult all =
      run_gpt("eval --out_dir " + dir.file("out") + " --data " + prepared + " --split all --json", true);
  EXPECT_EQ(nlohmann::json::parse(all.output)["tokens"].get<int64_t>(), (n - 1) / 8 * 8);
  EXPECT_EQ(run_gpt("heads --out_dir " + dir.file("out")).exit_code, 0);

  expect_error("prepare --data " + dir.file("") + " --out " + dir.file("inside"), 2, {"inside the folder"});
  std::filesystem::create_directories(dir.file("occupied"));
  dir.write("occupied/notes.txt", "mine");
  expect_error("prepare --data " + corpus + " --out " + dir.file("occupied"), 2, {"notes.txt", "other files"});
  expect_error("prepare --data " + corpus + " --vocab words", 2, {"--vocab", "\"chars\" or \"bytes\""});
  expect_error("train --config " + tiny() + " --vocab words", 2, {"\"vocab\"", "\"chars\" or \"bytes\""});
}

// Bytes that are not UTF-8 train a byte-level model; its samples go to a pipe as raw bytes.
TEST_F(Cli, ByteLevelModelsTrainOnAnyBytesAndSampleBytes) {
  std::string blob = generated_corpus(6000);
  for (std::size_t i = 0; i < blob.size(); i += 97) blob[i] = static_cast<char>(0x80 + i % 64);  // invalid UTF-8
  const std::string data = dir.write("blob.bin", blob);
  expect_error("train --config " + tiny() + " --data_path " + data, 2, {"blob.bin", "invalid UTF-8", "bytes"});
  const CommandResult train = run_gpt("train --config " + tiny() + " --data_path " + data + " --vocab bytes");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_NE(train.output.find("vocab 256"), std::string::npos) << train.output;
  const std::string out = "--out_dir " + dir.file("out");
  const CommandResult sample =
      run_gpt("sample " + out + " --prompt_file " + dir.write("p.bin", "\xC3") + " --max_new_tokens 50 --quiet", true);
  ASSERT_EQ(sample.exit_code, 0) << sample.output;
  EXPECT_EQ(sample.output.rfind("\xC3", 0), 0u);  // the prompt's lone byte, unrepaired
  EXPECT_EQ(sample.output.size(), 1 + 50 + std::string("\n---------------\n").size());
  const CommandResult eval = run_gpt("eval " + out + " --data " + data);
  EXPECT_NE(eval.output.find("bits/byte"), std::string::npos) << eval.output;
}

TEST_F(Cli, TrainWritesAReportAndReportComparesRuns) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const std::string page = read_text(dir.file("out/report.html"));
  EXPECT_NE(page.find("<h2>Sample</h2>"), std::string::npos) << "a finished run's report has its sample";
  EXPECT_NE(page.find("<h2>Attention heads</h2>"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/report_heads.html")));
  EXPECT_EQ(page.find("http-equiv=\"refresh\""), std::string::npos) << "a finished run's page does not reload";
  ASSERT_EQ(run_gpt("train --config " + tiny() + " --out_dir " + dir.file("out2") + " --learning_rate 0.002").exit_code,
            0);
  const CommandResult both = run_gpt("report --out_dir " + dir.file("out") + " --out_dir " + dir.file("out2") +
                                     " --out " + dir.file("both.html"));
  ASSERT_EQ(both.exit_code, 0) << both.output;
  const std::string compared = read_text(dir.file("both.html"));
  EXPECT_NE(compared.find(dir.file("out2")), std::string::npos);
  EXPECT_LT(compared.size(), 1u << 20);
  expect_error("report --out_dir " + dir.file("nowhere"), 2, {"nowhere", "metrics.jsonl"});
}

TEST_F(Cli, HeadsPrintsTableJsonAndReport) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const CommandResult table = run_gpt("heads --out_dir " + dir.file("out"));
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("layer head  label"), std::string::npos);
  const CommandResult json = run_gpt("heads --out_dir " + dir.file("out") + " --json --prompt 'The king and'", true);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const auto parsed = nlohmann::json::parse(json.output);
  EXPECT_EQ(parsed["heads"].size(), 2u);  // 1 layer x 2 heads
  EXPECT_EQ(parsed["prompt_length"], 8);  // cropped to block_size
  ASSERT_EQ(run_gpt("heads --out_dir " + dir.file("out") + " --report " + dir.file("heads.html")).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file("heads.html")));
  expect_error("heads --out_dir " + dir.file("out") + " --induction_length 9", 2, {"--induction_length"});
}

// threads: the CLI sets OpenMP's thread count from the key (run_training uses whatever is set).
TEST_F(Cli, ThreadsSetsTheRunsThreadCount) {
  for (const char* threads : {"1", "3"}) {
    const std::string out = dir.file(std::string("threads") + threads);
    const CommandResult r =
        run_gpt("train --config " + tiny() + " --max_iters 0 --threads " + threads + " --out_dir " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(out + "/metrics.jsonl");
    std::string first_line;
    std::getline(in, first_line);
    EXPECT_EQ(nlohmann::json::parse(first_line)["threads"], std::stoi(threads)) << first_line;
  }
}

// Without --prompt, heads reads the validation passage of the run the checkpoint belongs to: the
// folder of --checkpoint, not --out_dir (which --checkpoint replaces).
TEST_F(Cli, HeadsWithACheckpointReadsItsOwnRunsText) {
  ASSERT_EQ(run_gpt("train --config " + tiny()).exit_code, 0);
  const CommandResult r =
      run_gpt("heads --checkpoint " + dir.file("out/model.safetensors") + " --out_dir " + dir.file("nowhere"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("layer head  label"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpt
