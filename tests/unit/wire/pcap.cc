// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tests/unit/wire/pcap.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace burst::test {
namespace {

constexpr uint32_t kMagicUs = 0xA1B2C3D4;
constexpr uint32_t kMagicNs = 0xA1B23C4D;
constexpr size_t kGlobalHeader = 24;
constexpr size_t kRecordHeader = 16;

uint32_t load32(const uint8_t* p, bool swap) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}

}  // namespace

bool read_pcap(const std::string& path, PcapFile* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (data.size() < kGlobalHeader) {
    *error = path + ": shorter than a pcap header";
    return false;
  }
  const uint32_t magic = load32(data.data(), false);
  bool swap;
  if (magic == kMagicUs || magic == kMagicNs) {
    swap = false;
  } else if (__builtin_bswap32(magic) == kMagicUs || __builtin_bswap32(magic) == kMagicNs) {
    swap = true;
  } else {
    *error = path + ": not a classic pcap file";
    return false;
  }
  out->snaplen = load32(data.data() + 16, swap);
  out->linktype = load32(data.data() + 20, swap);
  out->frames.clear();
  size_t pos = kGlobalHeader;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordHeader) {
      *error = path + ": truncated record header";
      return false;
    }
    const uint32_t incl = load32(data.data() + pos + 8, swap);
    const uint32_t orig = load32(data.data() + pos + 12, swap);
    pos += kRecordHeader;
    if (data.size() - pos < incl) {
      *error = path + ": truncated record";
      return false;
    }
    if (incl != orig) {
      *error = path + ": a frame was not captured in full (snaplen)";
      return false;
    }
    out->frames.emplace_back(data.begin() + pos, data.begin() + pos + incl);
    pos += incl;
  }
  return true;
}

}  // namespace burst::test
