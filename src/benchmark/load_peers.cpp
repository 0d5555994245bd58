#include "benchmark/load_peers.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace dietcode::bench {
namespace {

constexpr std::array<const char*, 4> kKnownPeers = {"openblas", "onednn", "blis", "libxsmm"};

std::string known_list() {
  std::string list;
  for (const char* name : kKnownPeers) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

// Empty on success, else why the plugin could not be used.
std::string load_one(const std::string& directory, const std::string& name,
                     std::shared_ptr<Peer>* peer) {
  const std::string path = directory + "/libdietcode_peer_" + name + ".so";
  if (!std::filesystem::exists(path))
    return "not built (no " + path + "; was its vendor library found when configuring?)";
  // RTLD_LOCAL keeps each vendor library's BLAS-named symbols out of the others' way.
  // The handle is never closed: vendor libraries keep thread pools and exit handlers.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return dlerror();
  auto make = reinterpret_cast<MakePeerFn>(dlsym(handle, DIETCODE_PEER_ENTRY));
  if (!make) return dlerror();
  try {
    peer->reset(make());
  } catch (const std::exception& e) {
    return std::string("creating the peer failed: ") + e.what();
  }
  return *peer ? "" : "creating the peer failed";
}

}  // namespace

LoadedPeers load_peers(const std::string& directory, const std::vector<std::string>& names) {
  std::vector<std::string> wanted = names;
  if (wanted.empty()) wanted.assign(kKnownPeers.begin(), kKnownPeers.end());
  for (const std::string& name : wanted)
    if (std::find(kKnownPeers.begin(), kKnownPeers.end(), name) == kKnownPeers.end())
      throw std::invalid_argument("unknown peer '" + name + "' (known: " + known_list() + ")");

  LoadedPeers loaded;
  std::vector<std::string> seen;
  for (const std::string& name : wanted) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    std::shared_ptr<Peer> peer;
    const std::string why = load_one(directory, name, &peer);
    if (why.empty())
      loaded.peers.push_back(std::move(peer));
    else
      loaded.missing.push_back(name + ": " + why);
  }
  return loaded;
}

}  // namespace dietcode::bench
