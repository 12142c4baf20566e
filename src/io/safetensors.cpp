#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/check.h"
#include "kernels/bfloat16.h"

namespace gpt {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the Python library's own limit

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

}  // namespace

void SafetensorsWriter::add(const std::string& name, const Shape& shape, const float* data) {
  add(name, shape, [data] { return data; });
}

void SafetensorsWriter::add(const std::string& name, const Shape& shape, Source source) {
  items_.push_back({name, shape, std::move(source), false});
}

void SafetensorsWriter::add_bfloat16(const std::string& name, const Shape& shape, const float* data) {
  items_.push_back({name, shape, [data] { return data; }, true});
}

std::string SafetensorsWriter::header() const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::size_t offset = 0;
  for (const Item& item : items_) {
    std::vector<int64_t> dims(item.shape.dims, item.shape.dims + item.shape.rank);
    const std::size_t bytes =
        static_cast<std::size_t>(item.shape.numel()) * (item.bfloat16 ? sizeof(uint16_t) : sizeof(float));
    header[item.name] = {
        {"dtype", item.bfloat16 ? "BF16" : "F32"}, {"shape", dims}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned, as the Python library does.
  json.append((8 - (json.size() % 8)) % 8, ' ');
  std::string out;
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + json;
}

void SafetensorsWriter::write(const Sink& sink) const {
  static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
  sink(header());
  std::vector<uint16_t> rounded;  // bfloat16s, a block at a time
  constexpr std::size_t kBlock = 1 << 14;
  for (const Item& item : items_) {
    const float* data = item.source();
    const auto numel = static_cast<std::size_t>(item.shape.numel());
    if (!item.bfloat16) {
      sink({reinterpret_cast<const char*>(data), numel * sizeof(float)});
      continue;
    }
    rounded.resize(std::min(numel, kBlock));
    for (std::size_t begin = 0; begin < numel; begin += kBlock) {
      const std::size_t count = std::min(kBlock, numel - begin);
      for (std::size_t i = 0; i < count; ++i) rounded[i] = round_to_bfloat16(data[begin + i]);
      sink({reinterpret_cast<const char*>(rounded.data()), count * sizeof(uint16_t)});
    }
  }
}

void SafetensorsWriter::write_file(const std::string& path) const {
  AtomicFileWriter file(path);
  write([&file](std::string_view bytes) { file.write(bytes); });
  file.commit();
}

std::string SafetensorsWriter::serialize() const {
  std::string out;
  write([&out](std::string_view bytes) { out += bytes; });
  return out;
}

SafetensorsReader SafetensorsReader::open(const std::string& path) {
  return SafetensorsReader(read_whole_file(path), path);
}

SafetensorsReader::SafetensorsReader(std::string bytes, std::string source)
    : bytes_(std::move(bytes)), source_(std::move(source)) {
  auto fail = [&](const std::string& what) -> void {
    throw UserError(source_ + ": not a valid safetensors file: " + what, ExitCode::runtime);
  };
  if (bytes_.size() < 8)
    fail("truncated (" + std::to_string(bytes_.size()) + " bytes, the header length alone takes 8)");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[i])) << (8 * i);
  if (header_len > kMaxHeaderBytes) fail("header length " + std::to_string(header_len) + " is implausibly large");
  if (header_len > bytes_.size() - 8)
    fail("header length " + std::to_string(header_len) + " runs past the end of the file (" +
         std::to_string(bytes_.size()) + " bytes)");
  data_start_ = 8 + header_len;
  const std::size_t data_size = bytes_.size() - data_start_;

  nlohmann::json header = nlohmann::json::parse(
      bytes_.begin() + 8, bytes_.begin() + static_cast<std::ptrdiff_t>(data_start_), nullptr, false);
  if (header.is_discarded()) fail("the header is not valid JSON");
  if (!header.is_object()) fail("the header is not a JSON object");

  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& value = it.value();
    if (name == "__metadata__") {
      if (!value.is_object()) fail("__metadata__ is not an object");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string()) fail("__metadata__ value \"" + m.key() + "\" is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor \"" + name + "\": ";
    if (!value.is_object()) fail(where + "entry is not an object");
    if (!value.contains("dtype") || !value["dtype"].is_string()) fail(where + "no dtype");
    if (value["dtype"] != "F32" && value["dtype"] != "BF16")
      fail(where + "dtype " + value["dtype"].get<std::string>() + ", expected F32 or BF16");
    if (!value.contains("shape") || !value["shape"].is_array()) fail(where + "no shape array");
    Entry entry;
    entry.bfloat16 = value["dtype"] == "BF16";
    const uint64_t element_bytes = entry.bfloat16 ? sizeof(uint16_t) : sizeof(float);
    uint64_t numel = 1;
    for (const auto& d : value["shape"]) {
      if (!d.is_number_unsigned()) fail(where + "shape entries must be non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > (uint64_t{1} << 40) / dim) fail(where + "shape is implausibly large");
      numel *= dim;
      entry.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& offsets = value.contains("data_offsets") ? value["data_offsets"] : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail(where + "data_offsets must be [begin, end]");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end) fail(where + "data_offsets begin after end");
    if (end > data_size)
      fail(where + "data_offsets end " + std::to_string(end) + " runs past the data (" + std::to_string(data_size) +
           " bytes)");
    if (end - begin != numel * element_bytes)
      fail(where + "data_offsets span " + std::to_string(end - begin) + " bytes but shape " + shape_text(entry.shape) +
           " needs " + std::to_string(numel * element_bytes));
    entry.begin = static_cast<std::size_t>(begin);
    entry.end = static_cast<std::size_t>(end);
    ranges.emplace_back(entry.begin, entry.end);
    entries_[name] = std::move(entry);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fail("two tensors' data_offsets overlap");
}

const std::string& SafetensorsReader::metadata(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) throw UserError(source_ + ": metadata \"" + key + "\" is missing", ExitCode::runtime);
  return it->second;
}

void SafetensorsReader::read_into(const std::string& name, const Shape& expected, float* dst) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw UserError(source_ + ": tensor \"" + name + "\" is missing", ExitCode::runtime);
  const Entry& e = it->second;
  std::vector<int64_t> want(expected.dims, expected.dims + expected.rank);
  if (e.shape != want)
    throw UserError(source_ + ": tensor \"" + name + "\" has shape " + shape_text(e.shape) + ", the model needs " +
                        shape_text(want),
                    ExitCode::runtime);
  const char* src = bytes_.data() + data_start_ + e.begin;
  if (!e.bfloat16) {
    std::memcpy(dst, src, e.end - e.begin);
    return;
  }
  for (std::size_t i = 0; i < (e.end - e.begin) / sizeof(uint16_t); ++i) {
    uint16_t h;
    std::memcpy(&h, src + i * sizeof(uint16_t), sizeof h);
    dst[i] = bfloat16_to_float(h);
  }
}

}  // namespace gpt
