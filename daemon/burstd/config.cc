// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/config.h"

#include <arpa/inet.h>
#include <ini.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>

#include "daemon/burstd/log.h"
#include "daemon/burstd/words.h"
#include "daemon/ctl/ctl_codec.h"
#include "port/port.h"

namespace burst::burstd {
namespace {

bool parse_u32(const std::string& v, uint32_t lo, uint32_t hi, int base, uint32_t* out) {
  if (v.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || v[0] == '-' || x < lo || x > hi) return false;
  *out = static_cast<uint32_t>(x);
  return true;
}

struct ParseState {
  Config* config;
  std::string error;  // the first error
  std::string path;
};

int on_entry(void* user, const char* section, const char* name, const char* value) {
  auto* st = static_cast<ParseState*>(user);
  if (!st->error.empty()) return 0;
  if (section != nullptr && section[0] != '\0') {
    st->error = std::string("section [") + section +
                "] is not known (fix: remove the section line: burstd.conf has its keys outside "
                "any section)";
    return 0;
  }
  // Inline comments: "key = value   # comment" (inih strips only ';' ones).
  std::string v = value;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '#' && (i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t')) {
      v.resize(i);
      break;
    }
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
  std::string err;
  if (!set_config_value(st->config, name, v, &err)) {
    st->error = err;
    return 0;
  }
  return 1;
}

constexpr Word<BackendKind> kBackends[] = {
    {"xdp", BackendKind::kXdp}, {"loopback", BackendKind::kLoopback}, {"dpdk", BackendKind::kDpdk}};
constexpr Word<XdpMode> kXdpModes[] = {
    {"auto", XdpMode::kAuto}, {"native", XdpMode::kNative}, {"generic", XdpMode::kGeneric}};
constexpr Word<ZeroCopy> kZeroCopy[] = {
    {"auto", ZeroCopy::kAuto}, {"on", ZeroCopy::kOn}, {"off", ZeroCopy::kOff}};
constexpr Word<Hugepages> kHugepages[] = {
    {"auto", Hugepages::kAuto}, {"on", Hugepages::kOn}, {"off", Hugepages::kOff}};
constexpr Word<EventLoopKind> kEventLoops[] = {{"auto", EventLoopKind::kAuto},
                                                {"uring", EventLoopKind::kUring},
                                                {"epoll", EventLoopKind::kEpoll}};
constexpr Word<bool> kOnOff[] = {{"on", true}, {"off", false}};
constexpr Word<KmodMode> kKmodModes[] = {
    {"auto", KmodMode::kAuto}, {"on", KmodMode::kOn}, {"off", KmodMode::kOff}};
constexpr Word<uint8_t> kMemory[] = {{"cma", BURST_CTL_MEM_CMA}, {"shm", BURST_CTL_MEM_SHM}};

// A key's parser: stores the value in its field, or returns false. A parser
// that knows better than the row's `want` what went wrong says it in *error.
using Parser = bool (*)(Config* c, const std::string& v, std::string* error);

// A number in [Lo, Hi] (base Base) into Field.
template <auto Field, uint32_t Lo, uint32_t Hi, int Base = 10>
bool u32(Config* c, const std::string& v, std::string*) {
  return parse_u32(v, Lo, Hi, Base, &(c->*Field));
}

// One of the table's words into Field.
template <auto Field, const auto& Words>
bool one_of(Config* c, const std::string& v, std::string*) {
  return find_word(Words, v, &(c->*Field));
}

// A string that Valid accepts into Field.
template <auto Field, bool (*Valid)(const std::string&)>
bool text(Config* c, const std::string& v, std::string*) {
  if (!Valid(v)) return false;
  c->*Field = v;
  return true;
}

bool any_text(const std::string&) { return true; }
// As the kernel's dev_valid_name: also a file name (/etc/burst/NETDEV.conf).
bool ifname(const std::string& v) {
  return v.size() < BURST_CTL_IFNAME_LEN && v != "." && v != ".." &&
         v.find_first_of("/: \t") == std::string::npos;
}
bool socket_path(const std::string& v) {
  return !v.empty() && v[0] == '/' && v.size() < BURST_CTL_PATH_LEN;
}
bool principal(const std::string& v) {
  return v.find_first_of(" \t:/") == std::string::npos && v.size() <= 64;
}
bool devargs(const std::string& v) {
  return !v.empty() && v.find_first_of(" \t") == std::string::npos;
}
bool log_level(const std::string& v) {
  LogLevel l;
  return parse_log_level(v, &l);
}

bool backend(Config* c, const std::string& v, std::string* error) {
  BackendKind b;
  if (!find_word(kBackends, v, &b)) return false;
  if (b == BackendKind::kDpdk && !have_dpdk_backend()) {
    *error =
        "backend 'dpdk': " + port::missing_backend(port::Kind::kDpdk) + "; use xdp or loopback";
    return false;
  }
  c->backend = b;
  return true;
}

bool memory(Config* c, const std::string& v, std::string* error) {
  if (v == "kmod") {
    *error = "memory = kmod needs the kernel assistant, which is not available yet";
    return false;
  }
  return find_word(kMemory, v, &c->memory_mode);
}

bool xdp_frames(Config* c, const std::string& v, std::string* error) {
  return u32<&Config::xdp_frames, 512, (1u << 18)>(c, v, error) &&
         (c->xdp_frames & (c->xdp_frames - 1)) == 0;
}

// One "a.b.c.d[/len]" of an address list, as "a.b.c.d/len".
bool ipv4_prefix(std::string item, std::string* out) {
  item.erase(0, item.find_first_not_of(" \t"));
  item.erase(item.find_last_not_of(" \t") + 1);
  const size_t slash = item.find('/');
  in_addr a{};
  uint32_t len = 32;
  if (item.empty() || inet_pton(AF_INET, item.substr(0, slash).c_str(), &a) != 1 ||
      (slash != std::string::npos && !parse_u32(item.substr(slash + 1), 1, 32, 10, &len))) {
    return false;
  }
  *out = item.substr(0, slash) + "/" + std::to_string(len);
  return true;
}

bool addresses(Config* c, const std::string& v, std::string*) {
  std::vector<std::string> list;
  for (size_t pos = 0; pos <= v.size();) {
    size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    if (!ipv4_prefix(v.substr(pos, comma - pos), &list.emplace_back())) return false;
    pos = comma + 1;
  }
  c->addresses = list;
  return true;
}

static_assert(BURST_CTL_MAX_WORKERS == 64 && BURST_CTL_PATH_LEN == 108, "the messages below");

struct Key {
  const char* key;
  Parser parse;
  const char* want;  // "'key = value': expected <want>"
};

// clang-format off
constexpr char kPrincipal[] = "a user or group name, or a numeric id";
constexpr Key kKeys[] = {
    {"netdev", text<&Config::netdev, ifname>, "an interface name (< 16 characters)"},
    {"backend", backend, "xdp, dpdk or loopback"},
    {"workers", u32<&Config::workers, 1, BURST_CTL_MAX_WORKERS>,
     "a number of worker threads, 1..64"},
    {"qps_per_worker", u32<&Config::qps_per_worker, 1, 65'536>, "1..65536"},
    {"cqs_per_worker", u32<&Config::cqs_per_worker, 1, 65'536>, "1..65536"},
    {"socket", text<&Config::socket_path, socket_path>, "an absolute path shorter than 108 bytes"},
    {"socket_mode", u32<&Config::socket_mode, 0, 0777, 8>, "an octal mode like 0666"},
    {"socket_owner", text<&Config::socket_owner, principal>, kPrincipal},
    {"socket_group", text<&Config::socket_group, principal>, kPrincipal},
    {"admin_group", text<&Config::admin_group, principal>, kPrincipal},
    {"max_qps_per_user", u32<&Config::max_qps_per_user, 0, (1u << 24)>, "0 (no cap) .. 16777216"},
    {"max_cqs_per_user", u32<&Config::max_cqs_per_user, 0, (1u << 24)>, "0 (no cap) .. 16777216"},
    {"max_mrs_per_user", u32<&Config::max_mrs_per_user, 0, (1u << 24)>, "0 (no cap) .. 16777216"},
    {"max_pds_per_user", u32<&Config::max_pds_per_user, 0, (1u << 24)>, "0 (no cap) .. 16777216"},
    {"client_check_ms", u32<&Config::client_check_ms, 10, 10'000>, "milliseconds, 10..10000"},
    {"drop_caps", one_of<&Config::drop_caps, kOnOff>, "on or off"},
    {"xdp_mode", one_of<&Config::xdp_mode, kXdpModes>, "auto, native or generic"},
    {"zero_copy", one_of<&Config::zero_copy, kZeroCopy>, "auto, on or off"},
    {"memory", memory, "cma or shm"},
    {"mtu", u32<&Config::mtu, 576, 9000>, "an L3 MTU, 576..9000"},
    {"window", u32<&Config::window_pkts, 16, (1u << 16)>, "packets, 16..65536"},
    {"xdp_frames", xdp_frames, "a power of two, 512..262144"},
    {"idle_sleep_max_us", u32<&Config::idle_sleep_max_us, 0, 100'000>, "microseconds, 0..100000"},
    {"command_timeout_ms", u32<&Config::command_timeout_ms, 10, 60'000>, "milliseconds, 10..60000"},
    {"max_clients", u32<&Config::max_clients, 1, 65'536>, "1..65536"},
    {"dpdk_port", text<&Config::dpdk_port, devargs>,
     "DPDK devargs without spaces (net_af_packet0,iface=eth0 or 0000:3b:00.0)"},
    {"dpdk_eal", text<&Config::dpdk_eal, any_text>, ""},
    {"dpdk_hugepages", one_of<&Config::dpdk_hugepages, kHugepages>, "auto, on or off"},
    {"dpdk_flow", one_of<&Config::dpdk_flow, kOnOff>, "on or off"},
    {"address", addresses,
     "IPv4 addresses with prefix length, comma-separated (10.0.0.1/24); IPv6 needs neighbour "
     "discovery, which burst does not do itself yet"},
    {"log_level", text<&Config::log_level, log_level>, "error, warning, info or debug"},
    {"event_loop", one_of<&Config::event_loop, kEventLoops>, "auto, uring or epoll"},
    {"kmod", one_of<&Config::kmod, kKmodModes>, "auto, on or off"},
};
// clang-format on

}  // namespace

const char* backend_kind_name(BackendKind b) { return word_of(kBackends, b, "loopback"); }
const char* xdp_mode_name(XdpMode m) { return word_of(kXdpModes, m, "auto"); }
const char* zero_copy_name(ZeroCopy z) { return word_of(kZeroCopy, z, "auto"); }
const char* event_loop_name(EventLoopKind k) { return word_of(kEventLoops, k, "auto"); }
const char* kmod_mode_name(KmodMode k) { return word_of(kKmodModes, k, "auto"); }

bool have_dpdk_backend() { return port::have_backend(port::Kind::kDpdk); }

namespace {

// The key nearest to `key` (at most two edits away), or nullptr.
const char* nearest_key(const std::string& key) {
  const char* best = nullptr;
  size_t best_d = 3;
  for (const Key& k : kKeys) {
    const std::string b = k.key;
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= key.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (key[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[b.size()] < best_d) {
      best_d = row[b.size()];
      best = k.key;
    }
  }
  return best;
}

}  // namespace

bool set_config_value(Config* c, const std::string& key, const std::string& value,
                      std::string* error) {
  for (const Key& k : kKeys) {
    if (key != k.key) continue;
    std::string why;
    if (k.parse(c, value, &why)) return true;
    if (why.empty()) {
      *error = "'" + key + " = " + value + "' is not valid (fix: " + key + " takes " + k.want +
               "; or remove the line for the default)";
    } else {
      *error = why.find("(fix:") != std::string::npos ? why : why + " (fix: change or remove the line)";
    }
    return false;
  }
  const char* near = nearest_key(key);
  *error = "unknown key '" + key + "' (fix: " +
           (near != nullptr ? "did you mean '" + std::string(near) + "'? " : std::string()) +
           "every key is listed, commented, in " + kDefaultConfigPath + " and burstd.conf(5))";
  return false;
}

namespace {

// Records in c->origin the line of each key the file sets (the last one wins,
// as in the parse). The parse succeeded: every non-comment line is key = value.
void record_origins(const std::string& path, Config* c) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return;
  char buf[1024];
  for (int line = 1; std::fgets(buf, sizeof buf, f) != nullptr; ++line) {
    std::string l = buf;
    l.erase(0, l.find_first_not_of(" \t"));
    const size_t eq = l.find_first_of("=:");
    if (l.empty() || l[0] == '#' || l[0] == ';' || eq == std::string::npos) continue;
    std::string key = l.substr(0, eq);
    key.erase(key.find_last_not_of(" \t") + 1);
    c->origin[key] = path + ":" + std::to_string(line);
  }
  std::fclose(f);
}

}  // namespace

bool load_config(const std::string& path, bool required, Config* c, bool* missing,
                 std::string* error) {
  *missing = false;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    const int e = errno;
    if (e == ENOENT && !required) {
      *missing = true;
      return true;
    }
    *error = "cannot read config file " + path + ": " + std::strerror(e) +
             (e == ENOENT ? " (fix: create it, or name another one with --config)"
                          : " (fix: make it readable by root)");
    return false;
  }
  Config parsed = *c;
  ParseState st{&parsed, "", path};
  const int line = ini_parse_file(f, on_entry, &st);
  std::fclose(f);
  if (line != 0) {
    *error = path + ":" + std::to_string(line) + ": " +
             (st.error.empty() ? std::string("syntax error (fix: write key = value, or # comment)")
                               : st.error);
    return false;
  }
  record_origins(path, &parsed);
  *c = parsed;
  return true;
}

std::string origin_prefix(const Config& c, const std::string& key) {
  auto it = c.origin.find(key);
  return it == c.origin.end() ? std::string() : it->second + ": ";
}

bool load_layered_config(const ConfigSources& src, Config* c, std::vector<std::string>* read,
                         std::string* error) {
  bool missing = false;
  if (!src.file.empty()) {
    if (!load_config(src.file, true, c, &missing, error)) return false;
    read->push_back(src.file);
    return true;
  }
  const std::string common = src.dir + "/burstd.conf";
  if (!load_config(common, false, c, &missing, error)) return false;
  if (!missing) read->push_back(common);
  const std::string netdev = !src.netdev.empty() ? src.netdev : c->netdev;
  if (netdev.empty()) return true;
  if (!ifname(netdev)) {
    *error = origin_prefix(*c, "netdev") + "'" + netdev +
             "' is not an interface name (fix: name a netdev as `ip link` shows it)";
    return false;
  }
  const std::string nic = src.dir + "/" + netdev + ".conf";
  Config layered = *c;
  layered.netdev.clear();
  if (!load_config(nic, false, &layered, &missing, error)) return false;
  if (missing) return true;
  if (!layered.netdev.empty() && layered.netdev != netdev) {
    *error = origin_prefix(layered, "netdev") + "'netdev = " + layered.netdev + "' in the file of " +
             netdev + " (fix: remove the line; the file's name, " + netdev +
             ".conf, picks the netdev)";
    return false;
  }
  layered.netdev = c->netdev;
  *c = layered;
  read->push_back(nic);
  return true;
}

bool validate_config(const Config& c, std::string* error) {
  if (c.backend == BackendKind::kXdp && c.netdev.empty()) {
    *error =
        "backend xdp needs a netdev: set 'netdev = IF' in the config file or pass --netdev IF "
        "(or use --backend loopback)";
    return false;
  }
  if (c.backend == BackendKind::kDpdk && c.dpdk_port.empty() && c.netdev.empty()) {
    *error =
        "backend dpdk needs a port: set 'dpdk_port = DEVARGS' (e.g. net_memif0,role=server or a "
        "PCI address) or 'netdev = IF' (then net_af_packet on IF)";
    return false;
  }
  if (c.backend == BackendKind::kDpdk && c.netdev.empty() && c.addresses.empty()) {
    *error =
        "backend dpdk on a port without a kernel netdev needs its addresses: set "
        "'address = A.B.C.D/LEN' (or 'netdev = IF' when a kernel netdev stands behind the port)";
    return false;
  }
  if (c.workers == 0 || c.workers > BURST_CTL_MAX_WORKERS) {
    *error = "workers must be 1.." + std::to_string(BURST_CTL_MAX_WORKERS);
    return false;
  }
  return true;
}

}  // namespace burst::burstd
