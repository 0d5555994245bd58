#include "codegen/llvm/object_cache.h"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/hash.h"

namespace dietcode::codegen {

namespace {

thread_local std::string current_dir;
std::atomic<int64_t> hits{0}, misses{0}, damaged{0};

constexpr char kMagic[8] = {'D', 'C', 'O', 'B', 'J', '0', '0', '1'};

struct Header {
  char magic[8];
  uint64_t key;
  uint64_t size;
  uint64_t checksum;  // FNV-1a of the payload
};

std::string file_for(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / (name + ".o")).string();
}

// dl_iterate_phdr visits the main program first; its PT_NOTE segments hold the build ID.
int find_build_id(dl_phdr_info* info, size_t, void* out) {
  auto* id = static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        for (uint32_t b = 0; b < note->n_descsz; ++b)
          *id += fmt::format("{:02x}", static_cast<unsigned char>(desc[b]));
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // only the main program
}

}  // namespace

ObjectCacheScope::ObjectCacheScope(std::string dir) : previous_(current_dir) {
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) dir.clear();  // no cache rather than no model
  }
  current_dir = std::move(dir);
}

ObjectCacheScope::~ObjectCacheScope() {
  current_dir = previous_;
}

ObjectCacheStats object_cache_stats() {
  return {hits.load(), misses.load(), damaged.load()};
}

const std::string& object_cache_dir() {
  return current_dir;
}

const std::string& program_build_id() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(find_build_id, &found);
    return found;
  }();
  return id;
}

std::optional<std::string> read_cached_object(const std::string& dir, uint64_t key,
                                              const std::string& name) {
  std::ifstream f(file_for(dir, name), std::ios::binary);
  if (!f) {
    ++misses;
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Header h;
  std::string payload;
  if (bytes.size() >= sizeof h) {
    std::memcpy(&h, bytes.data(), sizeof h);
    payload = bytes.substr(sizeof h);
  }
  if (bytes.size() < sizeof h || std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key != key ||
      h.size != payload.size() || fnv1a64(payload) != h.checksum) {
    ++damaged;
    return std::nullopt;
  }
  ++hits;
  return payload;
}

void write_cached_object(const std::string& dir, uint64_t key, const std::string& name,
                         const std::string& object) {
  Header h;
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key = key;
  h.size = object.size();
  h.checksum = fnv1a64(object);
  const std::string path = file_for(dir, name);
  static std::atomic<int64_t> written{0};  // threads of one process may write at once
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), written++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f.write(object.data(), std::streamsize(object.size()));
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace dietcode::codegen
