#include "data/prepare.h"

#include <fcntl.h>
#include <omp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/utc_time.h"
#include "data/content_hash.h"
#include "data/utf8.h"

namespace gpt {

namespace {

constexpr std::size_t kBlockBytes = 8u << 20;
constexpr std::size_t kMaxSequence = 4;  // bytes of the longest UTF-8 sequence
constexpr std::size_t kCodePoints = 0x110000;
constexpr std::size_t kBitsetWords = kCodePoints / 64;

bool is_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

struct Part {
  std::size_t begin, end;
};

// Up to `count` parts of [0, cut), each beginning at a byte that is not a continuation byte: no
// valid sequence crosses such a point, so each part decodes on its own exactly as the whole block
// would, and the first error over the parts in order is the whole block's first error. A split
// point with no such byte within a sequence's length (invalid input) is dropped.
std::vector<Part> split_at_sequences(std::string_view block, std::size_t cut, int count) {
  std::vector<Part> parts;
  std::size_t begin = 0;
  for (int k = 1; k < count; ++k) {
    std::size_t p = cut * static_cast<std::size_t>(k) / static_cast<std::size_t>(count);
    const std::size_t limit = std::min(cut, p + kMaxSequence);
    while (p < limit && is_continuation(block[p])) ++p;
    if (p >= limit || p <= begin) continue;
    parts.push_back({begin, p});
    begin = p;
  }
  parts.push_back({begin, cut});
  return parts;
}

// Ctrl-C during a preparation: stop now (the writers' destructors remove their temporaries).
void stop_if_signalled(const std::atomic<int>* stop_signal, const std::string& what) {
  const int signal = stop_signal ? stop_signal->load() : 0;
  if (signal != 0)
    throw UserError("interrupted while preparing " + what + "; nothing was written", exit_code_after_signal(signal));
}

// Reads a file in blocks: on_block(block, at_end, file_offset_of_block) returns how many leading
// bytes it used, the rest (an unfinished UTF-8 sequence) starts the next block. Returns the
// file's content hash and checks its size against `file`.
template <class OnBlock>
std::string read_in_blocks(const SourceFile& file, std::string& buffer, OnBlock&& on_block,
                           const std::atomic<int>* stop_signal = nullptr) {
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(file.path + ": cannot open for reading: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  buffer.resize(kBlockBytes + kMaxSequence);
  ContentHash hash;
  std::size_t carried = 0;
  uint64_t offset = 0, total = 0;
  for (;;) {
    stop_if_signalled(stop_signal, file.path);
    std::size_t filled = carried;
    bool at_end = false;
    while (filled < buffer.size()) {
      const ssize_t n = ::read(fd, buffer.data() + filled, buffer.size() - filled);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw UserError(file.path + ": read error: " + std::strerror(errno), ExitCode::runtime);
      if (n == 0) {
        at_end = true;
        break;
      }
      hash.update({buffer.data() + filled, static_cast<std::size_t>(n)});
      filled += static_cast<std::size_t>(n);
      total += static_cast<uint64_t>(n);
    }
    const std::size_t used = on_block(std::string_view(buffer.data(), filled), at_end, offset);
    if (at_end) break;
    carried = filled - used;
    std::memmove(buffer.data(), buffer.data() + used, carried);
    offset += used;
  }
  if (total != file.size)
    throw UserError(file.path + " changed while it was being prepared (" + std::to_string(file.size) + " bytes, then " +
                        std::to_string(total) + "); run again when it no longer changes",
                    ExitCode::runtime);
  return hash.hex();
}

// Where decoding of a block may stop: sequences starting before the cut are decoded (reading past
// it); the last few bytes wait for the next block unless the file ends here.
std::size_t block_cut(std::string_view block, bool at_end) {
  return at_end ? block.size() : block.size() - (kMaxSequence - 1);
}

std::string utf8_error_message(const SourceFile& file, uint64_t offset, const Utf8Error& error) {
  return file.path + ": invalid UTF-8 at byte offset " + std::to_string(offset + error.byte_offset) + " (" +
         error.reason + ")";
}

[[noreturn]] void fail_changed(const SourceFile& file) {
  throw UserError(file.path + " changed while it was being prepared; run again when it no longer changes",
                  ExitCode::runtime);
}

// Pass 1 for chars: validates each file, counts its characters and marks the code points seen.
class CharScanner {
 public:
  CharScanner(bool skip_invalid, const std::atomic<int>* stop_signal)
      : skip_invalid_(skip_invalid),
        stop_signal_(stop_signal),
        threads_(omp_get_max_threads()),
        seen_(kBitsetWords, 0) {
    for (int t = 0; t < threads_; ++t) thread_seen_.emplace_back(kBitsetWords, 0);
  }

  // The file's characters, or -1 when it is invalid and skipped.
  int64_t scan(SourceFile& file, std::string& buffer) {
    for (auto& seen : thread_seen_) std::fill(seen.begin(), seen.end(), 0);
    int64_t characters = 0;
    std::string error;
    file.hash = read_in_blocks(
        file, buffer,
        [&](std::string_view block, bool at_end, uint64_t offset) {
          if (!error.empty()) return block.size();
          const std::vector<Part> parts = split_at_sequences(block, block_cut(block, at_end), threads_);
          const auto n = static_cast<int>(parts.size());
          std::vector<std::size_t> stops(parts.size());
          std::vector<int64_t> counts(parts.size(), 0);
          std::vector<Utf8Error> errors(parts.size());
#pragma omp parallel for schedule(static, 1)
          for (int k = 0; k < n; ++k) {
            std::vector<uint64_t>& seen = thread_seen_[static_cast<std::size_t>(omp_get_thread_num())];
            int64_t count = 0;
            stops[k] = decode_utf8_sequences(
                block, parts[k].begin, parts[k].end,
                [&](char32_t cp) {
                  seen[cp >> 6] |= uint64_t{1} << (cp & 63);
                  ++count;
                },
                errors[k]);
            counts[k] = count;
          }
          for (int k = 0; k < n && error.empty(); ++k) {
            if (stops[k] == kUtf8Invalid) error = utf8_error_message(file, offset, errors[k]);
            characters += counts[k];
          }
          return error.empty() ? stops.back() : block.size();
        },
        stop_signal_);
    if (!error.empty()) {
      if (!skip_invalid_)
        throw UserError(error +
                        " (vocab \"bytes\" trains on any bytes; skip_invalid_files leaves such files out of a folder)");
      spdlog::warn("skipping {}", error);
      file.skipped = true;
      return -1;
    }
    for (const auto& seen : thread_seen_)
      for (std::size_t w = 0; w < kBitsetWords; ++w) seen_[w] |= seen[w];
    return characters;
  }

  void mark(char32_t cp) { seen_[cp >> 6] |= uint64_t{1} << (cp & 63); }

  Vocab vocab() const {
    std::vector<char32_t> chars;
    for (std::size_t w = 0; w < kBitsetWords; ++w)
      for (uint64_t bits = seen_[w]; bits != 0; bits &= bits - 1)
        chars.push_back(static_cast<char32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))));
    return Vocab::from_code_points(std::move(chars));
  }

