// KILN_RECORD_SHAPES=FILE: the runtime appends to FILE one line per (kernel, symbol values)
// pair that the process launches (bundle/shape_record.h has the format), so that
// `kiln tune --shapes-from FILE` tunes the shapes an application really uses.
//
// Invariants:
//  - Unset (or empty), it costs a launch one test of a pointer initialized once.
//  - Set, a launch of a shape this process has seen costs a hash and a lock-free probe of a
//    fixed table of immutable records, and allocates nothing. A new shape takes a mutex,
//    inserts its record and appends its line in one write() to FILE, opened with O_APPEND:
//    lines of concurrent threads and processes never interleave.
//  - Recording never fails a launch. A file that cannot be opened or written is said once on
//    stderr ("kiln: KILN_RECORD_SHAPES: ..."), and recording stops; launches go on.
//  - At most kMaxShapes distinct pairs per process are recorded (said once when exceeded).
//  - A child forked after recording began inherits the pairs already written and does not
//    write them again. (Like any mutex, mu_ is not reset in a child forked while another
//    thread held it: fork from a thread that is not launching, or exec.)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bundle/manifest.h"

namespace kiln {

class ShapeRecorder {
 public:
  static constexpr size_t kMaxShapes = size_t{1} << 15;

  /// Records into `path` (opened, created with mode 0644, on the first new shape).
  explicit ShapeRecorder(std::string path);
  ~ShapeRecorder();
  ShapeRecorder(const ShapeRecorder&) = delete;
  ShapeRecorder& operator=(const ShapeRecorder&) = delete;

  /// Appends `info`'s line for `values` (one per symbol, in info.symbols order) unless this
  /// recorder has written it already. Thread-safe; never throws.
  void record(const bundle::KernelInfo& info, std::span<const int64_t> values) noexcept;

  /// The process's recorder, made on first use from KILN_RECORD_SHAPES; nullptr when the
  /// variable is unset or empty.
  static ShapeRecorder* from_environment();

 private:
  struct Record;
  static constexpr size_t kSlots = kMaxShapes * 2;  // load factor <= 1/2
  void add(const bundle::KernelInfo& info, std::span<const int64_t> values, uint64_t h);
  void say_once(const std::string& message);

  std::string path_;
  std::unique_ptr<std::atomic<const Record*>[]> slots_;
  std::mutex mu_;  // guards what follows
  std::vector<std::unique_ptr<Record>> records_;
  int fd_ = -1;
  bool stopped_ = false;  // the file failed, or the table is full
};

/// What Kernel::launch calls after its arguments passed their checks.
inline void record_launch_shape(const bundle::KernelInfo& info, std::span<const int64_t> values) {
  if (ShapeRecorder* r = ShapeRecorder::from_environment()) r->record(info, values);
}

}  // namespace kiln
