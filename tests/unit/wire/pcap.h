/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Minimal reader for classic pcap files (the format tcpdump -w writes): both
// byte orders, microsecond or nanosecond timestamps. Test-only utility.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace burst::test {

struct PcapFile {
  uint32_t linktype = 0;  // 1 = Ethernet
  uint32_t snaplen = 0;
  std::vector<std::vector<uint8_t>> frames;  // captured bytes of each record, in file order
};

// Reads the whole file. Returns false and sets *error on I/O errors, a bad magic,
// a truncated file, or a record whose frame was cut by the snaplen.
bool read_pcap(const std::string& path, PcapFile* out, std::string* error);

}  // namespace burst::test
