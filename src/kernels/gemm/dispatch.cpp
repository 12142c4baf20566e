#include "kernels/gemm/dispatch.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/cpu_features.h"
#include "kernels/fma_probe.h"
#include "kernels/gemm.h"

namespace gpt {

namespace gemm_detail {

namespace {

// Fastest first; for float32 the first one this CPU supports runs. A new family (AMX, NEON) is
// its own file, declared in kernel_family.h and listed here; each architecture lists its own.
#if GPT_X86_64
constexpr const KernelFamily<float>* kFloat32Families[] = {&kAvx512, &kAvx2, &kPortable};
// bfloat16 inputs: VDPBF16PS (kAvx512Bf16), else these float32 micro-kernels on rounded inputs.
constexpr const KernelFamily<float>* kRoundedFamilies[] = {&kAvx512Rounded, &kAvx2Rounded, &kPortableRounded};
// The tiles arithmetic: AMX, else its emulation.
constexpr const KernelFamily<uint32_t>* kTilesFamilies[] = {&kAmxBf16, &kPortableAmxBf16};
#elif GPT_AARCH64
constexpr const KernelFamily<float>* kFloat32Families[] = {&kNeon, &kPortable};
constexpr const KernelFamily<float>* kRoundedFamilies[] = {&kPortableRounded};
constexpr const KernelFamily<uint32_t>* kTilesFamilies[] = {&kPortableAmxBf16};
#else
constexpr const KernelFamily<float>* kFloat32Families[] = {&kPortable};
constexpr const KernelFamily<float>* kRoundedFamilies[] = {&kPortableRounded};
constexpr const KernelFamily<uint32_t>* kTilesFamilies[] = {&kPortableAmxBf16};
#endif
using FamilyList = std::span<const KernelFamily<float>* const>;

// VDPBF16PS's family where the architecture has one, else null.
const KernelFamily<uint32_t>* vdpbf16ps_family() {
#if GPT_X86_64
  return &kAvx512Bf16;
#else
  return nullptr;
#endif
}

// The last family of each list, the portable one, runs anywhere.
template <std::size_t N>
const KernelFamily<float>& first_supported(const KernelFamily<float>* const (&families)[N]) {
  for (const KernelFamily<float>* family : families)
    if (family->supported()) return *family;
  return *families[N - 1];
}

// VDPBF16PS where the CPU has it and it outruns FMAs, else the widest float32 micro-kernels.
AnyFamily best_bfloat16_family() {
  if (vdpbf16ps_outruns_fmas()) return *vdpbf16ps_family();
  return first_supported(kRoundedFamilies);
}

// What a ForcedKernelScope set on this thread, per Dtype (empty: the automatic choice).
thread_local AnyFamily t_forced[2];

AnyFamily& forced(Dtype inputs) { return t_forced[inputs == Dtype::bfloat16 ? 1 : 0]; }

// The process's bfloat16 arithmetic, as set (automatic until then).
std::atomic<int> g_bf16_arithmetic{static_cast<int>(Bf16Arithmetic::automatic)};

// The first tiles family this CPU runs (the last, the emulation, runs anywhere).
AnyFamily tiles_family() {
  for (const KernelFamily<uint32_t>* family : kTilesFamilies)
    if (family->supported()) return *family;
  return kPortableAmxBf16;
}

// Whether the tiles arithmetic runs on hardware here: AMX granted by Linux and every instruction
// the family's packing needs (not only the emulation).
bool tiles_run_on_hardware() { return std::strcmp(tiles_family().name(), kPortableAmxBf16.name) != 0; }

// A line that names kernels names the cap that chose them, if any.
std::string cap_note() {
  const std::optional<MaxIsa> cap = max_isa_setting().cap;
  return cap ? std::string("; ") + kMaxIsaVariable + "=" + max_isa_name(*cap) : std::string();
}

}  // namespace

const KernelFamily<float>& float32_family() {
  if (const AnyFamily chosen = forced(Dtype::float32)) return *chosen.floats();
  static const KernelFamily<float>& best = first_supported(kFloat32Families);
  return best;
}

AnyFamily gemm_family(Dtype inputs) {
  if (inputs == Dtype::float32) return float32_family();
  if (const AnyFamily chosen = forced(inputs)) return chosen;
  if (bf16_arithmetic() == Bf16Arithmetic::tiles) return tiles_family();
  static const AnyFamily best = best_bfloat16_family();
  return best;
}

AnyFamily family_named(const char* name) {
  GPT_CHECK(name != nullptr, "no GEMM kernel named");
  const auto called = [name](const char* family_name) {
    return family_name == name || std::strcmp(family_name, name) == 0;
  };
  for (const FamilyList families : {FamilyList(kFloat32Families), FamilyList(kRoundedFamilies)})
    for (const KernelFamily<float>* family : families)
      if (called(family->name)) return *family;
  for (const KernelFamily<uint32_t>* family : kTilesFamilies)
    if (called(family->name)) return *family;
  const KernelFamily<uint32_t>* pairs = vdpbf16ps_family();
  GPT_CHECK(pairs && called(pairs->name), std::string("no GEMM kernel called ") + name);
  return *pairs;
}

}  // namespace gemm_detail

using gemm_detail::gemm_family;

std::vector<const char*> gemm_kernels(Dtype inputs) {
  using namespace gemm_detail;
  if (inputs == Dtype::bfloat16) return bfloat16_kernels(bf16_arithmetic());
  std::vector<const char*> names;
  for (const KernelFamily<float>* family : kFloat32Families)
    if (family->supported()) names.push_back(family->name);
  return names;
}

std::vector<const char*> bfloat16_kernels(Bf16Arithmetic arithmetic) {
  using namespace gemm_detail;
  std::vector<const char*> names;
  if (arithmetic == Bf16Arithmetic::tiles) {
    for (const KernelFamily<uint32_t>* family : kTilesFamilies)
      if (family->supported()) names.push_back(family->name);
    return names;
  }
  const KernelFamily<uint32_t>* pairs = vdpbf16ps_family();
  if (pairs && pairs->supported()) names.push_back(pairs->name);
  for (const KernelFamily<float>* family : kRoundedFamilies)
    if (family->supported()) names.push_back(family->name);
  return names;
}

Bf16Arithmetic fastest_bf16_arithmetic() {
  return gemm_detail::tiles_run_on_hardware() ? Bf16Arithmetic::tiles : Bf16Arithmetic::sequential;
}

Bf16Arithmetic bf16_arithmetic() {
  const auto chosen = static_cast<Bf16Arithmetic>(gemm_detail::g_bf16_arithmetic.load(std::memory_order_relaxed));
  return chosen == Bf16Arithmetic::automatic ? fastest_bf16_arithmetic() : chosen;
}

void set_bf16_arithmetic(Bf16Arithmetic arithmetic) {
  gemm_detail::g_bf16_arithmetic.store(static_cast<int>(arithmetic), std::memory_order_relaxed);
}

ForcedKernelScope::ForcedKernelScope(Dtype inputs, const char* kernel) : inputs_(inputs) {
  gemm_detail::AnyFamily& slot = gemm_detail::forced(inputs);
  saved_ = slot ? slot.name() : nullptr;
  if (!kernel) {
    slot = {};
    return;
  }
  bool runs_here = false;
  for (const char* name : gemm_kernels(inputs)) runs_here = runs_here || std::strcmp(name, kernel) == 0;
  if (inputs == Dtype::bfloat16)
    for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
      for (const char* name : bfloat16_kernels(arithmetic)) runs_here = runs_here || std::strcmp(name, kernel) == 0;
  GPT_CHECK(runs_here, std::string("this CPU has no ") + dtype_name(inputs) + " GEMM kernel called " + kernel);
  slot = gemm_detail::family_named(kernel);
}

ForcedKernelScope::~ForcedKernelScope() {
  gemm_detail::forced(inputs_) = saved_ ? gemm_detail::family_named(saved_) : gemm_detail::AnyFamily{};
}

const char* gemm_kernel_name(Dtype inputs) { return gemm_family(inputs).name(); }

int gemm_vector_width() { return gemm_detail::float32_family().vector_width; }

bool gemm_bfloat16_uses_vdpbf16ps() {
  const gemm_detail::KernelFamily<uint32_t>* pairs = gemm_detail::vdpbf16ps_family();
  return pairs && gemm_family(Dtype::bfloat16).name() == pairs->name;
}

bool vdpbf16ps_outruns_fmas() {
  const gemm_detail::KernelFamily<uint32_t>* pairs = gemm_detail::vdpbf16ps_family();
  static const bool outruns = pairs && pairs->supported() && vdpbf16ps_speedup() > 1.1;
  return outruns;
}

AutoDtype choose_auto_dtype(const CpuFeatures& features, Bf16Arithmetic arithmetic, bool vdpbf16ps_outruns_fmas,
                            std::optional<MaxIsa> cap) {
  if (arithmetic == Bf16Arithmetic::automatic)
    arithmetic = runs_amx_tiles(features) ? Bf16Arithmetic::tiles : Bf16Arithmetic::sequential;
  const std::string under = cap ? std::string(" under ") + kMaxIsaVariable + "=" + max_isa_name(*cap) : "";
  if (arithmetic == Bf16Arithmetic::tiles) {
    if (runs_amx_tiles(features)) return {Dtype::bfloat16, "this CPU multiplies bfloat16 natively: amx" + under};
    return {Dtype::float32, "bf16_arithmetic \"tiles\" runs natively on AMX only, and there is none here" + under};
  }
  if (features.avx512bf16 && vdpbf16ps_outruns_fmas)
    return {Dtype::bfloat16, "this CPU multiplies bfloat16 natively: avx512_bf16" + under};
  if (features.avx512bf16) return {Dtype::float32, "this CPU's VDPBF16PS measured slower than its FMAs" + under};
  if (features.neon)
    return {Dtype::float32, "no native bfloat16 products here: the NEON kernels multiply bfloat16 as float32"};
  return {Dtype::float32, "no native bfloat16 products" + (cap ? under : " on this CPU (no AVX512_BF16 or AMX)")};
}

AutoDtype auto_dtype(Bf16Arithmetic arithmetic) {
  return choose_auto_dtype(cpu_features(), arithmetic, vdpbf16ps_outruns_fmas(), max_isa_setting().cap);
}

std::string describe_matmul(Dtype inputs) {
  const std::string kernel = std::string(gemm_kernel_name(inputs)) + " kernel";
  if (inputs == Dtype::float32) return "matrix products: float32 (" + kernel + gemm_detail::cap_note() + ")";
  std::string how;  // nothing to add for VDPBF16PS
  if (bf16_arithmetic() == Bf16Arithmetic::tiles)
    how = gemm_detail::tiles_run_on_hardware() ? ", AMX tiles"
                                               : "; AMX's tiles arithmetic emulated: exact, and many times slower";
  else if (!gemm_bfloat16_uses_vdpbf16ps())
    how = cpu_features().avx512bf16 ? "; this CPU's VDPBF16PS measured slower than its FMAs"
                                    : "; no AVX512_BF16 here: no faster than float32";
  return "matrix products: bfloat16 inputs, float32 sums (" + kernel + how + gemm_detail::cap_note() + ")";
}

std::string describe_kernels() {
  return std::string("float32 ") + gemm_kernel_name(Dtype::float32) + ", bfloat16 " +
         gemm_kernel_name(Dtype::bfloat16) + ", rows " + vector_isa_name(vector_isa()) + gemm_detail::cap_note();
}

}  // namespace gpt
