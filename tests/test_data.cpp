// Corpora: the streaming preparation (against a whole-text reference: nanoGPT's prepare.py
// semantics), its independence from thread count and block boundaries, folders, byte
// vocabularies, the cache and its invalidation, and the pieces under them (XXH64, block-wise UTF-8
// decoding, printing bytes).
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "data/content_hash.h"
#include "data/dataset.h"
#include "data/utf8.h"
#include "thread_count.h"
#include "training_fixtures.h"

using namespace gpt;
using namespace gpt::testing;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What nanoGPT's shakespeare_char prepare.py computes, from the whole decoded text at once.
struct Reference {
  std::vector<char32_t> vocab;
  std::vector<int32_t> train, val;
};

Reference reference_prepare(const std::string& utf8, double val_fraction) {
  std::vector<char32_t> text;
  Utf8Error error;
  EXPECT_TRUE(decode_utf8(utf8, text, error));
  Reference r;
  r.vocab = Vocab::from_text(text).symbols();
  std::map<char32_t, int32_t> id;
  for (std::size_t i = 0; i < r.vocab.size(); ++i) id[r.vocab[i]] = static_cast<int32_t>(i);
  const auto n = static_cast<int64_t>(text.size());
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * (1.0 - val_fraction));
  for (int64_t i = 0; i < n; ++i) (i < n_train ? r.train : r.val).push_back(id[text[static_cast<std::size_t>(i)]]);
  return r;
}

std::vector<int32_t> all_tokens(TokenView view) { return view.to_vector(0, view.size()); }

// Text of `bytes` bytes mixing 1- to 4-byte characters, so that block and part boundaries fall
// inside multi-byte sequences.
std::string multilingual_text(std::size_t bytes) {
  static const char* words[] = {"the ",
                                "king ",
                                "caf\xC3\xA9 ",
                                "\xE2\x82\xAC"
                                "5 ",
                                "\xF0\x9F\x98\x80 ",
                                "na\xC3\xAFve\n",
                                "\xE6\x97\xA5\xE6\x9C\xAC ",
                                "queen,\n"};
  Rng rng(7);
  std::string text;
  while (text.size() < bytes) text += words[rng.below(8)];
  return text;
}

CorpusSpec spec_for(const std::string& path, VocabKind vocab = VocabKind::chars) {
  CorpusSpec spec;
  spec.data_path = path;
  spec.vocab = vocab;
  return spec;
}

Dataset prepare_and_open(const CorpusSpec& spec, const std::string& out) {
  prepare_dataset(spec, list_corpus_sources(spec), out);
  return Dataset::open_prepared(out);
}

void overwrite_byte(const std::string& path, std::streamoff offset, unsigned char value) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekp(offset);
  file.put(static_cast<char>(value));
}

// The process's resident pages backed by files (its maps of them), from /proc/self/status.
int64_t resident_file_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
  ADD_FAILURE() << "no RssFile in /proc/self/status";
  return 0;
}

ino_t inode_of(const std::string& path) {
  struct stat info {};
  ::stat(path.c_str(), &info);
  return info.st_ino;
}

}  // namespace

