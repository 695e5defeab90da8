#pragma once
// A label as a pair of views, for code that writes or reads labels without
// owning them (model/labels.h has the owned form, model::Label).

#include <string_view>

namespace gpucanary::model {

// Both views must outlive every use of the LabelView.
struct LabelView {
  std::string_view name;
  std::string_view value;
};

}  // namespace gpucanary::model
