#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "support/error.h"
#include "support/json.h"

namespace dietcode::model {

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

struct Safetensors::Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base) munmap(base, size);
  }
};

namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // a header larger than 100 MB is not a header

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Safetensors Safetensors::open(const std::string& path) {
  Safetensors f;
  f.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) user_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    user_error("{}: cannot stat: {}", path, std::strerror(errno));
  }
  f.mapping_ = std::make_shared<Mapping>();
  f.mapping_->size = static_cast<size_t>(st.st_size);
  if (f.mapping_->size < 8) {
    ::close(fd);
    user_error("{}: {} bytes: too short for a safetensors file (an 8-byte header length first)",
               path, f.mapping_->size);
  }
  void* base = mmap(nullptr, f.mapping_->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) user_error("{}: cannot map: {}", path, std::strerror(errno));
  f.mapping_->base = base;
  const auto* bytes = static_cast<const unsigned char*>(base);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeader || header_len > f.mapping_->size - 8)
    user_error("{}: header length {} runs past the end of the file ({} bytes)", path, header_len,
               f.mapping_->size);
  ParsedJson parsed = parse_json(std::string(reinterpret_cast<const char*>(bytes + 8), header_len));
  if (parsed.value.is_discarded() || !parsed.value.is_object())
    user_error("{}: the header is not a JSON object{}", path,
               parsed.too_deep ? " (nested too deeply)" : "");
  const uint64_t data_begin = 8 + header_len;
  const uint64_t data_size = f.mapping_->size - data_begin;
  std::vector<std::pair<uint64_t, std::string>> ranges;  // (begin, name), to find overlaps
  std::map<std::string, uint64_t> ends;
  for (const auto& [name, entry] : parsed.value.items()) {
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& why) { user_error("{}: tensor '{}': {}", path, name, why); };
    if (!entry.is_object()) bad("its entry is not an object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) bad("no dtype");
    const std::string dtype = entry["dtype"].get<std::string>();
    if (dtype != "F32")
      bad("dtype " + dtype + "; only F32 is read (convert the checkpoint to float32)");
    if (!entry.contains("shape") || !entry["shape"].is_array()) bad("no shape");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      bad("no data_offsets [begin, end]");
    TensorInfo info;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t(1) << 40))
        bad("a dimension of its shape is not a non-negative integer");
      info.shape.push_back(d.get<int64_t>());
    }
    for (const auto& o : entry["data_offsets"])
      if (!o.is_number_unsigned()) bad("data_offsets are not non-negative integers");
    const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
    const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
    if (begin > end || end > data_size)
      bad(fmt::format("data_offsets [{}, {}] outside the {} bytes of data", begin, end, data_size));
    if (info.elements() > int64_t(1) << 40 ||
        end - begin != static_cast<uint64_t>(info.elements()) * 4)
      bad(fmt::format("data_offsets [{}, {}] hold {} bytes, shape {} needs {}", begin, end,
                      end - begin, shape_text(info.shape), info.elements() * 4));
    if ((data_begin + begin) % alignof(float) != 0)
      bad("its data is not 4-byte aligned in the file");
    info.data = reinterpret_cast<const float*>(bytes + data_begin + begin);
    ranges.push_back({begin, name});
    ends[name] = end;
    f.tensors_[name] = std::move(info);
  }
  // In order of their first byte, no tensor may start before the furthest end so far.
  std::sort(ranges.begin(), ranges.end());
  uint64_t furthest = 0;
  std::string furthest_name;
  for (const auto& [begin, name] : ranges) {
    if (ends[name] == begin) continue;  // empty
    if (begin < furthest)
      user_error("{}: tensors '{}' and '{}' overlap in the data", path, furthest_name, name);
    furthest = ends[name];
    furthest_name = name;
  }
  return f;
}

