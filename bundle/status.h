// Results of operations that can fail for reasons outside Kiln's control (files, JSON, the
// CUDA driver). A Status is ok or carries a one-line message; Result<T> is a T or a Status.
// The ok path allocates nothing.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kiln {

/// Why a Status failed, where a caller acts on the reason: only the absence of a CUDA driver
/// (libcuda cannot be loaded) lets a GPU test or `kiln run` report a skip (exit 77); every
/// other failure, a driver too old or a device that will not open included, is an error.
/// no_device: the driver loaded and works, but has no device of the ordinal asked for (the C
/// API reports it, with no_driver, as KILN_ERROR_NO_DEVICE).
enum class StatusCode { ok, error, no_driver, no_device };

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status ok_status() { return Status(); }
  static Status error(std::string message, StatusCode code = StatusCode::error) {
    Status s;
    s.code_ = code == StatusCode::ok ? StatusCode::error : code;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  /// True only when libcuda.so.1 could not be loaded at all.
  bool no_driver() const { return code_ == StatusCode::no_driver; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status error) : v_(std::move(error)) {}
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  const std::string& message() const { return status().message(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kiln
