// Finds and loads the peer plugins (libdietcode_peer_NAME.so, built from bench/peers/)
// with dlopen: the harness's side of the plugin interface (peer_api.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmark/peer_api.h"

namespace dietcode::bench {

struct LoadedPeers {
  std::vector<std::shared_ptr<Peer>> peers;
  std::vector<std::string> missing;  // "blis: libblis.so.4: cannot open shared object file"
};

// Loads the plugins named (default: all four) from `directory`. Throws
// std::invalid_argument for an unknown name, listing the known ones.
LoadedPeers load_peers(const std::string& directory, const std::vector<std::string>& names);

}  // namespace dietcode::bench
