// The two GEMM kernels of lowerMatmul, as kernel IR text (lower_matmul.h gives the normal form
// they read and the parameter names they share):
// - the matrix kernel: each subgroup walks tm x tn output tiles of one batch entry in a
//   grid-stride loop (as ir/examples/gemm_f32.tir and bench/gemm_bench do), K in tk steps of
//   matrix_load / matrix_mad with `bounds` for the partial tiles; the epilogue is one
//   matrix_map over the accumulator and the extras loaded as accumulator-shaped tiles (a
//   broadcast row or column is a stride-0 load, a broadcast scalar a subgroup-uniform value),
//   then one matrix_store in the output's dtype;
// - the SIMT kernel: a tile x tile workgroup per output tile, A and B staged through shared
//   memory in the compute type, one output element per work-item, any strides and dtypes.
// Batch entries are group_id.z in a grid-stride loop; the batch index is split into the
// output's batch dims at run time, so the text depends on the number of batch dims only.
// All index math is i64. Nothing here may depend on a size or stride value.
#include "ir/graph/lower_matmul.h"

#include <string>
#include <vector>

namespace tessera::graph::detail {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

// Operand prefixes of gemmParams, in argument order: "a", "b", "e0", ..., "c".
std::vector<std::string> operandNames(const GemmForm &f) {
  std::vector<std::string> n = {"a", "b"};
  for (size_t i = 0; i < f.extras.size(); ++i)
    n.push_back("e" + num(static_cast<int64_t>(i)));
  n.push_back("c");
  return n;
}

// Adds to bases[i] (operand names[i], i >= first) the offset of batch entry `index`: the
// index split into the batch dims last-first, each dim's index times the operand's stride.
void addBatchOffsets(KernelText &k, const GemmForm &f, std::string index,
                     const std::vector<std::string> &names, size_t first,
                     std::vector<std::string> &bases) {
  for (size_t d = f.batch.size(); d-- > 0;) {
    const std::string D = "%D" + num(int64_t(d));
    std::string idx = index;
    if (d > 0) {
      idx = k.fresh("bi");
      k.line(idx + " = rem " + index + ", " + D + " : i64");
      std::string q = k.fresh("bq");
      k.line(q + " = div " + index + ", " + D + " : i64");
      index = q;
    }
    for (size_t i = first; i < names.size(); ++i) {
      std::string m = k.fresh("bm");
      k.line(m + " = mul " + idx + ", %" + names[i] + "_bs" + num(int64_t(d)) + " : i64");
      std::string b = k.fresh("bb");
      k.line(b + " = add " + bases[i] + ", " + m + " : i64");
      bases[i] = b;
    }
  }
}

// Each operand's offset before any batch step ("%a_off", ...), in operandNames order.
std::vector<std::string> operandOffsets(const GemmForm &f) {
  std::vector<std::string> bases;
  for (const std::string &n : operandNames(f))
    bases.push_back("%" + n + "_off");
  return bases;
}

// The batch entries (the product of the batch dims) and the first workgroup's batch entry
// (%g_bz0) and the stride (%g_nbz) of the grid over them (group_id.z / num_groups.z).
std::string openBatchGrid(KernelText &k, const GemmForm &f) {
  std::string count = "%D0";
  for (size_t d = 1; d < f.batch.size(); ++d) {
    std::string c = k.fresh("bn");
    k.line(c + " = mul " + count + ", %D" + num(int64_t(d)) + " : i64");
    count = c;
  }
  k.line("%g_bz0 = group_id.z : i64");
  k.line("%g_nbz = num_groups.z : i64");
  return count;
}

// Opens the batch loop (when the output has batch dims) and returns each operand's base
// offset for the current batch entry, in operandNames order: off + sum_d idx_d * bs_d, the
// batch index split into dims last-first.
std::vector<std::string> openBatch(KernelText &k, const GemmForm &f) {
  std::vector<std::string> bases = operandOffsets(f);
  if (f.batch.empty())
    return bases;
  const std::string count = openBatchGrid(k, f);
  k.open("for %g_bz = %g_bz0 to " + count + " step %g_nbz : i64 {");
  addBatchOffsets(k, f, "%g_bz", operandNames(f), 0, bases);
  return bases;
}

// Opens one grid-stride loop over (batch entry, tile) pairs, `%g_t` the tile index within its
// entry, and returns each operand's base offset as openBatch does. For kernels with barriers in
// their K loop (the SIMT GEMM): one loop level fewer than a batch loop around a tile loop.
// PoCL compiles a barrier inside nested loops by replicating regions per level: a batched SIMT
// GEMM ([32, 64, 32] x [32, 32, 64]) took 75 s to build with the two levels and ran past the
// 60 s deadline at its first launch; the flat loop builds as fast as an unbatched GEMM.
std::vector<std::string> openBatchTiles(KernelText &k, const GemmForm &f) {
  std::vector<std::string> bases = operandOffsets(f);
  if (f.batch.empty()) {
    k.open("for %g_t = %g_gid to %g_tiles step %g_ngroups : i64 {");
    return bases;
  }
  const std::string count = openBatchGrid(k, f);
  k.line("%g_items = mul " + count + ", %g_tiles : i64");
  k.line("%g_first0 = mul %g_bz0, %g_ngroups : i64");
  k.line("%g_first = add %g_first0, %g_gid : i64");
  k.line("%g_step = mul %g_nbz, %g_ngroups : i64");
  // Each workgroup's first item is its own tile (x) of its own batch entry (z), as with the
  // two loops; the stride visits every (entry, tile) pair of a smaller grid.
  k.open("for %g_it = %g_first to %g_items step %g_step : i64 {");
  k.line("%g_bz = div %g_it, %g_tiles : i64");
  k.line("%g_t = rem %g_it, %g_tiles : i64");
  addBatchOffsets(k, f, "%g_bz", operandNames(f), 0, bases);
  return bases;
}

// base + row * rs + col * cs, for the tile's first element.
std::string tileOffset(KernelText &k, const std::string &base, const std::string &op,
                       const std::string &row, const std::string &col) {
  std::string r = k.fresh("o");
  k.line(r + " = mul " + row + ", %" + op + "_rs : i64");
  std::string c = k.fresh("o");
  k.line(c + " = mul " + col + ", %" + op + "_cs : i64");
  std::string s = k.fresh("o");
  k.line(s + " = add " + base + ", " + r + " : i64");
  std::string o = k.fresh("o");
  k.line(o + " = add " + s + ", " + c + " : i64");
  return o;
}

// " %X[off] stride LD" with `.col` for a column-major tile.
std::string loadTail(TileLayout l, const std::string &buf, const std::string &op,
                     const std::string &off) {
  const bool col = l == TileLayout::Col;
  return std::string(col ? ".col " : " ") + buf + "[" + off + "] stride %" + op +
         (col ? "_cs" : "_rs");
}

std::string matrixType(DType t, int r, int c, const char *use) {
  return std::string("matrix<") + storageType(t) + ", " + num(r) + ", " + num(c) + ", " + use + ">";
}

// A value in storage type `t` (a matrix_map argument) in its compute type.
std::string toCompute(KernelText &k, DType t, const std::string &v) {
  if (t == DType::F16 || t == DType::BF16) {
    std::string r = k.fresh("x");
    k.line(r + " = convert " + v + " : " + storageType(t) + " -> f32");
    return r;
  }
  if (t == DType::Bool) {
    std::string z = k.fresh("x");
    k.line(z + " = const 0 : i8");
    std::string r = k.fresh("x");
    k.line(r + " = cmp.ne " + v + ", " + z + " : i8");
    return r;
  }
  return v;
}

// A compute-type value rounded (nearest even) into storage type `t`.
std::string toStorage(KernelText &k, DType t, const std::string &v) {
  if (t == DType::F16 || t == DType::BF16 || t == DType::Bool) {
    std::string r = k.fresh("y");
    k.line(r + " = convert " + v + " : " + computeType(t) + " -> " + storageType(t));
    return r;
  }
  return v;
}

} // namespace

