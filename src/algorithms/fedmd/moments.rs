//! The subspace statistics of Phase 1 step 9 (SXY22 §4.1, Algorithm 3's input): residual
//! moments, their pairing into cross moments and the matrix `Y` formed (its implicit
//! application and its top-k left singular subspace are in `moment_operator.rs`).

use super::super::orthogonal_iteration::{assemble, ClientMoment};
use crate::federation::Federation;
use crate::params::{Pairing, Phase1Variant};
use nalgebra::{DMatrix, DVector};

/// Residual moments `ε(x_ij, y_ij, θ)` of client `i` over `range`, as columns (`d × |range|`).
pub fn residual_moments(
    fed: &Federation,
    i: usize,
    theta: &DVector<f64>,
    range: std::ops::Range<usize>,
) -> DMatrix<f64> {
    let x = fed.x(i).columns(range.start, range.len()).clone_owned();
    let r = fed.y(i).rows(range.start, range.len()) - x.tr_mul(theta);
    let mut e = x;
    for (mut col, ri) in e.column_iter_mut().zip(r.iter()) {
        col *= *ri;
    }
    e
}

/// The cross-moment estimate of a set of moment columns `e` (`d × n`, `n ≥ 2`) as a factored
/// `A Bᵀ` (see [`Pairing`]).
pub fn pair_moments(e: &DMatrix<f64>, pairing: Pairing) -> (DMatrix<f64>, DMatrix<f64>) {
    let n = e.ncols();
    match pairing {
        Pairing::AllPairs => {
            // U = (S Sᵀ − Σ ε εᵀ)/(n(n−1)) = [S, −E] [S, E]ᵀ / (n(n−1))
            let s = e.column_sum();
            let c = 1.0 / (n as f64 * (n as f64 - 1.0));
            let mut a = DMatrix::zeros(e.nrows(), n + 1);
            let mut b = DMatrix::zeros(e.nrows(), n + 1);
            a.set_column(0, &(&s * c));
            b.set_column(0, &s);
            a.columns_mut(1, n).copy_from(&(e * -c));
            b.columns_mut(1, n).copy_from(e);
            (a, b)
        }
        Pairing::Halves => {
            let h = n / 2;
            let first = e.columns(0, h).column_mean();
            let second = e.columns(h, h).column_mean();
            (
                DMatrix::from_column_slice(e.nrows(), 1, first.as_slice()),
                DMatrix::from_column_slice(e.nrows(), 1, second.as_slice()),
            )
        }
        Pairing::FirstTwo => (e.columns(0, 1).clone_owned(), e.columns(1, 1).clone_owned()),
    }
}

/// The message-level client matrices of the subspace step: client `i` contributes its pairing
/// statistic `M_i = A_iB_iᵀ` at `theta` with weight `n_i / Σ n` (faithful: one pair of fresh
/// samples per client, weight `1/m`).
pub fn client_moments(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    variant: Phase1Variant,
    pairing: Pairing,
) -> Vec<ClientMoment> {
    let faithful = variant == Phase1Variant::Faithful;
    let count = |i: usize| if faithful { 1 } else { fed.n(i) };
    let total: usize = set.iter().map(|&i| count(i)).sum();
    set.iter()
        .map(|&i| {
            let range = if faithful { 0..2 } else { 0..fed.n(i) };
            let (a, b) = pair_moments(&residual_moments(fed, i, theta, range), pairing);
            ClientMoment {
                a,
                b,
                weight: count(i) as f64 / total as f64,
            }
        })
        .collect()
}

/// `Y = Σ_i w_i U_i` (`w_i = n_i/Σn`) of the practical variant, formed centrally. For the
/// all-pairs pairing this is `S̃S̃ᵀ − ẼẼᵀ` with `Ẽ` the residual moments scaled by
/// `√(w_i/(n_i(n_i−1)))` and `S̃_i` their per-client sums: one pass over the data, with `Ẽ` and
/// `S̃` streamed through scratch blocks (256 columns with the lower-triangle Gram kernel, 4096
/// without it: memory `O(d · 4096)` at most, not `O(dN)` or `O(dM)`; bit-identical to forming
/// them), by [`subspace_matrices`] at the one `θ`. Equal to `assemble(client_moments(..))` up to
/// rounding.
pub fn subspace_matrix(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    pairing: Pairing,
) -> DMatrix<f64> {
    let d = fed.d();
    if pairing != Pairing::AllPairs {
        return assemble(
            &client_moments(fed, set, theta, Phase1Variant::Practical, pairing),
            d,
        );
    }
    subspace_matrices(fed, set, std::slice::from_ref(theta))
        .pop()
        .expect("one matrix per θ")
}

