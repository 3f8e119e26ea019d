// Compiles, with NVRTC, one translation unit that includes every device-side header (every `.h` under
// the given folder; `.hpp` headers are host-only) followed by a device source, once per arch. Exits
// non-zero with NVRTC's log on the first failure, or when it found no header to check.
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string headers_root;
  std::vector<std::string> include_dirs;
  std::string source_path;
  std::vector<std::string> archs;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const flag = argv[i];
    std::string const value = argv[i + 1];
    if (flag == "--headers") o->headers_root = value;
    else if (flag == "--include") o->include_dirs.push_back(value);
    else if (flag == "--source") o->source_path = value;
    else if (flag == "--arch") o->archs.push_back(value);
    else return false;
  }
  return !o->headers_root.empty() && !o->source_path.empty() && !o->archs.empty();
}

// Every .h below root/tilefuse, as the include path a user would write.
std::vector<std::string> device_headers(std::string const& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> headers;
  for (auto const& entry : fs::recursive_directory_iterator(fs::path(root) / "tilefuse")) {
    if (entry.is_regular_file() && entry.path().extension() == ".h") {
      headers.push_back(fs::relative(entry.path(), root).generic_string());
    }
  }
  std::sort(headers.begin(), headers.end());
  return headers;
}

bool compile(std::string const& source, std::string const& arch, std::vector<std::string> const& include_dirs) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), "nvrtc_header_check.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    std::fprintf(stderr, "nvrtcCreateProgram failed\n");
    return false;
  }
  std::vector<std::string> options = {"-std=c++20", "--gpu-architecture=" + arch};
  for (auto const& dir : include_dirs) options.push_back("-I" + dir);
  std::vector<char const*> option_ptrs;
  for (auto const& o : options) option_ptrs.push_back(o.c_str());
  nvrtcResult const result = nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    std::fprintf(stderr, "NVRTC failed for %s: %s\n%s\n", arch.c_str(), nvrtcGetErrorString(result), log.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: nvrtc_header_check --headers DIR --source FILE --arch sm_XX [--arch ...] [--include DIR ...]\n");
    return 2;
  }
  std::vector<std::string> const headers = device_headers(options.headers_root);
  if (headers.empty()) {
    std::fprintf(stderr, "no device headers (*.h) found under %s/tilefuse: nothing was checked\n",
                 options.headers_root.c_str());
    return 1;
  }
  std::ostringstream source;
  for (auto const& h : headers) source << "#include <" << h << ">\n";
  std::ifstream extra(options.source_path);
  if (!extra) {
    std::fprintf(stderr, "cannot read %s\n", options.source_path.c_str());
    return 1;
  }
  source << extra.rdbuf();

  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  for (auto const& arch : options.archs) {
    if (!compile(source.str(), arch, options.include_dirs)) return 1;
    std::printf("NVRTC %d.%d compiled %zu device headers + %s for %s\n", major, minor, headers.size(),
                options.source_path.c_str(), arch.c_str());
  }
  for (auto const& h : headers) std::printf("  %s\n", h.c_str());
  return 0;
}
