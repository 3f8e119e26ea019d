// A HostAdapter for host tests: records every call, runs nothing, answers with `result`; and a guard that
// installs one for a test and restores the default afterwards, even when the test fails.
#pragma once

#include <tilefuse/runtime/host_adapter.hpp>

#include <memory>
#include <vector>

namespace tilefuse {

class FakeAdapter : public HostAdapter {
 public:
  char const* name() const override { return "fake"; }
  Status encode_tensor_map_tiled(TensorMapTiledArgs const& args, CUtensorMap* out) override {
    tiled.push_back(args);
    outs.push_back(out);
    return result;
  }
  Status encode_tensor_map_im2col(TensorMapIm2colArgs const& args, CUtensorMap* out) override {
    im2col.push_back(args);
    outs.push_back(out);
    return result;
  }
  Status launch(LaunchConfig const& config, void const* kernel, void** kernel_args) override {
    launches.push_back(config);
    kernels.push_back(kernel);
    (void)kernel_args;
    return result;
  }

  Status result;
  std::vector<TensorMapTiledArgs> tiled;
  std::vector<TensorMapIm2colArgs> im2col;
  std::vector<CUtensorMap*> outs;
  std::vector<LaunchConfig> launches;
  std::vector<void const*> kernels;
};

class ScopedAdapter {
 public:
  explicit ScopedAdapter(std::shared_ptr<HostAdapter> adapter) { set_host_adapter(std::move(adapter)); }
  ~ScopedAdapter() { set_host_adapter(nullptr); }
  ScopedAdapter(ScopedAdapter const&) = delete;
  ScopedAdapter& operator=(ScopedAdapter const&) = delete;
};

}  // namespace tilefuse
