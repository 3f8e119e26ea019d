// Named layer lists for `tilefuse-bench conv2d --preset NAME`. The device machine gets only this
// repository, so the layers of ../shared/workloads/*_conv_layers.json are copied here (same order).
//
// resnet50: ResNet-50's bottleneck convolutions in their stride-1 forms, NHWC, batch 64 (12 layers).
// resnet50-strided: its six strided convolutions (torchvision's v1.5: layer2-4's first 3x3 and downsample 1x1),
//           batch 64: their dgrads run by phases (conv2d_dgrad_by_phases.hpp).
// unet:     UNet-style 3x3 convolutions, batch 8 (6 layers).
#include <array>
#include <span>

#include "conv_problems.hpp"

namespace tilefuse::bench {
namespace {

struct Layer {
  std::int64_t n, h, w, c, k, r, s, stride, pad, dilation;
};

// resnet50_conv_layers.json
constexpr std::array kResnet50 = {
    Layer{64, 56, 56, 64, 64, 1, 1, 1, 0, 1},    Layer{64, 56, 56, 64, 64, 3, 3, 1, 1, 1},
    Layer{64, 56, 56, 64, 256, 1, 1, 1, 0, 1},   Layer{64, 56, 56, 256, 128, 1, 1, 1, 0, 1},
    Layer{64, 28, 28, 128, 128, 3, 3, 1, 1, 1},  Layer{64, 28, 28, 128, 512, 1, 1, 1, 0, 1},
    Layer{64, 28, 28, 512, 256, 1, 1, 1, 0, 1},  Layer{64, 14, 14, 256, 256, 3, 3, 1, 1, 1},
    Layer{64, 14, 14, 256, 1024, 1, 1, 1, 0, 1}, Layer{64, 14, 14, 1024, 512, 1, 1, 1, 0, 1},
    Layer{64, 7, 7, 512, 512, 3, 3, 1, 1, 1},    Layer{64, 7, 7, 512, 2048, 1, 1, 1, 0, 1},
};

// layer2.0.conv2, layer2.0.downsample, layer3.0.conv2, layer3.0.downsample, layer4.0.conv2, layer4.0.downsample
constexpr std::array kResnet50Strided = {
    Layer{64, 56, 56, 128, 128, 3, 3, 2, 1, 1}, Layer{64, 56, 56, 256, 512, 1, 1, 2, 0, 1},
    Layer{64, 28, 28, 256, 256, 3, 3, 2, 1, 1}, Layer{64, 28, 28, 512, 1024, 1, 1, 2, 0, 1},
    Layer{64, 14, 14, 512, 512, 3, 3, 2, 1, 1}, Layer{64, 14, 14, 1024, 2048, 1, 1, 2, 0, 1},
};

// unet_conv_layers.json
constexpr std::array kUnet = {
    Layer{8, 64, 64, 320, 320, 3, 3, 1, 1, 1},   Layer{8, 64, 64, 640, 640, 3, 3, 1, 1, 1},
    Layer{8, 64, 64, 1280, 1280, 3, 3, 1, 1, 1}, Layer{8, 32, 32, 320, 320, 3, 3, 1, 1, 1},
    Layer{8, 32, 32, 640, 640, 3, 3, 1, 1, 1},   Layer{8, 32, 32, 1280, 1280, 3, 3, 1, 1, 1},
};

std::optional<std::span<Layer const>> layers_of(std::string_view name) {
  if (name == "resnet50") return std::span<Layer const>(kResnet50);
  if (name == "resnet50-strided") return std::span<Layer const>(kResnet50Strided);
  if (name == "unet") return std::span<Layer const>(kUnet);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> conv_preset_names() { return {"resnet50", "resnet50-strided", "unet"}; }

std::optional<std::vector<ConvProblem>> conv_preset_problems(std::string_view name, ConvPresetOptions const& options) {
  auto const layers = layers_of(name);
  if (!layers) return std::nullopt;
  std::vector<ConvProblem> problems;
  for (DType dtype : options.dtypes) {
    for (ConvMode mode : options.modes) {
      for (std::size_t i = 0; i < layers->size(); ++i) {
        Layer const& l = (*layers)[i];
        ConvProblem p;
        p.shape = Conv2dProblem{.N = l.n, .H = l.h, .W = l.w, .C = l.c, .K = l.k, .R = l.r, .S = l.s,
                                .pad_h = l.pad, .pad_w = l.pad, .stride_h = l.stride, .stride_w = l.stride,
                                .dilation_h = l.dilation, .dilation_w = l.dilation, .groups = 1, .mode = mode};
        p.dtype = dtype;
        p.epilogue = options.epilogue;
        p.split_k = options.split_k;
        p.overrides = options.overrides;
        p.layer = std::string(name) + " #" + std::to_string(i);
        problems.push_back(std::move(p));
      }
    }
  }
  return problems;
}

}  // namespace tilefuse::bench
