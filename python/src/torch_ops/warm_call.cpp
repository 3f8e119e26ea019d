#include "warm_call.hpp"

#include <ATen/ops/empty.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <stdexcept>

namespace tilefuse_torch {

namespace {

RunPreparedLaunch g_run = nullptr;
ZeroAsync g_zero = nullptr;

// The current torch stream of a CUDA device as a raw handle (no link to libc10_cuda: the device guard's
// registry finds CUDA's implementation, loaded with torch).
std::uintptr_t current_stream(int device) {
  c10::Device const d(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
  return reinterpret_cast<std::uintptr_t>(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(d)
                                              .native_handle());
}

std::uint64_t address(at::Tensor const& t) { return reinterpret_cast<std::uint64_t>(t.data_ptr()); }

// Each part of a call's workspace starts on a 256-byte boundary (TMA wants 16 bytes; the packing copies write
// whole 128-byte rows).
constexpr std::int64_t kWorkspaceAlignment = 256;
constexpr std::int64_t round_up(std::int64_t bytes, std::int64_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

void Signature::push(std::int64_t v) {
  if (size_ == kCapacity) {
    overflow_ = true;
    return;
  }
  words_[size_++] = v;
}

void Signature::add(at::Tensor const& t) {
  if (!t.defined()) {
    push(-1);
    return;
  }
  push(t.dim());
  for (std::int64_t s : t.sizes()) push(s);
  for (std::int64_t s : t.strides()) push(s);
  push(static_cast<std::int64_t>(t.scalar_type()));
  push(static_cast<std::int64_t>(t.device().type()) * 1024 + t.device().index());
  push(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16));
}

bool Signature::operator==(Signature const& o) const {
  if (size_ != o.size_ || overflow_ != o.overflow_) return false;
  for (std::size_t i = 0; i < size_; ++i) {
    if (words_[i] != o.words_[i]) return false;
  }
  return true;
}

std::size_t Signature::hash() const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
  for (std::size_t i = 0; i < size_; ++i) {
    h ^= static_cast<std::uint64_t>(words_[i]);
    h *= 1099511628211ull;
  }
  return static_cast<std::size_t>(h);
}

void set_run_prepared_launch(std::uintptr_t address) { g_run = reinterpret_cast<RunPreparedLaunch>(address); }
void set_zero_async(std::uintptr_t address) { g_zero = reinterpret_cast<ZeroAsync>(address); }

at::ScalarType scalar_type_named(std::string const& name) {
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  if (name == "float32") return at::kFloat;
  throw std::invalid_argument("tilefuse._torch_ops: no fast path for outputs of dtype " + name);
}

WarmCall::WarmCall(int device, std::vector<Launch> launches, std::vector<std::int64_t> out_sizes,
                   at::ScalarType out_dtype, std::int64_t partials_numel, bool zeroed, std::int64_t tickets_offset,
                   int arguments, std::vector<Pack> packs)
    : device_(device), launches_(std::move(launches)), packs_(std::move(packs)), out_sizes_(std::move(out_sizes)),
      out_dtype_(out_dtype),
      partials_numel_(partials_numel), zeroed_(zeroed), tickets_offset_(tickets_offset), arguments_(arguments) {
  int const slots = 2 + arguments_ + 3;
  if (slots > 16) throw std::invalid_argument("tilefuse._torch_ops: a warm call takes at most 11 epilogue tensors");
  for (Launch const& l : launches_) {
    for (int s : l.slots) {
      if (s < 0 || s >= slots) throw std::invalid_argument("tilefuse._torch_ops: a launch's pointer slot is out of range");
    }
  }
  for (Pack const& p : packs_) {
    if (p.operand != 0 && p.operand != 1) throw std::invalid_argument("tilefuse._torch_ops: a copy is of a or b");
    copy_offsets_[p.operand] = workspace_bytes_;
    workspace_bytes_ += round_up(p.numel * static_cast<std::int64_t>(c10::elementSize(p.dtype)), kWorkspaceAlignment);
  }
  partials_offset_ = workspace_bytes_;
  workspace_bytes_ += partials_numel_ * static_cast<std::int64_t>(sizeof(float));
}

bool WarmCall::fits_out(at::Tensor const& out) const {
  return out_sizes_.size() == 2 && out.defined() && out.sizes().equals(out_sizes_) && out.scalar_type() == out_dtype_ &&
         out.device() == c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_)) &&
         out.is_contiguous() && reinterpret_cast<std::uintptr_t>(out.data_ptr()) % 16 == 0 &&
         !out.requires_grad();
}