/// [`subspace_matrix`]'s all-pairs `S̃S̃ᵀ − ẼẼᵀ` with both Gram matrices accumulated over blocks
/// of `block` columns (a multiple of 256): memory `O(d · block)` beyond the data, whatever the
/// number of samples and clients, and no allocation per client.
fn subspace_matrix_blocked(
    fed: &Federation,
    set: &[usize],
    theta: &DVector<f64>,
    block: usize,
) -> DMatrix<f64> {
    let d = fed.d();
    let total: usize = set.iter().map(|&i| fed.n(i)).sum();
    let mut ee = BlockedGram::new(d, total, block);
    let mut ss = BlockedGram::new(d, set.len(), block);
    let mut r = DVector::zeros(set.iter().map(|&i| fed.n(i)).max().unwrap_or(0));
    for &i in set {
        let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
        let nf = n as f64;
        let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
        // r = (y − xᵀθ) · scale, in a reused buffer (the same operations as the expression).
        let mut r = r.rows_mut(0, n);
        r.copy_from(&y);
        r.gemv_tr(-1.0, &x, theta, 1.0);
        r *= scale;
        for (j, rj) in r.iter().enumerate() {
            ee.push_with(|mut col| {
                col.copy_from(&x.column(j));
                col *= *rj;
            });
        }
        ss.push_with(|mut col| col.gemv(1.0, &x, &r, 0.0));
    }
    ss.finish() - ee.finish()
}

/// [`subspace_matrix`]'s all-pairs `Y = S̃S̃ᵀ − ẼẼᵀ` at each of `thetas` (one moment matrix per
/// anchor of Phase 1 step 9), in **one pass over the clients' data**: each client's block is read
/// from memory once and serves every `θ` while it is in cache, instead of once per anchor. Every
/// matrix is bit-identical to [`subspace_matrix`] at its `θ` (the same residuals, the same
/// columns of `Ẽ` and `S̃`, and the Gram products by [`fedmix_kernels::gram_lower`]: the lower
/// triangle of matrixmultiply's product entry for entry, in blocks of its 256 inner indices —
/// which is also how the 4096-column blocks of the per-θ computation sum — mirrored, at half
/// the flops and without packing). Where the kernel does not run (no AVX2 + FMA, or a side of at most 5, which
/// nalgebra multiplies by another path) each matrix is [`subspace_matrix`]'s own computation.
pub fn subspace_matrices(
    fed: &Federation,
    set: &[usize],
    thetas: &[DVector<f64>],
) -> Vec<DMatrix<f64>> {
    let d = fed.d();
    let total: usize = set.iter().map(|&i| fed.n(i)).sum();
    // nalgebra hands the Gram products to matrixmultiply only when every side exceeds 5.
    let kernel =
        fedmix_kernels::available() && d > EE_SMALL && total > EE_SMALL && set.len() > EE_SMALL;
    if !kernel {
        return thetas
            .iter()
            .map(|theta| subspace_matrix_blocked(fed, set, theta, EE_BLOCK))
            .collect();
    }
    let h = thetas.len();
    let mut ee: Vec<LowerGram> = (0..h).map(|_| LowerGram::new(d)).collect();
    let mut ss: Vec<BlockedGram> = (0..h).map(|_| BlockedGram::lower(d, set.len())).collect();
    // The current block of `Ẽ`'s columns: the features (shared) and each θ's scaled residuals.
    let mut x_block = DMatrix::zeros(d, fedmix_kernels::KC);
    let mut r_block = DMatrix::zeros(fedmix_kernels::KC, h);
    let mut scratch = DMatrix::zeros(d, fedmix_kernels::KC);
    let mut filled = 0;
    let mut r = DMatrix::zeros(set.iter().map(|&i| fed.n(i)).max().unwrap_or(0), h);
    for &i in set {
        let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
        let nf = n as f64;
        let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
        for (a, theta) in thetas.iter().enumerate() {
            // r = (y − xᵀθ) · scale, as in `subspace_matrix_blocked`.
            let mut r = r.view_range_mut(0..n, a);
            r.copy_from(&y);
            r.gemv_tr(-1.0, &x, theta, 1.0);
            r *= scale;
            ss[a].push_with(|mut col| col.gemv(1.0, &x, &r, 0.0));
        }
        for j in 0..n {
            x_block.column_mut(filled).copy_from(&x.column(j));
            for a in 0..h {
                r_block[(filled, a)] = r[(j, a)];
            }
            filled += 1;
            if filled == fedmix_kernels::KC {
                flush_residual_block(&x_block, &r_block, filled, &mut scratch, &mut ee);
                filled = 0;
            }
        }
    }
    if filled > 0 {
        flush_residual_block(&x_block, &r_block, filled, &mut scratch, &mut ee);
    }
    ss.into_iter()
        .zip(ee)
        .map(|(ss, ee)| ss.finish() - ee.finish())
        .collect()
}

