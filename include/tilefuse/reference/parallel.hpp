// The host references split over threads by output rows: the GPU tests check large problems against them, and
// a 16-core machine runs them that much sooner. Each output element is still computed by one thread in the
// serial loop's order, so the results are bitwise those of the serial loop.
#pragma once

#include <algorithm>
#include <thread>
#include <vector>

#include <tilefuse/core/coord.h>

namespace tilefuse::reference {

// body(begin, end) over [0, rows) in contiguous blocks, on up to hardware_concurrency() threads (at most 32)
// when rows * work_per_row multiply-adds are enough to pay for them (else on this thread alone).
template <class Body>
void for_row_blocks(index_t rows, double work_per_row, Body&& body) {
  index_t const cores = std::max<index_t>(1, static_cast<index_t>(std::thread::hardware_concurrency()));
  index_t const threads = std::min<index_t>({cores, 32, rows});
  if (threads <= 1 || static_cast<double>(rows) * work_per_row < 4e6) {
    body(index_t{0}, rows);
    return;
  }
  index_t const per = (rows + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (index_t begin = per; begin < rows; begin += per) {
    pool.emplace_back([&body, begin, per, rows] { body(begin, std::min(rows, begin + per)); });
  }
  body(index_t{0}, std::min(rows, per));
  for (std::thread& t : pool) t.join();
}

}  // namespace tilefuse::reference