bool emitMatrixGemm(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                    const GemmTiles &t, const std::string &name, std::string *error) {
  const std::string acc = matrixType(DType::F32, t.m, t.n, "acc");
  const std::string at = matrixType(f.inType, t.m, t.k, "a");
  const std::string bt = matrixType(f.inType, t.k, t.n, "b");
  k.open("kernel @" + name + "(" + gemmParams(f) + ") {");
  gemmPrologue(k, f);
  k.line("%g_zero = const 0 : i64");
  k.line("%g_tm = const " + num(t.m) + " : i64");
  k.line("%g_tn = const " + num(t.n) + " : i64");
  k.line("%g_tk = const " + num(t.k) + " : i64");
  k.line("%g_tm1 = const " + num(t.m - 1) + " : i64");
  k.line("%g_tn1 = const " + num(t.n - 1) + " : i64");
  k.line("%g_fzero = const 0.0 : f32");
  k.line("%g_lane0 = const 0 : i32");
  k.line("%g_wg = local_size.x : i64");
  k.line("%g_sg = subgroup_size : i64");
  k.line("%g_nsub = div %g_wg, %g_sg : i64");
  k.line("%g_gid = group_id.x : i64");
  k.line("%g_ngroups = num_groups.x : i64");
  k.line("%g_sid = subgroup_id : i64");
  k.line("%g_first0 = mul %g_gid, %g_nsub : i64");
  k.line("%g_first = add %g_first0, %g_sid : i64");
  k.line("%g_tstep = mul %g_ngroups, %g_nsub : i64");
  k.line("%g_mt0 = add %M, %g_tm1 : i64");
  k.line("%g_mtiles = div %g_mt0, %g_tm : i64");
  k.line("%g_nt0 = add %N, %g_tn1 : i64");
  k.line("%g_ntiles = div %g_nt0, %g_tn : i64");
  k.line("%g_tiles = mul %g_mtiles, %g_ntiles : i64");
  std::vector<std::string> base = openBatch(k, f);
  k.open("for %g_t = %g_first to %g_tiles step %g_tstep : i64 {");
  k.line("%g_ti = div %g_t, %g_ntiles : i64");
  k.line("%g_tj = rem %g_t, %g_ntiles : i64");
  k.line("%g_row0 = mul %g_ti, %g_tm : i64");
  k.line("%g_col0 = mul %g_tj, %g_tn : i64");
  k.line("%g_rows = sub %M, %g_row0 : i64");
  k.line("%g_cols = sub %N, %g_col0 : i64");
  const std::string a0 = tileOffset(k, base[0], "a", "%g_row0", "%g_zero");
  const std::string b0 = tileOffset(k, base[1], "b", "%g_zero", "%g_col0");
  k.line("%g_init = matrix_fill %g_fzero : " + acc);
  k.open("%g_acc = for %g_k0 = %g_zero to %K step %g_tk iter(%g_c = %g_init) : i64 {");
  k.line("%g_ks = sub %K, %g_k0 : i64");
  k.line("%g_ak = mul %g_k0, %a_cs : i64");
  k.line("%g_aoff = add " + a0 + ", %g_ak : i64");
  k.line("%g_a = matrix_load" + loadTail(f.a.layout, "%A", "a", "%g_aoff") +
         " bounds %g_rows, %g_ks : " + at);
  k.line("%g_bk = mul %g_k0, %b_rs : i64");
  k.line("%g_boff = add " + b0 + ", %g_bk : i64");
  k.line("%g_b = matrix_load" + loadTail(f.b.layout, "%B", "b", "%g_boff") +
         " bounds %g_ks, %g_cols : " + bt);
  k.line("%g_c2 = matrix_mad %g_a, %g_b, %g_c : " + at + ", " + bt + ", " + acc);
  k.line("yield %g_c2");
  k.close();
  // Extras: accumulator-shaped tiles, or one subgroup-uniform scalar (broadcast from lane 0:
  // every lane loaded the same element, and broadcast makes that visible to the verifier).
  std::vector<std::string> tiles, scalars(f.extras.size());
  for (size_t i = 0; i < f.extras.size(); ++i) {
    const GemmOperand &e = f.extras[i];
    const std::string op = "e" + num(int64_t(i)), buf = "%E" + num(int64_t(i));
    if (e.layout == TileLayout::Scalar) {
      std::string v = emitLoad(k, buf, e.dtype, base[2 + i]);
      scalars[i] = k.fresh("u");
      k.line(scalars[i] + " = broadcast " + v + ", %g_lane0 : f32");
      continue;
    }
    const std::string off = tileOffset(k, base[2 + i], op, "%g_row0", "%g_col0");
    tiles.push_back(k.fresh("et"));
    k.line(tiles.back() + " = matrix_load" + loadTail(e.layout, buf, op, off) +
           " bounds %g_rows, %g_cols : " + matrixType(e.dtype, t.m, t.n, "acc"));
  }
  std::string y = "%g_acc";
  const bool plain = mm.epilogue.empty() && f.extras.empty() && f.out.dtype == DType::F32 &&
                     f.productType == DType::F32;
  if (!plain) {
    std::string args = "%g_s = %g_acc";
    std::vector<std::string> argNames;
    for (size_t i = 0, j = 0; i < f.extras.size(); ++i) {
      if (f.extras[i].layout == TileLayout::Scalar)
        continue;
      argNames.push_back("%g_x" + num(int64_t(i)));
      args += ", " + argNames.back() + " = " + tiles[j++];
    }
    k.open("%g_y = matrix_map(" + args + ") -> " + matrixType(f.out.dtype, t.m, t.n, "acc") + " {");
    std::vector<std::string> extras(f.extras.size());
    for (size_t i = 0, j = 0; i < f.extras.size(); ++i)
      extras[i] = f.extras[i].layout == TileLayout::Scalar
                      ? scalars[i]
                      : toCompute(k, f.extras[i].dtype, argNames[j++]);
    std::string r;
    if (!emitEpilogue(k, g, mm, f, "%g_s", extras, &r, error))
      return false;
    k.line("yield " + toStorage(k, f.out.dtype, r));
    k.close();
    y = "%g_y";
  }
  const std::string coff = tileOffset(k, base.back(), "c", "%g_row0", "%g_col0");
  k.line("matrix_store " + y + ", %C[" + coff +
         "] stride %c_rs bounds %g_rows, %g_cols : " + matrixType(f.out.dtype, t.m, t.n, "acc"));
  k.close(); // tiles
  if (!f.batch.empty())
    k.close();
  k.close();
  return true;
}

