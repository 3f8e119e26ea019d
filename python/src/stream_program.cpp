// tilefuse._C.StreamProgram: a fixed sequence of stream operations (event records and waits, 32-bit stream
// writes and waits, device copies) recorded once and enqueued per call with two values that change: the call's
// epoch (a signal's value) and its source pointer (a copy's source). tilefuse.overlap's signalled schedules
// enqueue a dozen such operations around each GEMM; from Python that cost ~0.2 ms of host time a call, as one
// C++ call it costs the driver's own time (docs/notes/parallel.md). Events live in a StreamEvents pool that
// several programs share (one call's reset is the next call's wait, whatever its shape).
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <tilefuse/runtime/host_adapter.hpp>

#include "cuda_errors.hpp"

namespace nb = nanobind;

namespace {

// Events without timing, made on the device current at construction (the caller's, as torch's are).
class StreamEvents {
 public:
  explicit StreamEvents(int count) {
    if (count < 0) throw std::invalid_argument("tilefuse: StreamEvents(count) needs count >= 0");
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    events_.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      cudaEvent_t event = nullptr;
      check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      events_.push_back(event);
    }
  }
  ~StreamEvents() {
    for (cudaEvent_t event : events_) (void)cudaEventDestroy(event);
  }
  StreamEvents(StreamEvents const&) = delete;
  StreamEvents& operator=(StreamEvents const&) = delete;

  cudaEvent_t at(std::int64_t i) const {
    if (i < 0 || i >= static_cast<std::int64_t>(events_.size())) {
      throw std::out_of_range("tilefuse: event " + std::to_string(i) + " of a pool of " +
                              std::to_string(events_.size()));
    }
    return events_[static_cast<std::size_t>(i)];
  }
  int size() const { return static_cast<int>(events_.size()); }
  int device() const { return device_; }

 private:
  int device_ = 0;
  std::vector<cudaEvent_t> events_;
};

// One operation: (kind, stream, a, b, c). stream 0 is the call's stream. Per kind:
//   "record"      event a recorded on the stream;
//   "wait_event"  the stream waits for event a;
//   "write"       the 32-bit word at address a set to b, plus the call's epoch where c is 1 (mod 2^32);
//   "wait"        the stream waits until the word at address a reaches that value (wrap-around >=);
//   "copy"        b bytes from the call's source pointer + c to address a (a device copy).
enum class Kind { kRecord, kWaitEvent, kWrite, kWait, kCopy };

Kind kind_of(std::string const& name) {
  if (name == "record") return Kind::kRecord;
  if (name == "wait_event") return Kind::kWaitEvent;
  if (name == "write") return Kind::kWrite;
  if (name == "wait") return Kind::kWait;
  if (name == "copy") return Kind::kCopy;
  throw std::invalid_argument("tilefuse: StreamProgram: unknown operation '" + name +
                              "' (record, wait_event, write, wait, copy)");
}

using OpTuple = std::tuple<std::string, std::uintptr_t, std::uint64_t, std::int64_t, std::int64_t>;

class StreamProgram {
 public:
  StreamProgram(std::shared_ptr<StreamEvents> events, std::vector<OpTuple> const& ops) : events_(std::move(events)) {
    if (!events_) throw std::invalid_argument("tilefuse: StreamProgram needs its StreamEvents");
    for (auto const& [name, stream, a, b, c] : ops) {
      Op op{kind_of(name), reinterpret_cast<cudaStream_t>(stream), a, b, c};
      if (op.kind == Kind::kRecord || op.kind == Kind::kWaitEvent) {
        op.event = events_->at(static_cast<std::int64_t>(a));
      } else if (a == 0 || (op.kind != Kind::kCopy && a % 4 != 0)) {
        throw std::invalid_argument("tilefuse: StreamProgram: a " + name + " needs a non-null" +
                                    (op.kind == Kind::kCopy ? "" : ", 4-byte aligned") + " device address");
      }
      if ((op.kind == Kind::kWrite || op.kind == Kind::kWait) && c != 0 && c != 1) {
        throw std::invalid_argument("tilefuse: StreamProgram: a " + name + "'s c is 1 (add the epoch) or 0");
      }
      if ((op.kind == Kind::kWrite || op.kind == Kind::kWait) && (b <= -(std::int64_t{1} << 32) ||
                                                                  b >= (std::int64_t{1} << 32))) {
        throw std::invalid_argument("tilefuse: StreamProgram: a " + name + "'s value b must fit 32 bits");
      }
      copies_ = copies_ || op.kind == Kind::kCopy;
      if (op.kind == Kind::kCopy && (b <= 0 || c < 0)) {
        throw std::invalid_argument("tilefuse: StreamProgram: a copy needs bytes > 0 and a source offset >= 0");
      }
      ops_.push_back(op);
    }
  }