 private:
  bool skip_invalid_;
  const std::atomic<int>* stop_signal_;
  int threads_;
  std::vector<uint64_t> seen_;
  std::vector<std::vector<uint64_t>> thread_seen_;
};

// The joined token stream: the first `train_tokens` go to train.bin, the rest to val.bin.
class SplitWriter {
 public:
  SplitWriter(const std::string& out_dir, int64_t train_tokens, TokenType type)
      : train_((std::filesystem::path(out_dir) / kTrainTokensName).string()),
        val_((std::filesystem::path(out_dir) / kValTokensName).string()),
        train_tokens_(train_tokens),
        bytes_(token_bytes(type)) {}

  void append(const void* tokens, int64_t count) {
    const auto* p = static_cast<const char*>(tokens);
    const int64_t to_train = std::clamp<int64_t>(train_tokens_ - written_, 0, count);
    if (to_train > 0) train_.write(p, static_cast<std::size_t>(to_train * bytes_));
    if (count > to_train) val_.write(p + to_train * bytes_, static_cast<std::size_t>((count - to_train) * bytes_));
    written_ += count;
  }
  int64_t written() const { return written_; }
  void commit() {
    train_.commit();
    val_.commit();
  }

 private:
  AtomicFileWriter train_, val_;
  int64_t train_tokens_;
  int bytes_;
  int64_t written_ = 0;
};

template <class T>
struct StoreToken {
  void operator()(int32_t id, unsigned char* out, int64_t index) const {
    const auto value = static_cast<T>(id);
    std::memcpy(out + index * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
  }
};

// Pass 2 for chars: encodes each block's parts in parallel into per-part buffers, written in order.
class CharEncoder {
 public:
  CharEncoder(const Vocab& vocab, TokenType type, const std::atomic<int>* stop_signal)
      : type_(type),
        stop_signal_(stop_signal),
        id_of_(kCodePoints, -1),
        parts_(static_cast<std::size_t>(omp_get_max_threads())) {
    for (int id = 0; id < vocab.size(); ++id) id_of_[vocab.symbol(id)] = id;
    for (auto& part : parts_) part.resize((kBlockBytes + kMaxSequence) * static_cast<std::size_t>(token_bytes(type)));
  }

