//! Dense linear-algebra building blocks for Phase 1 and the theory checks: sign-fixed QR,
//! uniformly random orthonormal frames, orthogonal iteration [GVL13 §8.2.4], power iteration,
//! and top-k singular subspaces by direct SVD.

use crate::error::{FedmixError, Result};
use crate::seed_streams::Rng;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Smallest size of the batched dimension that [`gemm_batched`] accepts. nalgebra hands a
/// product `C = A·B` to matrixmultiply only when `C` and `A` both have more than 5 rows and 5
/// columns (`SMALL_DIM = 5` in nalgebra 0.35's `gemm_uninit`) and computes it column by column
/// with `gemv` otherwise; with at least 6 entries in the batched dimension, which of the two
/// runs depends on the other dimensions alone, never on how many replicates a caller batches.
pub const GEMM_MIN_BATCH: usize = 6;

/// Which dimension of a product [`gemm_batched`] batches replicates along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batched {
    /// Rows of `C` (and of `A`): one replicate per row block of `A`.
    Rows,
    /// Columns of `C` (and of `B`): one replicate per column of `B`.
    Cols,
}

pub use fedmix_kernels::Operand;

/// Largest narrow side (rows of `a` or columns of `b`) of a product that [`gemm_batched`] hands
/// to the unpacked kernel rather than to matrixmultiply: one 8-row tile.
const NARROW: usize = 8;

/// Columns `start..start + cols` of a column-major matrix as a product operand (one contiguous
/// block of its storage).
pub fn columns_operand(m: &DMatrix<f64>, start: usize, cols: usize) -> Operand<'_> {
    let rows = m.nrows();
    Operand {
        data: &m.as_slice()[start * rows..(start + cols) * rows],
        rows,
        cols,
        ld: rows.max(1),
    }
}

/// The first `rows × cols` entries of a column-major slice as a product operand.
pub fn slice_operand(data: &[f64], rows: usize, cols: usize) -> Operand<'_> {
    Operand {
        data: &data[..rows * cols],
        rows,
        cols,
        ld: rows.max(1),
    }
}

/// `c ← a · b` (`c`: `a.rows × b.cols`, column-major, leading dimension `a.rows`) such that
/// **each entry `c_ij` is a function of row `i` of `a` and column `j` of `b` alone, bit for
/// bit**: batching more rows into `a` or columns into `b` never changes an entry. This is what
/// makes batched replicates identical to single runs ([`crate::engine::client_pass`]).
///
/// Why it holds: in matrixmultiply 0.3 every entry of `c` is one fused (or, without FMA, one
/// multiply-then-add) accumulation over the inner dimension in a fixed order — blocks of `kc`
/// (256) in sequence, each block summed from zero — that does not depend on the outer
/// dimensions; with α = 1 the full-tile store `fma(1, ab, βc)` and the edge-tile store
/// `βc + ab` round identically (β = 0 for the first block, 1 after). nalgebra's `gemv` fallback
/// (when `a` or the product has ≤ 5 rows or columns) accumulates each entry over the inner
/// dimension in order, column by column. `tests/replicates.rs` checks the property on both
/// paths.
///
/// Speed: where nalgebra would call matrixmultiply and the CPU has AVX2 and FMA, the product
/// is computed by [`fedmix_kernels::matmul`] instead — the same expression for every entry,
/// hence the same bits (its tests compare the two bitwise), without matrixmultiply's copying
/// of both operands into packed panels, which dominated the narrow products of a client pass.
///
/// Only the first `live` entries of the batched dimension are needed (the rest is the zero
/// padding up to [`GEMM_MIN_BATCH`]): the kernel computes those and sets the others to zero;
/// matrixmultiply computes all (a padded entry is `0 · x`, zero for finite data). A live entry
/// is the same number either way.
///
/// # Panics
/// When the batched dimension has fewer than [`GEMM_MIN_BATCH`] entries (pad with zeros) or the
/// shapes do not match.
pub fn gemm_batched(c: &mut [f64], a: Operand<'_>, b: Operand<'_>, batched: Batched, live: usize) {
    let (m, n) = (a.rows, b.cols);
    let size = match batched {
        Batched::Rows => m,
        Batched::Cols => n,
    };
    assert!(
        size >= GEMM_MIN_BATCH,
        "gemm_batched needs at least {GEMM_MIN_BATCH} batched {batched:?}, got {size}"
    );
    // nalgebra 0.35 (`gemm_uninit`) calls matrixmultiply when C and A both have more than 5
    // rows and 5 columns; only then is the kernel's result the one nalgebra would give.
    let via_matrixmultiply = m > 5 && n > 5 && a.cols > 5;
    // The kernel wins where one side is a single tile (measured in `benches/bench_main.rs`,
    // `narrow_products`: 1.7× at 6 × 1000 × 100, 1.2× at 1000 × 100 × 6); with 60 rows
    // matrixmultiply's packed panels are faster.
    let narrow = m <= NARROW || n <= NARROW;
    if via_matrixmultiply && narrow && fedmix_kernels::available() {
        let live = live.min(size);
        let ldc = m.max(1);
        match batched {
            Batched::Rows => {
                fedmix_kernels::matmul(Operand { rows: live, ..a }, b, c, ldc);
                for col in c[..m * n].chunks_mut(ldc) {
                    col[live..].fill(0.0);
                }
            }
            Batched::Cols => {
                fedmix_kernels::matmul(a, Operand { cols: live, ..b }, c, ldc);
                c[live * m..m * n].fill(0.0);
            }
        }
        return;
    }
    let av = nalgebra::DMatrixView::from_slice_with_strides(a.data, a.rows, a.cols, 1, a.ld);
    let bv = nalgebra::DMatrixView::from_slice_with_strides(b.data, b.rows, b.cols, 1, b.ld);
    let mut cv = nalgebra::DMatrixViewMut::from_slice(&mut c[..m * n], m, n);
    cv.gemm(1.0, &av, &bv, 0.0);
}

