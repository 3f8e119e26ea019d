// plain, element bfloat16; arguments (EpilogueArguments::set):
//   D: store <bfloat16>
using Tree = tilefuse::epilogue::Store<"D", tilefuse::bfloat16_t, tilefuse::epilogue::Acc>;