  void encode(const SourceFile& file, std::string& buffer, SplitWriter& out) {
    bool changed = false;
    const std::string hash = read_in_blocks(
        file, buffer,
        [&](std::string_view block, bool at_end, uint64_t) {
          const std::vector<Part> parts = split_at_sequences(block, block_cut(block, at_end), omp_get_max_threads());
          const auto n = static_cast<int>(parts.size());
          std::vector<std::size_t> stops(parts.size());
          std::vector<int64_t> counts(parts.size(), 0);
#pragma omp parallel for schedule(static, 1)
          for (int k = 0; k < n; ++k) counts[k] = encode_part(block, parts[k], parts_[k].data(), stops[k]);
          for (int k = 0; k < n; ++k) {
            if (stops[k] == kUtf8Invalid || counts[k] < 0) changed = true;
            if (!changed) out.append(parts_[k].data(), counts[k]);
          }
          return changed ? block.size() : stops.back();
        },
        stop_signal_);
    if (changed || hash != file.hash) fail_changed(file);
  }

 private:
  // Tokens written, or -1 for a character outside the vocabulary (the file changed).
  int64_t encode_part(std::string_view block, Part part, unsigned char* out, std::size_t& stop) const {
    int64_t count = 0;
    bool outside = false;
    Utf8Error error;
    auto emit = [&](auto store) {
      stop = decode_utf8_sequences(
          block, part.begin, part.end,
          [&](char32_t cp) {
            const int32_t id = id_of_[cp];
            outside |= id < 0;
            store(id, out, count++);
          },
          error);
    };
    switch (type_) {
      case TokenType::u8:
        emit(StoreToken<uint8_t>{});
        break;
      case TokenType::u16:
        emit(StoreToken<uint16_t>{});
        break;
      case TokenType::u32:
        emit(StoreToken<uint32_t>{});
        break;
    }
    return outside ? -1 : count;
  }

  TokenType type_;
  const std::atomic<int>* stop_signal_;
  std::vector<int32_t> id_of_;
  std::vector<std::vector<unsigned char>> parts_;
};

uint64_t total_bytes(const std::vector<SourceFile>& files) {
  uint64_t total = 0;
  for (const SourceFile& f : files) total += f.size;
  return total;
}

// Included files joined with separators: their tokens plus one per join.
int64_t joined_tokens(const std::vector<int64_t>& tokens) {
  int64_t total = 0, included = 0;
  for (int64_t t : tokens)
    if (t >= 0) total += t, ++included;
  return total + std::max<int64_t>(included - 1, 0);
}

}  // namespace

std::string hash_source_file(const SourceFile& file) {
  std::string buffer;
  return read_in_blocks(file, buffer, [](std::string_view block, bool, uint64_t) { return block.size(); });
}

CorpusSources list_corpus_sources(const CorpusSpec& spec) {
  CorpusSources sources;
  sources.train = list_source_files(spec.data_path, "data_path");
  if (!spec.val_data_path.empty()) sources.val = list_source_files(spec.val_data_path, "val_data_path");
  return sources;
}

namespace {

// One preparation: pass 1 over the sources (hashes, validity, counts, vocabulary), the split,
// pass 2 (tokens, in order, split between the two files), then the manifest.
class Preparation {
 public:
  Preparation(const CorpusSpec& spec, const CorpusSources& listed, const std::atomic<int>* stop_signal)
      : spec_(spec),
        stop_signal_(stop_signal),
        chars_(spec.vocab == VocabKind::chars),
        scanner_(spec.skip_invalid_files && chars_, stop_signal) {
    m_.train_sources = listed.train;
    m_.val_sources = listed.val;
    m_.val_fraction = spec.val_fraction;
  }

  DatasetManifest run(const std::string& out_dir) {
    const std::vector<int64_t> train_file_tokens = scan_group(m_.train_sources);
    const std::vector<int64_t> val_file_tokens = scan_group(m_.val_sources);
    choose_vocab(train_file_tokens, val_file_tokens);
    choose_split(train_file_tokens, val_file_tokens);
    SplitWriter out(out_dir, m_.train_tokens, m_.token_type);
    if (chars_) encoder_.emplace(m_.vocab, m_.token_type, stop_signal_);
    encode_group(m_.train_sources, out);
    encode_group(m_.val_sources, out);
    GPT_CHECK(out.written() == m_.train_tokens + m_.val_tokens, "token count differs between the two passes");
    out.commit();
    ContentHash content;
    for (const auto* group : {&m_.train_sources, &m_.val_sources})
      for (const SourceFile& f : *group) content.update(f.hash);
    m_.content_hash = content.hex();
    m_.prepared_at = utc_now();
    write_file_atomically((std::filesystem::path(out_dir) / kManifestName).string(), m_.to_json());
    return m_;
  }

