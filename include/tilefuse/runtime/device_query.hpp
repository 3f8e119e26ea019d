// Attributes of the current device that planning needs on every call, asked once per thread and device.
#pragma once

#include <cuda_runtime_api.h>

#include <tilefuse/runtime/device_facts.hpp>

namespace tilefuse {

// The planners' facts of the current device ({0, 0, 0} when there is no usable device).
inline DeviceFacts current_device_facts() {
  thread_local int cached_device = -1;
  thread_local DeviceFacts cached;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  if (device != cached_device) {
    DeviceFacts facts;
    if (cudaDeviceGetAttribute(&facts.major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&facts.minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&facts.sm_count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    cached_device = device;
    cached = facts;
  }
  return cached;
}

// SMs of the current device; 0 when there is no usable device (callers choose their fallback).
inline int current_device_sm_count() { return current_device_facts().sm_count; }

}  // namespace tilefuse
