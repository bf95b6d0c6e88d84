// A C++ feature cache that keeps every decoded shard in memory until the host's
// (here: the address space's) memory runs out: operator new throws std::bad_alloc,
// nobody catches it, std::terminate aborts.
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

int main() {
  constexpr size_t k_shard = 64u << 20;
  std::vector<std::unique_ptr<char[]>> cache;
  for (int shard = 0;; ++shard) {
    auto buf = std::make_unique<char[]>(k_shard);
    std::memset(buf.get(), shard & 0xff, k_shard);  // really used, not just reserved
    cache.push_back(std::move(buf));
    std::cout << "cached shard " << shard << " (" << (cache.size() * 64) << " MiB)" << std::endl;
  }
}
