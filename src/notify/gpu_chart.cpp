#include "notify/gpu_chart.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "util/text.hpp"

namespace notify {

namespace {

constexpr int k_w = 640, k_h = 160, k_pad = 6;
using Rgb = std::array<uint8_t, 3>;

struct Canvas {
  std::vector<uint8_t> px = std::vector<uint8_t>(size_t(k_w) * k_h * 3, 255);
  void set(int x, int y, Rgb c) {
    if (x >= 0 && x < k_w && y >= 0 && y < k_h) {
      std::copy(c.begin(), c.end(), px.begin() + (size_t(y) * k_w + x) * 3);
    }
  }
  void line(double x0, double y0, double x1, double y1, Rgb c, int thick) {
    int steps = std::max(1, int(std::max(std::abs(x1 - x0), std::abs(y1 - y0))));
    for (int i = 0; i <= steps; ++i) {
      double t = double(i) / steps;
      int x = int(std::lround(x0 + (x1 - x0) * t)), y = int(std::lround(y0 + (y1 - y0) * t));
      for (int d = 0; d < thick; ++d) {
        set(x, y + d, c);
      }
    }
  }
};

void put_u32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) {
    out += char((v >> s) & 0xff);
  }
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, uint32_t(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
}

std::string encode_png(const Canvas& c) {
  std::string raw;
  raw.reserve(size_t(k_h) * (k_w * 3 + 1));
  for (int y = 0; y < k_h; ++y) {
    raw += '\0';  // filter: none
    raw.append(reinterpret_cast<const char*>(c.px.data()) + size_t(y) * k_w * 3, size_t(k_w) * 3);
  }
  uLongf n = compressBound(uLong(raw.size()));
  std::string z(n, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
                uLong(raw.size()), 9) != Z_OK) {
    return "";
  }
  z.resize(n);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put_u32(ihdr, k_w);
  put_u32(ihdr, k_h);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  return png;
}

struct Point {
  double t, mem, util;  // mem and util in 0..1; util < 0 when unknown
};

// Each well-formed record of gpus.jsonl, in order: f(uuid, type, record).
template <typename F>
void each_record(const std::string& gpus_jsonl, F&& f) {
  std::istringstream in(gpus_jsonl);
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_object() && j.contains("uuid") && j["uuid"].is_string()) {
      f(j["uuid"].get<std::string>(), j.value("type", ""), j);
    }
  }
}

}  // namespace

std::vector<std::string> gpu_now_lines(const std::string& gpus_jsonl) {
  std::map<std::string, nlohmann::json> inventory, last;
  std::vector<std::string> order;
  std::istringstream in(gpus_jsonl);
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (!j.is_object() || !j.contains("uuid") || !j["uuid"].is_string()) {
      continue;
    }
    std::string uuid = j["uuid"].get<std::string>();
    std::string type = j.value("type", "");
    if (type == "inventory") {
      inventory[uuid] = j;
      order.push_back(uuid);
    } else if (type == "sample" && !j.value("after_end", false)) {
      last[uuid] = j;
    }
  }
  auto number = [](const nlohmann::json& j, const char* k) -> std::optional<double> {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>())
                                            : std::nullopt;
  };
  std::vector<std::string> out;
  for (const auto& uuid : order) {
    auto s = last.find(uuid);
    if (s == last.end()) {
      continue;
    }
    const auto& inv = inventory[uuid];
    std::string line =
        "GPU " + std::to_string(static_cast<int64_t>(number(inv, "job_index").value_or(0)));
    if (auto it = inv.find("name"); it != inv.end() && it->is_string()) {
      line += " (" + util::printable_line(it->get<std::string>()) + ")";
    }
    std::vector<std::string> parts;
    if (auto u = number(s->second, "utilization")) {
      parts.push_back("utilisation " + std::to_string(static_cast<int64_t>(*u)) + "%");
    }
    if (auto m = number(s->second, "memory_used")) {
      std::string mem = "memory " + util::human_size(static_cast<uint64_t>(*m));
      if (auto total = number(inv, "memory_total")) {
        mem += " of " + util::human_size(static_cast<uint64_t>(*total));
      }
      parts.push_back(mem);
    }
    if (parts.empty()) {
      continue;
    }
    line += ": " + parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
      line += ", " + parts[i];
    }
    if (auto t = number(s->second, "t")) {
      line += " (read " + util::human_duration(*t) + " into the run)";
    }
    out.push_back(line);
  }
  return out;
}

