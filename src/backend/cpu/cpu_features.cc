// Run-time ISA detection and the process-wide choice of the BF16 Linear path.
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_kernels.h"
#include "base/logging.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#include "hwy/targets.h"

namespace xinfer::cpu {

#if defined(__x86_64__) || defined(__i386__)
namespace {
// The CPU family of an AMD processor (CPUID leaf 1, base + extended family), 0 on others.
unsigned AmdFamily() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return 0;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!amd || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return 0;
  const unsigned base = (eax >> 8) & 0xf;
  return base == 0xf ? base + ((eax >> 20) & 0xff) : base;
}
}  // namespace
#endif

bool ReadOnceNonTemporal(bool amd, const char* override_value) {
  if (override_value == nullptr) return amd;
  if (std::strcmp(override_value, "nta") == 0) return true;
  if (std::strcmp(override_value, "l2") == 0) return false;
  XI_LOG_WARN("XINFER_READ_ONCE_PREFETCH={} is neither nta nor l2; keeping {}", override_value,
              amd ? "nta" : "l2");
  return amd;
}

const CpuFeatures& DetectCpuFeatures() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
    bool amd = false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("fma");
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    f.avx512_vbmi = f.avx512 && __builtin_cpu_supports("avx512vbmi");
    f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512_double_pumped = f.avx512 && AmdFamily() == 0x19;  // Zen 4 (Zen 3 has no AVX-512)
    amd = AmdFamily() != 0;
#endif
#if defined(__aarch64__)
    f.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
    // XINFER_ISA caps the ISA, to test the fallbacks on a newer machine: portable (the reference
    // kernels only), avx512 (no AVX512-BF16/VBMI/VNNI), avx2 or sse4 (Highway's kernels for that
    // target instead of the hand-written AVX-512 ones).
    int64_t hwy_allowed = 0;
    const char* cap = std::getenv("XINFER_ISA");
    const bool portable = cap != nullptr && std::strcmp(cap, "portable") == 0;
    if (cap != nullptr) {
      if (portable) f = CpuFeatures{};
      if (std::strcmp(cap, "avx512") == 0) f.avx512_bf16 = f.avx512_vbmi = f.avx512_vnni = false;
      if (std::strcmp(cap, "avx2") == 0) hwy_allowed = HWY_AVX2 | HWY_SSE4 | HWY_SSSE3;
      if (std::strcmp(cap, "sse4") == 0) {
        hwy_allowed = HWY_SSE4 | HWY_SSSE3;
        f.avx2 = false;  // nor the AVX2 int8 kernel
      }
    }
    if (hwy_allowed != 0) {
      f.avx512 = f.avx512_bf16 = f.avx512_vbmi = f.avx512_vnni = f.avx512_double_pumped = false;
      hwy::DisableTargets(~(hwy_allowed | HWY_EMU128 | HWY_SCALAR));
    }
    f.simd = !portable && simd::Available();
    f.read_once_non_temporal = ReadOnceNonTemporal(amd, std::getenv("XINFER_READ_ONCE_PREFETCH"));
    return f;
  }();
  return features;
}

Bf16Path SelectBf16Path(const CpuFeatures& f, bool bf16_activations) {
  // Opt-in only: rounding activations to BF16 moves the shared tiny models' logits by up to
  // 0.024, over the golden tests' 2e-2 tolerance (docs/performance.md).
  if (f.avx512_bf16 && bf16_activations) return Bf16Path::kBf16Dot;
  if (f.avx512 || f.simd) return Bf16Path::kWidenF32;
  return Bf16Path::kReference;
}

const char* Bf16PathName(Bf16Path path) {
  switch (path) {
    case Bf16Path::kBf16Dot:
      return "bf16-dot";
    case Bf16Path::kWidenF32:
      return "widen-f32";
    case Bf16Path::kReference:
      break;
  }
  return "reference";
}

const char* KernelIsaName() {
  const CpuFeatures& f = DetectCpuFeatures();
  if (f.avx512_bf16) return "avx512-bf16";
  if (f.avx512) return "avx512";
  if (f.simd) {
    static const std::string name = std::string("simd-") + simd::TargetName();
    return name.c_str();
  }
  return "portable";
}

}  // namespace xinfer::cpu
