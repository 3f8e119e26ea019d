// checkerboard, element float32; arguments (EpilogueArguments::set):
//   D: store <float32>
//   q: scalar
using Tree = tilefuse::epilogue::Store<
  "D",
  float,
  tilefuse::epilogue::Where<
    tilefuse::epilogue::Equal<
      tilefuse::epilogue::Mod<
        tilefuse::epilogue::Add<
          tilefuse::epilogue::FloorDiv<tilefuse::epilogue::Row, tilefuse::epilogue::Scalar<"q">>,
          tilefuse::epilogue::FloorDiv<tilefuse::epilogue::Col, tilefuse::epilogue::Constant<4.0f>>>,
        tilefuse::epilogue::Constant<2.0f>>,
      tilefuse::epilogue::Constant<0.0f>>,
    tilefuse::epilogue::Acc,
    tilefuse::epilogue::Negate<tilefuse::epilogue::Acc>>>;
