// Status: the result of every host-side check and call. A failure carries a sentence that says what
// was wrong (naming the field and its value) and what to do about it. Host-only (std::string).
#pragma once

#include <sstream>
#include <string>
#include <utility>

namespace tilefuse {

enum class StatusCode {
  kSuccess,
  kInvalidArgument,  // a shape, stride, dtype or pointer the operation cannot take
  kMisaligned,       // an address or stride that breaks an alignment rule
  kNotSupported,     // valid, but this kernel or machine cannot run it
  kDriverError,      // a CUDA driver entry point failed or could not be found
  kCudaError,        // a CUDA runtime call failed
  kInternal,         // a tilefuse bug: please report it
};

char const* name_of(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status success() { return {}; }

  bool ok() const { return code_ == StatusCode::kSuccess; }
  StatusCode code() const { return code_; }
  std::string const& message() const { return message_; }
  // "invalid argument: <message>", or "success".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kSuccess;
  std::string message_;
};

// Builds a message from pieces: status_message("lda = ", lda, " is smaller than K = ", k).
template <class... Pieces>
std::string status_message(Pieces const&... pieces) {
  std::ostringstream out;
  (out << ... << pieces);
  return out.str();
}

template <class... Pieces>
Status invalid_argument(Pieces const&... pieces) {
  return {StatusCode::kInvalidArgument, status_message(pieces...)};
}
template <class... Pieces>
Status misaligned(Pieces const&... pieces) {
  return {StatusCode::kMisaligned, status_message(pieces...)};
}
template <class... Pieces>
Status not_supported(Pieces const&... pieces) {
  return {StatusCode::kNotSupported, status_message(pieces...)};
}

}  // namespace tilefuse

// Returns the Status of `expr` from the enclosing function when it is a failure.
#define TILEFUSE_RETURN_IF_ERROR(expr)              \
  do {                                              \
    ::tilefuse::Status tilefuse_status_ = (expr);   \
    if (!tilefuse_status_.ok()) return tilefuse_status_; \
  } while (0)
