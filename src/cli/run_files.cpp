#include "cli/run_files.h"

#include <filesystem>

#include "cli/config_loader.h"
#include "core/check.h"
#include "data/dataset.h"
#include "io/run_folder.h"

namespace gpt {

std::vector<int32_t> validation_passage(const std::string& out_dir, const Vocab& vocab, int64_t block_size) {
  const std::string config_path = run_file(out_dir, kConfigFile);
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec))
    throw UserError("no --prompt given and no " + config_path + " to find the training text; pass --prompt TEXT");
  const TrainConfig config = load_train_config(config_path, {});
  const Dataset data = Dataset::open(config.corpus(), config.cache_dir);
  // In the model's ids: in place, or only the validation split remapped (a fine-tuned model).
  const ModelTokens val_tokens = tokens_in_vocab(data.folder(), vocab, "val");
  const TokenView val = val_tokens.view;
  const int32_t newline = vocab.kind() == VocabKind::bytes ? int32_t{'\n'} : vocab.id_of(U'\n').value_or(-1);
  int64_t begin = 0;
  for (int64_t i = 0; i + 1 + block_size <= val.size() && i < block_size; ++i)
    if (val[i] == newline) {
      begin = i + 1;
      break;
    }
  return val.to_vector(begin, std::min(block_size, val.size() - begin));
}

}  // namespace gpt
