// The Hopper conv loaders' stepped k-tile coordinates (conv/kernel/ktile_coordinates.h) against the
// division they replace, k-tile after k-tile: PixelWalk on images smaller and larger than a k-tile (a
// step of whole images, rows and columns), past the last image, from split-K starting pixels; KTileTap
// over every tap of 1x1, 3x3 and 7x7 filters with several channels per tap.
#include <random>

#include <gtest/gtest.h>

#include <tilefuse/conv/kernel/ktile_coordinates.h>

namespace tilefuse::conv::sm90 {
namespace {

ConvGeometry output_geometry(int n, int p, int q, int stride, int pad) {
  ConvGeometry g;
  g.N = n, g.P = p, g.Q = q, g.stride_h = g.stride_w = stride, g.pad_h = g.pad_w = pad;
  return g;
}

void expect_walk_matches_division(ConvGeometry const& g, int first_pixel, int step, int steps) {
  PixelWalk walk(g, first_pixel, step);
  for (int i = 0; i < steps; ++i) {
    int const pixel = first_pixel + i * step;
    WindowOrigin const expected = WindowOrigin::of(g, pixel);
    WindowOrigin const got = walk.origin(g);
    ASSERT_EQ(got.n, expected.n) << "pixel " << pixel << ", P x Q = " << g.P << " x " << g.Q << ", step " << step;
    ASSERT_EQ(got.h, expected.h) << "pixel " << pixel << ", P x Q = " << g.P << " x " << g.Q << ", step " << step;
    ASSERT_EQ(got.w, expected.w) << "pixel " << pixel << ", P x Q = " << g.P << " x " << g.Q << ", step " << step;
    walk.advance(g);
  }
}

TEST(ConvKTileCoordinates, PixelWalkMatchesDivisionOnResNetAndUNetImages) {
  for (int side : {7, 14, 28, 32, 56, 64}) {
    ConvGeometry const g = output_geometry(64, side, side, 1, 1);
    int const pixels = g.N * g.P * g.Q;
    // Starting pixels of splits, each inside the tensor (a start past its end would walk nothing).
    for (int first : {0, 64, pixels / 2 / 64 * 64, pixels - 64, 64 * 7}) {
      ASSERT_LT(first, pixels) << "side " << side;
      // Through the whole tensor and one k-tile past it (the last k-tile of a split may run off the end).
      expect_walk_matches_division(g, first, 64, (pixels - first) / 64 + 2);
    }
  }
}

TEST(ConvKTileCoordinates, PixelWalkMatchesDivisionWhenAStepSpansImagesOrIsShorterThanARow) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> extent(1, 90), stride(1, 3), pad(0, 3);
  for (int trial = 0; trial < 400; ++trial) {
    ConvGeometry const g = output_geometry(5, extent(rng), extent(rng), stride(rng), pad(rng));
    int const pixels = g.N * g.P * g.Q;
    for (int step : {64, 128, 1, 3}) {
      int const first = std::uniform_int_distribution<int>(0, pixels - 1)(rng) / step * step;
      expect_walk_matches_division(g, first, step, (pixels - first) / step + 2);
    }
  }
}

// What the stepped tap replaces: k-tile k0's tap, (r, s) and first channel by division.
KTileTap divided_tap(int k0, int channels, int filter_width) {
  int const tap = k0 / channels;
  int const r = tap / filter_width;
  return {k0 - tap * channels, tap, r, tap - r * filter_width};
}

void expect_same_tap(KTileTap const& got, KTileTap const& expected) {
  EXPECT_EQ(got.c0, expected.c0);
  EXPECT_EQ(got.tap, expected.tap);
  EXPECT_EQ(got.r, expected.r);
  EXPECT_EQ(got.s, expected.s);
}

TEST(ConvKTileCoordinates, KTileTapMatchesDivisionOverEveryTap) {
  for (int filter : {1, 3, 7}) {
    for (int channels : {64, 128, 320, 640, 2048}) {
      for (int k_tile : {64, 128}) {
        if (channels % k_tile != 0) continue;
        KTileTap tap;  // k-tile 0's
        for (int k0 = 0; k0 < filter * filter * channels; k0 += k_tile) {
          SCOPED_TRACE(testing::Message() << "k0 " << k0 << ", " << filter << "x" << filter << ", C " << channels);
          expect_same_tap(tap, divided_tap(k0, channels, filter));
          tap.advance(k_tile, channels, filter);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tilefuse::conv::sm90
