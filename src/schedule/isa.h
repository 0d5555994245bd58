// The vector instruction sets code is generated for, as a closed enum. Names appear
// only at the boundaries (schedule and module JSON, the command line, messages).
#pragma once

#include <cstdint>
#include <string_view>

namespace dietcode::schedule {

enum class Isa : uint8_t {
  Avx2,    // AVX2 + FMA (x86-64-v3): 8 fp32 lanes, 16 registers
  Avx512,  // AVX-512F (x86-64-v4): 16 fp32 lanes, 32 registers
};

// What a micro-kernel schedule is shaped by.
struct VectorIsa {
  Isa isa;
  std::string_view name;
  int64_t width;      // fp32 lanes per vector register
  int64_t registers;  // architectural vector registers
};

const VectorIsa& vector_isa(Isa isa);
// The ISA whose vectors hold `width` fp32 lanes (generated code knows its width only).
const VectorIsa& vector_isa_of_width(int64_t width);
std::string_view to_string(Isa isa);
// "avx2" or "avx512"; throws dietcode::Error naming the text for anything else.
Isa parse_isa(std::string_view text);

}  // namespace dietcode::schedule
