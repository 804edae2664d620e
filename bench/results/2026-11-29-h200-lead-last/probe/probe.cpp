// Session 32's probe (not part of Kiln): nvJitLink's -verbose info log for one PTX, linked
// twice in one thread and then in 8 threads at once; the log's size tells whether ptxas's report
// is in it (530 bytes with it, 182 without: the CUDA compute cache answered).
//   g++ -O1 -std=c++20 probe.cpp -o probe -ldl -pthread
//   ./probe /usr/local/cuda/lib64/libnvJitLink.so kernel.ptx
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

typedef int (*create_t)(void**, unsigned, const char**);
typedef int (*add_t)(void*, int, const void*, size_t, const char*);
typedef int (*complete_t)(void*);
typedef int (*size_fn_t)(void*, size_t*);
typedef int (*log_t)(void*, char*);
typedef int (*destroy_t)(void**);

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  auto create = (create_t)dlsym(lib, "nvJitLinkCreate");
  auto add = (add_t)dlsym(lib, "nvJitLinkAddData");
  auto complete = (complete_t)dlsym(lib, "nvJitLinkComplete");
  auto info_size = (size_fn_t)dlsym(lib, "nvJitLinkGetInfoLogSize");
  auto info_log = (log_t)dlsym(lib, "nvJitLinkGetInfoLog");
  auto destroy = (destroy_t)dlsym(lib, "nvJitLinkDestroy");
  if (!create || !add || !complete || !info_size || !info_log || !destroy) return 1;
  std::ifstream f(argv[2]);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string ptx = ss.str();
  auto one = [&](int id, bool print) {
    const char* opts[] = {"-arch=sm_90", "-O3", "-verbose"};
    void* h = nullptr;
    const int r1 = create(&h, 3, opts);
    const int r2 = add(h, 2 /* NVJITLINK_INPUT_PTX */, ptx.data(), ptx.size(), "kernel.ptx");
    const int r3 = complete(h);
    size_t n = 0;
    info_size(h, &n);
    std::string s(n, '\0');
    if (n) info_log(h, s.data());
    printf("[%d] create %d add %d complete %d info log %zu bytes\n", id, r1, r2, r3, n);
    if (print) printf("%s\n---\n", s.c_str());
    destroy(&h);
  };
  one(0, true);
  one(1, false);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) ts.emplace_back(one, 10 + i, false);
  for (auto& t : ts) t.join();
  return 0;
}
