// algorithm_spec_from_json: the `algorithm:` section as JSON -> AlgorithmSpec (nlohmann/json is
// private to this file). Numbers keep their JSON kind (integer vs float); nested values inside *_args
// other than scalars are rejected with the offending key.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "algorithm/preset.h"
#include "core/error.h"

namespace trinity::algo {

namespace {

ArgValue scalar(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return ArgValue();
  if (j.is_boolean()) return ArgValue(j.get<bool>());
  if (j.is_number_integer()) return ArgValue(j.get<int64_t>());
  if (j.is_number()) return ArgValue(j.get<double>());
  if (j.is_string()) return ArgValue(j.get<std::string>());
  throw ConfigError("algorithm", strcat(where, " must be a scalar (null, bool, number or string), got ", j.dump()));
}

}  // namespace

AlgorithmSpec algorithm_spec_from_json(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError("algorithm", strcat("algorithm section is not valid JSON: ", e.what()));
  }
  AlgorithmSpec spec;
  if (j.is_null()) return spec;
  if (!j.is_object()) throw ConfigError("algorithm", "the algorithm section must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = it.key();
    if (it->is_object()) {
      ArgMap m;
      for (auto a = it->begin(); a != it->end(); ++a) {
        if (key == "optimizer" && !a->is_primitive()) continue;  // e.g. betas: [0.9, 0.999]; the trainer reads it
        m[a.key()] = scalar(*a, strcat("algorithm.", key, ".", a.key()));
      }
      spec.set_map(key, m);
    } else if (it->is_null() && std::find(AlgorithmSpec::map_keys().begin(), AlgorithmSpec::map_keys().end(), key) !=
                                    AlgorithmSpec::map_keys().end()) {
      continue;  // `policy_loss_fn_args: null` = defaults
    } else {
      spec.set(key, scalar(*it, "algorithm." + key));
    }
  }
  return spec;
}

}  // namespace trinity::algo
