//! `Y` applied without being formed (the practical variant's all-pairs `Y = S̃S̃ᵀ − ẼẼᵀ` at large
//! `d`) and the top-k left singular subspace of `Y` that Phase 1 step 9 needs (SXY22 §4.1,
//! Algorithm 3's input): formed and decomposed at `d ≤` [`DENSE_SUBSPACE_MAX_D`], applied
//! implicitly above.

use super::moments::*;
use crate::error::{FedmixError, Result};
use crate::federation::Federation;
use crate::linalg::{top_k_left_singular, top_k_symmetric};
use crate::params::Pairing;
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

/// Largest `d` at which the practical variant's subspace step forms `Y` (`d × d`) and takes its
/// SVD ([`top_k_left_singular`]); above it, [`subspace_basis`] applies `Y` implicitly.
///
/// Decision, measured (`examples/perf_report.rs`, `docs/performance.md`): forming `Y` costs `2d²N`
/// flops and the SVD `O(d³)` — 1.2 s + 1.5 s per anchor and iteration at `d = 1000`, `N = 10⁴` —
/// while one implicit application to a block of `b` vectors costs `4dNb`. At `d ≤ 256` both are
/// milliseconds, and the dense path keeps the SXY22 settings (`d = 100`) and the golden vectors bit
/// for bit as before.
pub const DENSE_SUBSPACE_MAX_D: usize = 256;

/// The practical variant's all-pairs `Y = S̃S̃ᵀ − ẼẼᵀ` (see [`subspace_matrix`]) as an operator
/// that is never formed: `YV = S̃(S̃ᵀV) − X_S (r̃² ⊙ (X_SᵀV))`, with `X_S` the subspace clients'
/// feature columns (read in place) and `r̃_j` sample `j`'s residual times its client's
/// `√(w_i/(n_i(n_i−1)))`, since `Ẽ = X_S diag(r̃)`. One application to a `d × b` block costs
/// two passes over the clients' data and `4dNb` flops.
#[derive(Clone, Debug)]
pub struct MomentOperator<'a> {
    fed: &'a Federation,
    /// Maximal runs of consecutive subspace clients: (first feature column, columns, offset
    /// into `r2`).
    runs: Vec<(usize, usize, usize)>,
    /// `r̃_j²` in set order.
    r2: Vec<f64>,
    /// `S̃` (`d × |set|`), column `c` = `X_i r̃_i` of the set's `c`-th client.
    s: DMatrix<f64>,
}

impl<'a> MomentOperator<'a> {
    /// The operator at `theta` for the clients `set` (each with `n_i ≥ 2`).
    pub fn new(fed: &'a Federation, set: &[usize], theta: &DVector<f64>) -> Self {
        let total: usize = set.iter().map(|&i| fed.n(i)).sum();
        let mut r2 = Vec::with_capacity(total);
        let mut s = DMatrix::zeros(fed.d(), set.len());
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (c, &i) in set.iter().enumerate() {
            let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
            let nf = n as f64;
            let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
            let r = (y - x.tr_mul(theta)) * scale;
            s.set_column(c, &(x * &r));
            let start = fed.offsets()[i];
            match runs.last_mut() {
                Some(run) if run.0 + run.1 == start => run.1 += n,
                _ => runs.push((start, n, r2.len())),
            }
            r2.extend(r.iter().map(|v| v * v));
        }
        Self { fed, runs, r2, s }
    }

    /// `Y v` for a `d × b` block `v`.
    pub fn apply(&self, v: &DMatrix<f64>) -> DMatrix<f64> {
        // `Xᵀv` is formed as `(vᵀX)ᵀ`: nalgebra's `tr_mul` is a loop of dot products, while
        // `vᵀ X` and `X (·)ᵀ` are blocked GEMMs that read `X` once per block.
        let vt = v.transpose();
        let mut w = &self.s * (&vt * &self.s).transpose();
        for &(start, len, off) in &self.runs {
            let x = self.fed.features().columns(start, len);
            let mut pt = &vt * x; // b × len, column j = (vᵀ x_j)
            for (mut col, r) in pt.column_iter_mut().zip(&self.r2[off..off + len]) {
                col *= *r;
            }
            w.gemm(-1.0, &x, &pt.transpose(), 1.0);
        }
        w
    }
}