/// Adds the block's `ẼẼᵀ` to each θ's accumulator: column `j` of `Ẽ` is feature column `j`
/// times θ's scaled residual `j` (the same operations as `subspace_matrix_blocked`).
fn flush_residual_block(
    x_block: &DMatrix<f64>,
    r_block: &DMatrix<f64>,
    filled: usize,
    scratch: &mut DMatrix<f64>,
    ee: &mut [LowerGram],
) {
    for (a, gram) in ee.iter_mut().enumerate() {
        for j in 0..filled {
            let mut col = scratch.column_mut(j);
            col.copy_from(&x_block.column(j));
            col *= r_block[(j, a)];
        }
        gram.add(scratch, filled);
    }
}

/// `Σ VVᵀ` over blocks `V`, each added by [`fedmix_kernels::gram_lower`] (the first stored,
/// a block longer than 256 columns summed in 256-column pieces by the kernel): with blocks
/// starting at multiples of 256 columns this is matrixmultiply's `V Vᵀ` of the whole `V` bit
/// for bit, lower triangle, mirrored at the end.
struct LowerGram {
    acc: DMatrix<f64>,
    first: bool,
}

impl LowerGram {
    fn new(d: usize) -> Self {
        Self {
            acc: DMatrix::zeros(d, d),
            first: true,
        }
    }

    /// Adds `VVᵀ` for the first `cols` columns of `block` (`d × ≥ cols`, column-major).
    fn add(&mut self, block: &DMatrix<f64>, cols: usize) {
        let d = block.nrows();
        let v = fedmix_kernels::Operand {
            data: &block.as_slice()[..d * cols],
            rows: d,
            cols,
            ld: d,
        };
        let ran = fedmix_kernels::gram_lower(v, self.acc.as_mut_slice(), d, !self.first);
        assert!(ran, "the Gram kernel is checked available before use");
        self.first = false;
    }

    fn finish(mut self) -> DMatrix<f64> {
        self.acc.fill_upper_triangle_with_lower_triangle();
        self.acc
    }
}

/// `VVᵀ` for a `d × total` matrix `V` whose columns arrive one at a time, accumulated over
/// blocks of `block` columns held in one scratch buffer (never `V` itself), bit-identical to the
/// single product `V * Vᵀ`: the GEMM sums its inner dimension in blocks of 256 and adds block
/// after block into the result, so blocks at multiples of 256 reproduce it; the last block
/// absorbs a remainder of ≤ [`EE_SMALL`] columns, which the GEMM would otherwise multiply by its
/// small-matrix path.
struct BlockedGram {
    block: usize,
    scratch: DMatrix<f64>,
    filled: usize,
    remaining: usize,
    acc: GramAcc,
}

/// How a [`BlockedGram`] adds a block.
enum GramAcc {
    /// nalgebra's GEMM (matrixmultiply, or its small-matrix path), the full `d × d` product.
    Gemm { acc: DMatrix<f64>, first: bool },
    /// [`fedmix_kernels::gram_lower`]: the lower triangle, mirrored at the end (the same bits
    /// where nalgebra would call matrixmultiply: every side above 5).
    Lower(LowerGram),
}

impl BlockedGram {
    fn new(d: usize, total: usize, block: usize) -> Self {
        let acc = GramAcc::Gemm {
            acc: DMatrix::zeros(d, d),
            first: true,
        };
        Self::with(d, total, block, acc)
    }

