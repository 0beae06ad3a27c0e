// CPU matmul through OpenBLAS. Operands are contiguous row-major, so every matrix of a batch is
// passed with its natural leading dim and nothing is copied; a broadcast batch operand is the same
// pointer re-used. One large product lets OpenBLAS thread it; many small ones run in parallel
// over the batch, each below OpenBLAS's own threading threshold so that concurrent calls never
// contend for its thread pool.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/skinny_gemm.h"

namespace kiln::cpu {
namespace {

// OpenBLAS runs a gemm on one thread when m*n*k is at most 64^3 (SMP_THRESHOLD_MIN *
// GEMM_MULTITHREAD_THRESHOLD in its interface/gemm.c); above that it uses its own threads.
constexpr std::int64_t kSingleThreadedGemm = 64 * 64 * 64;
// Multiply-adds per parallel task when many small products run side by side.
constexpr std::int64_t kBatchTaskWork = 1 << 18;

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
  g.transpose_a = op.attrs.ints.size() == 2 && op.attrs.ints[0] != 0;
  g.transpose_b = op.attrs.ints.size() == 2 && op.attrs.ints[1] != 0;
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

// C[m, n] = op(A) @ op(B), all contiguous row-major (A stored [m, k], or [k, m] when ta; B [k, n],
// or [n, k] when tb); m, n, k > 0. Matrix-vector products go to gemv, which is faster for them;
// `threaded_ok` false keeps to sgemm, whose threshold for using OpenBLAS's threads is known
// (gemv's is lower).
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b, float* c, bool threaded_ok,
          bool ta = false, bool tb = false) {
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto trans = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  if (threaded_ok && n == 1) {
    // c = op(A) b: A's rows (or columns) against b, whichever way it is stored.
    cblas_sgemv(CblasRowMajor, trans(ta), ta ? K : M, ta ? M : K, 1.0f, a, ta ? M : K, b, 1, 0.0f, c, 1);
  } else if (threaded_ok && m == 1) {
    // c = a op(B) = op(B)ᵀ a.
    cblas_sgemv(CblasRowMajor, trans(!tb), tb ? N : K, tb ? K : N, 1.0f, b, tb ? K : N, a, 1, 0.0f, c, 1);
  } else {
    cblas_sgemm(CblasRowMajor, trans(ta), trans(tb), M, N, K, 1.0f, a, ta ? M : K, b, tb ? K : N, 0.0f, c, N);
  }
}

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
    // A few rows against a large B (a served model's requests against its weights): kiln's own
    // kernels on a fixed split over the cores, which keeps each core's share of B in its cache.
    if (skinny_gemm_fits(g.m * g.batches, g.n, g.k)) {
      skinny_gemm(g.m * g.batches, g.n, g.k, a, b, c, g.transpose_b);
      return;
    }
    gemm(g.m * g.batches, g.n, g.k, a, b, c, true, false, g.transpose_b);
    return;
  }

  const std::int64_t c_matrix = g.m * g.n;
  const std::int64_t work = g.m * g.n * g.k;
  const bool big = work > kSingleThreadedGemm;
  auto run_batches = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      gemm(g.m, g.n, g.k, a + g.a_offset(i), b + g.b_offset(i), c + i * c_matrix, big, g.transpose_a, g.transpose_b);
  };
  if (big) {
    run_batches(0, g.batches);
  } else {
    parallel_for(g.batches, std::max<std::int64_t>(1, kBatchTaskWork / work), run_batches);
  }
}

}  // namespace

void register_linalg_kernels(KernelTable& t) {
#if defined(__SANITIZE_THREAD__)
  // OpenBLAS's threads hand results back through uninstrumented spin-waits, which TSan reports
  // as races on the output (as with oneTBB, see parallel.h): keep every gemm on the calling thread.
  openblas_set_num_threads(1);
#endif
  t.set(OpKind::matmul, matmul_kernel);
}

}  // namespace kiln::cpu
