// Portability macros shared by every tilefuse header: nvcc, NVRTC and plain host compilers.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TILEFUSE_HOST_DEVICE __host__ __device__
#define TILEFUSE_DEVICE __device__
#else
#define TILEFUSE_HOST_DEVICE
#define TILEFUSE_DEVICE
#endif

#define TILEFUSE_FORCEINLINE inline __attribute__((always_inline))

// True while compiling device code (nvcc device pass or NVRTC).
#if defined(__CUDA_ARCH__)
#define TILEFUSE_IS_DEVICE_CODE 1
#else
#define TILEFUSE_IS_DEVICE_CODE 0
#endif
