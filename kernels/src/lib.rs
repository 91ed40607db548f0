//! Matrix-product kernels for the narrow products of federated learning's client passes,
//! **bit-identical to matrixmultiply 0.3's `dgemm`** (the product nalgebra uses), without its
//! packing.
//!
//! A client pass multiplies a client's feature block (`d × n_i`) by a few models or residual
//! columns. matrixmultiply copies ("packs") both operands into aligned panels before every
//! product; when one dimension is a handful of models the copy costs as much as the arithmetic
//! (measured: 40–60 % of a round's time in `pack_avx2` at `d = 1000`). [`matmul`] computes the
//! same product straight from the column-major operands: a tile of 8 rows × up to 4 columns of
//! `C` is held in AVX2 registers while the inner dimension streams past.
//!
//! **The same bits as matrixmultiply.** matrixmultiply 0.3 with its AVX2 + FMA kernel (the one it
//! selects at run time when the CPU has both features) computes every entry of `C` as blocks of
//! [`KC`] = 256 consecutive inner indices, each block one fused-multiply-add chain started from
//! zero (`ab ← fma(a_p, b_p, ab)`, `p` ascending), the blocks added to `C` in order (the first
//! block stored with `β = 0`, the later ones as `c + ab`). On a CPU with AVX-512F, 0.3.11 built by
//! a compiler with stable AVX-512 intrinsics selects its AVX-512 kernel instead (8 × 8 tiles,
//! the same [`KC`]): each entry is the same chain, and its epilogue `fma(α, ab, β·c)` is `ab` or
//! `c + ab` at `α = 1`, `β ∈ {0, 1}` — the same bits (the unit tests compare with whichever
//! kernel matrixmultiply selects on the machine running them). [`matmul`] evaluates exactly that
//! expression for every entry, so its result equals nalgebra's `gemm(1.0, a, b, 0.0)` bit for
//! bit whenever nalgebra hands the product to matrixmultiply — and, like it, an entry depends
//! only on its own row of `A` and column of `B`. Where the CPU lacks AVX2 or FMA (matrixmultiply
//! then runs another kernel), [`matmul`] declines and the caller falls back to nalgebra, so the
//! result is matrixmultiply's everywhere. The unit tests compare the two bitwise over shapes
//! that cover every tail (rows mod 8, columns mod 4, inner dimension across block boundaries).

#![deny(missing_docs)]

/// matrixmultiply 0.3's `D_KC`: the inner dimension is accumulated in blocks of this many
/// indices (its default; the `MATMUL_DGEMM_KC` build-time override is not supported).
pub const KC: usize = 256;

/// Environment variable that turns the kernels off (any value): [`matmul`] then declines and
/// every product goes through nalgebra / matrixmultiply — the same bits, for A/B timing and for
/// checking that claim on whole runs.
pub const DISABLE_ENV: &str = "FEDMIX_NO_KERNELS";

/// Whether [`matmul`] runs: x86-64 with AVX2 and FMA (as matrixmultiply's `KernelFmaAvx2`) and
/// [`DISABLE_ENV`] unset (read once per process).
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| std::env::var_os(DISABLE_ENV).is_none() && cpu_has_avx2_fma())
}

fn cpu_has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A column-major matrix operand: `rows × cols`, entry `(r, c)` at `data[c * ld + r]`.
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a> {
    /// The entries.
    pub data: &'a [f64],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension (distance between columns), `≥ rows`.
    pub ld: usize,
}

impl Operand<'_> {
    fn check(&self, what: &str) {
        assert!(
            self.ld >= self.rows.max(1),
            "{what}: leading dimension below rows"
        );
        if self.rows > 0 && self.cols > 0 {
            assert!(
                self.data.len() >= (self.cols - 1) * self.ld + self.rows,
                "{what}: slice too short for its shape"
            );
        }
    }
}