    /// Blocks of [`fedmix_kernels::KC`] columns added by the lower-triangle kernel (available,
    /// `d` and `total` above 5).
    fn lower(d: usize, total: usize) -> Self {
        Self::with(
            d,
            total,
            fedmix_kernels::KC,
            GramAcc::Lower(LowerGram::new(d)),
        )
    }

    fn with(d: usize, total: usize, block: usize, acc: GramAcc) -> Self {
        Self {
            block,
            scratch: DMatrix::zeros(d, block.min(total) + EE_SMALL),
            filled: 0,
            remaining: total,
            acc,
        }
    }

    /// Write the next column of `V` with `fill`.
    fn push_with(&mut self, fill: impl FnOnce(nalgebra::DVectorViewMut<'_, f64>)) {
        fill(self.scratch.column_mut(self.filled));
        self.filled += 1;
        self.remaining -= 1;
        if self.filled >= self.block && self.remaining > EE_SMALL {
            self.flush();
        }
    }

    fn flush(&mut self) {
        match &mut self.acc {
            GramAcc::Lower(gram) => gram.add(&self.scratch, self.filled),
            GramAcc::Gemm { acc, first } => {
                let d = self.scratch.nrows();
                let data = &self.scratch.as_slice()[..d * self.filled];
                let b = nalgebra::DMatrixView::from_slice(data, d, self.filled);
                let beta = if *first { 0.0 } else { 1.0 };
                if d > 5 && self.filled > 5 {
                    // matrixmultiply's path (nalgebra hands it products whose sides all exceed
                    // 5): `bᵀ` as a strided view of the same storage, no transposed copy;
                    // matrixmultiply reads either layout with the same per-entry accumulation,
                    // so the bits are those of the product with a copied transpose. (nalgebra's
                    // own small-matrix path mishandles row-strided views, so it gets the copy.)
                    let bt =
                        nalgebra::DMatrixView::from_slice_with_strides(data, self.filled, d, d, 1);
                    acc.gemm(1.0, &b, &bt, beta);
                } else {
                    acc.gemm(1.0, &b, &b.transpose(), beta);
                }
                *first = false;
            }
        }
        self.filled = 0;
    }

    fn finish(mut self) -> DMatrix<f64> {
        if self.filled > 0 {
            self.flush();
        }
        match self.acc {
            GramAcc::Gemm { acc, .. } => acc,
            GramAcc::Lower(gram) => gram.finish(),
        }
    }
}

/// Columns of `Ẽ` per block of [`subspace_matrix`]'s accumulated `ẼẼᵀ`: a multiple of the
/// GEMM's inner block (256, `matrixmultiply`'s `D_KC`), so the blocked sum is bit-identical to
/// the single product.
const EE_BLOCK: usize = 256 * 16;

/// Widest product the GEMM hands to its small-matrix path (nalgebra's `SMALL_DIM`).
pub(super) const EE_SMALL: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::FederationParts;
    use crate::seed_streams::{stream, Purpose};
    use rand_distr::{Distribution, StandardNormal};

    /// Standard-normal features and responses for clients of the given sizes, and a
    /// standard-normal `θ`, from `stream(seed, Features, index)`.
    fn gaussian_federation(
        d: usize,
        sizes: &[usize],
        seed: u64,
        index: u64,
    ) -> (Federation, DVector<f64>) {
        let total: usize = sizes.iter().sum();
        let mut rng = stream(seed, Purpose::Features, index);
        let mut g = || -> f64 { StandardNormal.sample(&mut rng) };
        let fed = Federation::new(FederationParts {
            features: DMatrix::from_fn(d, total, |_, _| g()),
            responses: DVector::from_fn(total, |_, _| g()),
            sizes: sizes.to_vec(),
            labels: None,
            theta_star: None,
            k: Some(2),
        })
        .unwrap();
        let theta = DVector::from_fn(d, |_, _| g());
        (fed, theta)
    }

