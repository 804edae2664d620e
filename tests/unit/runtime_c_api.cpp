// Unit tests of the C API (runtime/c_api.h) that need no GPU: opening the runtime fails
// cleanly where there is no driver (and succeeds and closes where there is one), and every
// NULL argument is an error with a message, never a crash.
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "runtime/c_api.h"

TEST_CASE("C API: kiln_runtime_open fails cleanly or opens and closes", "[runtime]") {
  kiln_runtime* rt = reinterpret_cast<kiln_runtime*>(0x1);
  int rc = kiln_runtime_open(0, &rt);
  if (rc == KILN_OK) {
    REQUIRE(rt != nullptr);
    const char* name = nullptr;
    CHECK(kiln_device_name(rt, &name) == KILN_OK);
    CHECK(std::string(name).size() > 0);
    int major = 0, minor = 0;
    CHECK(kiln_device_compute_capability(rt, &major, &minor) == KILN_OK);
    CHECK(major > 0);
    CHECK(kiln_runtime_close(rt) == KILN_OK);
  } else {
    CHECK(rc == KILN_ERROR_NO_DEVICE);
    CHECK(rt == nullptr);
    std::string message = kiln_last_error();
    INFO(message);
    // No driver: the loader names libcuda; a driver without a device names CUDA.
    CHECK((message.find("libcuda") != std::string::npos ||
           message.find("CUDA") != std::string::npos));
  }
}

TEST_CASE("C API: NULL arguments are errors with messages", "[runtime]") {
  auto last = [] { return std::string(kiln_last_error()); };
  CHECK(kiln_runtime_open(0, nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(last() == "kiln_runtime_open: out is NULL");

  kiln_bundle* b = reinterpret_cast<kiln_bundle*>(0x1);
  CHECK(kiln_bundle_load(nullptr, "/nonexistent", &b) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(b == nullptr);
  CHECK(last().find("runtime is NULL") != std::string::npos);
  CHECK(kiln_bundle_load(nullptr, "/nonexistent", nullptr) == KILN_ERROR_INVALID_ARGUMENT);

  CHECK(kiln_bundle_use_cache(nullptr, "cache.json") == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_bundle_find(nullptr, "swiglu") == nullptr);
  CHECK(last() == "kiln_bundle_find: NULL argument");

  const char* name = nullptr;
  CHECK(kiln_device_name(nullptr, &name) == KILN_ERROR_INVALID_ARGUMENT);
  int major = 0, minor = 0;
  CHECK(kiln_device_compute_capability(nullptr, &major, &minor) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_runtime_make_current(nullptr) == KILN_ERROR_INVALID_ARGUMENT);

  CUdeviceptr ptrs[1] = {0};
  int64_t symbols[1] = {1};
  CHECK(kiln_launch(nullptr, nullptr, ptrs, 1, symbols, 1) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(last() == "kiln_launch: kernel is NULL");

  // Closing and freeing NULL do nothing, like free().
  CHECK(kiln_runtime_close(nullptr) == KILN_OK);
  CHECK(kiln_bundle_free(nullptr) == KILN_OK);
}

TEST_CASE("C API: the last error is per thread", "[runtime]") {
  CHECK(kiln_runtime_open(0, nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread([&] { other = kiln_last_error(); }).join();
  CHECK(other.empty());
  CHECK(std::string(kiln_last_error()) == "kiln_runtime_open: out is NULL");
}