/// `C ← A·B` (`A`: `m × k`, `B`: `k × n`, `C`: `m × n`, all column-major), each entry computed
/// as matrixmultiply's AVX2 + FMA kernel computes it (module docs). Returns `false`, leaving
/// `C` untouched, when the CPU lacks AVX2 or FMA; the caller then uses nalgebra's `gemm`,
/// which gives the same bits.
///
/// # Panics
/// When the shapes do not match or a slice is shorter than its shape and leading dimension.
pub fn matmul(a: Operand<'_>, b: Operand<'_>, c: &mut [f64], ldc: usize) -> bool {
    a.check("A");
    b.check("B");
    assert_eq!(a.cols, b.rows, "inner dimensions differ");
    let (m, n) = (a.rows, b.cols);
    assert!(ldc >= m.max(1), "C: leading dimension below rows");
    if m > 0 && n > 0 {
        assert!(
            c.len() >= (n - 1) * ldc + m,
            "C: slice too short for its shape"
        );
    }
    if !available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX2 and FMA (checked above), and every access of the kernel stays
    // inside the shapes asserted above (see `avx2::matmul`).
    unsafe {
        avx2::matmul(a, b, c, ldc);
    }
    true
}

/// `C ← E·Eᵀ` (`accumulate = false`) or `C ← C + E·Eᵀ` (`accumulate = true`) for a column-major
/// `E` (`d × n`), computed only on the tiles of `C` (column-major, `d × d`) that meet its lower
/// triangle (every entry `(i, l)` with `i ≥ l`, and some just above the diagonal); the caller
/// mirrors the lower triangle to complete `C`. Each computed entry is matrixmultiply's expression
/// for `gemm(1.0, E, Eᵀ, β)` with `β = 0` or `1` (module docs: blocks of [`KC`] inner indices,
/// each an FMA chain from zero, added in order to `C`), so it equals the full product's entry
/// bit for bit; and since an FMA's product is exact, the full product is itself symmetric bit
/// for bit — the mirrored triangle is that product, at about half its flops and without
/// packing. Returns `false`, leaving `C` untouched, when the CPU lacks AVX2 or FMA.
///
/// # Panics
/// When `C` (`d × d`, leading dimension `ldc`) or `E` is shorter than its shape.
pub fn gram_lower(e: Operand<'_>, c: &mut [f64], ldc: usize, accumulate: bool) -> bool {
    e.check("E");
    let d = e.rows;
    assert!(ldc >= d.max(1), "C: leading dimension below rows");
    if d > 0 {
        assert!(
            c.len() >= (d - 1) * ldc + d,
            "C: slice too short for its shape"
        );
    }
    if !available() {
        return false;
    }
    if e.cols == 0 {
        // An empty sum: `E·Eᵀ = 0`, as the GEMM with β = 0 stores it.
        if !accumulate {
            for col in 0..d {
                c[col * ldc..col * ldc + d].fill(0.0);
            }
        }
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX2 and FMA (checked above), and every access of the kernel stays
    // inside the shapes asserted above (see `avx2::gram_lower`).
    unsafe {
        avx2::gram_lower(e, c, ldc, accumulate);
    }
    true
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Operand, KC};
    use std::arch::x86_64::*;

    /// Rows of a tile (two 4-lane registers).
    const MR: usize = 8;
    /// Largest number of columns of a tile.
    const NR: usize = 4;

    /// Lane masks selecting the first `valid` lanes of the two registers of a row block.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn masks(valid: usize) -> (__m256i, __m256i) {
        let lane = |i: usize| if i < valid { -1i64 } else { 0 };
        (
            _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3)),
            _mm256_setr_epi64x(lane(4), lane(5), lane(6), lane(7)),
        )
    }

    /// Tiles of `C`: row blocks of [`MR`] (the last one masked) by column blocks of up to
    /// [`NR`]. The larger operand is streamed once: when `A` is larger the row blocks are the
    /// outer loop (a row block of `A` stays in L1 while the columns of `B` pass), otherwise the
    /// column blocks are (a column block of `B` stays in L1 while `A` passes).
    ///
    /// # Safety
    /// AVX2 and FMA available; shapes as asserted by [`super::matmul`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn matmul(a: Operand<'_>, b: Operand<'_>, c: &mut [f64], ldc: usize) {
        let (m, k, n) = (a.rows, a.cols, b.cols);
        if m == 0 || n == 0 {
            return;
        }
        let row_blocks = m.div_ceil(MR);
        let col_blocks = n.div_ceil(NR);
        let run_tile = |rb: usize, cb: usize, c: &mut [f64]| {
            let (r0, c0) = (rb * MR, cb * NR);
            // SAFETY: rows r0..r0+rows < m and columns c0..c0+cols < n are inside every
            // operand; the masked lanes beyond `rows` are neither read nor written.
            unsafe {
                let panel = Panel {
                    ptr: b.data.as_ptr().add(c0 * b.ld),
                    rs: 1,
                    cs: b.ld,
                };
                tile(
                    a,
                    panel,
                    c,
                    ldc,
                    (r0, (m - r0).min(MR)),
                    (c0, (n - c0).min(NR)),
                    k,
                    false,
                );
            }
        };
        if m * k >= k * n {
            for rb in 0..row_blocks {
                for cb in 0..col_blocks {
                    run_tile(rb, cb, c);
                }
            }
        } else {
            for cb in 0..col_blocks {
                for rb in 0..row_blocks {
                    run_tile(rb, cb, c);
                }
            }
        }
    }

    /// Columns of a Gram product's tiles: 8 × 6 tiles keep 12 accumulators in flight (two FMA
    /// pipes × four cycles of latency need at least 8), and `Eᵀ`'s 6 entries of a tile are
    /// contiguous in `E`'s column.
    const NR_GRAM: usize = 6;

    /// The `B` side of a tile: entry `(p, q)` (inner index `p`, the tile's `q`-th column) at
    /// `ptr + p·rs + q·cs` — `B` itself (`rs = 1`, `cs = ld`) or, for a Gram product, `Eᵀ` read
    /// in place from `E` (`rs = ld`, `cs = 1`).
    #[derive(Clone, Copy)]
    struct Panel {
        ptr: *const f64,
        rs: usize,
        cs: usize,
    }

    /// [`super::gram_lower`]: the tiles `(rb, cb)` whose column block starts at or before the
    /// row block's last row, row block after row block (the row block of `E` stays in L1 while
    /// the column blocks pass), each [`tile`]'s with `A = E` and `B = Eᵀ` read in place.
    ///
    /// # Safety
    /// AVX2 and FMA available; shapes as asserted by [`super::gram_lower`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gram_lower(e: Operand<'_>, c: &mut [f64], ldc: usize, accumulate: bool) {
        let (d, k) = (e.rows, e.cols);
        for r0 in (0..d).step_by(MR) {
            let rows = (d - r0).min(MR);
            for c0 in (0..r0 + rows).step_by(NR_GRAM) {
                let panel = Panel {
                    ptr: e.data.as_ptr().add(c0),
                    rs: e.ld,
                    cs: 1,
                };
                let cols = (d - c0).min(NR_GRAM);
                tile(e, panel, c, ldc, (r0, rows), (c0, cols), k, accumulate);
            }
        }
    }

    /// One tile of `C` (rows `r0..r0 + rows`, columns `c0..c0 + cols`, `cols ≤ 6`), by the
    /// kernel specialised to its shape.
    ///
    /// # Safety
    /// AVX2 and FMA available; the tile lies inside `C`, its rows inside `A`, its columns inside
    /// the `B` that `b` reads.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile(
        a: Operand<'_>,
        b: Panel,
        c: &mut [f64],
        ldc: usize,
        (r0, rows): (usize, usize),
        (c0, cols): (usize, usize),
        k: usize,
        add_first: bool,
    ) {
        // A row block of at most 4 rows uses one register per column: the upper one would only
        // multiply masked zeros (half the FMAs of a k = 2 prediction product). `B` read as `Eᵀ`
        // (`cs = 1`) gets its own instance, whose `B` entries are consecutive.
        let at = (r0, rows);
        macro_rules! by_shape {
            ($t:expr) => {
                match (cols, rows > 4) {
                    (6, true) => tile_kernel::<6, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (5, true) => tile_kernel::<5, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (4, true) => tile_kernel::<4, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (3, true) => tile_kernel::<3, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (2, true) => tile_kernel::<2, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (_, true) => tile_kernel::<1, true, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (6, false) => tile_kernel::<6, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (5, false) => tile_kernel::<5, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (4, false) => tile_kernel::<4, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (3, false) => tile_kernel::<3, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (2, false) => tile_kernel::<2, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                    (_, false) => tile_kernel::<1, false, $t>(a, b, c, ldc, at, c0, k, add_first),
                }
            };
        }
        if b.cs == 1 {
            by_shape!(true)
        } else {
            by_shape!(false)
        }
    }

    /// One tile: rows `r0..r0 + rows` (`rows ≤ 8`; `rows ≤ 4` when not `HI`) and columns
    /// `c0..c0 + C` of `C`, each entry the blocked FMA chain of the module docs (the lanes are
    /// independent entries, so using the upper register or not changes no bit).
    ///
    /// `add_first`: the first block is added to `C` (`β = 1`) instead of stored (`β = 0`). `T`:
    /// `B`'s entries of one inner index are consecutive (`b.cs = 1`).
    ///
    /// # Safety
    /// AVX2 and FMA available; the tile lies inside `C`, its rows inside `A`, its columns inside
    /// the `B` that `b` reads.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile_kernel<const C: usize, const HI: bool, const T: bool>(
        a: Operand<'_>,
        b: Panel,
        c: &mut [f64],
        ldc: usize,
        (r0, rows): (usize, usize),
        c0: usize,
        k: usize,
        add_first: bool,
    ) {
        let (lo, hi) = masks(rows);
        let full = HI && rows == MR;
        // `wrapping_add` for addresses: the upper register of a row block may start past the end
        // of an operand when all its lanes are masked (nothing is accessed there).
        let ap = a.data.as_ptr().wrapping_add(r0);
        let cp = c.as_mut_ptr().wrapping_add(c0 * ldc + r0);
        let mut kb = 0;
        while kb < k {
            let ke = (kb + KC).min(k);
            let mut acc_lo = [_mm256_setzero_pd(); C];
            let mut acc_hi = [_mm256_setzero_pd(); C];
            for p in kb..ke {
                let col = ap.wrapping_add(p * a.ld);
                // A full row block is read with plain loads (the same values; masked loads are
                // slower), a partial one masked.
                let (a_lo, a_hi) = if full {
                    (_mm256_loadu_pd(col), _mm256_loadu_pd(col.add(4)))
                } else if HI {
                    (
                        _mm256_maskload_pd(col, lo),
                        _mm256_maskload_pd(col.wrapping_add(4), hi),
                    )
                } else {
                    (_mm256_maskload_pd(col, lo), _mm256_setzero_pd())
                };
                let brow = b.ptr.add(p * b.rs);
                for q in 0..C {
                    let bq = _mm256_broadcast_sd(&*brow.add(if T { q } else { q * b.cs }));
                    acc_lo[q] = _mm256_fmadd_pd(a_lo, bq, acc_lo[q]);
                    if HI {
                        acc_hi[q] = _mm256_fmadd_pd(a_hi, bq, acc_hi[q]);
                    }
                }
            }
            for q in 0..C {
                let out = cp.wrapping_add(q * ldc);
                let v_lo = if kb == 0 && !add_first {
                    acc_lo[q]
                } else {
                    _mm256_add_pd(_mm256_maskload_pd(out, lo), acc_lo[q])
                };
                _mm256_maskstore_pd(out, lo, v_lo);
                if HI {
                    let v_hi = if kb == 0 && !add_first {
                        acc_hi[q]
                    } else {
                        _mm256_add_pd(_mm256_maskload_pd(out.wrapping_add(4), hi), acc_hi[q])
                    };
                    _mm256_maskstore_pd(out.wrapping_add(4), hi, v_hi);
                }
            }
            kb = ke;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random fill with entries of mixed sign and magnitude (so that
    /// rounding differs between summation orders).
    fn fill(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 10f64.powi((s % 7) as i32 - 3)
            })
            .collect()
    }

    /// matrixmultiply's `C ← β·C + A·B` (`C` column-major `m × n`, starting from `c0`), with
    /// `A` and `B` given by their (row, column) strides.
    #[allow(clippy::too_many_arguments)]
    fn dgemm_reference(
        (m, k, n): (usize, usize, usize),
        a: &[f64],
        a_strides: (usize, usize),
        b: &[f64],
        b_strides: (usize, usize),
        c0: Vec<f64>,
        beta: f64,
    ) -> Vec<f64> {
        let mut c = c0;
        assert_eq!(c.len(), m * n);
        // SAFETY: the pointers and strides describe the slices the callers pass.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                a_strides.0 as isize,
                a_strides.1 as isize,
                b.as_ptr(),
                b_strides.0 as isize,
                b_strides.1 as isize,
                beta,
                c.as_mut_ptr(),
                1,
                m as isize,
            );
        }
        c
    }

    /// `A·B` by matrixmultiply, both column-major.
    fn reference(
        m: usize,
        k: usize,
        n: usize,
        a: &[f64],
        lda: usize,
        b: &[f64],
        ldb: usize,
    ) -> Vec<f64> {
        dgemm_reference(
            (m, k, n),
            a,
            (1, lda),
            b,
            (1, ldb),
            vec![f64::NAN; m * n],
            0.0,
        )
    }

    #[test]
    fn equals_matrixmultiply_bit_for_bit() {
        if !available() {
            eprintln!("no AVX2 + FMA: the kernel declines, nothing to compare");
            return;
        }
        let mut cases = 0;
        for &m in &[1, 2, 5, 6, 7, 8, 9, 13, 16, 60, 61] {
            for &k in &[1, 3, 6, 255, 256, 257, 600, 1000] {
                for &n in &[1, 2, 3, 4, 5, 6, 7, 9, 31] {
                    let (lda, ldb) = (m + 3, k + 1);
                    let a = fill(lda * k, (m * 1000 + k) as u64);
                    let b = fill(ldb * n, (k * 1000 + n) as u64);
                    let want = reference(m, k, n, &a, lda, &b, ldb);
                    let mut got = vec![f64::NAN; m * n];
                    assert!(matmul(
                        Operand {
                            data: &a,
                            rows: m,
                            cols: k,
                            ld: lda
                        },
                        Operand {
                            data: &b,
                            rows: k,
                            cols: n,
                            ld: ldb
                        },
                        &mut got,
                        m,
                    ));
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "m={m} k={k} n={n} entry {i}: {g} vs {w}"
                        );
                    }
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 11 * 8 * 9);
    }

    /// matrixmultiply's `C = β·C + E·Eᵀ` (`β ∈ {0, 1}`), column-major, `C` starting from `c0`:
    /// `Eᵀ` is the same storage with the strides swapped.
    fn reference_gram(
        d: usize,
        k: usize,
        e: &[f64],
        lde: usize,
        c0: &[f64],
        beta: f64,
    ) -> Vec<f64> {
        dgemm_reference((d, k, d), e, (1, lde), e, (lde, 1), c0.to_vec(), beta)
    }

    /// The lower triangle of [`gram_lower`] equals matrixmultiply's `E·Eᵀ` bit for bit, stored
    /// (`β = 0`) or added to a `C` (`β = 1`), over shapes that cover every tail (rows mod 8,
    /// columns mod 6, inner dimension across block boundaries); and matrixmultiply's
    /// product is symmetric bit for bit, so the mirrored triangle is the product.
    #[test]
    fn gram_lower_equals_matrixmultiply_and_the_product_is_symmetric() {
        if !available() {
            eprintln!("no AVX2 + FMA: the kernel declines, nothing to compare");
            return;
        }
        let mut cases = 0;
        for &d in &[1, 3, 4, 5, 7, 8, 9, 12, 13, 17, 100] {
            for &k in &[1, 2, 6, 255, 256, 257, 700] {
                for accumulate in [false, true] {
                    let lde = d + 2;
                    let e = fill(lde * k, (d * 1000 + k) as u64);
                    let start = if accumulate {
                        fill(d * d, 7 + d as u64)
                    } else {
                        vec![0.0; d * d]
                    };
                    let beta = if accumulate { 1.0 } else { 0.0 };
                    let want = reference_gram(d, k, &e, lde, &start, beta);
                    let mut got = if accumulate {
                        start.clone()
                    } else {
                        vec![f64::NAN; d * d]
                    };
                    let op = Operand {
                        data: &e,
                        rows: d,
                        cols: k,
                        ld: lde,
                    };
                    assert!(gram_lower(op, &mut got, d, accumulate));
                    for l in 0..d {
                        for i in 0..d {
                            let w = want[l * d + i];
                            if !accumulate {
                                assert_eq!(
                                    w.to_bits(),
                                    want[i * d + l].to_bits(),
                                    "d={d} k={k}: not symmetric"
                                );
                            }
                            if i >= l {
                                let g = got[l * d + i];
                                assert_eq!(
                                    g.to_bits(),
                                    w.to_bits(),
                                    "d={d} k={k} acc={accumulate} ({i}, {l}): {g} vs {w}"
                                );
                            }
                        }
                    }
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 11 * 7 * 2);
    }

    #[test]
    fn an_empty_gram_is_zero_or_leaves_c_alone() {
        if !available() {
            return;
        }
        let e: [f64; 0] = [];
        let op = Operand {
            data: &e,
            rows: 3,
            cols: 0,
            ld: 3,
        };
        let mut c = vec![5.0; 9];
        assert!(gram_lower(op, &mut c, 3, true));
        assert!(c.iter().all(|&v| v == 5.0));
        assert!(gram_lower(op, &mut c, 3, false));
        assert!(c.iter().all(|&v| v == 0.0));
    }

    #[test]
    fn leaves_what_is_outside_c_alone() {
        if !available() {
            return;
        }
        let (m, k, n, ldc) = (5, 300, 3, 9);
        let a = fill(m * k, 1);
        let b = fill(k * n, 2);
        let mut c = vec![7.0; ldc * n];
        assert!(matmul(
            Operand {
                data: &a,
                rows: m,
                cols: k,
                ld: m
            },
            Operand {
                data: &b,
                rows: k,
                cols: n,
                ld: k
            },
            &mut c,
            ldc,
        ));
        for col in 0..n {
            assert!(c[col * ldc + m..(col + 1) * ldc].iter().all(|&v| v == 7.0));
        }
    }

    #[test]
    #[should_panic(expected = "inner dimensions differ")]
    fn mismatched_shapes_panic() {
        let a = [0.0; 6];
        matmul(
            Operand {
                data: &a,
                rows: 2,
                cols: 3,
                ld: 2,
            },
            Operand {
                data: &a,
                rows: 2,
                cols: 3,
                ld: 2,
            },
            &mut [0.0; 6],
            2,
        );
    }
}
