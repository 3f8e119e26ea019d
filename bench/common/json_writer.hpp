// A small streaming JSON writer: objects, arrays, strings (escaped), numbers (non-finite as null).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tilefuse::bench {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  // The key of the next value inside an object.
  JsonWriter& key(std::string_view k) {
    separate();
    write_string(k);
    out_ << ": ";
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s) {
    separate();
    write_string(s);
    return *this;
  }
  JsonWriter& value(char const* s) { return value(std::string_view(s)); }
  JsonWriter& value(std::string const& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    separate();
    out_ << (b ? "true" : "false");
    return *this;
  }
  JsonWriter& value(double d) {
    separate();
    if (!std::isfinite(d)) {
      out_ << "null";
    } else {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.10g", d);
      out_ << buffer;
    }
    return *this;
  }
  JsonWriter& value(std::int64_t i) {
    separate();
    out_ << i;
    return *this;
  }
  JsonWriter& value(int i) { return value(static_cast<std::int64_t>(i)); }
  JsonWriter& value(std::uint64_t i) {
    separate();
    out_ << i;
    return *this;
  }

  template <class T>
  JsonWriter& field(std::string_view k, T const& v) {
    key(k);
    return value(v);
  }

 private:
  JsonWriter& open(char c) {
    separate();
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    bool const empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ << c;
    if (first_.empty()) out_ << '\n';
    return *this;
  }
  // Writes the comma and indentation before a value (not after a key).
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ << ',';
    first_.back() = false;
    newline();
  }
  void newline() { out_ << '\n' << std::string(2 * first_.size(), ' '); }
  void write_string(std::string_view s) {
    out_ << '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ << "\\\""; break;
        case '\\': out_ << "\\\\"; break;
        case '\n': out_ << "\\n"; break;
        case '\t': out_ << "\\t"; break;
        case '\r': out_ << "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
            out_ << buffer;
          } else {
            out_ << c;
          }
      }
    }
    out_ << '"';
  }

  std::ostream& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace tilefuse::bench