bool emitSimtGemm(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f, int tile,
                  const std::string &name, std::string *error) {
  const std::string ct = computeType(f.inType); // f32, or f64 for f64 GEMMs
  k.open("kernel @" + name + "(" + gemmParams(f) + ") {");
  k.line("%g_As = shared_alloc : shared<" + ct + ", " + num(tile * tile) + ">");
  k.line("%g_Bs = shared_alloc : shared<" + ct + ", " + num(tile * tile) + ">");
  gemmPrologue(k, f);
  k.line("%g_zero = const 0 : i64");
  k.line("%g_one = const 1 : i64");
  k.line("%g_tile = const " + num(tile) + " : i64");
  k.line("%g_tile1 = const " + num(tile - 1) + " : i64");
  k.line("%g_fzero = const 0.0 : " + ct);
  k.line("%g_lx = local_id.x : i64");
  k.line("%g_ly = local_id.y : i64");
  k.line("%g_lyt = mul %g_ly, %g_tile : i64");
  k.line("%g_slot = add %g_lyt, %g_lx : i64");
  k.line("%g_gid = group_id.x : i64");
  k.line("%g_ngroups = num_groups.x : i64");
  k.line("%g_mt0 = add %M, %g_tile1 : i64");
  k.line("%g_mtiles = div %g_mt0, %g_tile : i64");
  k.line("%g_nt0 = add %N, %g_tile1 : i64");
  k.line("%g_ntiles = div %g_nt0, %g_tile : i64");
  k.line("%g_tiles = mul %g_mtiles, %g_ntiles : i64");
  std::vector<std::string> base = openBatchTiles(k, f);
  k.line("%g_ti = div %g_t, %g_ntiles : i64");
  k.line("%g_tj = rem %g_t, %g_ntiles : i64");
  k.line("%g_row00 = mul %g_ti, %g_tile : i64");
  k.line("%g_row = add %g_row00, %g_ly : i64");
  k.line("%g_col00 = mul %g_tj, %g_tile : i64");
  k.line("%g_col = add %g_col00, %g_lx : i64");
  k.line("%g_rowok = cmp.slt %g_row, %M : i64");
  k.line("%g_colok = cmp.slt %g_col, %N : i64");
  const std::string arow = tileOffset(k, base[0], "a", "%g_row", "%g_zero");
  const std::string bcol = tileOffset(k, base[1], "b", "%g_zero", "%g_col");
  k.open("%g_acc = for %g_k0 = %g_zero to %K step %g_tile iter(%g_s = %g_fzero) : i64 {");
  // Stage A[row, k0 + lx] and B[k0 + ly, col], zero outside the matrices.
  struct Stage {
    const char *buf, *op, *shared, *lane, *ok, *stride;
    std::string start;
  } stages[] = {{"%A", "a", "%g_As", "%g_lx", "%g_rowok", "%a_cs", arow},
                {"%B", "b", "%g_Bs", "%g_ly", "%g_colok", "%b_rs", bcol}};
  for (const Stage &s : stages) {
    std::string kk = k.fresh("k");
    k.line(kk + " = add %g_k0, " + s.lane + " : i64");
    std::string kin = k.fresh("k");
    k.line(kin + " = cmp.slt " + kk + ", %K : i64");
    std::string ok = k.fresh("k");
    k.line(ok + " = and " + s.ok + ", " + kin + " : i1");
    std::string v = k.fresh("k");
    k.open(v + " = if " + ok + " -> (" + ct + ") {");
    std::string m = k.fresh("k");
    k.line(m + " = mul " + kk + ", " + s.stride + " : i64");
    std::string idx = k.fresh("k");
    k.line(idx + " = add " + s.start + ", " + m + " : i64");
    k.line("yield " + emitLoad(k, s.buf, f.inType, idx));
    k.close();
    k.open("else {");
    k.line("yield %g_fzero");
    k.close();
    k.line("store " + v + ", " + s.shared + "[%g_slot] : " + ct);
  }
  k.line("barrier");
  k.open("%g_part = for %g_kk = %g_zero to %g_tile step %g_one iter(%g_ps = %g_s) : i64 {");
  k.line("%g_ia = add %g_lyt, %g_kk : i64");
  k.line("%g_kkt = mul %g_kk, %g_tile : i64");
  k.line("%g_ib = add %g_kkt, %g_lx : i64");
  k.line("%g_xa = load %g_As[%g_ia] : " + ct);
  k.line("%g_xb = load %g_Bs[%g_ib] : " + ct);
  k.line("%g_ps2 = fma %g_xa, %g_xb, %g_ps : " + ct);
  k.line("yield %g_ps2");
  k.close();
  k.line("barrier");
  k.line("yield %g_part");
  k.close();
  k.line("%g_ok = and %g_rowok, %g_colok : i1");
  k.open("if %g_ok {");
  std::vector<std::string> extras;
  for (size_t i = 0; i < f.extras.size(); ++i) {
    const std::string op = "e" + num(int64_t(i));
    const std::string idx = tileOffset(k, base[2 + i], op, "%g_row", "%g_col");
    extras.push_back(emitLoad(k, "%E" + num(int64_t(i)), f.extras[i].dtype, idx));
  }
  std::string r;
  if (!emitEpilogue(k, g, mm, f, "%g_acc", extras, &r, error))
    return false;
  const std::string cidx = tileOffset(k, base.back(), "c", "%g_row", "%g_col");
  emitStore(k, "%C", f.out.dtype, cidx, r);
  k.close();
  k.close(); // (batch entry, tile) pairs
  k.close();
  return true;
}

