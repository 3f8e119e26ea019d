// What planning needs to know of a device, as a value: the C++ device operations read it from the
// current device (device_query.hpp), the Python package from torch's, and tests make it up.
#pragma once

namespace tilefuse {

// sm_count 0: unknown (the models then assume 132, an H100 SXM's count).
struct DeviceFacts {
  int major = 0;
  int minor = 0;
  int sm_count = 0;

  constexpr bool is_sm90() const { return major == 9 && minor == 0; }
  constexpr int sms() const { return sm_count > 0 ? sm_count : 132; }
};

}  // namespace tilefuse
