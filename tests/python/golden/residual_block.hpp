// residual_block, element bfloat16; arguments (EpilogueArguments::set):
//   D: store <bfloat16>
//   alpha: scalar
//   bias: row_broadcast <bfloat16>
//   residual: aux_load <bfloat16>
using Tree = tilefuse::epilogue::Store<
  "D",
  tilefuse::bfloat16_t,
  tilefuse::epilogue::Add<
    tilefuse::epilogue::Relu<
      tilefuse::epilogue::Add<
        tilefuse::epilogue::Mul<tilefuse::epilogue::Scalar<"alpha">, tilefuse::epilogue::Acc>,
        tilefuse::epilogue::RowBroadcast<"bias", tilefuse::bfloat16_t>>>,
    tilefuse::epilogue::AuxLoad<"residual", tilefuse::bfloat16_t>>>;
