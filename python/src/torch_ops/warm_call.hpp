// The warm calls of tilefuse's torch ops in C++ (tilefuse._torch_ops): a call whose tensors have the
// signature of an earlier, checked call repeats that call's launches without Python. Python plans, compiles
// and packs the first call (tilefuse.Conv2d, kernel_params.WarmCall) and hands its launches over here.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilefuse_torch {

// What of a call's tensors decides everything but their pointers (kernel_params.signature): per tensor its
// presence, sizes, strides, dtype, device and address modulo 16.
class Signature {
 public:
  static constexpr std::size_t kCapacity = 80;

  void add(at::Tensor const& t);
  void add_word(std::int64_t v) { push(v); }
  bool full() const { return overflow_; }
  bool operator==(Signature const& o) const;
  std::size_t hash() const;

 private:
  void push(std::int64_t v);
  std::array<std::int64_t, kCapacity> words_{};
  std::size_t size_ = 0;
  bool overflow_ = false;
};

struct SignatureHash {
  std::size_t operator()(Signature const& s) const { return s.hash(); }
};

// The C entry of tilefuse._C that runs a PreparedLaunch (launch.cpp: run_prepared_launch); set once at import.
using RunPreparedLaunch = int (*)(void*, int, std::uintptr_t, std::uint64_t const*, std::size_t, double const*,
                                  std::size_t, char*, std::size_t);
void set_run_prepared_launch(std::uintptr_t address);
// tilefuse._C's cudaMemsetAsync entry (launch.cpp: zero_async), which zeroes a split's workspace; set at import.
using ZeroAsync = int (*)(std::uint64_t, std::size_t, int, std::uintptr_t, char*, std::size_t);
void set_zero_async(std::uintptr_t address);

// One checked call (kernel_params.WarmCall) with a single stored output: allocate it (and the workspace),
// patch the pointers, launch on the current stream. Pointer slots: 0 a, 1 b, then the epilogue's tensor
// arguments in order, then the output, the workspace and the split-K tickets. A call whose operands the planner
// has copied into the Hopper kernel's layouts first runs its packing launches (gemm_pack.py), each from the
// caller's operand into its part of the call's one workspace, which then takes the operand's slot.
class WarmCall {
 public:
  struct Launch {
    void* native;                // a tilefuse._C.PreparedLaunch
    std::vector<int> slots;      // its pointer slots, as indices into the call's pointer list above
  };
  struct Pack {
    void* native;                // the packing copy's tilefuse._C.PreparedLaunch (pointer slots: source, copy)
    int operand;                 // 0: a, 1: b
    std::int64_t numel;          // the copy's elements
    at::ScalarType dtype;
  };

  WarmCall(int device, std::vector<Launch> launches, std::vector<std::int64_t> out_sizes, at::ScalarType out_dtype,
           std::int64_t partials_numel, bool zeroed, std::int64_t tickets_offset, int arguments,
           std::vector<Pack> packs = {});

  // The output of a call; `arguments` are the epilogue's tensors in the order of the slots. `out`: a tensor to
  // store into instead of a new one (the caller checked it: fits_out).
  at::Tensor call(at::Tensor const& a, at::Tensor const& b, std::vector<at::Tensor const*> const& arguments,
                  at::Tensor const* out = nullptr) const;
  // Whether `out` can take the call's output: its sizes and dtype, row-major contiguous, on the call's device,
  // 16-byte aligned (the kernels store 16-byte pieces), not recorded by autograd.
  bool fits_out(at::Tensor const& out) const;
  int device() const { return device_; }

 private:
  int device_;
  std::vector<Launch> launches_;
  std::vector<Pack> packs_;
  std::vector<std::int64_t> out_sizes_;
  at::ScalarType out_dtype_;
  std::int64_t partials_numel_;
  bool zeroed_;
  std::int64_t tickets_offset_;
  int arguments_;
  // One workspace per call holds the operands' copies and the split-K partials (one allocation, not three):
  // each copy's byte offset (by operand), the partials' offset, and the bytes in all.
  std::int64_t copy_offsets_[2] = {0, 0};
  std::int64_t partials_offset_ = 0;
  std::int64_t workspace_bytes_ = 0;
};

// A strided dgrad by phases (conv2d_phases.PhasedDgrad): one gather makes every phase's filter from w, each
// phase's stride-1 fprop runs warm and stores in place in dx (or, where its kernel has no row map, a strided
// copy interleaves its output into dx).
class PhasedDgrad {
 public:
  struct Phase {
    std::shared_ptr<WarmCall> fprop;
    std::int64_t a, b, crop_h, crop_w, extent_h, extent_w;  // dx[:, :, a::sh, b::sw] = out[crop : crop + extent]
    std::int64_t offset, taps_h, taps_w;                    // the filter's place in the gather, its taps
    bool in_place;  // fprop stores into dx itself (its kernel's row map): no copy
  };

  PhasedDgrad(std::vector<std::int64_t> out_size, std::vector<std::int64_t> filter_size, std::int64_t stride_h,
              std::int64_t stride_w, bool zero_fill, at::Tensor index, std::vector<Phase> phases);

  at::Tensor call(at::Tensor const& dy, at::Tensor const& w) const;

 private:
  std::vector<std::int64_t> out_size_, filter_size_;
  std::int64_t stride_h_, stride_w_;
  bool zero_fill_;
  at::Tensor index_;  // on the device of the call
  std::vector<Phase> phases_;
};

// A dgrad's warm call: direct or by phases.
struct Dgrad {
  std::shared_ptr<WarmCall> direct;
  std::shared_ptr<PhasedDgrad> phased;
  at::Tensor call(at::Tensor const& dy, at::Tensor const& w) const {
    return direct ? direct->call(dy, w, {}) : phased->call(dy, w);
  }
};

at::ScalarType scalar_type_named(std::string const& name);

}  // namespace tilefuse_torch