    /// The blocked `ẼẼᵀ` of [`subspace_matrix`] equals the product of the whole `Ẽ` bit for
    /// bit: below one block, at exact multiples, with a remainder the last block absorbs
    /// (≤ 5 columns) and with one it does not.
    #[test]
    fn blocked_accumulation_is_bit_identical_to_the_whole_product() {
        for (d, total) in [7usize, 53].into_iter().flat_map(|d| {
            [
                300,
                EE_BLOCK,
                EE_BLOCK + 3,
                EE_BLOCK + 5,
                EE_BLOCK + 6,
                2 * EE_BLOCK + 777,
            ]
            .map(move |t| (d, t))
        }) {
            // Clients of 50 samples (the last takes the rest), so blocks straddle clients.
            let mut sizes = vec![50; total / 50];
            *sizes.last_mut().unwrap() += total % 50;
            let (fed, theta) = gaussian_federation(d, &sizes, 11, total as u64);
            let set: Vec<usize> = (0..sizes.len()).collect();
            let mut e = DMatrix::zeros(d, total);
            let mut s = DMatrix::zeros(d, set.len());
            let mut off = 0;
            for &i in &set {
                let (x, y, n) = (fed.x(i), fed.y(i), fed.n(i));
                let nf = n as f64;
                let scale = (nf / total as f64 / (nf * (nf - 1.0))).sqrt();
                let r = (y - x.tr_mul(&theta)) * scale;
                let mut block = e.columns_mut(off, n);
                block.copy_from(&x);
                for (mut col, ri) in block.column_iter_mut().zip(r.iter()) {
                    col *= *ri;
                }
                s.set_column(i, &(x * r));
                off += n;
            }
            let whole = &s * s.transpose() - &e * e.transpose();
            let blocked = subspace_matrix(&fed, &set, &theta, Pairing::AllPairs);
            let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&blocked), bits(&whole), "d = {d}, N = {total}");
        }
    }

    /// The same with blocks of 256 columns and clients of 2–3 samples, so that `S̃` (one column
    /// per client) also spans several blocks, with and without a remainder the last block
    /// absorbs.
    #[test]
    fn blocked_client_sums_are_bit_identical_too() {
        // d > 5: the Gram products go to matrixmultiply, whose 256-blocks the blocking must
        // respect (at d ≤ 5 nalgebra sums column by column and any blocking agrees).
        let d = 7;
        for clients in [200, 256, 259, 262, 700] {
            let sizes: Vec<usize> = (0..clients).map(|c| 2 + c % 2).collect();
            let (fed, theta) = gaussian_federation(d, &sizes, 12, clients as u64);
            let set: Vec<usize> = (0..clients).collect();
            let whole = subspace_matrix_blocked(&fed, &set, &theta, usize::MAX / 2);
            let blocked = subspace_matrix_blocked(&fed, &set, &theta, 256);
            let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&blocked), bits(&whole), "M = {clients}");
        }
    }

    /// One pass for several θ gives, for each, the matrix of the per-θ computation
    /// (`subspace_matrix_blocked`, nalgebra's GEMM) bit for bit: unequal clients whose samples
    /// straddle the 256-column blocks, totals below, at and beyond a block with remainders, and
    /// the fallbacks (d ≤ 5, at most 5 clients).
    #[test]
    fn one_pass_for_several_thetas_is_bit_identical_to_one_theta_at_a_time() {
        for (d, sizes) in [
            (7, vec![3, 2, 4, 2, 3, 5, 2]),
            (7, (0..300).map(|c| 2 + c % 5).collect::<Vec<_>>()),
            (100, (0..40).map(|c| 2 + (c * 7) % 19).collect()),
            (100, vec![256, 2, 254, 3]),
            (4, (0..60).map(|c| 2 + c % 3).collect()),
            (9, vec![400, 600, 2]),
        ] {
            let (fed, theta) = gaussian_federation(d, &sizes, 13, (d * 1000 + sizes.len()) as u64);
            let set: Vec<usize> = (0..sizes.len()).collect();
            let thetas = vec![
                theta.clone(),
                theta.map(|v| 0.5 * v - 1.0),
                theta.map(f64::sin),
            ];
            let batch = subspace_matrices(&fed, &set, &thetas);
            assert_eq!(batch.len(), 3);
            let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            for (y, theta) in batch.iter().zip(&thetas) {
                let one = subspace_matrix_blocked(&fed, &set, theta, EE_BLOCK);
                assert_eq!(bits(y), bits(&one), "d = {d}, M = {}", sizes.len());
            }
        }
    }
}
