// Mainloop fusion for fprop: a per-input-channel transform of the activation x applied as its tiles
// are loaded, x' = activation(x * scale[c] + shift[c]) (pre-activation BN-ReLU-Conv), so the
// normalized tensor is never written out. Padding stays zero, as the math requires (the transform
// applies to the input, and the convolution pads the transformed input).
//
// Conv2d takes the transform as a type: NoInputTransform (the default: nothing compiled) or
// ScaleShiftActivation<Act> with Act an epilogue op (epilogue::op::Relu, ...) or IdentityActivation.
#pragma once

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/ops.h>

namespace tilefuse::conv {

struct NoInputTransform {
  static constexpr bool kEnabled = false;
};

struct IdentityActivation {
  static constexpr int kArity = 1;
  TILEFUSE_HOST_DEVICE static float apply(float x) { return x; }
};

template <class Activation = epilogue::op::Relu>
struct ScaleShiftActivation {
  static constexpr bool kEnabled = true;
  TILEFUSE_HOST_DEVICE static float apply(float x, float scale, float shift) {
    return Activation::apply(x * scale + shift);
  }
};

// The per-channel vectors the transform reads (C floats each), passed with the kernel's parameters.
struct InputTransformParams {
  float const* scale = nullptr;
  float const* shift = nullptr;
};

}  // namespace tilefuse::conv
