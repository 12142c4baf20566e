#include "kernels/cpu_features.h"

#include <cstdlib>

#include "core/ascii.h"
#include "core/check.h"

#if GPT_X86_64
#include <cpuid.h>
#endif
#if GPT_X86_64 && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if GPT_AARCH64 && defined(__linux__)
#include <sys/auxv.h>
#elif GPT_AARCH64 && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace gpt {

namespace {

// CPUID says whether the CPU has AMX; Linux enables the tile registers (8 KB of state per thread)
// only for a process that asks (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16+), and a
// tile instruction before that dies with SIGILL. The grant covers every thread of the process.
bool amx_bf16_usable() {
#if GPT_X86_64 && defined(__linux__) && defined(SYS_arch_prctl)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
  if ((edx & kAmxBf16) == 0 || (edx & kAmxTile) == 0) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

#if GPT_AARCH64
bool aarch64_has_neon() {
#if defined(__linux__)
  return (getauxval(AT_HWCAP) & (1ul << 1)) != 0;  // HWCAP_ASIMD
#elif defined(__APPLE__)
  int value = 0;
  size_t size = sizeof value;
  return sysctlbyname("hw.optional.AdvSIMD", &value, &size, nullptr, 0) == 0 && value != 0;
#else
  return false;
#endif
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if GPT_X86_64
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512bf16 = f.avx512f && __builtin_cpu_supports("avx512bf16");
#elif GPT_AARCH64
  f.neon = aarch64_has_neon();
#endif
  f.amx_bf16 = amx_bf16_usable();
  return f;
}

VectorIsa best_vector_isa() {
  for (VectorIsa isa : kVectorIsas)
    if (cpu_supports(isa)) return isa;
  return VectorIsa::baseline;
}

thread_local const VectorIsa* t_forced_isa = nullptr;

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    const std::optional<MaxIsa> cap = max_isa_setting().cap;
    return cap ? capped(detect(), *cap) : detect();
  }();
  return features;
}

const char* max_isa_name(MaxIsa cap) {
  switch (cap) {
    case MaxIsa::portable:
      return "portable";
    case MaxIsa::avx2:
      return "avx2";
    case MaxIsa::avx512:
      return "avx512";
    case MaxIsa::avx512_bf16:
      return "avx512_bf16";
    case MaxIsa::amx:
      return "amx";
    case MaxIsa::neon:
      break;
  }
  return "neon";
}

MaxIsaSetting parse_max_isa(const char* value) {
  if (!value || !*value) return {};
  const std::string lower = ascii_lower(value);
  std::string valid;
  for (const MaxIsa cap : kMaxIsas) {
    if (lower == max_isa_name(cap)) return {cap, {}};
    valid += std::string(valid.empty() ? "" : ", ") + max_isa_name(cap);
  }
  return {std::nullopt, std::string(kMaxIsaVariable) + "=" + value + " names no instruction set: expected one of " +
                            valid + " (or unset: no cap)"};
}

const MaxIsaSetting& max_isa_setting() {
  static const MaxIsaSetting setting = parse_max_isa(std::getenv(kMaxIsaVariable));
  return setting;
}

CpuFeatures capped(CpuFeatures f, MaxIsa cap) {
  switch (cap) {
    case MaxIsa::portable:
      return {};
    case MaxIsa::avx2:
      f.avx512f = f.avx512dq = false;
      [[fallthrough]];
    case MaxIsa::avx512:
      f.avx512bf16 = false;
      [[fallthrough]];
    case MaxIsa::avx512_bf16:
      f.amx_bf16 = false;
      break;
    case MaxIsa::amx:
    case MaxIsa::neon:
      break;
  }
  return f;
}

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::avx512:
      return "avx512";
    case VectorIsa::avx2:
      return "avx2";
    case VectorIsa::neon:
      return "neon";
    case VectorIsa::baseline:
      break;
  }
  return "baseline";
}

bool cpu_supports(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::avx512:
      return cpu_features().avx512f && cpu_features().avx512dq;
    case VectorIsa::avx2:
      return cpu_features().avx2;
    case VectorIsa::neon:
      return cpu_features().neon;
    case VectorIsa::baseline:
      break;
  }
  return true;
}

VectorIsa vector_isa() {
  if (t_forced_isa) return *t_forced_isa;
  static const VectorIsa best = best_vector_isa();
  return best;
}

ForcedVectorIsaScope::ForcedVectorIsaScope(VectorIsa isa) : saved_(t_forced_isa), isa_(isa) {
  GPT_CHECK(cpu_supports(isa), "this CPU cannot run the forced instruction set");
  t_forced_isa = &isa_;
}

ForcedVectorIsaScope::~ForcedVectorIsaScope() { t_forced_isa = saved_; }

}  // namespace gpt
