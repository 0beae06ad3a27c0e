// A convolution's weights as its kernels multiply with them (conv_tile.h's PackedWeights: the
// direct sums' per group, Winograd's transformed ones per group and tile element), kept beside the
// weight buffer (Buffer::set_derived) as the small products keep theirs (packed_weights.h). The
// kernels pack on every call otherwise: resnet18's weights packed afresh each run, Winograd's
// 16/9 of them twice over, were tens of megabytes of new pages a forward pass at batch 1.
// The same rule as for matrices: packed for the call, kept from the second call with the same
// contents and layout on (a served model's weights), never kept for weights that change every
// step; KILN_PACK_WEIGHTS=0 keeps nothing. Private to devices/cpu.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/devices/cpu/conv_tile.h"
#include "kiln/devices/cpu/packed_weights.h"
#include "kiln/memory/memory.h"

namespace kiln::cpu::conv_detail {

// What the packed form depends on besides the contents: the algorithm and the weight's shape.
struct ConvWeightsLayout {
  enum class Form { direct, winograd } form = Form::direct;
  std::int64_t groups = 1, rows = 0, depth = 0;  // per group: rows x depth (Winograd: out x in channels)
  bool operator==(const ConvWeightsLayout&) const = default;
};

class ConvWeights final : public BufferDerived {
 public:
  ConvWeights(ConvWeightsLayout layout, std::vector<PackedWeights> packed)
      : layout_(layout), packed_(std::move(packed)) {}
  const ConvWeightsLayout& layout() const { return layout_; }
  const std::vector<PackedWeights>& packed() const { return packed_; }  // empty: a first use's marker

 private:
  ConvWeightsLayout layout_;
  std::vector<PackedWeights> packed_;
};

// The packed weights of `buffer` in `layout`: the kept copy where there is one, else `pack()`'s
// result (kept from the second call with this layout on).
inline std::shared_ptr<const ConvWeights> conv_weights(Buffer& buffer, const ConvWeightsLayout& layout,
                                                       const std::function<std::vector<PackedWeights>()>& pack) {
  if (!weight_packing_enabled()) return std::make_shared<const ConvWeights>(layout, pack());
  const std::shared_ptr<const BufferDerived> seen = buffer.derived();
  const auto* known = dynamic_cast<const ConvWeights*>(seen.get());
  if (known && known->layout() == layout) {
    if (!known->packed().empty()) return std::static_pointer_cast<const ConvWeights>(seen);
    // The second call with these contents: keep what it packs. (Two threads may both pack;
    // either copy is the same.)
    auto made = std::make_shared<const ConvWeights>(layout, pack());
    count_packed_weight();
    buffer.set_derived(made);
    return made;
  }
  buffer.set_derived(std::make_shared<const ConvWeights>(layout, std::vector<PackedWeights>{}));
  return std::make_shared<const ConvWeights>(layout, pack());
}

}  // namespace kiln::cpu::conv_detail