// data_order "epochs": with W = (n - 1) / T windows, rows e W .. (e + 1) W - 1 are epoch e: every
// window of one grid (offsets 0 .. (n - 1) mod T, each seen over the epochs) exactly once, each
// within the split with its targets one behind; the next epoch is another order, and a row is
// the same whichever batch asks for it. Sizes where (n - 1) / T and n / T differ, and n = T + 1.
TEST(EpochOrder, EachEpochTakesEveryWindowOfItsGridOnceInAnotherOrder) {
  const int64_t T = 16, B = 7, epochs = 40;
  for (const int64_t n : {T + 1, 2 * T, 2 * T + 1, int64_t{1000}, int64_t{1001}}) {
    SCOPED_TRACE(n);
    std::vector<int32_t> ids(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const TokenView split(ids);
    const int64_t windows = (n - 1) / T, slack = (n - 1) % T;
    auto starts_of_rows = [&](int64_t first, int64_t count) {
      std::vector<int64_t> starts;
      Batch batch;
      for (int64_t row = first; row < first + count; row += B) {
        Dataset::epoch_batch(split, B, T, 5, row, batch);
        for (int64_t b = 0; b < B && row + b < first + count; ++b) {
          for (int64_t t = 0; t < T; ++t) {
            EXPECT_EQ(batch.inputs[b * T + t], batch.inputs[b * T] + t);
            EXPECT_EQ(batch.targets[b * T + t], batch.inputs[b * T + t] + 1);
          }
          starts.push_back(batch.inputs[b * T]);
        }
      }
      return starts;
    };
    std::set<int64_t> grids;
    std::vector<std::vector<int64_t>> orders;
    for (int64_t e = 0; e < epochs; ++e) {
      orders.push_back(starts_of_rows(e * windows, windows));
      std::vector<int64_t> sorted = orders.back();
      std::sort(sorted.begin(), sorted.end());
      for (int64_t j = 0; j < windows; ++j) ASSERT_EQ(sorted[j], sorted[0] + j * T);
      ASSERT_LE(sorted[0], slack);
      ASSERT_LE(sorted.back() + T, n - 1);
      grids.insert(sorted[0]);
    }
    EXPECT_EQ(static_cast<int64_t>(grids.size()), slack + 1);
    if (windows >= 20) {
      EXPECT_NE(orders[0], orders[1]);
    }
    EXPECT_EQ(starts_of_rows(windows + windows / 2, 1).front(), orders[1][windows / 2]);
  }
}

TEST(ContentHash, MatchesXxh64AndIgnoresHowTheInputIsSplit) {
  // Known XXH64 values (seed 0); zstd's frame checksum is the low 32 bits of the same function.
  ContentHash empty;
  EXPECT_EQ(empty.hex(), "ef46db3751d8e999");
  ContentHash abc;
  abc.update("abc");
  EXPECT_EQ(abc.hex(), "44bc2cf5ad770999");
  // Past one 32-byte stripe: the digest the project's own XXH64 gave before the library's, so
  // datasets prepared then keep their cache keys.
  std::string letters;
  for (int i = 0; i < 1000; ++i) letters += static_cast<char>('a' + (i * 7919) % 26);
  ContentHash long_input;
  long_input.update(letters);
  EXPECT_EQ(long_input.hex(), "95237c5fcda3c65b");
  const std::string text = multilingual_text(1000);
  ContentHash whole;
  whole.update(text);
  Rng rng(3);
  ContentHash pieces;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = std::min<std::size_t>(text.size() - i, rng.below(70));
    pieces.update(std::string_view(text).substr(i, n));
    i += n;
  }
  EXPECT_EQ(pieces.digest(), whole.digest());
  ContentHash other;
  other.update(text.substr(0, 999) + "X");
  EXPECT_NE(other.digest(), whole.digest());
}

TEST(Utf8, DecodingInBlocksEqualsDecodingTheWhole) {
  const std::string text = multilingual_text(5000);
  std::vector<char32_t> whole, blocks;
  Utf8Error error;
  ASSERT_TRUE(decode_utf8(text, whole, error));
  // Blocks of 37 bytes: each stops at its cut minus 3 and hands the rest to the next.
  std::string carried;
  for (std::size_t i = 0; i < text.size(); i += 37) {
    const std::string block = carried + text.substr(i, 37);
    const bool at_end = i + 37 >= text.size();
    const std::size_t cut = at_end ? block.size() : block.size() - 3;
    const std::size_t stop = decode_utf8_sequences(
        block, 0, cut, [&](char32_t cp) { blocks.push_back(cp); }, error);
    ASSERT_NE(stop, kUtf8Invalid);
    carried = block.substr(stop);
  }
  EXPECT_EQ(blocks, whole);
}