/// Thin QR `A = QR` with the signs fixed so that `diag(R) ≥ 0` (unique for full-rank `A`).
pub fn qr_positive(a: DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
    let qr = a.qr();
    let (mut q, mut r) = (qr.q(), qr.r());
    for j in 0..r.nrows().min(r.ncols()) {
        if r[(j, j)] < 0.0 {
            q.column_mut(j).neg_mut();
            r.row_mut(j).neg_mut();
        }
    }
    (q, r)
}

/// Orthonormal part of [`qr_positive`].
pub fn orthonormalize(a: DMatrix<f64>) -> DMatrix<f64> {
    qr_positive(a).0
}

/// A `d × k` matrix uniformly distributed on the Stiefel manifold: the Q factor (signs fixed so
/// `diag(R) > 0`) of a standard Gaussian matrix (SXY22 Algorithm 3, line 1).
///
/// # Errors
/// [`FedmixError::InvalidParameter`] when `k > d` or `k = 0`.
pub fn random_orthonormal(d: usize, k: usize, rng: &mut Rng) -> Result<DMatrix<f64>> {
    if k == 0 || k > d {
        return Err(FedmixError::invalid(
            "k",
            k,
            format!("need 1 ≤ k ≤ d = {d} for a d × k frame"),
        ));
    }
    let g = DMatrix::from_fn(d, k, |_, _| rng.sample::<f64, _>(StandardNormal));
    Ok(orthonormalize(g))
}

/// Orthogonal iteration on a square `Y` [GVL13 §8.2.4]: `Q_{t+1} R_{t+1} = Y Q_t`, returning
/// every iterate `Q_0 … Q_t` (used by the Lemma 4 check).
pub fn orthogonal_iteration_path(
    y: &DMatrix<f64>,
    q0: &DMatrix<f64>,
    steps: usize,
) -> Vec<DMatrix<f64>> {
    let mut path = Vec::with_capacity(steps + 1);
    path.push(q0.clone());
    for t in 0..steps {
        let next = orthonormalize(y * &path[t]);
        path.push(next);
    }
    path
}

/// Orthogonal iteration: the last iterate of [`orthogonal_iteration_path`].
pub fn orthogonal_iteration(y: &DMatrix<f64>, q0: &DMatrix<f64>, steps: usize) -> DMatrix<f64> {
    let mut q = q0.clone();
    for _ in 0..steps {
        q = orthonormalize(y * &q);
    }
    q
}

