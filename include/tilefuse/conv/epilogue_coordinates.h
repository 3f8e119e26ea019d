// The coordinate of an output element of a convolution, for epilogue trees: the output matrix's row
// is a flattened (n, p, q) for fprop (or (n, h, w) for dgrad), its column the channel.
//   OutputN = row // (P*Q),  OutputP = (row // Q) % P,  OutputQ = row % Q,  OutputChannel = col
// The extents come from scalars the Conv2d operation sets by itself when a tree uses them: "conv_P"
// and "conv_Q" (the output's spatial extents: P, Q for fprop; H, W for dgrad) and "conv_PQ" (their
// product). For wgrad the output is dw (K x R*S*C) and these names are left unset.
// Example: a bias that only applies to the first image, D = acc + where(OutputN == 0, bias, 0).
#pragma once

#include <tilefuse/epilogue/compute.h>
#include <tilefuse/epilogue/leaves.h>

namespace tilefuse::conv {

using OutputP_Extent = epilogue::Scalar<"conv_P">;
using OutputQ_Extent = epilogue::Scalar<"conv_Q">;
using OutputPQ_Extent = epilogue::Scalar<"conv_PQ">;

using OutputN = epilogue::FloorDiv<epilogue::Row, OutputPQ_Extent>;
using OutputP = epilogue::Mod<epilogue::FloorDiv<epilogue::Row, OutputQ_Extent>, OutputP_Extent>;
using OutputQ = epilogue::Mod<epilogue::Row, OutputQ_Extent>;
using OutputChannel = epilogue::Col;

}  // namespace tilefuse::conv
