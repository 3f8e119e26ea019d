// Attributes of the current device that planning needs on every call, asked once per thread and device.
#pragma once

#include <cuda_runtime_api.h>

namespace tilefuse {

// SMs of the current device; 0 when there is no usable device (callers choose their fallback).
inline int current_device_sm_count() {
  thread_local int cached_device = -1;
  thread_local int cached_sms = 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (device != cached_device) {
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) {
      (void)cudaGetLastError();
      return 0;
    }
    cached_device = device;
    cached_sms = sms;
  }
  return cached_sms;
}

}  // namespace tilefuse