/// Power iteration on a symmetric positive semidefinite `S` from `v0` for `steps` steps.
/// Returns the unit vector and its Rayleigh quotient `vᵀSv` (≈ `λ₁(S)`). A zero iterate
/// (S v = 0) stops early and returns the previous vector with quotient 0.
pub fn power_iteration(s: &DMatrix<f64>, v0: &DVector<f64>, steps: usize) -> (DVector<f64>, f64) {
    let mut v = v0.normalize();
    for _ in 0..steps {
        let w = s * &v;
        let norm = w.norm();
        if norm == 0.0 || !norm.is_finite() {
            break;
        }
        v = w / norm;
    }
    let lambda = v.dot(&(s * &v));
    (v, lambda)
}

/// Top-`k` left singular vectors of `y` (`d × k`) by direct SVD, sorted by singular value
/// (SXY22 App. C: "we implement all orthogonal iterations by direct singular value
/// decomposition"). Each column's sign is fixed so its largest-magnitude entry is positive.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] when `k` exceeds the dimension; non-convergence of the SVD
/// is reported as [`FedmixError::NotPositiveDefinite`]-free [`FedmixError::Divergence`].
pub fn top_k_left_singular(y: &DMatrix<f64>, k: usize) -> Result<DMatrix<f64>> {
    if k == 0 || k > y.nrows().min(y.ncols()) {
        return Err(FedmixError::invalid("k", k, "exceeds the matrix dimension"));
    }
    let svd =
        y.clone()
            .try_svd(true, false, f64::EPSILON, 10_000)
            .ok_or(FedmixError::Divergence {
                phase: "SVD of the subspace matrix".into(),
                round: 0,
            })?;
    let u = svd.u.ok_or(FedmixError::Divergence {
        phase: "SVD of the subspace matrix".into(),
        round: 0,
    })?;
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|&a, &b| {
        svd.singular_values[b]
            .total_cmp(&svd.singular_values[a])
            .then(a.cmp(&b))
    });
    let mut out = DMatrix::zeros(y.nrows(), k);
    for (c, &j) in order.iter().take(k).enumerate() {
        let mut col = u.column(j).clone_owned();
        let imax = col.iamax();
        if col[imax] < 0.0 {
            col.neg_mut();
        }
        out.set_column(c, &col);
    }
    Ok(out)
}

/// The top-`k` eigenpairs by `|λ|` of a symmetric `d × d` operator.
#[derive(Clone, Debug)]
pub struct SymmetricTopK {
    /// Eigenvectors (`d × k`), ordered by `|λ|` descending (ties → lower Ritz index), each
    /// column's sign fixed so its largest-magnitude entry is positive.
    pub vectors: DMatrix<f64>,
    /// The eigenvalues, same order.
    pub values: Vec<f64>,
    /// Applications of the operator to a block of vectors.
    pub block_applications: usize,
    /// Dimension of the final search space.
    pub basis_dim: usize,
    /// `max_i ‖Y u_i − λ_i u_i‖ / |λ_1|` at termination.
    pub residual: f64,
}

/// Top-`k` eigenpairs by `|λ|` of the symmetric operator `apply: V ↦ Y V` (`d × b` blocks) by
/// block Krylov iteration with full reorthogonalisation and Rayleigh–Ritz [GVL13 §10.3.6]:
/// the search space `span(V₀, YV₀, Y²V₀, …)` grows by one block of `block` vectors per
/// application; every few blocks the Ritz pairs of `QᵀYQ` are formed (`YQ` is kept, so no
/// extra application) and the iteration stops when the `k` chosen pairs have relative residual
/// `max_i ‖Yu_i − θ_iu_i‖ ≤ rtol·|θ_1|`. For a symmetric `Y` these eigenvectors span its top-`k`
/// left singular subspace (singular values are `|λ|`), so this is [`top_k_left_singular`]'s
/// subspace without forming or decomposing `Y`.
///
/// When the space reaches `max_dim` (≤ `d`) without converging: at `max_dim = d` the space is
/// all of `R^d` and the Ritz pairs are exact eigenpairs (accepted); otherwise
/// [`FedmixError::NotConverged`].
///
/// Decision: `V₀` is a fixed Gaussian frame (ChaCha8 seeded with [`KRYLOV_START_SEED`]), not
/// from the run's seed: the result is the same mathematical object whatever the start, and
/// keeping it out of the run's streams leaves every other draw unchanged.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] for `k = 0`, `k > d` or `block ≤ k`;
/// [`FedmixError::NotConverged`] as above.
pub fn top_k_symmetric<F>(
    mut apply: F,
    d: usize,
    k: usize,
    block: usize,
    max_dim: usize,
    rtol: f64,
) -> Result<SymmetricTopK>
where
    F: FnMut(&DMatrix<f64>) -> DMatrix<f64>,
{
    let mut krylov = BlockKrylov::new(d, k, block, max_dim, rtol)?;
    loop {
        let w = apply(krylov.block());
        if let Some(done) = krylov.advance(w)? {
            return Ok(done);
        }
    }
}

