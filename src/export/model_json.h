// ModelArchitecture and TensorInventory -> JSON: the documented result of `params`/`inspect`
// (docs/api.md). The api contract lives here, apart from the formulas.
#pragma once
#include "hf_config/json_input.h"
#include "model/architecture.h"
#include "model/tensor_inventory.h"

namespace memfit {

Json architecture_to_json(const ModelArchitecture& a);
Json parameters_to_json(const TensorInventory& inv);
/// Every tensor, layers and experts kept grouped (names carry {i} / {e}).
Json tensors_to_json(const TensorInventory& inv);

}  // namespace memfit