impl MomentOperator<'_> {
    /// `Y_a V_a` for several operators over the same clients (one per anchor at its own `θ`),
    /// in **one pass over the data**: the blocks are stacked into one `Σ b_a`-row `Vᵀ`, so each
    /// feature column is read once for all of them and the products are wide enough to run at
    /// the GEMM's rate instead of the memory's. Each result is [`MomentOperator::apply`] of its
    /// operator bit for bit: every entry of a matrixmultiply product is a function of its own
    /// row and column alone ([`crate::linalg::gemm_batched`]'s argument; `α = −1` only negates
    /// the exact product), and a block of at most 5 columns, which nalgebra would multiply by
    /// its small-matrix path, is applied alone. The two products are split between two threads
    /// along their outer dimensions (columns of `Xᵀ V`, rows of `X P`), which changes no entry.
    ///
    /// # Panics
    /// When `ops` and `blocks` differ in length or the operators were built for other clients.
    pub fn apply_many(ops: &[&Self], blocks: &[&DMatrix<f64>]) -> Vec<DMatrix<f64>> {
        assert_eq!(ops.len(), blocks.len(), "one block per operator");
        let Some(first) = ops.first() else {
            return Vec::new();
        };
        assert!(
            ops.iter()
                .all(|op| std::ptr::eq(op.fed, first.fed) && op.runs == first.runs),
            "operators over the same clients"
        );
        let mut out: Vec<Option<DMatrix<f64>>> = vec![None; ops.len()];
        // Blocks nalgebra would multiply by matrixmultiply whatever they are stacked with.
        let wide: Vec<usize> = (0..ops.len())
            .filter(|&a| blocks[a].ncols() > EE_SMALL)
            .collect();
        for a in (0..ops.len()).filter(|a| !wide.contains(a)) {
            out[a] = Some(ops[a].apply(blocks[a]));
        }
        if !wide.is_empty() {
            let d = first.fed.d();
            let rows: usize = wide.iter().map(|&a| blocks[a].ncols()).sum();
            let mut vt = DMatrix::zeros(rows, d);
            let mut w = DMatrix::zeros(d, rows);
            let mut offsets = Vec::with_capacity(wide.len());
            let mut o = 0;
            for &a in &wide {
                let b = blocks[a].ncols();
                let bt = blocks[a].transpose();
                // The S̃ part, per operator as in `apply`.
                w.columns_mut(o, b)
                    .copy_from(&(&ops[a].s * (&bt * &ops[a].s).transpose()));
                vt.rows_mut(o, b).copy_from(&bt);
                offsets.push((a, o, b));
                o += b;
            }
            // `W`'s rows in two halves, one per thread, for the second product.
            let h = if d >= 2 * SPLIT_MIN { d / 2 } else { d };
            let mut halves = [w.rows(0, h).clone_owned(), w.rows(h, d - h).clone_owned()];
            for &(start, len, off) in &first.runs {
                for (c0, cl) in gemm_chunks(len) {
                    let x = first.fed.features().columns(start + c0, cl);
                    let mut pt = split_columns_product(&vt, &x);
                    for &(a, o, b) in &offsets {
                        let r2 = &ops[a].r2[off + c0..off + c0 + cl];
                        for (mut col, r) in pt.view_mut((o, 0), (b, cl)).column_iter_mut().zip(r2) {
                            col *= *r;
                        }
                    }
                    let p = pt.transpose();
                    let [top, bottom] = &mut halves;
                    rayon::join(
                        || top.gemm(-1.0, &x.rows(0, h), &p, 1.0),
                        || {
                            if h < d {
                                bottom.gemm(-1.0, &x.rows(h, d - h), &p, 1.0);
                            }
                        },
                    );
                }
            }
            w.rows_mut(0, h).copy_from(&halves[0]);
            w.rows_mut(h, d - h).copy_from(&halves[1]);
            for &(a, o, b) in &offsets {
                out[a] = Some(w.columns(o, b).clone_owned());
            }
        }
        out.into_iter()
            .map(|w| w.expect("every block applied"))
            .collect()
    }
}

