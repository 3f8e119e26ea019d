// Status names and formatting.
#include <tilefuse/core/status.hpp>

namespace tilefuse {

char const* name_of(StatusCode code) {
  switch (code) {
    case StatusCode::kSuccess: return "success";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kMisaligned: return "misaligned";
    case StatusCode::kNotSupported: return "not supported";
    case StatusCode::kDriverError: return "CUDA driver error";
    case StatusCode::kCudaError: return "CUDA runtime error";
    case StatusCode::kInternal: return "internal error (a tilefuse bug; please report it)";
  }
  return "unknown status";
}

std::string Status::to_string() const {
  if (ok()) return "success";
  return std::string(name_of(code_)) + ": " + message_;
}

}  // namespace tilefuse
