// Writes every frame of the given pcap files as one file each into a directory:
// the seed corpus of the packet fuzzers.
//   pcap_to_seeds OUT_DIR FILE.pcap...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/wire/pcap.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR FILE.pcap...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out_dir = argv[1];
  std::filesystem::create_directories(out_dir);
  size_t written = 0;
  for (int i = 2; i < argc; ++i) {
    burst::test::PcapFile pcap;
    std::string error;
    if (!burst::test::read_pcap(argv[i], &pcap, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const std::string stem = std::filesystem::path(argv[i]).stem().string();
    for (size_t n = 0; n < pcap.frames.size(); ++n) {
      std::ofstream f(out_dir / (stem + "_" + std::to_string(n)), std::ios::binary);
      f.write(reinterpret_cast<const char*>(pcap.frames[n].data()),
              static_cast<std::streamsize>(pcap.frames[n].size()));
      if (!f) {
        std::fprintf(stderr, "cannot write seed %s_%zu\n", stem.c_str(), n);
        return 1;
      }
      ++written;
    }
  }
  std::printf("%zu seeds in %s\n", written, out_dir.c_str());
  return written > 0 ? 0 : 1;
}
