// The FP8 GEMM's experiment configs: each an A/B against a default (promotion every 256 of K, the in-line
// promotion with one partial set, 2-CTA multicast of B), measured by tilefuse-fp8-bench and kept correct by
// tests/gpu/scaled_gemm_test.cu. gemm_config.h keeps the templates; docs/notes/gemm_fp8.md the measurements.
#pragma once

#include <tilefuse/gemm/gemm_config.h>

namespace tilefuse::gemm {
using Sm90Fp8PromotedEvery2Config = Sm90Promoted<Sm90Fp8MediumConfig, 2>;
using Sm90Fp8PromotedInLineConfig = Sm90PromotionInLine<Sm90Fp8PromotedConfig>;
using Sm90Fp8BlockScaledInLineConfig = Sm90PromotionInLine<Sm90Fp8BlockScaledConfig>;
using Sm90Fp8PingPongMulticastConfig = Sm90Multicast<Sm90Fp8PingPongConfig>;
using Sm90Fp8PromotedMulticastConfig = Sm90Multicast<Sm90Fp8PromotedConfig>;
using Sm90Fp8BlockScaledMulticastConfig = Sm90Multicast<Sm90Fp8BlockScaledConfig>;
}  // namespace tilefuse::gemm
