// gelu_bias, element float16; arguments (EpilogueArguments::set):
//   D: store <float16>
//   bias: row_broadcast <float16>
using Tree = tilefuse::epilogue::Store<
  "D",
  tilefuse::half_t,
  tilefuse::epilogue::GeluErf<
    tilefuse::epilogue::Add<
      tilefuse::epilogue::Acc,
      tilefuse::epilogue::RowBroadcast<"bias", tilefuse::half_t>>>>;
