// The avx512:: kernel entry points on CPUs that are not x86-64 (ARM64 Kunpeng, ...), where the
// AVX-512 kernel files compile to nothing. DetectCpuFeatures() reports no AVX-512 there, so
// FastCpuOps never calls these; the *Supports queries answer false and anything else is an
// invariant violation.
#if !defined(__x86_64__)
#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"

namespace xinfer::cpu::avx512 {
namespace {
[[noreturn]] void NotOnThisCpu() {
  XI_CHECK_MSG(false, "an AVX-512 kernel was called on a CPU without AVX-512");
  __builtin_unreachable();
}
}  // namespace

bool QuantKernelSupports(const QuantTensor&) { return false; }
bool NibbleBf16Supports(const QuantTensor&, const CpuFeatures&) { return false; }
bool AttentionGroupSupports(int64_t) { return false; }
int AttentionGroupMaxHeads(int64_t) { NotOnThisCpu(); }
bool AttentionGroupBf16Supports(int64_t) { return false; }
int AttentionGroupBf16MaxHeads(int64_t) { NotOnThisCpu(); }
bool Int8DotSupports(const QuantTensor&, const CpuFeatures&) { return false; }
bool Int8PanelsSupports(const QuantTensor&, const CpuFeatures&) { return false; }
int64_t Int8AuxPerRow(QuantType, int64_t) { NotOnThisCpu(); }
void Int8PrepareX(QuantType, const float*, int64_t, int64_t, int64_t, int8_t*, int64_t, float*,
                  int64_t) {
  NotOnThisCpu();
}
void QuantLinearInt8(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }
void QuantLinearInt8Panels(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
bool W4A16PanelsSupports(const QuantTensor&, const CpuFeatures&) { return false; }
void QuantLinearW4A16Panels(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
bool W4A16Bf16PanelsSupports(const QuantTensor&, const CpuFeatures&) { return false; }
void W4A16Bf16PrepareX(const float*, int64_t, int64_t, int64_t, uint16_t*, int64_t, float*,
                       int64_t) {
  NotOnThisCpu();
}
void QuantLinearW4A16Bf16Panels(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
void QuantKernelTablesInit() {}
void QuantLinearQ8Direct(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
void DequantizeRowsQ8(const QuantTensor&, int64_t, int64_t, float*) { NotOnThisCpu(); }
void QuantLinearNibble(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
int64_t QuantBlockElemsForSums(const QuantTensor&) { NotOnThisCpu(); }
void QuantBlockSums(const float*, int64_t, int64_t, int64_t, int64_t, float, float*, int64_t) {
  NotOnThisCpu();
}
void NibbleBf16PrepareX(QuantType, const float*, int64_t, int64_t, int64_t, uint16_t*, int64_t,
                        float*, int64_t, bool) {
  NotOnThisCpu();
}
void QuantLinearNibbleBf16(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  NotOnThisCpu();
}
void LinearF32Acc(const LinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }
void LinearBf16Dot(const LinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }
void LinearBf16Widen(const LinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }
void PermuteEvenOdd(const float*, int64_t, int64_t, float*, int64_t) { NotOnThisCpu(); }
void RoundRowsToBf16(const float*, int64_t, int64_t, uint16_t*, int64_t) { NotOnThisCpu(); }
void RmsNormRow(const float*, const float*, int64_t, float, float*) { NotOnThisCpu(); }
void SiluMul(const float*, const float*, int64_t, float*) { NotOnThisCpu(); }
void Add(const float*, const float*, int64_t, float*) { NotOnThisCpu(); }
void Exp(const float*, int64_t, float*) { NotOnThisCpu(); }
void AttentionRow(const float*, const float*, const float*, const int64_t*, int64_t, int64_t, float,
                  float*, float*) {
  NotOnThisCpu();
}
void AttentionGroup(const float*, int64_t, int, const float*, const float*, const int64_t*, int64_t,
                    int64_t, float, float*, float*, int64_t) {
  NotOnThisCpu();
}
void AttentionRow(const float*, const uint16_t*, const uint16_t*, const int64_t*, int64_t, int64_t,
                  float, float*, float*) {
  NotOnThisCpu();
}
void AttentionGroup(const float*, int64_t, int, const uint16_t*, const uint16_t*, const int64_t*,
                    int64_t, int64_t, float, float*, float*, int64_t) {
  NotOnThisCpu();
}
void AttentionGroupBf16(const float*, int64_t, int, const uint16_t*, const uint16_t*,
                        const int64_t*, int64_t, int64_t, float, float*, float*, int64_t) {
  NotOnThisCpu();
}
float ReadSum(const float*, int64_t) { NotOnThisCpu(); }
float FmaLoop(int64_t) { NotOnThisCpu(); }
float Bf16DotLoop(int64_t) { NotOnThisCpu(); }
int32_t Int8DotLoop(int64_t) { NotOnThisCpu(); }

void LinearPanels(const LinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }
void LinearPanelsBf16Dot(const LinearTask&, int64_t, int64_t, int64_t, int64_t) { NotOnThisCpu(); }

}  // namespace xinfer::cpu::avx512

namespace xinfer::cpu::avx2 {
bool Int8DotSupports(const QuantTensor&, const CpuFeatures&) { return false; }
void Int8PrepareX(const float*, int64_t, int64_t, int64_t, int8_t*, int64_t, float*, int64_t,
                  Int8XLayout) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
void QuantLinearInt8(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
void LinearPanels(const LinearTask&, int64_t, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
bool AttentionGroupSupports(int64_t) { return false; }
void AttentionGroup(const float*, int64_t, int, const float*, const float*, const int64_t*, int64_t,
                    int64_t, float, float*, float*, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
void AttentionGroup(const float*, int64_t, int, const uint16_t*, const uint16_t*, const int64_t*,
                    int64_t, int64_t, float, float*, float*, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
bool Int8PanelsSupports(const QuantTensor&, const CpuFeatures&) { return false; }
Layout Int8PanelsLayout(QuantType) { return Layout::kRowMajor; }
void QuantLinearInt8Panels(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
bool W4A16PanelsSupports(const QuantTensor&, const CpuFeatures&) { return false; }
void W4A16PrepareX(const float*, int64_t, int64_t, int64_t, float*, int64_t, float*, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
void QuantLinearW4A16Panels(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "an AVX2 kernel was called on a CPU without AVX2");
}
}  // namespace xinfer::cpu::avx2

namespace xinfer::cpu {
bool DensePanelsSupport(DType, const CpuFeatures&) { return false; }
Layout DensePanelsLayout(DType, const CpuFeatures&) { return Layout::kRowMajor; }
void LinearPartialPanel(const LinearTask&, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "no panel kernels on this CPU");
}
}  // namespace xinfer::cpu
#endif  // !defined(__x86_64__)
