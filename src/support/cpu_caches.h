#pragma once

#include <cstdint>

namespace dietcode {

// The host's cache sizes in bytes, 0 where unknown: the L1 data and L2 caches of one core
// and the last level's size. Read once per process: from sysfs, else (guests whose sysfs
// has no cache entries) the L1 and L2 from CPUID's extended leaves. CPUID's L3 field is
// not used: a hypervisor may fill it with what is not this guest's (508 MiB on a 2-vCPU VM).
struct CacheSizes {
  int64_t l1 = 0, l2 = 0, l3 = 0;
};
const CacheSizes& host_cache_sizes();

}  // namespace dietcode
