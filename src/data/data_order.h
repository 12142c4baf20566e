// How training draws its windows of block_size (data_order). random: nanoGPT's, each row a window
// at an offset drawn on its own, so some windows come twice before others once. epochs: each epoch
// cuts the split into W = (n - 1) / T windows of T on a grid shifted by a random 0 .. (n - 1) mod
// T, and every row takes the next window of a random order of them: each one once per epoch
// (Dataset::epoch_batch).
#pragma once

#include <optional>
#include <string>

namespace gpt {

enum class DataOrder { random, epochs };
inline std::optional<DataOrder> parse_data_order(const std::string& text) {
  if (text == "random") return DataOrder::random;
  if (text == "epochs") return DataOrder::epochs;
  return std::nullopt;
}
inline const char* data_order_name(DataOrder order) { return order == DataOrder::random ? "random" : "epochs"; }

}  // namespace gpt