at::Tensor WarmCall::call(at::Tensor const& a, at::Tensor const& b, std::vector<at::Tensor const*> const& arguments,
                          at::Tensor const* into) const {
  TORCH_CHECK(g_run != nullptr, "tilefuse._torch_ops: tilefuse._C's launch entry was not set");
  TORCH_CHECK(static_cast<int>(arguments.size()) == arguments_, "tilefuse._torch_ops: ", arguments.size(),
              " epilogue tensors for a call that takes ", arguments_);
  auto const options = at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_)));
  at::Tensor out = into != nullptr ? *into
                                   : at::empty(out_sizes_, options.dtype(out_dtype_), out_sizes_.size() == 4
                                                                                      ? c10::MemoryFormat::ChannelsLast
                                                                                      : c10::MemoryFormat::Contiguous);
  std::uintptr_t const stream = current_stream(device_);
  char error[512] = {0};
  // The call's workspace: the operands' copies in the kernel's layouts, where the planner copies them, then the
  // split-K partials (it lives until the launches below are enqueued; the caching allocator keeps it for this
  // stream's later work).
  at::Tensor workspace;
  if (workspace_bytes_ > 0) workspace = at::empty({workspace_bytes_}, options.dtype(at::kByte));
  std::uint64_t const base = workspace.defined() ? address(workspace) : 0;
  std::uint64_t const partials = partials_numel_ > 0 ? base + static_cast<std::uint64_t>(partials_offset_) : 0;
  if (partials_numel_ > 0 && zeroed_) {
    TORCH_CHECK(g_zero != nullptr, "tilefuse._torch_ops: tilefuse._C's zeroing entry was not set");
    if (g_zero(partials, static_cast<std::size_t>(partials_numel_) * sizeof(float), device_, stream, error,
               sizeof(error)) != 0) {
      throw std::runtime_error(error);
    }
  }
  std::uint64_t copies[2] = {0, 0};
  for (Pack const& p : packs_) {
    copies[p.operand] = base + static_cast<std::uint64_t>(copy_offsets_[p.operand]);
    std::uint64_t const io[2] = {address(p.operand == 0 ? a : b), copies[p.operand]};
    if (g_run(p.native, device_, stream, io, 2, nullptr, 0, error, sizeof(error)) != 0) throw std::runtime_error(error);
  }
  std::array<std::uint64_t, 16> all{};
  TORCH_CHECK(2 + arguments.size() + 3 <= all.size(), "tilefuse._torch_ops: too many epilogue tensors");
  std::size_t n = 0;
  all[n++] = copies[0] != 0 ? copies[0] : address(a);
  all[n++] = copies[1] != 0 ? copies[1] : address(b);
  for (at::Tensor const* t : arguments) all[n++] = address(*t);
  all[n++] = address(out);
  all[n++] = partials;
  all[n++] = partials != 0 ? partials + static_cast<std::uint64_t>(tickets_offset_) : 0;
  std::array<std::uint64_t, 16> slots{};
  for (Launch const& l : launches_) {
    for (std::size_t i = 0; i < l.slots.size(); ++i) slots[i] = all[static_cast<std::size_t>(l.slots[i])];
    if (g_run(l.native, device_, stream, slots.data(), l.slots.size(), nullptr, 0, error, sizeof(error)) != 0) {
      throw std::runtime_error(error);
    }
  }
  return out;
}

PhasedDgrad::PhasedDgrad(std::vector<std::int64_t> out_size, std::vector<std::int64_t> filter_size,
                         std::int64_t stride_h, std::int64_t stride_w, bool zero_fill, at::Tensor index,
                         std::vector<Phase> phases)
    : out_size_(std::move(out_size)), filter_size_(std::move(filter_size)), stride_h_(stride_h), stride_w_(stride_w),
      zero_fill_(zero_fill), index_(std::move(index)), phases_(std::move(phases)) {}

at::Tensor PhasedDgrad::call(at::Tensor const& dy, at::Tensor const& w) const {
  at::Tensor dx = at::empty(out_size_, dy.options(), c10::MemoryFormat::ChannelsLast);
  if (zero_fill_) dx.zero_();
  at::Tensor const dx_nhwc = dx.permute({0, 2, 3, 1});
  at::Tensor const flat = w.permute({0, 2, 3, 1}).reshape({-1}).take(index_);
  std::int64_t const k = filter_size_[0], c = filter_size_[1];
  for (Phase const& p : phases_) {
    std::int64_t const size = c * p.taps_h * p.taps_w * k;
    at::Tensor const filter = flat.slice(0, p.offset, p.offset + size).view({c, p.taps_h, p.taps_w, k}).permute({0, 3, 1, 2});
    if (p.in_place) {
      p.fprop->call(dy, filter, {}, &dx);
      continue;
    }
    at::Tensor const out = p.fprop->call(dy, filter, {}).permute({0, 2, 3, 1});
    dx_nhwc.slice(1, p.a, c10::nullopt, stride_h_).slice(2, p.b, c10::nullopt, stride_w_)
        .copy_(out.slice(1, p.crop_h, p.crop_h + p.extent_h).slice(2, p.crop_w, p.crop_w + p.extent_w));
  }
  return dx;
}

}  // namespace tilefuse_torch