/// `vt · x`, its columns computed in two halves on two threads when each half stays wide
/// enough for matrixmultiply (entries are independent of the split).
fn split_columns_product(vt: &DMatrix<f64>, x: &nalgebra::DMatrixView<'_, f64>) -> DMatrix<f64> {
    let len = x.ncols();
    if len < 2 * SPLIT_MIN {
        return vt * x;
    }
    let h = len / 2;
    let mut pt = DMatrix::zeros(vt.nrows(), len);
    let (left, right) = pt.as_mut_slice().split_at_mut(vt.nrows() * h);
    rayon::join(
        || {
            let mut l = nalgebra::DMatrixViewMut::from_slice(left, vt.nrows(), h);
            l.gemm(1.0, vt, &x.columns(0, h), 0.0);
        },
        || {
            let mut r = nalgebra::DMatrixViewMut::from_slice(right, vt.nrows(), len - h);
            r.gemm(1.0, vt, &x.columns(h, len - h), 0.0);
        },
    );
    pt
}

/// Consecutive column ranges `(start, len)` of a run of `len` samples for
/// [`MomentOperator::apply_many`]'s second product `X P`: [`APPLY_CHUNK`] columns each (a
/// multiple of matrixmultiply's inner block of 256, so that adding the chunks' products in order
/// into the result is its single product over the run bit for bit), the last chunk absorbing a
/// remainder of at most 5 columns, which nalgebra would multiply by its small-matrix path.
fn gemm_chunks(len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(len / APPLY_CHUNK + 1);
    let mut c0 = 0;
    while c0 < len {
        let rest = len - c0;
        let cl = if rest > APPLY_CHUNK + EE_SMALL {
            APPLY_CHUNK
        } else {
            rest
        };
        out.push((c0, cl));
        c0 += cl;
    }
    out
}

/// Columns of the data per step of [`MomentOperator::apply_many`]: two inner blocks of
/// matrixmultiply (256 each); at `d = 1000` a chunk is 4 MB, read from memory once by the first
/// product and again from the last-level cache by the second.
const APPLY_CHUNK: usize = 512;

/// Smallest half of a product's outer dimension that [`MomentOperator::apply_many`] splits
/// between threads (well above nalgebra's small-matrix bound of 5).
const SPLIT_MIN: usize = 64;

/// The top-`k` left singular subspace `Û` (`d × k`) of the practical variant's `Y` at `theta`
/// (SXY22 App. C's "direct SVD"), sign-fixed as [`top_k_left_singular`]. For `d ≤`
/// [`DENSE_SUBSPACE_MAX_D`] or a pairing other than all-pairs: `Y` is formed
/// ([`subspace_matrix`]) and decomposed, exactly as before. Otherwise `Y` (symmetric) is
/// applied implicitly ([`MomentOperator`]) inside the block Krylov eigensolver
/// [`top_k_symmetric`] (top-k by `|λ|` = top-k singular), run to
/// [`crate::prec::KRYLOV_RESIDUAL_RTOL`]; if it has not converged once the implicit cost
/// reaches that of forming `Y` (a search space of `d/2` vectors), `Y` is formed and the same
/// solver runs on it up to the full space, where it is exact.
///
/// # Errors
/// [`FedmixError::InvalidParameter`] (`k` larger than `d`), [`FedmixError::Divergence`] (SVD),
/// [`FedmixError::NotConverged`] (not expected: the dense fallback ends exact).
pub fn subspace_basis(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    pairing: Pairing,
    k: usize,
) -> Result<DMatrix<f64>> {
    let d = fed.d();
    if pairing != Pairing::AllPairs || d <= DENSE_SUBSPACE_MAX_D {
        return top_k_left_singular(&subspace_matrix(fed, set, theta, pairing), k);
    }
    let tol = crate::prec::KRYLOV_RESIDUAL_RTOL;
    let block = (k + 8).max(2 * k);
    let op = MomentOperator::new(fed, set, theta);
    match top_k_symmetric(|v| op.apply(v), d, k, block, d / 2, tol) {
        Ok(r) => Ok(r.vectors),
        Err(FedmixError::NotConverged { .. }) => {
            let y = subspace_matrix(fed, set, theta, pairing);
            Ok(top_k_symmetric(|v| &y * v, d, k, block, d, tol)?.vectors)
        }
        Err(e) => Err(e),
    }
}