  // Enqueues every operation in order; `stream` stands for stream 0, `source` is the copies' source pointer.
  void run(std::uintptr_t stream, std::uint32_t epoch, std::uintptr_t source) const {
    // Checked before anything is enqueued: a program that fails part way leaves its signals half sent.
    if (copies_ && source == 0) {
      throw std::invalid_argument("tilefuse: StreamProgram.run: a copy needs a source pointer");
    }
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    if (device != events_->device()) {
      throw std::invalid_argument("tilefuse: StreamProgram.run on device " + std::to_string(device) +
                                  ", but its events and streams are device " + std::to_string(events_->device()) +
                                  "'s: make that device current (torch.cuda.device)");
    }
    cudaStream_t const call = reinterpret_cast<cudaStream_t>(stream);
    for (Op const& op : ops_) {
      cudaStream_t const s = op.stream != nullptr ? op.stream : call;
      switch (op.kind) {
        case Kind::kRecord:
          check_cuda(cudaEventRecord(op.event, s), "cudaEventRecord");
          break;
        case Kind::kWaitEvent:
          check_cuda(cudaStreamWaitEvent(s, op.event, 0), "cudaStreamWaitEvent");
          break;
        case Kind::kWrite:
          raise_status(tilefuse::host_adapter().write_value32(s, reinterpret_cast<unsigned*>(op.a),
                                                              value(op, epoch)));
          break;
        case Kind::kWait:
          raise_status(tilefuse::host_adapter().wait_value32(s, reinterpret_cast<unsigned const*>(op.a),
                                                             value(op, epoch)));
          break;
        case Kind::kCopy:
          check_cuda(cudaMemcpyAsync(reinterpret_cast<void*>(op.a),
                                reinterpret_cast<void const*>(source + static_cast<std::uintptr_t>(op.c)),
                                static_cast<std::size_t>(op.b), cudaMemcpyDeviceToDevice, s),
                "cudaMemcpyAsync");
          break;
      }
    }
  }

  int size() const { return static_cast<int>(ops_.size()); }

 private:
  struct Op {
    Kind kind;
    cudaStream_t stream;
    std::uint64_t a;
    std::int64_t b;
    std::int64_t c;
    cudaEvent_t event = nullptr;
  };

  static unsigned value(Op const& op, std::uint32_t epoch) {
    return static_cast<unsigned>(static_cast<std::uint64_t>(op.b) + (op.c != 0 ? epoch : 0u));
  }

  std::shared_ptr<StreamEvents> events_;  // kept alive by every program that names them
  std::vector<Op> ops_;
  bool copies_ = false;
};

}  // namespace

void bind_stream_program(nb::module_& m) {
  nb::class_<StreamEvents>(m, "StreamEvents", "A pool of CUDA events (no timing) for StreamPrograms.")
      .def(nb::init<int>(), nb::arg("count"))
      .def("__len__", &StreamEvents::size);
  nb::class_<StreamProgram>(m, "StreamProgram",
                            "Stream operations recorded once, enqueued per call: run(stream, epoch, source).")
      .def(nb::init<std::shared_ptr<StreamEvents>, std::vector<OpTuple> const&>(), nb::arg("events"),
           nb::arg("ops"))
      .def("run", &StreamProgram::run, nb::arg("stream"), nb::arg("epoch"), nb::arg("source") = 0,
           "Enqueue every operation: stream 0's on `stream`, epoch-relative values from `epoch`, copies from "
           "`source`.")
      .def("__len__", &StreamProgram::size);
}