const float* Safetensors::tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    user_error("{}: no tensor '{}' (expected shape {}; the file has {} tensors)", path_, name,
               shape_text(shape), tensors_.size());
  if (it->second.shape != shape)
    user_error("{}: tensor '{}' has shape {}, expected {}", path_, name,
               shape_text(it->second.shape), shape_text(shape));
  return it->second.data;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    int64_t elements = 1;
    for (int64_t d : t.shape) elements *= d;
    if (elements != static_cast<int64_t>(t.data.size()))
      user_error("write_safetensors: tensor '{}' has {} values, shape {} needs {}", t.name,
                 t.data.size(), shape_text(t.shape), elements);
    if (header.contains(t.name)) user_error("write_safetensors: tensor '{}' twice", t.name);
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + 4 * t.data.size()}}};
    offset += 4 * t.data.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // the data starts 8-byte aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) user_error("{}: cannot write", tmp);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(text.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const NamedTensor& t : tensors)
      out.write(reinterpret_cast<const char*>(t.data.data()),
                static_cast<std::streamsize>(4 * t.data.size()));
    out.flush();
    if (!out) user_error("{}: write failed (disk full?)", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) user_error("{}: cannot rename into place: {}", path, ec.message());
}

std::vector<std::pair<std::string, std::vector<int64_t>>> bert_tensor_shapes(const BertShape& s) {
  if (s.layers < 1 || s.hidden < 1 || s.heads < 1 || s.ffn < 1 || s.hidden % s.heads != 0)
    user_error(
        "BERT shape: {} layers, hidden {}, {} heads, ffn {}: expected positive sizes "
        "with hidden a multiple of heads",
        s.layers, s.hidden, s.heads, s.ffn);
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  const int64_t h = s.hidden;
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* qkv : {"query", "key", "value"}) {
      out.push_back({p + "attention.self." + qkv + ".weight", {h, h}});
      out.push_back({p + "attention.self." + qkv + ".bias", {h}});
    }
    out.push_back({p + "attention.output.dense.weight", {h, h}});
    out.push_back({p + "attention.output.dense.bias", {h}});
    out.push_back({p + "attention.output.LayerNorm.weight", {h}});
    out.push_back({p + "attention.output.LayerNorm.bias", {h}});
    out.push_back({p + "intermediate.dense.weight", {s.ffn, h}});
    out.push_back({p + "intermediate.dense.bias", {s.ffn}});
    out.push_back({p + "output.dense.weight", {h, s.ffn}});
    out.push_back({p + "output.dense.bias", {h}});
    out.push_back({p + "output.LayerNorm.weight", {h}});
    out.push_back({p + "output.LayerNorm.bias", {h}});
  }
  return out;
}

void write_random_bert_weights(const std::string& path, const BertShape& s, uint64_t seed) {
  std::vector<NamedTensor> tensors;
  // A counter-based stream per tensor (splitmix64 of seed and index, Box-Muller), so the
  // bytes do not depend on the standard library's distributions.
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  };
  uint64_t index = 0;
  for (const auto& [name, shape] : bert_tensor_shapes(s)) {
    NamedTensor t{name, shape, {}};
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    const bool layer_norm = name.find("LayerNorm") != std::string::npos;
    t.data.resize(n, layer_norm && weight ? 1.0f : 0.0f);
    if (weight && !layer_norm) {
      uint64_t state = mix(seed ^ mix(index));
      for (int64_t i = 0; i < n; i += 2) {
        state = mix(state);
        double u1 = (double(state >> 11) + 0.5) / 9007199254740992.0;
        state = mix(state);
        double u2 = double(state >> 11) / 9007199254740992.0;
        double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
        t.data[i] = static_cast<float>(0.02 * r * std::cos(a));
        if (i + 1 < n) t.data[i + 1] = static_cast<float>(0.02 * r * std::sin(a));
      }
    }
    ++index;
    tensors.push_back(std::move(t));
  }
  write_safetensors(path, tensors);
}

}  // namespace dietcode::model