TEST(Utf8, RepairPassesValidTextWaitsForSplitSequencesAndReplacesInvalidBytes) {
  Utf8Repair repair;
  EXPECT_EQ(repair.push("caf\xC3"), "caf");  // the é is incomplete: held
  EXPECT_EQ(repair.push("\xA9!"), "\xC3\xA9!");
  EXPECT_EQ(repair.push("a\xFFz"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(repair.push("\xE2\x82"), "");
  EXPECT_EQ(repair.push("x"), "\xEF\xBF\xBD\xEF\xBF\xBDx");  // the sequence broke: each byte replaced
  EXPECT_EQ(repair.push("\xF0\x9F"), "");
  EXPECT_EQ(repair.finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

class Prepare : public CorpusTest {};

// Two blocks and more, with multi-byte characters across every boundary: the token files equal
// the whole-text reference, and the bytes do not depend on the thread count.
TEST_F(Prepare, StreamedTokensEqualTheWholeTextReferenceOnAnyThreadCount) {
  const std::string text = multilingual_text(17u << 20);
  const std::string path = dir.write("big.txt", text);
  const Reference ref = reference_prepare(text, 0.1);
  std::string first_train;
  for (int threads : {1, 2, 3}) {
    const ThreadCount scope(threads);
    const std::string out = dir.file("prepared" + std::to_string(threads));
    const Dataset d = prepare_and_open(spec_for(path), out);
    EXPECT_EQ(d.vocab().symbols(), ref.vocab);
    EXPECT_EQ(d.manifest().token_type, TokenType::u8);
    ASSERT_EQ(all_tokens(d.train()), ref.train) << threads << " threads";
    ASSERT_EQ(all_tokens(d.val()), ref.val) << threads << " threads";
    const std::string train = file_bytes(out + "/train.bin");
    if (first_train.empty()) first_train = train;
    EXPECT_EQ(train, first_train) << threads << " threads";
  }
}

// Four-byte characters after 0 to 3 ASCII bytes: wherever the reader's blocks end, for some of
// these texts a block ends inside a character.
TEST_F(Prepare, BlocksEndingInsideACharacterLoseNothing) {
  for (const std::string prefix : {"", "a", "ab", "abc"}) {
    std::string text = prefix;
    for (int i = 0; text.size() < (9u << 20); ++i) text += i % 64 == 63 ? "\n" : "\xF0\x9F\x98\x80";
    const std::string path = dir.write("emoji.txt", text);
    const Reference ref = reference_prepare(text, 0.1);
    const Dataset d = prepare_and_open(spec_for(path), dir.file("emoji"));
    ASSERT_EQ(all_tokens(d.train()), ref.train) << "prefix of " << prefix.size();
    ASSERT_EQ(all_tokens(d.val()), ref.val) << "prefix of " << prefix.size();
  }
}

TEST_F(Prepare, VocabulariesAbove256UseSixteenBitTokens) {
  std::string text;
  for (char32_t cp = 0x4E00; cp < 0x4E00 + 300; ++cp) append_utf8(cp, text);
  text += "\n";
  text += text;
  const Dataset d = prepare_and_open(spec_for(dir.write("han.txt", text)), dir.file("han"));
  const Reference ref = reference_prepare(text, 0.1);
  EXPECT_EQ(d.manifest().token_type, TokenType::u16);
  EXPECT_EQ(d.vocab().size(), 301);
  EXPECT_EQ(all_tokens(d.train()), ref.train);
  EXPECT_EQ(all_tokens(d.val()), ref.val);
  EXPECT_EQ(std::filesystem::file_size(dir.file("han/train.bin")), ref.train.size() * 2);
}

TEST_F(Prepare, InvalidUtf8IsReportedWithTheFileAndTheOffsetOfTheWholeFile) {
  std::string text = multilingual_text(9u << 20);
  text[(8u << 20) + 12345] = '\xFF';  // in the second block; the reference says where decoding fails
  std::vector<char32_t> decoded;
  Utf8Error expected;
  ASSERT_FALSE(decode_utf8(text, decoded, expected));
  const std::string path = dir.write("bad.txt", text);
  try {
    prepare_dataset(spec_for(path), list_corpus_sources(spec_for(path)), dir.file("bad"));
    FAIL() << "no error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path + ": invalid UTF-8 at byte offset " + std::to_string(expected.byte_offset)),
              std::string::npos)
        << message;
  }
  EXPECT_FALSE(is_prepared_dataset(dir.file("bad")));
}

TEST_F(Prepare, AFolderIsItsFilesInPathOrderJoinedByNewlinesWithoutHiddenOnes) {
  std::filesystem::create_directories(dir.file("books/b"));
  std::filesystem::create_directories(dir.file("books/.git"));
  dir.write("books/b/2.txt", "second\n");
  dir.write("books/a.txt", "first");
  dir.write("books/c.txt", "third");
  dir.write("books/.hidden.txt", "never");
  dir.write("books/.git/objects", std::string("\xFF\xFE", 2));
  CorpusSpec spec = spec_for(dir.file("books"));
  spec.val_fraction = 0.25;
  const Dataset d = prepare_and_open(spec, dir.file("books_prepared"));
  const std::string joined = "first\nsecond\n\nthird";
  const Reference ref = reference_prepare(joined, 0.25);
  EXPECT_EQ(all_tokens(d.train()), ref.train);
  EXPECT_EQ(all_tokens(d.val()), ref.val);  // the last files are the validation data
  ASSERT_EQ(d.manifest().train_sources.size(), 3u);
  EXPECT_EQ(d.manifest().train_sources[1].path, dir.file("books/b/2.txt"));
}

TEST_F(Prepare, InvalidFilesInAFolderFailOrAreSkippedWithAWarning) {
  std::filesystem::create_directories(dir.file("mixed"));
  dir.write("mixed/a.txt", "hello world");
  dir.write("mixed/b.bin", std::string("\x00\xFF\x01", 3));
  dir.write("mixed/c.txt", "goodbye");
  CorpusSpec spec = spec_for(dir.file("mixed"));
  try {
    prepare_dataset(spec, list_corpus_sources(spec), dir.file("mixed_prepared"));
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("b.bin: invalid UTF-8 at byte offset 1"), std::string::npos) << e.what();
  }
  spec.skip_invalid_files = true;
  const Dataset d = prepare_and_open(spec, dir.file("mixed_prepared"));
  const Reference ref = reference_prepare("hello world\ngoodbye", 0.1);
  EXPECT_EQ(d.vocab().symbols(), ref.vocab);  // nothing of the skipped file
  EXPECT_EQ(all_tokens(d.train()), ref.train);
  EXPECT_TRUE(d.manifest().train_sources[1].skipped);
}

TEST_F(Prepare, ByteVocabularyTakesAnyFileAsItsBytes) {
  std::string binary;
  for (int i = 0; i < 5000; ++i) binary += static_cast<char>((i * 7919) & 0xFF);
  const Dataset d = prepare_and_open(spec_for(dir.write("blob.bin", binary), VocabKind::bytes), dir.file("blob"));
  EXPECT_EQ(d.vocab().kind(), VocabKind::bytes);
  EXPECT_EQ(d.vocab().size(), 256);
  EXPECT_EQ(d.train().size(), 4500);
  EXPECT_EQ(file_bytes(dir.file("blob/train.bin")) + file_bytes(dir.file("blob/val.bin")), binary);
  EXPECT_EQ(d.vocab().decode(0xFF), std::string("\xFF", 1));
}

TEST_F(Prepare, AnExplicitValidationTextIsTheWholeValSplitAndSharesTheVocabulary) {
  CorpusSpec spec = spec_for(dir.write("train.txt", "abcabcabc"));
  spec.val_data_path = dir.write("valid.txt", "xyz");
  const Dataset d = prepare_and_open(spec, dir.file("explicit"));
  EXPECT_EQ(d.train().size(), 9);
  EXPECT_EQ(d.val().size(), 3);
  EXPECT_EQ(d.vocab().size(), 6);
  EXPECT_EQ(d.val()[0], *d.vocab().id_of(U'x'));
}

TEST_F(Prepare, AnUnfinishedOrDamagedDatasetIsNeverUsed) {
  const std::string out = dir.file("p");
  prepare_and_open(spec_for(corpus), out);
  {  // a truncated token file
    std::filesystem::resize_file(out + "/train.bin", 100);
    EXPECT_THROW(Dataset::open_prepared(out), UserError);
  }
  std::filesystem::remove(out + "/meta.json");  // as an interrupted preparation leaves it
  EXPECT_FALSE(is_prepared_dataset(out));
}

// One byte of train.bin changed to an id the vocabulary does not have: reading it is an input
// error naming the file, the offset, the id and the vocabulary size, never an id past the model.
TEST_F(Prepare, AnIdOutsideTheVocabularyIsAnInputErrorNamingTheFileAndOffset) {
  const std::string out = dir.file("p");
  const int vocab_size = prepare_and_open(spec_for(corpus), out).vocab().size();
  overwrite_byte(out + "/train.bin", 1234, 250);
  try {
    const Dataset d = Dataset::open_prepared(out);
    all_tokens(d.train());
    FAIL() << "id 250 read from a vocabulary of " << vocab_size;
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    for (const std::string& expected :
         std::vector<std::string>{out + "/train.bin", "offset 1234", "id 250", std::to_string(vocab_size)})
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << expected << " not in: " << e.what();
  }
}

// Fine-tuning on another vocabulary maps every id through a table of the dataset's vocabulary
// size: an id past it must be reported, not read from outside the table.
TEST_F(Prepare, RemappingADamagedDatasetIsAnInputError) {
  const std::string out = dir.file("p");
  Dataset d = prepare_and_open(spec_for(corpus), out);
  std::vector<char32_t> symbols = d.vocab().symbols();
  symbols.insert(symbols.begin(), U'\t');
  const Vocab model = Vocab::from_code_points(symbols);
  overwrite_byte(out + "/val.bin", 7, 200);
  EXPECT_THROW(tokens_in_vocab(out, model, "val"), UserError);
  EXPECT_THROW(Dataset::open_prepared(out).use_vocab(model, "fine-tuning"), UserError);
}

// Reading every window of a 64 MiB token file leaves none of it in the process's resident memory:
// training's memory does not grow with the corpus, however long it reads. (A memory map would
// count every page read as the process's own, RssFile, up to the whole file.)
TEST_F(Prepare, ReadingATokenFileLeavesNoneOfItResident) {
  const std::string out = dir.file("p");
  prepare_and_open(spec_for(corpus), out);
  const int64_t tokens = int64_t{64} << 20;
  nlohmann::json meta = nlohmann::json::parse(file_bytes(out + "/meta.json"));
  meta["token_type"] = "uint8";
  meta["train_tokens"] = tokens;
  dir.write("p/meta.json", meta.dump());
  dir.write("p/train.bin", std::string(static_cast<std::size_t>(tokens), '\1'));
  const Dataset d = Dataset::open_prepared(out);
  std::vector<int32_t> window(1 << 20);
  const int64_t before = resident_file_kib();
  for (int64_t begin = 0; begin < tokens; begin += static_cast<int64_t>(window.size()))
    d.train().copy(begin, static_cast<int64_t>(window.size()), window.data());
  EXPECT_EQ(window.back(), 1);
  EXPECT_LT(resident_file_kib() - before, 8 << 10) << "KiB of train.bin stayed resident";
}

// tokens * bytes wraps to 0 for 2^62 uint32 tokens: an empty train.bin must not pass for them.
TEST_F(Prepare, TokenCountsThatOverflowTheFileSizeAreRefused) {
  const std::string out = dir.file("p");
  prepare_and_open(spec_for(corpus), out);
  nlohmann::json meta = nlohmann::json::parse(file_bytes(out + "/meta.json"));
  meta["token_type"] = "uint32";
  meta["train_tokens"] = int64_t{1} << 62;
  meta["val_tokens"] = 0;
  dir.write("p/meta.json", meta.dump());
  dir.write("p/train.bin", "");
  dir.write("p/val.bin", "");
  EXPECT_THROW(Dataset::open_prepared(out), UserError);
  meta["train_tokens"] = -1;
  dir.write("p/meta.json", meta.dump());
  EXPECT_THROW(Dataset::open_prepared(out), UserError);
}

class DatasetCache : public CorpusTest {
 protected:
  std::string cache = dir.file("cache");
  std::string cached_train_bin() const { return cache_folder(spec_for(corpus), cache) + "/train.bin"; }
};

TEST_F(DatasetCache, TextIsPreparedOnceAndReusedWhileUnchanged) {
  const Dataset first = Dataset::open(spec_for(corpus), cache);
  const ino_t prepared = inode_of(cached_train_bin());
  const Dataset again = Dataset::open(spec_for(corpus), cache);
  EXPECT_EQ(inode_of(cached_train_bin()), prepared) << "prepared twice";
  EXPECT_EQ(all_tokens(again.train()), all_tokens(first.train()));
  const Reference ref = reference_prepare(file_bytes(corpus), 0.1);
  EXPECT_EQ(all_tokens(first.val()), ref.val);
}

TEST_F(DatasetCache, ATouchedButUnchangedSourceIsReusedAndAChangedOneIsPreparedAgain) {
  Dataset::open(spec_for(corpus), cache);
  const ino_t prepared = inode_of(cached_train_bin());
  std::filesystem::last_write_time(corpus, std::filesystem::last_write_time(corpus) + std::chrono::seconds(5));
  Dataset::open(spec_for(corpus), cache);
  EXPECT_EQ(inode_of(cached_train_bin()), prepared) << "same content, new time: prepared again";

  std::string text = file_bytes(corpus);
  text[10] = text[10] == 'Q' ? 'R' : 'Q';  // same size, new content
  dir.write("corpus.txt", text);
  const Dataset changed = Dataset::open(spec_for(corpus), cache);
  EXPECT_NE(inode_of(cached_train_bin()), prepared);
  EXPECT_EQ(all_tokens(changed.train()), reference_prepare(text, 0.1).train);
}

TEST_F(DatasetCache, ADifferentSettingIsADifferentCacheEntry) {
  CorpusSpec bytes = spec_for(corpus, VocabKind::bytes);
  EXPECT_NE(cache_folder(bytes, cache), cache_folder(spec_for(corpus), cache));
  CorpusSpec split = spec_for(corpus);
  split.val_fraction = 0.2;
  EXPECT_NE(cache_folder(split, cache), cache_folder(spec_for(corpus), cache));
  EXPECT_EQ(Dataset::open(bytes, cache).vocab().kind(), VocabKind::bytes);
}

// Training reads a prepared dataset and the text it came from identically: the same losses.
TEST_F(DatasetCache, TrainingOnThePreparedDatasetEqualsTrainingOnTheText) {
  TrainConfig c = tiny_config(dir, corpus);
  c.cache_dir = cache;
  run_training(c, nullptr);
  const LoggedRun from_text = read_metrics(c.out_dir);
  prepare_dataset(spec_for(corpus), list_corpus_sources(spec_for(corpus)), dir.file("prepared"));
  c.data_path = dir.file("prepared");
  c.out_dir = dir.file("out2");
  run_training(c, nullptr);
  const LoggedRun from_prepared = read_metrics(c.out_dir);
  ASSERT_FALSE(from_text.train.empty());
  EXPECT_EQ(from_prepared.train, from_text.train);
  EXPECT_EQ(from_prepared.val, from_text.val);
}

TEST_F(DatasetCache, EvaluationTextsInAnyFormGiveTheModelsIds) {
  const Dataset d = Dataset::open(spec_for(corpus), cache);
  // A model vocabulary with one more character than the corpus: ids must be remapped.
  std::vector<char32_t> symbols = d.vocab().symbols();
  symbols.insert(symbols.begin(), U'\t');
  const Vocab model = Vocab::from_code_points(symbols);
  const ModelTokens from_dataset = tokens_in_vocab(d.folder(), model, "val");
  const std::string val_text = file_bytes(corpus).substr(file_bytes(corpus).size() - d.val().size());
  const ModelTokens from_text = tokens_in_vocab(dir.write("val.txt", val_text), model, "val");
  EXPECT_EQ(all_tokens(from_dataset.view), all_tokens(from_text.view));
  EXPECT_EQ(from_dataset.view[0], d.val()[0] + 1);
  const ModelTokens same_vocab = tokens_in_vocab(d.folder(), d.vocab(), "all");
  EXPECT_EQ(same_vocab.view.size(), d.train().size() + d.val().size());
  const Vocab narrow = Vocab::from_code_points({U'a', U'b'});
  EXPECT_THROW(tokens_in_vocab(d.folder(), narrow, "val"), UserError);
}

TEST_F(DatasetCache, ResumingOnTextWithAnotherVocabularyIsAnError) {
  TrainConfig c = tiny_config(dir, corpus);
  c.cache_dir = cache;
  c.max_iters = 2;
  run_training(c, nullptr);
  c.init_from = {InitKind::resume, ""};
  c.max_iters = 4;
  c.data_path = dir.write("other.txt", generated_corpus(5000) + "XYZ");
  try {
    run_training(c, nullptr);
    FAIL() << "resumed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot resume: the vocabulary of " + c.data_path), std::string::npos)
        << e.what();
  }
}

TEST_F(Prepare, AnInterruptedPreparationLeavesNothingBehind) {
  const std::string out = dir.file("interrupted");
  std::filesystem::create_directories(out);
  const std::atomic<int> stop{2};  // SIGINT arrived
  const CorpusSpec spec = spec_for(corpus);
  try {
    prepare_dataset(spec, list_corpus_sources(spec), out, &stop);
    FAIL() << "not interrupted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 130);
    EXPECT_NE(std::string(e.what()).find("interrupted while preparing"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(out)) << "temporaries left in " << out;
}
