// CPU matmul through OpenBLAS, which runs every call on one thread: kiln splits a product into
// tiles and runs them as oneTBB tasks. So every thread of work is kiln's own, and two products
// running at once (independent work of two submitting threads, see scheduler/executor.h) share
// the cores between them; OpenBLAS's own threads would run them one after the other (its
// level-3 driver holds a lock for the whole call), and its threaded driver is not safe when
// products of different transposes run at once (OpenBLAS issue 5836). Operands are contiguous
// row-major, so a tile is a block of A's rows and B's columns passed with the full matrices'
// leading dims: nothing is copied, and a broadcast batch operand is the same pointer re-used.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "kiln/devices/cpu/blas_core.h"
#include "kiln/devices/cpu/cpu_kernels.h"
#include "kiln/devices/cpu/packed_weights.h"
#include "kiln/devices/cpu/parallel.h"
#include "kiln/devices/cpu/skinny_gemm.h"
#include "kiln/ops/attrs_linalg.h"

namespace kiln::cpu {
namespace {

// The CPU's own vector kernels where OpenBLAS fell back to old ones (blas_core.h): chosen when
// the library loads, before any BLAS call, while the process is most likely still one thread
// (the switch goes through setenv, which no other thread may race).
const std::string kBlasCore = select_blas_core();

// Multiply-adds of one tile at least (about 10-20 us on one core): below it a task's hand-over
// costs more than the tile saves. Also the task size when many small products run side by side.
constexpr std::int64_t kTileWork = 1 << 21;
constexpr std::int64_t kBatchTaskWork = 1 << 18;
// Tiles are at least this many rows of A and columns of B: each tile packs its block of A and
// its block of B, so thinner tiles repack the other operand more often than they save.
constexpr std::int64_t kMinTileRows = 32, kMinTileCols = 64;

struct MatmulGeometry {
  std::int64_t m = 1, n = 1, k = 1;
  std::int64_t batches = 1;
  int batch_rank = 0;
  std::int64_t batch_size[kMaxRank] = {};
  std::int64_t a_stride[kMaxRank] = {};  // per batch dim, in elements; 0 where a is broadcast
  std::int64_t b_stride[kMaxRank] = {};
  bool b_batched = false;  // B differs between batches
  // An operand stored transposed ([k, m] for A, [n, k] for B), read so by BLAS: no copy.
  bool transpose_a = false, transpose_b = false;

  std::int64_t a_offset(std::int64_t batch) const { return offset(batch, a_stride); }
  std::int64_t b_offset(std::int64_t batch) const { return offset(batch, b_stride); }

