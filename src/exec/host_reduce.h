// Element-wise arithmetic of the host (CPU) executor: combining two buffers with a reduction op,
// and the avg post-division. The GPU executor must give bit-identical results, so the rounding,
// overflow and NaN rules below are part of braid's contract and are written to match what CUDA's
// own conversions and NCCL-style device reductions do.
//
// Semantics, per element type:
//
// Integers (int8 .. uint64)
//   sum, prod  wrap around modulo 2^bits (two's complement), as CUDA's integer arithmetic does.
//   max, min   exact.
//   avg        reduces as sum (wrapping); the post-division is integer division truncating toward
//              zero, e.g. -7 / 2 = -3.
//
// float32, float64
//   sum, prod  plain IEEE-754 arithmetic, round to nearest even.
//   avg        sum, then x / divisor computed in the same type (float for float32, double for
//              float64), a true division, not a multiply by 1/divisor.
//   NaN        a NaN input gives a NaN; which NaN (payload) is not specified for these two types.
//
// float16, bfloat16, float8e4m3, float8e5m2
//   Each element is widened to float (exactly), combined in float, and rounded back to nearest
//   even. For sum, prod and the avg division this equals the correctly rounded result of the
//   narrow operation (float has more than 2p+2 significand bits for every such p), so it also
//   equals CUDA's native __hadd/__hmul on half and bfloat16.
//   float16    overflow rounds to +-inf (like __float2half_rn); NaN becomes the canonical quiet NaN
//              0x7fff, sign dropped (as __float2half_rn does).
//   bfloat16   overflow rounds to +-inf (like __float2bfloat16_rn); NaN becomes 0x7fff.
//   fp8        the rules of cuda_fp8.h's default constructors __nv_fp8_e4m3(float) and
//              __nv_fp8_e5m2(float), which use __NV_SATFINITE: a finite value that would round
//              beyond the largest finite value, and +-inf itself, become +-max (E4M3: 448, bits
//              0x7e; E5M2: 57344, bits 0x7b). So on E5M2, inf + 1 = 57344, and inf - inf = NaN.
//              Any NaN becomes 0x7f (sign dropped) in both formats. Subnormals are kept and
//              rounded to nearest even; values at or below half the smallest subnormal become
//              zero, keeping the sign (-1e-9 -> 0x80).
//              E4M3 is OCP "E4M3FN": no infinities, max 448, NaN only S.1111.111.
//              E5M2 is IEEE-like: max 57344, +-inf at S.11111.00, NaN at S.11111.xx (xx != 0).
//
// max and min on every floating type (compared in float for the narrow types):
//   NaN-ignoring like fmaxf/fminf, which is what NCCL's device code uses (fmaxf/fminf for float
//   and double, __hmax/__hmin for half and bfloat16): if one operand is NaN the other is returned;
//   if both are, a NaN. -0 orders below +0, so max(-0, +0) = +0 and min(-0, +0) = -0 in either
//   operand order; a reduction's result then never depends on the order ranks are combined in.
//
// All of this assumes the default floating-point environment: round to nearest even (the
// subnormal conversions use the FPU's rounding) and no FTZ/DAZ, which would flush float32,
// float64 and bfloat16 subnormals in the arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/braid.h"

namespace braid::exec {

/// dst[i] = a[i] (op) b[i] for i < n elements of `type`; avg reduces as sum (the division is the
/// post-op, divideElems). dst may alias a or b exactly (in-place) but must not partially overlap
/// them. Unaligned pointers are allowed; with n == 0 no pointer is touched. An invalid type or op
/// (the API layer rejects those) leaves dst unchanged.
void reduceElems(void* dst, const void* a, const void* b, size_t n, braidDataType_t type, braidRedOp_t op);

/// A pre-multiplied sum's first step: dst[i] = src[i] x *scalar (one element of `type`), with the
/// prod rules above (integers wrap; narrow floats multiply in float and round). dst may alias src
/// exactly.
void premultiplyElems(void* dst, const void* src, size_t n, braidDataType_t type, const void* scalar);

/// The avg post-operation: dst[i] = src[i] / divisor, with the rounding described above (integers
/// truncate toward zero). divisor must be >= 1. dst may alias src exactly.
void divideElems(void* dst, const void* src, size_t n, braidDataType_t type, int divisor);

/// Conversions between float and the narrow formats, by bit pattern. The *ToFloat direction is
/// exact (every narrow value is a float; NaN stays NaN). The floatTo* direction rounds to nearest
/// even with the overflow and NaN rules listed above.
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
float fp8e4m3ToFloat(uint8_t bits);
uint8_t floatToFp8e4m3(float value);
float fp8e5m2ToFloat(uint8_t bits);
uint8_t floatToFp8e5m2(float value);

/// One element of `type` at `p` (any alignment) as a double; 64-bit integers are exact up to 2^53.
/// For checks and tools, not the data path.
double elementToDouble(const void* p, braidDataType_t type);
/// Stores `value` as one element of `type` at `p`: floats round to nearest even (fp8 saturating, as
/// above), integers are truncated toward zero and wrap to the type's width.
void elementFromDouble(double value, void* p, braidDataType_t type);

}  // namespace braid::exec