/// [`top_k_symmetric`] one block application at a time, so that several independent eigen
/// problems can share each pass over the data their operators read: the caller applies its
/// operator to [`BlockKrylov::block`] and hands the product to [`BlockKrylov::advance`] until
/// that returns the eigenpairs. Driving it this way is [`top_k_symmetric`] operation for
/// operation, so the result is the same bits.
#[derive(Clone, Debug)]
pub struct BlockKrylov {
    d: usize,
    k: usize,
    block: usize,
    max_dim: usize,
    rtol: f64,
    rng: Rng,
    q: DMatrix<f64>,
    yq: DMatrix<f64>,
    basis: DMatrix<f64>,
    applications: usize,
    next_check: usize,
    last: Option<f64>,
}

impl BlockKrylov {
    /// The iteration's start: the fixed Gaussian frame of `min(block, d)` orthonormal vectors.
    ///
    /// # Errors
    /// As [`top_k_symmetric`]: [`FedmixError::InvalidParameter`] for `k = 0`, `k > d` or
    /// `block ≤ k`.
    pub fn new(d: usize, k: usize, block: usize, max_dim: usize, rtol: f64) -> Result<Self> {
        if k == 0 || k > d {
            return Err(FedmixError::invalid(
                "k",
                k,
                format!("need 1 ≤ k ≤ d = {d}"),
            ));
        }
        if block <= k {
            return Err(FedmixError::invalid(
                "block",
                block,
                format!("must exceed k = {k}"),
            ));
        }
        let max_dim = max_dim.clamp(block.min(d), d);
        let mut rng = <Rng as rand::SeedableRng>::seed_from_u64(KRYLOV_START_SEED);
        let start = DMatrix::from_fn(d, block.min(d), |_, _| rng.sample::<f64, _>(StandardNormal));
        Ok(Self {
            d,
            k,
            block,
            max_dim,
            rtol,
            rng,
            q: orthonormalize(start),
            yq: DMatrix::zeros(d, 0),
            basis: DMatrix::zeros(d, 0),
            applications: 0,
            next_check: (2 * block).min(max_dim),
            last: None,
        })
    }

    /// The block `V` (`d × b`) the operator must be applied to next.
    pub fn block(&self) -> &DMatrix<f64> {
        &self.q
    }

    /// Take `w = Y·V` for the current [`BlockKrylov::block`]: `Ok(Some(_))` when the `k` pairs
    /// have converged (or the space is all of `R^d`), `Ok(None)` when a next block is ready.
    ///
    /// # Errors
    /// [`FedmixError::NotConverged`] when the space reaches `max_dim < d` unconverged.
    pub fn advance(&mut self, w: DMatrix<f64>) -> Result<Option<SymmetricTopK>> {
        self.applications += 1;
        self.basis = hcat(&self.basis, &self.q);
        self.yq = hcat(&self.yq, &w);
        let m = self.basis.ncols();
        let full = m >= self.max_dim;
        if m >= self.next_check || full {
            let ritz = rayleigh_ritz(&self.basis, &self.yq, self.k);
            let done = ritz.residual <= self.rtol || (full && m == self.d);
            if done {
                return Ok(Some(SymmetricTopK {
                    block_applications: self.applications,
                    basis_dim: m,
                    ..ritz
                }));
            }
            self.last = Some(ritz.residual);
            self.next_check = (m + self.block).max(m + m / 4).min(self.max_dim);
        }
        if full {
            return Err(FedmixError::NotConverged {
                what: "block Krylov top-k eigenvectors".into(),
                iterations: self.applications,
                residual: self.last.unwrap_or(f64::INFINITY),
                tolerance: self.rtol,
            });
        }
        let b = self.block.min(self.max_dim - m);
        self.q = next_block(&self.basis, w.columns(0, b).clone_owned(), &mut self.rng);
        Ok(None)
    }
}

