#include "notify/gpu_chart.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

namespace {

uint32_t be32(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
         uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}

// The PNG's pixels (RGB rows), read back through its IHDR and IDAT with zlib.
struct Image {
  uint32_t w = 0, h = 0;
  std::vector<uint8_t> rgb;
  std::array<int, 3> at(int x, int y) const {
    size_t i = (size_t(y) * w + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

Image decode(const std::string& png) {
  Image img;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  std::string idat;
  for (size_t at = 8; at + 8 <= png.size();) {
    uint32_t len = be32(png, at);
    std::string type = png.substr(at + 4, 4);
    std::string data = png.substr(at + 8, len);
    uint32_t crc = be32(png, at + 8 + len);
    std::string body = type + data;
    EXPECT_EQ(crc, crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size())));
    if (type == "IHDR") {
      img.w = be32(data, 0);
      img.h = be32(data, 4);
    } else if (type == "IDAT") {
      idat += data;
    }
    at += 12 + len;
  }
  std::vector<uint8_t> raw(size_t(img.h) * (img.w * 3 + 1));
  uLongf n = uLongf(raw.size());
  EXPECT_EQ(
      uncompress(raw.data(), &n, reinterpret_cast<const Bytef*>(idat.data()), uLong(idat.size())),
      Z_OK);
  for (uint32_t y = 0; y < img.h; ++y) {
    EXPECT_EQ(raw[size_t(y) * (img.w * 3 + 1)], 0);  // filter byte
    img.rgb.insert(img.rgb.end(), raw.begin() + size_t(y) * (img.w * 3 + 1) + 1,
                   raw.begin() + size_t(y + 1) * (img.w * 3 + 1));
  }
  return img;
}

const std::string k_inventory = R"({"type":"inventory","uuid":"GPU-a","memory_total":1000})"
                                "\n";

TEST(GpuChart, NowLinesTakeEachGpusLastReadingWhileTheJobRan) {
  std::string jsonl =
      R"({"type":"inventory","uuid":"GPU-a","job_index":0,"name":"NVIDIA H200","memory_total":1073741824})"
      "\n"
      R"({"type":"inventory","uuid":"GPU-b","job_index":1,"name":"NVIDIA H200"})"
      "\n"
      R"({"type":"sample","t":1,"uuid":"GPU-a","memory_used":536870912,"utilization":97})"
      "\n"
      R"({"type":"sample","t":2,"uuid":"GPU-a","memory_used":536870912,"utilization":0})"
      "\n"
      R"({"type":"sample","t":3,"uuid":"GPU-a","memory_used":0,"after_end":true})"
      "\n"
      R"({"type":"sample","t":2,"uuid":"GPU-b","utiliza)";  // being written
  auto lines = notify::gpu_now_lines(jsonl);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "GPU 0 (NVIDIA H200): utilisation 0%, memory 512.0 MiB of 1.0 GiB (read 2.0s into "
            "the run)");
  EXPECT_TRUE(notify::gpu_now_lines("").empty());
}

TEST(GpuChart, MemoryLineAndTheEndMarked) {
  std::string jsonl =
      k_inventory + R"({"type":"sample","t":0,"uuid":"GPU-a","memory_used":500,"utilization":100})"
                    "\n"
                    R"({"type":"sample","t":10,"uuid":"GPU-a","memory_used":500,"utilization":100})"
                    "\n"
                    R"({"type":"sample","t":12,"uuid":"GPU-a","memory_used":0,"after_end":true})"
                    "\n";
  Image img = decode(notify::gpu_chart_png(jsonl));
  ASSERT_EQ(img.w, 640u);
  ASSERT_EQ(img.h, 160u);
  // Half full: the solid line at the middle height, up to t=10 of 12.
  int mid = 160 - 6 - int((160 - 12) * 0.5 + 0.5);
  bool memory_line = false;
  for (int dy = -1; dy <= 1; ++dy) {
    memory_line = memory_line || img.at(100, mid + dy) == std::array<int, 3>{9, 105, 218};
  }
  EXPECT_TRUE(memory_line);
  // The after-end reading (0 bytes) is not drawn: nothing blue at the bottom.
  EXPECT_NE(img.at(600, 160 - 7), (std::array<int, 3>{9, 105, 218}));
  // The end, in red, at the right edge (t=12 of 12).
  EXPECT_EQ(img.at(640 - 6, 80), (std::array<int, 3>{207, 34, 46}));
}

TEST(GpuChart, NothingToDrawWithFewerThanTwoReadings) {
  EXPECT_EQ(notify::gpu_chart_png(""), "");
  EXPECT_EQ(notify::gpu_chart_png(k_inventory +
                                  R"({"type":"sample","t":0,"uuid":"GPU-a","memory_used":5})"
                                  "\nnot json\n"),
            "");
}

}  // namespace
