#include "schedule/isa.h"

#include "support/error.h"

namespace dietcode::schedule {

const VectorIsa& vector_isa(Isa isa) {
  static const VectorIsa avx2{Isa::Avx2, "avx2", 8, 16};
  static const VectorIsa avx512{Isa::Avx512, "avx512", 16, 32};
  return isa == Isa::Avx512 ? avx512 : avx2;
}

const VectorIsa& vector_isa_of_width(int64_t width) {
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    if (vector_isa(isa).width == width) return vector_isa(isa);
  internal_error(__FILE__, __LINE__, "no vector ISA has " + std::to_string(width) + " lanes");
}

std::string_view to_string(Isa isa) {
  return vector_isa(isa).name;
}

Isa parse_isa(std::string_view text) {
  if (text == "avx2") return Isa::Avx2;
  if (text == "avx512") return Isa::Avx512;
  user_error("unknown vector ISA '{}'; expected avx2 or avx512", text);
}

}  // namespace dietcode::schedule
