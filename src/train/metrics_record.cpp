#include "train/metrics_record.h"

#include <tuple>

namespace gpt {

namespace {

constexpr const char* kType = "type";

template <class Record>
struct Key {
  const char* name;
  std::variant<int64_t Record::*, double Record::*> member;
};

constexpr auto train_keys() {
  using R = TrainRecord;
  return std::to_array<Key<R>>({{"iter", &R::iter},
                                {"loss", &R::loss},
                                {"lr", &R::lr},
                                {"grad_norm", &R::grad_norm},
                                {"ms_per_iter", &R::ms_per_iter},
                                {"tokens_per_s", &R::tokens_per_s},
                                {"mfu", &R::mfu},
                                {"elapsed_s", &R::elapsed_s},
                                {"exchange_ms", &R::exchange_ms}});
}

constexpr auto eval_keys() {
  using R = EvalRecord;
  return std::to_array<Key<R>>({{"iter", &R::iter},
                                {"train_loss", &R::train_loss},
                                {"val_loss", &R::val_loss},
                                {"lr", &R::lr},
                                {"eval_s", &R::eval_s},
                                {"elapsed_s", &R::elapsed_s}});
}

template <class Record, std::size_t N>
nlohmann::ordered_json write(const char* type, const Record& record, const std::array<Key<Record>, N>& keys) {
  nlohmann::ordered_json j = {{kType, type}};
  for (const Key<Record>& key : keys) std::visit([&](auto member) { j[key.name] = record.*member; }, key.member);
  return j;
}

template <class Record, std::size_t N>
Record read(const nlohmann::json& j, const std::array<Key<Record>, N>& keys) {
  Record record;
  for (const Key<Record>& key : keys)
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(record.*member)>;
          record.*member = j.value(key.name, T{0});
        },
        key.member);
  return record;
}

}  // namespace

nlohmann::ordered_json to_json(const TrainRecord& record) {
  nlohmann::ordered_json j = write("train", record, train_keys());
  if (record.exchange_ms <= 0) j.erase("exchange_ms");
  return j;
}

nlohmann::ordered_json to_json(const EvalRecord& record) { return write("eval", record, eval_keys()); }

nlohmann::ordered_json to_json(const StartRecord& record) {
  nlohmann::ordered_json j = {{kType, "start"}};
  j.update(record.fields);
  return j;
}

MetricsRecord parse_metrics_record(const nlohmann::json& line) {
  const std::string type = line.value(kType, "");
  if (type == "train") return read(line, train_keys());
  if (type == "eval") return read(line, eval_keys());
  if (type == "start") {
    StartRecord start;
    for (auto it = line.begin(); it != line.end(); ++it)
      if (it.key() != kType) start.fields[it.key()] = it.value();
    return start;
  }
  return std::monostate{};
}

}  // namespace gpt