/// Seed of the fixed start frame of [`top_k_symmetric`].
pub const KRYLOV_START_SEED: u64 = 0x005E_ED0F_B10C;

/// `[a, b]` (column concatenation).
fn hcat(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(a.nrows(), a.ncols() + b.ncols());
    out.columns_mut(0, a.ncols()).copy_from(a);
    out.columns_mut(a.ncols(), b.ncols()).copy_from(b);
    out
}

/// The next orthonormal block: `w` orthogonalised twice against `basis` (CGS2), then QR.
/// A direction that vanishes (the Krylov space became invariant) is replaced by a fresh
/// Gaussian one, orthogonalised the same way, so the space keeps growing.
fn next_block(basis: &DMatrix<f64>, mut w: DMatrix<f64>, rng: &mut Rng) -> DMatrix<f64> {
    let scale = w.column_iter().map(|c| c.norm()).fold(0.0, f64::max);
    for _ in 0..2 {
        let c = basis.tr_mul(&w);
        w.gemm(-1.0, basis, &c, 1.0);
    }
    for j in 0..w.ncols() {
        if w.column(j).norm() <= 1e-10 * scale || scale == 0.0 {
            let mut g = DVector::from_fn(w.nrows(), |_, _| rng.sample::<f64, _>(StandardNormal));
            for _ in 0..2 {
                let c = basis.tr_mul(&g);
                g.gemv(-1.0, basis, &c, 1.0);
            }
            w.set_column(j, &g);
        }
    }
    let mut q = orthonormalize(w);
    for _ in 0..1 {
        let c = basis.tr_mul(&q);
        q.gemm(-1.0, basis, &c, 1.0);
        q = orthonormalize(q);
    }
    q
}

/// Rayleigh–Ritz on `span(basis)` with `yq = Y·basis`: the `k` Ritz pairs of largest `|θ|`
/// and their largest residual relative to `|θ_1|`.
fn rayleigh_ritz(basis: &DMatrix<f64>, yq: &DMatrix<f64>, k: usize) -> SymmetricTopK {
    let t = basis.tr_mul(yq);
    let t = (&t + t.transpose()) * 0.5;
    let eig = t.symmetric_eigen();
    let mut order: Vec<usize> = (0..eig.eigenvalues.len()).collect();
    order.sort_by(|&a, &b| {
        eig.eigenvalues[b]
            .abs()
            .total_cmp(&eig.eigenvalues[a].abs())
            .then(a.cmp(&b))
    });
    let d = basis.nrows();
    let mut vectors = DMatrix::zeros(d, k);
    let mut values = Vec::with_capacity(k);
    let mut worst: f64 = 0.0;
    let top = eig.eigenvalues[order[0]].abs().max(f64::MIN_POSITIVE);
    for (c, &j) in order.iter().take(k).enumerate() {
        let s = eig.eigenvectors.column(j);
        let theta = eig.eigenvalues[j];
        let mut u = basis * s;
        let r = yq * s - &u * theta;
        // A NaN residual must not read as converged.
        worst = crate::prec::max_nan(worst, r.norm() / top);
        let imax = u.iamax();
        if u[imax] < 0.0 {
            u.neg_mut();
        }
        vectors.set_column(c, &u);
        values.push(theta);
    }
    SymmetricTopK {
        vectors,
        values,
        block_applications: 0,
        basis_dim: basis.ncols(),
        residual: worst,
    }
}