 private:
  std::int64_t offset(std::int64_t batch, const std::int64_t* stride) const {
    std::int64_t off = 0;
    for (int d = batch_rank - 1; d >= 0; --d) {
      off += (batch % batch_size[d]) * stride[d];
      batch /= batch_size[d];
    }
    return off;
  }
};

// Strides of one operand's batch dims, right-aligned against the output's batch dims; returns
// whether the operand has any batch dim above 1.
bool batch_strides(const Shape& s, int batch_rank, std::int64_t matrix, std::int64_t* stride) {
  const int own = std::max(s.rank() - 2, 0);
  std::int64_t acc = matrix;
  bool batched = false;
  for (int d = batch_rank - 1; d >= 0; --d) {
    const int i = own - batch_rank + d;
    const std::int64_t size = i >= 0 ? s[i] : 1;
    stride[d] = size == 1 ? 0 : acc;
    batched |= size != 1;
    acc *= size;
  }
  return batched;
}

MatmulGeometry geometry(const OpIr& op) {
  const Shape& a = op.inputs[0].shape;
  const Shape& b = op.inputs[1].shape;
  const Shape& out = op.outputs[0].shape;
  MatmulGeometry g;
  const MatmulAttrs flags = MatmulAttrs::decode(op);
  g.transpose_a = flags.transpose_a;
  g.transpose_b = flags.transpose_b;
  g.k = g.transpose_a ? a[a.rank() - 2] : a[a.rank() - 1];
  g.m = g.transpose_a ? a[a.rank() - 1] : a.rank() >= 2 ? a[a.rank() - 2] : 1;
  g.n = g.transpose_b ? b[b.rank() - 2] : b.rank() >= 2 ? b[b.rank() - 1] : 1;
  g.batch_rank = out.rank() - (a.rank() >= 2) - (b.rank() >= 2);
  for (int d = 0; d < g.batch_rank; ++d) {
    g.batch_size[d] = out[d];
    g.batches *= out[d];
  }
  batch_strides(a, g.batch_rank, g.m * g.k, g.a_stride);
  g.b_batched = batch_strides(b, g.batch_rank, g.k * g.n, g.b_stride);
  return g;
}

// A product's operands: A stored [m, k] (or [k, m] when ta), B [k, n] (or [n, k] when tb), C
// [m, n], all row-major with the full matrices' leading dims, so that a tile can point into them.
struct GemmOperands {
  const float* a;
  const float* b;
  float* c;
  std::int64_t m, n, k;
  bool ta, tb;
};

// C[m0:m1, n0:n1] on the calling thread. Matrix-vector products go to gemv, which is faster for
// them.
void gemm_block(const GemmOperands& g, std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1) {
  const auto M = static_cast<blasint>(m1 - m0), N = static_cast<blasint>(n1 - n0), K = static_cast<blasint>(g.k);
  const auto lda = static_cast<blasint>(g.ta ? g.m : g.k), ldb = static_cast<blasint>(g.tb ? g.k : g.n);
  const float* a = g.a + (g.ta ? m0 : m0 * g.k);
  const float* b = g.b + (g.tb ? n0 * g.k : n0);
  float* c = g.c + m0 * g.n + n0;
  const auto trans = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  if (N == 1) {
    // c = op(A) b: A's rows (or columns) against b, whichever way it is stored.
    cblas_sgemv(CblasRowMajor, trans(g.ta), g.ta ? K : M, g.ta ? M : K, 1.0f, a, lda, b, g.tb ? 1 : ldb, 0.0f, c,
                static_cast<blasint>(g.n));
  } else if (M == 1) {
    // c = a op(B) = op(B)^T a.
    cblas_sgemv(CblasRowMajor, trans(!g.tb), g.tb ? N : K, g.tb ? K : N, 1.0f, b, ldb, a, g.ta ? lda : 1, 0.0f, c, 1);
  } else {
    cblas_sgemm(CblasRowMajor, trans(g.ta), trans(g.tb), M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c,
                static_cast<blasint>(g.n));
  }
}

int core_count() {
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores;
}

// The whole product, in tiles over the cores: as many tiles as cores where the work allows (a
// product that shares the machine with another gets its share through oneTBB's scheduling),
// split first over A's rows (each tile then packs only its own rows of A), then over B's columns.
void gemm(const GemmOperands& g) {
  const std::int64_t tiles = std::clamp<std::int64_t>(g.m * g.n * g.k / kTileWork, 1, core_count());
  const std::int64_t row_parts = std::clamp<std::int64_t>(g.m / kMinTileRows, 1, tiles);
  const std::int64_t col_parts = std::clamp<std::int64_t>(g.n / kMinTileCols, 1, tiles / row_parts);
  if (row_parts * col_parts == 1) return gemm_block(g, 0, g.m, 0, g.n);
  parallel_for(row_parts * col_parts, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t r = t / col_parts, c = t % col_parts;
      gemm_block(g, g.m * r / row_parts, g.m * (r + 1) / row_parts, g.n * c / col_parts, g.n * (c + 1) / col_parts);
    }
  });
}

// Which kernel takes `rows` rows of A against one right operand B [k, n]: the one choice that
// matmul_kernel and matmul_with_bias (a Linear layer's fused epilogue) both follow.
enum class RowsPath {
  narrow,  // a few rows against a B of at most two vectors of columns: narrow_gemm
  skinny,  // a few rows against a large B (a served model's requests against its weights): kiln's
           // own kernels on a fixed split over the cores, which keeps each core's share of B in
           // its cache; from B's second such product on, B packed for them (packed_weights.h)
  gemm,    // anything else: tiles over the cores
};
RowsPath rows_path(std::int64_t rows, std::int64_t n, std::int64_t k) {
  if (narrow_gemm_fits(rows, n, k)) return RowsPath::narrow;
  if (skinny_gemm_fits(rows, n, k)) return RowsPath::skinny;
  return RowsPath::gemm;
}

// More rows than a skinny product, up to a few hundred (a served batch, an encoder's tokens
// through its Linear layers), run on kiln's packed-panel kernels (packed_weights.h): on B kept
// packed from its second product with the same contents, where OpenBLAS packs B again every call
// (the PyTorch 1.13 encoder of bench/onnx on a 2-core EPYC: 8.1 -> 5.2-6.9 ms a run; matmul_512
// 204 -> 224 GFLOP/s), else packing as they go, with the same bits. Above a few hundred rows
// OpenBLAS's blocking of A pays off.
bool packed_gemm_fits(std::int64_t rows, std::int64_t n, std::int64_t k) { return rows <= 512 && n >= 64 && k >= 64; }

