#include "data/dataset_manifest.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/utf8.h"

namespace gpt {

namespace {

nlohmann::ordered_json sources_json(const std::vector<SourceFile>& files) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const SourceFile& f : files) {
    nlohmann::ordered_json j = {{"path", f.path}, {"size", f.size}, {"mtime_ns", f.mtime_ns}, {"xxh64", f.hash}};
    if (f.skipped) j["skipped"] = "not valid UTF-8";
    array.push_back(j);
  }
  return array;
}

std::vector<SourceFile> sources_from_json(const nlohmann::json& array) {
  std::vector<SourceFile> files;
  for (const auto& j : array)
    files.push_back({j.at("path").get<std::string>(), j.at("size").get<uint64_t>(), j.at("mtime_ns").get<int64_t>(),
                     j.at("xxh64").get<std::string>(), j.contains("skipped")});
  return files;
}

Vocab vocab_from_string(const std::string& text, const std::string& path) {
  std::vector<char32_t> chars;
  Utf8Error error;
  if (!decode_utf8(text, chars, error) || chars.empty() || !std::is_sorted(chars.begin(), chars.end()) ||
      std::adjacent_find(chars.begin(), chars.end()) != chars.end())
    throw UserError(path + ": \"vocab\" is not a sorted string of distinct characters");
  return Vocab::from_code_points(std::move(chars));
}

}  // namespace

std::string DatasetManifest::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "gpt-dataset";
  j["format_version"] = kDatasetFormatVersion;
  j["vocab_kind"] = gpt::to_string(vocab.kind());
  j["vocab_size"] = vocab.size();
  if (vocab.kind() == VocabKind::chars) {
    std::string chars;  // every symbol is one code point, so one string lists them unambiguously
    for (char32_t cp : vocab.symbols()) append_utf8(cp, chars);
    j["vocab"] = chars;
  }
  j["token_type"] = gpt::to_string(token_type);
  j["byte_order"] = "little";
  j["train_tokens"] = train_tokens;
  j["val_tokens"] = val_tokens;
  j["val_fraction"] = val_fraction;
  j["file_separator"] = std::string(1, kFileSeparator);
  j["train_sources"] = sources_json(train_sources);
  j["val_sources"] = sources_json(val_sources);
  j["content_xxh64"] = content_hash;
  j["prepared_at"] = prepared_at;
  return j.dump(2) + "\n";
}

DatasetManifest DatasetManifest::from_json(const std::string& text, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("format", "") != "gpt-dataset")
    throw UserError(path + ": not a prepared dataset's manifest (no \"format\": \"gpt-dataset\")");
  if (j.value("format_version", 0) != kDatasetFormatVersion)
    throw UserError(path + ": dataset format version " + std::to_string(j.value("format_version", 0)) +
                    ", this gpt reads version " + std::to_string(kDatasetFormatVersion) +
                    "; prepare the dataset again with gpt prepare");
  try {
    DatasetManifest m;
    m.vocab = parse_vocab_kind(j.at("vocab_kind").get<std::string>(), path) == VocabKind::bytes
                  ? Vocab::bytes()
                  : vocab_from_string(j.at("vocab").get<std::string>(), path);
    m.token_type = parse_token_type(j.at("token_type").get<std::string>(), path);
    m.train_tokens = j.at("train_tokens").get<int64_t>();
    m.val_tokens = j.at("val_tokens").get<int64_t>();
    m.val_fraction = j.at("val_fraction").get<double>();
    m.train_sources = sources_from_json(j.at("train_sources"));
    m.val_sources = sources_from_json(j.at("val_sources"));
    m.content_hash = j.at("content_xxh64").get<std::string>();
    m.prepared_at = j.value("prepared_at", "");
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": malformed dataset manifest: " + e.what());
  }
}

bool is_prepared_dataset(const std::string& folder) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(folder) / kManifestName, ec);
}

DatasetManifest read_manifest(const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / kManifestName).string();
  return DatasetManifest::from_json(read_whole_file(path), path);
}

}  // namespace gpt