std::string gpu_chart_png(const std::string& gpus_jsonl) {
  std::map<std::string, double> total;              // uuid -> memory total
  std::map<std::string, std::vector<Point>> lines;  // uuid -> readings while the job ran
  std::vector<std::string> order;
  double end_t = 0;
  each_record(
      gpus_jsonl, [&](const std::string& uuid, const std::string& type, const nlohmann::json& j) {
        if (type == "inventory" && j.contains("memory_total") && j["memory_total"].is_number()) {
          total[uuid] = j["memory_total"].get<double>();
          order.push_back(uuid);
        } else if (type == "sample" && j.contains("t") && j["t"].is_number()) {
          double t = j["t"].get<double>();
          end_t = std::max(end_t, t);
          if (j.value("after_end", false) || !j.contains("memory_used") || total[uuid] <= 0) {
            return;
          }
          double util = j.contains("utilization") && j["utilization"].is_number()
                            ? j["utilization"].get<double>() / 100.0
                            : -1;
          lines[uuid].push_back({t, j["memory_used"].get<double>() / total[uuid], util});
        }
      });
  size_t readings = 0;
  for (const auto& [u, pts] : lines) {
    readings = std::max(readings, pts.size());
  }
  if (readings < 2 || end_t <= 0) {
    return "";
  }
  Canvas c;
  const double x0 = k_pad, x1 = k_w - k_pad, y0 = k_pad, y1 = k_h - k_pad;
  auto X = [&](double t) { return x0 + (x1 - x0) * std::clamp(t / end_t, 0.0, 1.0); };
  auto Y = [&](double v) { return y1 - (y1 - y0) * std::clamp(v, 0.0, 1.0); };
  const Rgb grid{225, 228, 232}, frame{175, 184, 193}, end_mark{207, 34, 46};
  for (double v : {0.25, 0.5, 0.75}) {
    c.line(x0, Y(v), x1, Y(v), grid, 1);
  }
  c.line(x0, y0, x1, y0, frame, 1);
  c.line(x0, y1, x1, y1, frame, 1);
  c.line(x0, y0, x0, y1, frame, 1);
  c.line(x1, y0, x1, y1, frame, 1);
  const Rgb solid[] = {{9, 105, 218}, {130, 80, 223}, {191, 135, 0}, {26, 127, 55}};
  const Rgb light[] = {{152, 196, 240}, {200, 180, 240}, {232, 206, 140}, {150, 210, 165}};
  size_t k = 0;
  for (const auto& uuid : order) {
    const auto& pts = lines[uuid];
    for (size_t i = 1; i < pts.size(); ++i) {
      if (pts[i - 1].util >= 0 && pts[i].util >= 0) {
        c.line(X(pts[i - 1].t), Y(pts[i - 1].util), X(pts[i].t), Y(pts[i].util), light[k % 4], 1);
      }
    }
    for (size_t i = 1; i < pts.size(); ++i) {
      c.line(X(pts[i - 1].t), Y(pts[i - 1].mem), X(pts[i].t), Y(pts[i].mem), solid[k % 4], 2);
    }
    ++k;
  }
  c.line(X(end_t), y0, X(end_t), y1, end_mark, 2);
  c.line(X(end_t) - 1, y0, X(end_t) - 1, y1, end_mark, 1);
  return encode_png(c);
}

}  // namespace notify