bool emitEpilogueKernel(KernelText &k, const Graph &g, const MatmulGroup &mm, const GemmForm &f,
                        const std::string &name, std::string *error) {
  k.open("kernel @" + name + "(" + gemmParams(f, "readwrite") + ") {");
  gemmPrologue(k, f);
  // One work-item per element and no loop, as the pointwise row kernels: columns are
  // work-items (C and a bias row read unit-stride across the workgroup, so the CPU backend
  // vectorises them), the (batch entry, row) pairs are workgroups, y + 65535 z. Each
  // workgroup's row and batch entry are uniform: their divisions are hoisted out of the
  // work-item loop.
  k.line("%g_zero = const 0 : i64");
  k.line("%g_gx = group_id.x : i64");
  k.line("%g_ls = local_size.x : i64");
  k.line("%g_lid = local_id.x : i64");
  k.line("%g_col0 = mul %g_gx, %g_ls : i64");
  k.line("%g_col = add %g_col0, %g_lid : i64");
  k.line("%g_gy = group_id.y : i64");
  k.line("%g_gz = group_id.z : i64");
  k.line("%g_ny = num_groups.y : i64");
  k.line("%g_r0 = mul %g_gz, %g_ny : i64");
  k.line("%g_r = add %g_r0, %g_gy : i64");
  std::string rows = "%M";
  for (size_t d = 0; d < f.batch.size(); ++d) {
    std::string r = k.fresh("bn");
    k.line(r + " = mul " + rows + ", %D" + num(int64_t(d)) + " : i64");
    rows = r;
  }
  k.line("%g_rowok = cmp.slt %g_r, " + rows + " : i64");
  k.line("%g_colok = cmp.slt %g_col, %N : i64");
  k.line("%g_ok = and %g_rowok, %g_colok : i1");
  k.line("%g_row = rem %g_r, %M : i64");
  // Each operand's base offset for this row's batch entry (the batch index split into dims
  // last-first, as openBatch does).
  std::vector<std::string> names = operandNames(f), bases;
  for (const std::string &n : names)
    bases.push_back("%" + n + "_off");
  std::string entry = k.fresh("bq");
  k.line(entry + " = div %g_r, %M : i64");
  addBatchOffsets(k, f, entry, names, 2, bases); // A and B are not read
  k.open("if %g_ok {");
  // An extra's offset: its layout class is part of the text (as in the matrix kernel), so a
  // unit column stride is the column itself (a vector load, not a gather) and a broadcast
  // scalar reads its base.
  auto offset = [&](const std::string &base, const std::string &op, TileLayout l) {
    if (l == TileLayout::Scalar)
      return base;
    std::string r = k.fresh("o");
    k.line(r + " = mul %g_row, %" + op + "_rs : i64");
    std::string s = k.fresh("o");
    k.line(s + " = add " + base + ", " + r + " : i64");
    std::string c = "%g_col";
    if (l != TileLayout::Row) {
      c = k.fresh("o");
      k.line(c + " = mul %g_col, %" + op + "_cs : i64");
    }
    std::string o = k.fresh("o");
    k.line(o + " = add " + s + ", " + c + " : i64");
    return o;
  };
  std::vector<std::string> extras;
  for (size_t i = 0; i < f.extras.size(); ++i)
    extras.push_back(emitLoad(k, "%E" + num(int64_t(i)), f.extras[i].dtype,
                              offset(bases[2 + i], "e" + num(int64_t(i)), f.extras[i].layout)));
  const std::string cidx = offset(bases.back(), "c", TileLayout::Row);
  // The product as the vendor GEMM stored it: f32, which is also the product's dtype here.
  const std::string product = emitLoad(k, "%C", DType::F32, cidx);
  std::string r;
  if (!emitEpilogue(k, g, mm, f, product, extras, &r, error))
    return false;
  emitStore(k, "%C", f.out.dtype, cidx, r);
  k.close(); // if
  k.close();
  return true;
}

} // namespace tessera::graph::detail
