#pragma once
/// A quantized weight's link: the scheme that reads it (quantize/scheme.h) and that scheme's parts, a struct each
/// scheme defines in its own file. What every consumer needs of a link comes from the parts themselves: the tensors
/// it reads beside the weight (every PartName field), the scales among them, the report's `scaled_by` object (the
/// parts' describe()) and the statistics cache's key (every field, by the parts' fields()). A field the parts do not
/// list in fields() fails to compile (lists_every_field), so no field can be left out of the key.
///
/// A scheme's parts are an aggregate with
///   static constexpr auto fields() { return std::tuple{&Parts::a, &Parts::b, ...}; }  // every field, in order
///   nlohmann::ordered_json describe() const;  // the report's `scaled_by`
///   PartName scale;  // the tensor the weight's values are multiplied by, which the report names first
///   uint64_t stored_values;  // a sparse format's only: the values its file stores (Link::stored_values)
/// whose fields are strings, numbers, enums, PartNames, vectors and optionals of them, or structs that list their
/// own fields() the same way.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace precdetect {

struct QuantScheme;

/// A tensor a link reads beside its weight, by its record's name (empty: the link has none). `multiplies`: the
/// weight's values are multiplied by it (a scale, bitsandbytes' nested absmax), so that a zero there is worth a
/// warning (scales_zero); a bias, shift, zero point, code map, group index or shape holds zeros as ordinary values.
struct PartName {
  std::string name;
  bool multiplies = false;

  static constexpr auto fields() { return std::tuple{&PartName::name, &PartName::multiplies}; }
};

namespace link_fields {

/// Converts to any field's type, in unevaluated aggregate initializations only: how many fields an aggregate has
/// is how many of these it can be initialized from.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};

template <typename T, typename... Given>
consteval size_t aggregate_fields() {
  if constexpr (requires { T{Given{}..., AnyField{}}; })
    return aggregate_fields<T, Given..., AnyField>();
  else
    return sizeof...(Given);
}

template <typename T>
concept Listed = requires {
  T::fields();
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// Appends `value` to `key` so that no two different values append the same text: strings by their length.
template <typename T>
void append(std::string& key, const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    key += std::to_string(value.size()) + ':' + value;
  } else if constexpr (std::is_enum_v<T>) {
    key += std::to_string(static_cast<long long>(value));
  } else if constexpr (std::is_arithmetic_v<T>) {
    key += std::to_string(value);
  } else if constexpr (IsOptional<T>::value) {
    key += value ? "+" : "-";
    if (value) append(key, *value);
  } else if constexpr (IsVector<T>::value) {
    key += '[' + std::to_string(value.size());
    for (const auto& item : value) {
      key += ',';
      append(key, item);
    }
  } else {
    static_assert(Listed<T>, "a link's field is a string, number, enum, optional, vector or a struct with fields()");
    key += '{';
    std::apply([&](auto... field) { ((append(key, value.*field), key += ';'), ...); }, T::fields());
    key += '}';
  }
}

/// Every PartName within `value`, which names a tensor (and, with `multipliers_only`, multiplies the weight).
template <typename T>
void collect(const T& value, std::vector<std::string>& names, bool multipliers_only) {
  if constexpr (std::is_same_v<T, PartName>) {
    if (!value.name.empty() && (value.multiplies || !multipliers_only)) names.push_back(value.name);
  } else if constexpr (IsOptional<T>::value) {
    if (value) collect(*value, names, multipliers_only);
  } else if constexpr (IsVector<T>::value) {
    for (const auto& item : value) collect(item, names, multipliers_only);
  } else if constexpr (Listed<T>) {
    std::apply([&](auto... field) { (collect(value.*field, names, multipliers_only), ...); }, T::fields());
  }
}

}  // namespace link_fields

/// Whether `Parts::fields()` lists as many fields as `Parts` has: a field added to the struct and not to fields()
/// would be left out of the cache's key and of the tensors a link reads.
template <typename Parts>
constexpr bool lists_every_field() {
  return link_fields::aggregate_fields<Parts>() == std::tuple_size_v<decltype(Parts::fields())>;
}

/// A weight's link: the scheme whose stats() reads it, and its parts (held, immutable, shared by copies: the
/// analysis hands a link on to the report).
class Link {
 public:
  template <typename Parts>
  Link(const QuantScheme& scheme, Parts parts)
      : scheme_(&scheme), parts_(std::make_shared<const Held<Parts>>(std::move(parts))) {
    static_assert(lists_every_field<Parts>(), "Parts::fields() must list every field of Parts");
  }

  const QuantScheme& scheme() const { return *scheme_; }
  /// Whether the parts are a `Parts` (a scheme that links weights of two kinds tells them apart so).
  template <typename Parts>
  bool holds() const {
    return dynamic_cast<const Held<Parts>*>(parts_.get()) != nullptr;
  }
  /// The parts, as the scheme that made them defined them. Throws std::logic_error for another type.
  template <typename Parts>
  const Parts& parts() const {
    const auto* held = dynamic_cast<const Held<Parts>*>(parts_.get());
    if (held == nullptr) throw std::logic_error("Link::parts: the link holds another scheme's parts");
    return held->parts;
  }
  /// The tensor the weight's values are multiplied by, which the report names (`scaled_by.tensor`).
  const std::string& scale() const { return parts_->scale(); }
  /// Every tensor read beside the weight, in the parts' order.
  std::vector<std::string> tensors() const { return parts_->tensors(false); }
  /// The tensors among them that multiply the weight's values (scales_zero's).
  std::vector<std::string> multipliers() const { return parts_->tensors(true); }
  /// The report's `scaled_by` object.
  nlohmann::ordered_json describe() const { return parts_->describe(); }
  /// For a sparse format's weight (parts with a `stored_values` field), the values its file stores; the weight's
  /// numel counts the dense tensor's, the zeros between them included. nullopt for a dense one.
  std::optional<uint64_t> stored_values() const { return parts_->stored_values(); }
  /// Everything the link says about how the weight's values are computed: its scheme and every field of its parts.
  std::string key() const;

 private:
  struct Erased {
    virtual ~Erased() = default;
    virtual const std::string& scale() const = 0;
    virtual std::vector<std::string> tensors(bool multipliers_only) const = 0;
    virtual nlohmann::ordered_json describe() const = 0;
    virtual std::optional<uint64_t> stored_values() const = 0;
    virtual std::string fields_key() const = 0;
  };

  template <typename Parts>
  struct Held final : Erased {
    explicit Held(Parts held) : parts(std::move(held)) {}
    const std::string& scale() const override { return parts.scale.name; }
    std::vector<std::string> tensors(bool multipliers_only) const override {
      std::vector<std::string> names;
      link_fields::collect(parts, names, multipliers_only);
      return names;
    }
    nlohmann::ordered_json describe() const override { return parts.describe(); }
    std::optional<uint64_t> stored_values() const override {
      if constexpr (requires { parts.stored_values; })
        return parts.stored_values;
      else
        return std::nullopt;
    }
    std::string fields_key() const override {
      std::string key;
      link_fields::append(key, parts);
      return key;
    }
    Parts parts;
  };

  const QuantScheme* scheme_;
  std::shared_ptr<const Erased> parts_;
};

/// The report's `scaled_by` object as every scheme begins it: the scale tensor and the block of the weight's rows
/// and columns that one scale covers (null for a scheme whose scales run along another axis).
nlohmann::ordered_json scaled_by_json(const std::string& scale, std::optional<std::pair<int64_t, int64_t>> block);

/// A part's name in the report: null for none.
nlohmann::ordered_json part_json(const PartName& part);

}  // namespace precdetect
