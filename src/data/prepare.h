// Preparing a corpus: text (a file or a folder of files) to a prepared dataset (see
// dataset_manifest.h). The sources are streamed twice in fixed-size blocks, so memory does not
// depend on the corpus: first to validate UTF-8 and find the vocabulary (a bitset over code
// points), then to encode. Blocks are decoded by all threads at once, in parts that begin at
// character boundaries, and written in order: the same bytes whatever the thread count.
#pragma once

#include <atomic>
#include <string>

#include "data/dataset_manifest.h"
#include "data/vocab.h"

namespace gpt {

struct CorpusSpec {
  std::string data_path;      // a text file or a folder
  std::string val_data_path;  // empty: validation is the last val_fraction of data_path
  VocabKind vocab = VocabKind::chars;
  double val_fraction = 0.1;
  bool skip_invalid_files = false;  // chars: leave out (with a warning) files that are not UTF-8
};

// Lists the sources (UserError naming the key for a missing path or an empty folder).
struct CorpusSources {
  std::vector<SourceFile> train, val;
};
CorpusSources list_corpus_sources(const CorpusSpec& spec);

// XXH64 of a source file's content, read in blocks.
std::string hash_source_file(const SourceFile& file);

// Writes out_dir/train.bin, val.bin, then meta.json, each atomically; a stale meta.json is removed
// first, so an interrupted preparation never looks complete. UserError naming the file and byte
// offset for invalid UTF-8 (chars), or when a source changes while it is read. When *stop_signal
// becomes non-zero (Ctrl-C), it stops within a block, leaves nothing behind and throws UserError
// with exit code 128 + the signal.
DatasetManifest prepare_dataset(const CorpusSpec& spec, const CorpusSources& sources, const std::string& out_dir,
                                const std::atomic<int>* stop_signal = nullptr);

}  // namespace gpt
