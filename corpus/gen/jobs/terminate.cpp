// A C++ data pipeline that throws out of a destructor-less path -> std::terminate.
#include <iostream>
#include <stdexcept>
#include <thread>
#include <vector>
static void decode(int shard) {
  if (shard == 3) throw std::runtime_error("corrupt record header in shard 3 (offset 4096)");
}
int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "thread";
  std::cout << "decoder pool starting, mode=" << mode << std::endl;
  if (mode == "thread") {
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) ts.emplace_back([i] { decode(i); });
    for (auto& t : ts) t.join();
  } else if (mode == "noexcept") {
    struct Guard {
      ~Guard() noexcept(false) {}
    };
    auto f = []() noexcept { decode(3); };
    f();
  } else if (mode == "bad_alloc") {
    std::vector<char> v;
    v.reserve(static_cast<size_t>(1) << 62);
  } else if (mode == "join") {
    std::thread t([] {});
    // destroyed while joinable: terminate called without an active exception
  }
  return 0;
}