 private:
  // Pass 1 for a group of files: each file's tokens, -1 for a skipped one.
  std::vector<int64_t> scan_group(std::vector<SourceFile>& files) {
    std::vector<int64_t> tokens;
    for (SourceFile& file : files) {
      if (chars_) {
        tokens.push_back(scanner_.scan(file, buffer_));
      } else {
        file.hash = read_in_blocks(
            file, buffer_, [](std::string_view block, bool, uint64_t) { return block.size(); }, stop_signal_);
        tokens.push_back(static_cast<int64_t>(file.size));
      }
    }
    return tokens;
  }

  static int64_t included(const std::vector<int64_t>& tokens) {
    return std::count_if(tokens.begin(), tokens.end(), [](int64_t n) { return n >= 0; });
  }

  void choose_vocab(const std::vector<int64_t>& train_file_tokens, const std::vector<int64_t>& val_file_tokens) {
    if (included(train_file_tokens) == 0) throw UserError("data_path: " + spec_.data_path + " has no valid UTF-8 file");
    if (!m_.val_sources.empty() && included(val_file_tokens) == 0)
      throw UserError("val_data_path: " + spec_.val_data_path + " has no valid UTF-8 file");
    if (chars_ && (included(train_file_tokens) > 1 || included(val_file_tokens) > 1)) scanner_.mark(U'\n');
    m_.vocab = chars_ ? scanner_.vocab() : Vocab::bytes();
    m_.token_type = smallest_token_type(m_.vocab.size());
  }

  void choose_split(const std::vector<int64_t>& train_file_tokens, const std::vector<int64_t>& val_file_tokens) {
    const int64_t train_joined = joined_tokens(train_file_tokens);
    if (m_.val_sources.empty()) {
      m_.train_tokens = static_cast<int64_t>(static_cast<double>(train_joined) * (1.0 - spec_.val_fraction));
      m_.val_tokens = train_joined - m_.train_tokens;
    } else {
      m_.train_tokens = train_joined;
      m_.val_tokens = joined_tokens(val_file_tokens);
    }
    if (m_.train_tokens + m_.val_tokens == 0) throw UserError("data_path: " + spec_.data_path + " is empty");
  }

  // Pass 2 for a group: its included files' tokens with a separator between files.
  void encode_group(const std::vector<SourceFile>& files, SplitWriter& out) {
    const int32_t separator = chars_ ? m_.vocab.id_of(U'\n').value_or(0) : kFileSeparator;
    bool first = true;
    for (const SourceFile& file : files) {
      if (file.skipped) continue;
      if (!first) {
        unsigned char typed[4];
        StoreToken<uint32_t>{}(separator, typed, 0);  // little-endian: the low bytes come first
        out.append(typed, 1);
      }
      first = false;
      if (chars_) {
        encoder_->encode(file, buffer_, out);
        continue;
      }
      const std::string hash = read_in_blocks(
          file, buffer_,
          [&](std::string_view block, bool, uint64_t) {
            out.append(block.data(), static_cast<int64_t>(block.size()));
            return block.size();
          },
          stop_signal_);
      if (hash != file.hash) fail_changed(file);
    }
  }

  const CorpusSpec& spec_;
  const std::atomic<int>* stop_signal_;
  const bool chars_;
  CharScanner scanner_;
  std::optional<CharEncoder> encoder_;
  std::string buffer_;
  DatasetManifest m_;
};

}  // namespace

DatasetManifest prepare_dataset(const CorpusSpec& spec, const CorpusSources& listed, const std::string& out_dir,
                                const std::atomic<int>* stop_signal) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw UserError("cannot create " + out_dir + ": " + ec.message(), ExitCode::runtime);
  if (const int removed = remove_stale_temporaries(out_dir))
    spdlog::info("removed {} temporary file(s) that an interrupted run left in {}", removed, out_dir);
  std::filesystem::remove(std::filesystem::path(out_dir) / kManifestName, ec);
  const DatasetManifest m = Preparation(spec, listed, stop_signal).run(out_dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info(
      "prepared {}: {:.1f} MB of text from {} file(s) into {} train + {} val tokens ({}, vocab {} {}) in {:.1f} s",
      out_dir, static_cast<double>(total_bytes(m.train_sources) + total_bytes(m.val_sources)) * 1e-6,
      m.train_sources.size() + m.val_sources.size(), m.train_tokens, m.val_tokens, to_string(m.token_type),
      m.vocab.size(), to_string(m.vocab.kind()), seconds);
  return m;
}

}  // namespace gpt
