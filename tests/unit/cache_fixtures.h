// Shared fixtures of the autotune cache tests (cache_*.cpp): sample keys and entries, and a
// temporary directory removed at the end of a test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bundle/cache.h"

namespace kiln::cache::testing {

inline GpuKey h200() {
  return {"NVIDIA H200", 9, 0, 132};
}
inline GpuKey a100() {
  return {"NVIDIA A100-SXM4-80GB", 8, 0, 108};
}

inline Key sample_key(std::string hash = "fnv1a:0123456789abcdef", int64_t m = 4096,
                      int64_t n = 1024) {
  Key k;
  k.kernel_hash = std::move(hash);
  k.step = 0;
  k.gpu = h200();
  k.driver_version = 13000;
  k.kiln_version = "0.1.0";
  k.shape = {{"M", m}, {"N", n}};
  return k;
}

inline Entry sample_entry(Key key = sample_key(), std::string tuned_at = "2025-06-01T12:00:00Z") {
  Entry e;
  e.key = std::move(key);
  e.kernel = "bias_gelu";
  e.winner = {{{"block", 256}, {"unroll", 2}, {"vec", 8}}, 10.5, 0.02};
  e.runner_up = Timing{{{"block", 128}, {"unroll", 2}, {"vec", 8}}, 10.75, 0.03};
  e.default_config = {{{"block", 128}, {"unroll", 2}, {"vec", 8}}, 10.75, 0.03};
  e.how = "grid 18";
  e.deterministic = true;
  e.candidates = 18;
  e.rejected = {"block=512 vec=8 unroll=4: 255 registers, spills"};
  e.tuned_at = std::move(tuned_at);
  return e;
}

/// A fresh directory under /tmp, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kiln_cache_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace kiln::cache::testing
