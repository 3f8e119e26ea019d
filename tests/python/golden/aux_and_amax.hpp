// aux_and_amax, element float32; arguments (EpilogueArguments::set):
//   D: store <float32>
//   amax: col_reduce <float32>
//   aux: store <float32>
//   bias: row_broadcast <float32>
using Tree = tilefuse::epilogue::Store<
  "D",
  float,
  tilefuse::epilogue::ColReduce<
    "amax",
    tilefuse::epilogue::reduce::AbsMax,
    tilefuse::epilogue::GeluErf<
      tilefuse::epilogue::Store<
        "aux",
        float,
        tilefuse::epilogue::Add<
          tilefuse::epilogue::Acc,
          tilefuse::epilogue::RowBroadcast<"bias", float>>>>>>;