void matmul_kernel(const OpIr& op, const KernelArgs& args) {
  const MatmulGeometry g = geometry(op);
  float* c = out_ptr<float>(args, 0);
  const std::int64_t out_numel = op.outputs[0].numel();
  if (out_numel == 0) return;
  if (g.k == 0) {
    std::memset(c, 0, static_cast<std::size_t>(out_numel) * sizeof(float));
    return;
  }
  const float* a = in_ptr<float>(args, 0);
  const float* b = in_ptr<float>(args, 1);

  // One right operand for every batch: then the output batch dims are A's own, so A's batches
  // are consecutive rows of one taller product (also the plain 2-D case).
  if (!g.b_batched && !g.transpose_a) {
    const std::int64_t rows = g.m * g.batches;
    switch (rows_path(rows, g.n, g.k)) {
      case RowsPath::narrow:
        return narrow_gemm(rows, g.n, g.k, a, b, c, g.transpose_b);
      case RowsPath::skinny:
        if (const auto packed = packed_weights(*args.inputs[1], g.n, g.k, g.transpose_b))
          packed->multiply(rows, a, c);
        else if (weight_packing_enabled())
          // Until B is kept packed, the packed arithmetic as it goes: skinny_gemm splits the sum
          // over k between the cores, and a served model's first request would differ in its
          // last bits from the ones after it.
          packed_product(rows, g.n, g.k, a, b, c, g.transpose_b);
        else
          skinny_gemm(rows, g.n, g.k, a, b, c, g.transpose_b);  // never packed: always this sum
        return;
      case RowsPath::gemm:
        if (packed_gemm_fits(rows, g.n, g.k)) {
          if (const auto packed = packed_weights(*args.inputs[1], g.n, g.k, g.transpose_b))
            return packed->multiply(rows, a, c);
          return packed_product(rows, g.n, g.k, a, b, c, g.transpose_b);
        }
        return gemm(GemmOperands{a, b, c, rows, g.n, g.k, false, g.transpose_b});
    }
  }

  const std::int64_t c_matrix = g.m * g.n;
  const std::int64_t work = g.m * g.n * g.k;
  auto one = [&](std::int64_t i) {
    return GemmOperands{a + g.a_offset(i), b + g.b_offset(i), c + i * c_matrix, g.m, g.n, g.k, g.transpose_a,
                        g.transpose_b};
  };
  if (work >= kTileWork) {
    for (std::int64_t i = 0; i < g.batches; ++i) gemm(one(i));  // each product in tiles
  } else {
    parallel_for(g.batches, std::max<std::int64_t>(1, kBatchTaskWork / work), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) gemm_block(one(i), 0, g.m, 0, g.n);
    });
  }
}

}  // namespace

bool matmul_with_bias(const OpIr& op, const KernelArgs& args, const float* bias, bool relu) {
  const MatmulGeometry g = geometry(op);
  const std::int64_t rows = g.m * g.batches;
  const Shape& out_shape = op.outputs[0].shape;  // C's rows are the output's last dim
  if (g.b_batched || g.transpose_a || g.k == 0 || out_shape.rank() < 1 || out_shape[out_shape.rank() - 1] != g.n)
    return false;
  const RowsPath path = rows_path(rows, g.n, g.k);
  if (path == RowsPath::gemm && !packed_gemm_fits(rows, g.n, g.k)) return false;
  std::shared_ptr<const PackedMatrix> packed;
  if (path != RowsPath::narrow) {
    packed = packed_weights_if_ready(*args.inputs[1], g.n, g.k, g.transpose_b);
    if (!packed) return false;
  }
  const float* a = in_ptr<float>(args, 0);
  const float* b = in_ptr<float>(args, 1);
  float* c = out_ptr<float>(args, 0);
  // C is written while A and the bias are still read. (The executor lends a fused group's
  // output only an epilogue input's buffer, so A never; a consumed bias of the output's size
  // could be.)
  const auto overlaps = [&](const float* p, std::int64_t count) { return p < c + rows * g.n && c < p + count; };
  if (overlaps(a, rows * g.k) || overlaps(bias, g.n)) return false;
  if (packed) {
    packed->multiply(rows, a, c, bias, relu);
    return true;
  }
  // A narrow C is at most 8 x 32 values: the epilogue as a pass over it, as the generic one
  // computes it (the product rounded to f32, plus the bias, then kiln's relu).
  narrow_gemm(rows, g.n, g.k, a, b, c, g.transpose_b);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < g.n; ++j) {
      const float v = c[r * g.n + j] + bias[j];
      c[r * g.n + j] = relu && v < 0.0f ? 0.0f : v;
    }
  return true;
}

void register_linalg_kernels(KernelTable& t) {
  // Every OpenBLAS call on the calling thread: kiln tiles the products itself (see the top).
  openblas_set_num_threads(1);
  t.set(OpKind::matmul, matmul_kernel);
}

}  // namespace kiln::cpu
