// See shape_recorder.h. The table is open addressing with linear probing and no deletion:
// slots go from null to a record once, under mu_, and a published record never changes, so a
// reader that finds a record by probing without the lock sees it whole (release/acquire).
#include "runtime/shape_recorder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bundle/shape_record.h"

namespace kiln {

struct ShapeRecorder::Record {
  uint64_t hash;
  std::string kernel, kernel_hash;
  std::vector<int64_t> values;
  bool matches(const bundle::KernelInfo& info, std::span<const int64_t> v) const {
    return values.size() == v.size() && std::equal(values.begin(), values.end(), v.begin()) &&
           kernel == info.name && kernel_hash == info.hash;
  }
};

namespace {

// FNV-1a 64 over the kernel's name and hash and the values' bytes.
uint64_t fingerprint(const bundle::KernelInfo& info, std::span<const int64_t> values) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto bytes = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 0x100000001b3ull;
    }
  };
  bytes(info.name.data(), info.name.size());
  bytes("", 1);
  bytes(info.hash.data(), info.hash.size());
  bytes(values.data(), values.size_bytes());
  return h;
}

}  // namespace

ShapeRecorder::ShapeRecorder(std::string path)
    : path_(std::move(path)), slots_(new std::atomic<const Record*>[kSlots]) {
  for (size_t i = 0; i < kSlots; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

ShapeRecorder::~ShapeRecorder() {
  if (fd_ >= 0) ::close(fd_);
}

ShapeRecorder* ShapeRecorder::from_environment() {
  static ShapeRecorder* const recorder = []() -> ShapeRecorder* {
    const char* path = std::getenv("KILN_RECORD_SHAPES");
    if (path == nullptr || *path == '\0') return nullptr;
    return new ShapeRecorder(path);  // lives as long as the process: launches may come late
  }();
  return recorder;
}

void ShapeRecorder::record(const bundle::KernelInfo& info,
                           std::span<const int64_t> values) noexcept {
  const uint64_t h = fingerprint(info, values);
  for (size_t i = h % kSlots;; i = (i + 1) % kSlots) {
    const Record* r = slots_[i].load(std::memory_order_acquire);
    if (r == nullptr) break;
    if (r->hash == h && r->matches(info, values)) return;
  }
  try {
    add(info, values, h);
  } catch (...) {
    // Out of memory while recording: the launch goes on.
  }
}

void ShapeRecorder::add(const bundle::KernelInfo& info, std::span<const int64_t> values,
                        uint64_t h) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  size_t i = h % kSlots;
  for (;; i = (i + 1) % kSlots) {  // again: another thread may have added it meanwhile
    const Record* r = slots_[i].load(std::memory_order_relaxed);
    if (r == nullptr) break;
    if (r->hash == h && r->matches(info, values)) return;
  }
  if (records_.size() >= kMaxShapes) {
    say_once(fmt::format("more than {} distinct shapes; the others are not recorded in {}",
                         kMaxShapes, path_));
    return;
  }
  records_.push_back(std::make_unique<Record>(
      Record{h, info.name, info.hash, std::vector<int64_t>(values.begin(), values.end())}));
  slots_[i].store(records_.back().get(), std::memory_order_release);

  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      say_once(
          fmt::format("cannot open {}: {}; shapes are not recorded", path_, std::strerror(errno)));
      return;
    }
  }
  const std::string line = shapes::record_line(info.name, info.hash, info.symbols, values);
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size())) {
    say_once(fmt::format("writing {} failed: {}; no more shapes are recorded", path_,
                         n < 0 ? std::strerror(errno) : "short write"));
  }
}

void ShapeRecorder::say_once(const std::string& message) {
  if (stopped_) return;
  stopped_ = true;
  std::fprintf(stderr, "kiln: KILN_RECORD_SHAPES: %s\n", message.c_str());
}

}  // namespace kiln
