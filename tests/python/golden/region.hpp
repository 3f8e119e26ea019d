// region, element float32; arguments (EpilogueArguments::set):
//   D: store <float32>
//   r0: scalar
using Tree = tilefuse::epilogue::Store<
  "D",
  float,
  tilefuse::epilogue::Where<
    tilefuse::epilogue::Less<tilefuse::epilogue::Row, tilefuse::epilogue::Scalar<"r0">>,
    tilefuse::epilogue::Sigmoid<tilefuse::epilogue::Acc>,
    tilefuse::epilogue::Tanh<tilefuse::epilogue::Acc>>>;
