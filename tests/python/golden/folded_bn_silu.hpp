// folded_bn_silu, element bfloat16; arguments (EpilogueArguments::set):
//   D: store <bfloat16>
//   scale: row_broadcast <bfloat16>
//   shift: row_broadcast <bfloat16>
using Tree = tilefuse::epilogue::Store<
  "D",
  tilefuse::bfloat16_t,
  tilefuse::epilogue::Silu<
    tilefuse::epilogue::Add<
      tilefuse::epilogue::Mul<
        tilefuse::epilogue::Acc,
        tilefuse::epilogue::RowBroadcast<"scale", tilefuse::bfloat16_t>>,
      tilefuse::epilogue::RowBroadcast<"shift", tilefuse::bfloat16_t>>>>;
