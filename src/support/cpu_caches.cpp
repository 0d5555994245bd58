#include "support/cpu_caches.h"

#include <cpuid.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace dietcode {

namespace {

// Cache size from sysfs (index0.. for data and unified caches), 0 if unknown.
int64_t sysfs_cache_bytes(int level) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream lvl(dir + "level"), type(dir + "type"), size(dir + "size");
    int l = 0;
    std::string t, s;
    if (!(lvl >> l) || !(type >> t) || !(size >> s)) continue;
    if (l != level || t == "Instruction") continue;
    int64_t v = std::atoll(s.c_str());
    if (s.back() == 'K') v <<= 10;
    if (s.back() == 'M') v <<= 20;
    return v;
  }
  return 0;
}

// L1 data and L2 sizes from CPUID's extended leaves (AMD reports both, Intel the L2).
int64_t cpuid_cache_bytes(int level) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (level == 1 && __get_cpuid(0x80000005, &a, &b, &c, &d)) return int64_t(c >> 24) << 10;
  if (level == 2 && __get_cpuid(0x80000006, &a, &b, &c, &d)) return int64_t(c >> 16) << 10;
  return 0;
}

CacheSizes read_host_cache_sizes() {
  CacheSizes c{sysfs_cache_bytes(1), sysfs_cache_bytes(2), sysfs_cache_bytes(3)};
  if (c.l1 == 0) c.l1 = cpuid_cache_bytes(1);
  if (c.l2 == 0) c.l2 = cpuid_cache_bytes(2);
  return c;
}

}  // namespace

const CacheSizes& host_cache_sizes() {
  static const CacheSizes sizes = read_host_cache_sizes();
  return sizes;
}

}  // namespace dietcode
