// Internal to the GEMM lowering (lower_matmul.cpp, lower_matmul_kernels.cpp): a MatmulGroup
// checked and brought into one normal form that both kernel generators read, so that neither
// generator re-derives shapes, strides or argument order. Never used outside ir/graph/.
#pragma once

#include "ir/graph/lower_kernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph::detail {

/// How a 2-D operand tile is read by matrix_load: rows of unit-stride elements (row-major,
/// `ld` = the row stride), columns of unit-stride elements (`.col`, `ld` = the column stride),
/// one element for the whole tile (a broadcast scalar, loaded once and broadcast over the
/// subgroup), or none of these (only the SIMT kernel can read it).
enum class TileLayout : uint8_t { Row, Col, Scalar, Strided };

/// One operand of the GEMM kernel (A, B, an epilogue extra or the output), aligned to the
/// output's batch dims: `batchStrides` has one entry per output batch dim (0 where the operand
/// broadcasts), `rowStride` / `colStride` address its 2-D part (A: M x K, B: K x N, extras and
/// the output: M x N; 0 where an extra broadcasts).
struct GemmOperand {
  int buffer = -1;
  DType dtype = DType::F32;
  int64_t offset = 0;
  int64_t rowStride = 0, colStride = 0;
  std::vector<int64_t> batchStrides;
  TileLayout layout = TileLayout::Strided;
};

/// The GEMM in normal form. The kernel text depends on: the dtypes, the number of batch dims,
/// each operand's TileLayout (matrix path only), the epilogue and the tile shape; never on
/// M, N, K, the batch extents, offsets or stride values (kernel arguments, in argument order:
/// M, N, K, batch extents, then per operand offset, rowStride, colStride, batchStrides).
struct GemmForm {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> batch; // the output's batch extents (may be empty)
  GemmOperand a, b, out;
  std::vector<GemmOperand> extras; // in MatmulGroup::extras order
  DType inType = DType::F32;       // A's and B's dtype
  DType productType = DType::F32;  // the matmul node's dtype (the product is rounded to it)
  /// Scalar arguments are passed as i32 (widened to i64 in the kernel) when every one fits:
  /// Vulkan's push constants hold 128 bytes (16 i64), too few for a batched GEMM with
  /// extras. The index math stays i64 either way.
  bool narrowArgs = false;
  std::string where; // "matmul %name (line L)" for errors
};

/// Tile shape of the matrix kernel: tm x tn accumulator per subgroup, tk deep K steps,
/// `subgroups` subgroups per workgroup.
struct GemmTiles {
  int m = 64, n = 64, k = 64, subgroups = 1;
};

/// The kernel's parameter list ("%A: buffer<f32, readonly>, ..., %M: i64, ...") and the names
/// every generator uses for the scalar arguments of operand `p` ("a", "b", "e0", ...):
/// %p_off, %p_rs, %p_cs, %p_bs<d>; buffers %A, %B, %E<i>, %C; sizes %M %N %K %D<d>; the
/// output (contiguous) only %c_off. With narrowArgs the scalars are i32 parameters named
/// with a "_32" suffix, and gemmPrologue defines the i64 names.
/// `cAccess`: the output's access ("writeonly" for the GEMMs, "readwrite" for the separate
/// epilogue kernel, which reads the product back).
std::string gemmParams(const GemmForm &f, const char *cAccess = "writeonly");
/// The names of the scalar parameters in argument order (without '%' and suffix).
std::vector<std::string> gemmScalarNames(const GemmForm &f);
/// Emits, at the top of a kernel: the i64 values of narrow arguments, and the output's strides
/// (%c_rs = N, %c_cs = 1, %c_bs<d> = the product of the later extents times M N).
void gemmPrologue(KernelText &k, const GemmForm &f);

/// Emits the epilogue of the group on scalars already in compute type: `product` is the
/// accumulator value (f32, or f64 for f64 GEMMs), `extras[i]` extra i in its compute type.
/// Returns the result value in the result's compute type; false with *error for a node that
/// cannot be part of an epilogue.
bool emitEpilogue(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                  const std::string &product, const std::vector<std::string> &extras,
                  std::string *result, std::string *error);

/// The matrix-op kernel (caps.matrixOps, f16/bf16/f32 inputs, every operand Row/Col/Scalar).
bool emitMatrixGemm(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                    const GemmTiles &t, const std::string &name, std::string *error);
/// The SIMT kernel: `tile` x `tile` work-items per workgroup, shared-memory staged tiles, any
/// strides, any dtype (f64 included).
bool emitSimtGemm(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f, int tile,
                  const std::string &name, std::string *error);
/// The group's epilogue as a kernel of its own, for a runtime that computes the plain f32
/// product into the output with a vendor GEMM (PlanGemm::epilogue): it takes the GEMM
/// kernel's parameters (A and B unused, C read and written) and replaces each element of C,
/// the product, by the epilogue's result, with the same emitEpilogue ops as the fused kernels.
/// One work-item per element: workgroups of work-items over columns, the batch entries' rows
/// over group_id.y + 65535 group_id.z; no loop.
bool emitEpilogueKernel(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                        const std::string &name, std::string *error);

} // namespace tessera::graph::detail