/// `‖P − P'‖₂` for the orthogonal projectors onto the column spans of orthonormal `a`, `b`.
pub fn projector_distance(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    let diff = a * a.transpose() - b * b.transpose();
    // NaN-propagating (nalgebra's `max` skips a NaN singular value).
    diff.singular_values()
        .iter()
        .fold(0.0, |m, &v| crate::prec::max_nan(m, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed_streams::{stream, Purpose};

    #[test]
    fn random_frame_is_orthonormal() {
        let q = random_orthonormal(20, 4, &mut stream(1, Purpose::Subspace, 0)).unwrap();
        let err = crate::prec::amax_nan(&(q.transpose() * &q - DMatrix::identity(4, 4)));
        assert!(err < crate::prec::rounding(20, 1.0), "{err}");
    }

    #[test]
    fn orthogonal_iteration_finds_dominant_subspace() {
        // Y = diag(5, 4, 1, 0.5, …): dominant 2-dim subspace = e1, e2.
        let d = 8;
        let y = DMatrix::from_diagonal(&DVector::from_fn(d, |i, _| {
            [5.0, 4.0, 1.0][i.min(2)] / (1 + i.saturating_sub(2)) as f64
        }));
        let q0 = random_orthonormal(d, 2, &mut stream(2, Purpose::Subspace, 0)).unwrap();
        let q = orthogonal_iteration(&y, &q0, 60);
        let u = DMatrix::identity(d, 2);
        assert!(projector_distance(&q, &u) < 1e-12);
    }

    /// `Q diag(λ) Qᵀ` with a random orthogonal `Q`.
    fn with_spectrum(values: &[f64], seed: u64) -> DMatrix<f64> {
        let d = values.len();
        let q = random_orthonormal(d, d, &mut stream(seed, Purpose::Subspace, 0)).unwrap();
        &q * DMatrix::from_diagonal(&DVector::from_column_slice(values)) * q.transpose()
    }

    /// Fast path vs slow reference: the block Krylov top-k by |λ| spans the dense SVD's top-k
    /// left singular subspace to 1e-10, on random symmetric instances with well-separated,
    /// near-degenerate (inside the top k), negative-dominated and bulk-edge spectra.
    #[test]
    fn krylov_top_k_matches_the_dense_svd() {
        let d = 300;
        let mut rng = stream(4, Purpose::Sampling, 0);
        let mut bulk = |lo: f64, hi: f64| -> Vec<f64> {
            (0..d)
                .map(|_| lo + (hi - lo) * rng.random::<f64>())
                .collect()
        };
        let mut cases: Vec<(&str, usize, Vec<f64>)> = Vec::new();
        let mut v = bulk(-1.0, 1.0);
        v[..3].copy_from_slice(&[10.0, 6.0, 3.0]);
        cases.push(("separated", 3, v));
        let mut v = bulk(-1.0, 1.0);
        v[..2].copy_from_slice(&[5.0, 5.0 * (1.0 + 1e-9)]);
        cases.push(("near-degenerate top pair", 2, v));
        let mut v = bulk(-2.0, 2.0);
        v[..3].copy_from_slice(&[-9.0, 7.0, -6.5]);
        cases.push(("negative dominant", 3, v));
        let mut v = bulk(-6.0, 6.0);
        v[..2].copy_from_slice(&[26.0, 6.4]);
        cases.push(("k-th at the bulk edge", 2, v));
        let mut v = vec![0.0; d];
        v[..4].copy_from_slice(&[3.0, 2.0, -1.0, 0.5]);
        cases.push(("rank 4", 2, v));
        for (seed, (name, k, values)) in cases.into_iter().enumerate() {
            let y = with_spectrum(&values, 10 + seed as u64);
            let dense = top_k_left_singular(&y, k).unwrap();
            let fast = top_k_symmetric(
                |v| &y * v,
                d,
                k,
                k + 8,
                d,
                crate::prec::KRYLOV_RESIDUAL_RTOL,
            )
            .unwrap();
            let dist = projector_distance(&dense, &fast.vectors);
            assert!(dist <= 1e-10, "{name}: ‖UUᵀ − ÛÛᵀ‖ = {dist:e}");
            // A uniform bulk right below λ_k is the hard case for Krylov methods: there the
            // space may grow to all of R^d, where Rayleigh–Ritz is exact.
            if !name.contains("bulk") {
                assert!(fast.basis_dim < d, "{name}: needed the whole space");
            }
        }
    }

    /// A solver that cannot converge within its cap says so with a typed error.
    #[test]
    fn krylov_cap_gives_a_typed_error() {
        let values: Vec<f64> = (0..200).map(|i| 1.0 - 1e-4 * i as f64).collect();
        let y = with_spectrum(&values, 3);
        let r = top_k_symmetric(|v| &y * v, 200, 2, 4, 20, 1e-14);
        assert!(matches!(r, Err(FedmixError::NotConverged { .. })), "{r:?}");
    }

    #[test]
    fn power_iteration_top_eigenvalue() {
        let s = DMatrix::from_row_slice(2, 2, &[2.0, 1.0, 1.0, 2.0]);
        let (v, l) = power_iteration(&s, &DVector::from_vec(vec![1.0, 0.0]), 100);
        assert!((l - 3.0).abs() < 1e-12);
        assert!((v[0].abs() - v[1].abs()).abs() < 1e-12);
    }
}