/// [`subspace_basis`] at each of `thetas` (every anchor of a Phase 1 iteration at its own
/// model), the implicit eigenproblems advanced together: each step applies every unconverged
/// anchor's operator to its block in one pass over the data
/// ([`MomentOperator::apply_many`]). Each basis is [`subspace_basis`]'s at its `θ` bit for bit
/// (each anchor's iteration sees the same products in the same order); where `Y` is formed
/// (small `d`, another pairing) the anchors are simply taken one after another.
///
/// # Errors
/// As [`subspace_basis`], the first anchor's error in anchor order.
pub fn subspace_bases(
    fed: &Federation,
    set: &[usize],
    thetas: &[DVector<f64>],
    pairing: Pairing,
    k: usize,
) -> Result<Vec<DMatrix<f64>>> {
    let d = fed.d();
    if pairing != Pairing::AllPairs || d <= DENSE_SUBSPACE_MAX_D {
        return thetas
            .iter()
            .map(|theta| subspace_basis(fed, set, theta, pairing, k))
            .collect();
    }
    let tol = crate::prec::KRYLOV_RESIDUAL_RTOL;
    let block = (k + 8).max(2 * k);
    // The per-anchor work between passes (the operators' residuals, each iteration's
    // orthogonalisation and Rayleigh–Ritz) runs one task per anchor; each anchor's arithmetic
    // is its own, so the thread count changes nothing.
    let ops: Vec<MomentOperator<'_>> = thetas
        .par_iter()
        .map(|theta| MomentOperator::new(fed, set, theta))
        .collect();
    let mut states: Vec<Option<crate::linalg::BlockKrylov>> = thetas
        .iter()
        .map(|_| crate::linalg::BlockKrylov::new(d, k, block, d / 2, tol).map(Some))
        .collect::<Result<_>>()?;
    let mut out: Vec<Option<Result<DMatrix<f64>>>> = thetas.iter().map(|_| None).collect();
    loop {
        let active: Vec<usize> = (0..states.len()).filter(|&a| states[a].is_some()).collect();
        if active.is_empty() {
            break;
        }
        let products = {
            let op_refs: Vec<&MomentOperator<'_>> = active.iter().map(|&a| &ops[a]).collect();
            let blocks: Vec<&DMatrix<f64>> = active
                .iter()
                .filter_map(|&a| states[a].as_ref().map(crate::linalg::BlockKrylov::block))
                .collect();
            MomentOperator::apply_many(&op_refs, &blocks)
        };
        let mut products: Vec<Option<DMatrix<f64>>> = {
            let mut all = vec![None; states.len()];
            for (&a, w) in active.iter().zip(products) {
                all[a] = Some(w);
            }
            all
        };
        states
            .par_iter_mut()
            .zip(out.par_iter_mut())
            .zip(products.par_iter_mut())
            .enumerate()
            .for_each(|(a, ((state, out), w))| {
                let (Some(krylov), Some(w)) = (state.as_mut(), w.take()) else {
                    return;
                };
                let finished = match krylov.advance(w) {
                    Ok(None) => return,
                    Ok(Some(r)) => Ok(r.vectors),
                    // As `subspace_basis`: form `Y` and run the same solver up to the full space.
                    Err(FedmixError::NotConverged { .. }) => {
                        let y = subspace_matrix(fed, set, &thetas[a], pairing);
                        top_k_symmetric(|v| &y * v, d, k, block, d, tol).map(|r| r.vectors)
                    }
                    Err(e) => Err(e),
                };
                *out = Some(finished);
                *state = None;
            });
    }
    out.into_iter()
        .map(|r| r.expect("every anchor finished"))
        .collect()
}
