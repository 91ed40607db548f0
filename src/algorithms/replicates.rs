//! Batched replicates (issue 7): many runs over the same federation — IFCA restarts, the
//! official protocol's init × learning-rate grid, runs with other step sizes or local-step
//! counts — advanced in lock-step, so that one pass over each client's data serves all of them
//! as matrix–matrix products instead of one memory-bound matrix–vector pass per run.
//!
//! Every round of every model-averaging algorithm of the crate is [`batched_sums`] followed by a
//! parameter-server update; a single run is the same call with one replicate. For client `i`
//! with block `φ_i` (`n_i × d`, [`Federation::x_t`]) and the models of `B` replicates stacked as
//! `Θ = [Θ_1 … Θ_B]` (`d × Σ_b k_b`):
//!
//! 1. `P = Θᵀ φ_iᵀ` (`Σ k_b × n_i`): every replicate's `k` predictions, computed by one GEMM for
//!    a group of consecutive small clients (their feature columns are contiguous;
//!    [`PREDICTION_GROUP_FLOATS`]) or for one large client; replicate `b`'s choice is
//!    `argmin_j ‖P[j_b, :] − y_iᵀ‖²` (SXY22 eq. 8 / IFCA Algorithm 2 line 6, ties →
//!    lowest `j`) unless its labels are fixed;
//! 2. gradient replicates: residuals `R = [P[z_b, :]ᵀ − y_i]_b`, `G = φ_iᵀ R` (`d × B`), one GEMM,
//!    and `acc_b[:, z_b] += w_b · G[:, b]`;
//! 3. FedAvg replicates: their `s_b` local steps `T ← T − φ_iᵀ(φ_i T − y_i) diag(η_b/n_i)` in
//!    lock-step (two GEMMs per step over the replicates that still have steps left, ordered by
//!    decreasing `s_b` so that they form a prefix), then `acc_b[:, z_b] += w_b (T[:, b] − θ_{z_b})`;
//! 4. FedProx replicates: the cached per-client Cholesky solve, one replicate at a time
//!    ([`client_update`]); they still share step 1.
//!
//! Clients run in fixed chunks of [`CLIENT_CHUNK`] in parallel (rayon), each chunk summing into
//! its own accumulator, the chunks added in chunk order: results do not depend on the thread
//! count (`tests/determinism.rs`).
//!
//! **Batched = alone, bit for bit.** A replicate's arithmetic does not depend on which other
//! replicates share its pass: every product goes through [`gemm_batched`] (α = 1, β = 0, at
//! least [`GEMM_MIN_BATCH`] replicates, zero-padded), whose entries are each a function of their
//! own replicate's row or column alone, and every other operation is a per-replicate loop. Running `B`
//! replicates together therefore gives exactly the numbers of `B` single runs
//! (`tests/replicates.rs` checks IFCA options I and II with restarts and partial participation,
//! the official grid, and Phase 2 with mixed `s`, `η` and FedProx).

use crate::algorithms::fedx_clustering::{client_update, LocalSolver, Phase2Params, ProxFactor};
use crate::federation::Federation;
use crate::linalg::{gemm_batched, Batched, GEMM_MIN_BATCH};
use nalgebra::{DMatrix, DMatrixView, DMatrixViewMut, DVectorView};
use rayon::prelude::*;

/// Clients per task of the parallel client loops. Fixed — not derived from the thread count —
/// so that the partial sums, and hence every result, are the same for any number of threads.
pub const CLIENT_CHUNK: usize = 8;

/// What a participating client adds to the accumulator column of its chosen model.
#[derive(Clone, Copy, Debug)]
pub enum Contribution<'a> {
    /// Nothing: the choice only.
    Choice,
    /// `weight · φ_iᵀ(φ_iθ_z − y_i)` (`weight = 1/n_i` gives `∇F_i(θ_z)`).
    Gradient,
    /// `weight · (LocalUpdate_i(θ_z) − θ_z)`: `s` FedAvg steps of size `η`, or the exact FedProx
    /// step when `local_solver` is FedProx and the factors are given
    /// ([`crate::algorithms::fedx_clustering::local_update`]).
    Local(&'a Phase2Params, Option<&'a [ProxFactor]>),
}

/// A client's weight in its replicate's sum.
#[derive(Clone, Copy, Debug)]
pub enum Weight<'a> {
    /// `1 / n_i` (averaged gradients).
    InverseSize,
    /// `n_i / total` (SXY22 Phase 2, FedAvg with `total = N`).
    Share(f64),
    /// `1` (IFCA option II: the PS divides by the number of clients per model).
    One,
    /// `weights[i]`.
    PerClient(&'a [f64]),
}

impl Weight<'_> {
    fn of(&self, fed: &Federation, i: usize) -> f64 {
        match self {
            Weight::InverseSize => 1.0 / fed.n(i) as f64,
            Weight::Share(total) => fed.n(i) as f64 / total,
            Weight::One => 1.0,
            Weight::PerClient(w) => w[i],
        }
    }
}

/// One replicate of a batched round: its models and what its clients send.
#[derive(Clone, Copy, Debug)]
pub struct Replicate<'a> {
    /// Models `d × k` (column `j` is `θ_j`).
    pub theta: &'a DMatrix<f64>,
    /// Contribution of a participating client.
    pub what: Contribution<'a>,
    /// Client weights.
    pub weight: Weight<'a>,
    /// Fixed cluster of every client (oracle labels, a given assignment); `None` = eq. 8.
    pub fixed: Option<&'a [usize]>,
    /// Which clients contribute (length `M`); `None` = all. Every client's choice is computed
    /// either way.
    pub takes_part: Option<&'a [bool]>,
}

impl<'a> Replicate<'a> {
    /// Every client contributes `what` with `weight` for its eq. 8 choice.
    pub fn new(theta: &'a DMatrix<f64>, what: Contribution<'a>, weight: Weight<'a>) -> Self {
        Self {
            theta,
            what,
            weight,
            fixed: None,
            takes_part: None,
        }
    }

    /// The clients' choices only.
    pub fn choice(theta: &'a DMatrix<f64>) -> Self {
        Self::new(theta, Contribution::Choice, Weight::One)
    }

    /// With fixed cluster labels.
    pub fn fixed(self, labels: Option<&'a [usize]>) -> Self {
        Self {
            fixed: labels,
            ..self
        }
    }

    /// With a participation mask.
    pub fn taking_part(self, mask: Option<&'a [bool]>) -> Self {
        Self {
            takes_part: mask,
            ..self
        }
    }

    fn takes(&self, i: usize) -> bool {
        self.takes_part.is_none_or(|m| m[i])
    }
}

/// A replicate's result of [`batched_sums`].
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicateSums {
    /// `d × k`: column `j` is `Σ_{i contributing, z_i = j} w_i · contribution_i` (`0 × k` when
    /// no replicate of the batch contributes anything).
    pub sums: DMatrix<f64>,
    /// Every client's cluster (`M`).
    pub labels: Vec<usize>,
    /// Contributing clients per model.
    pub counts: Vec<usize>,
    /// The training loss `Σ_i (n_i/N) min_j L_i(θ_j)`, `L_i(θ) = ‖y_i − φ_iθ‖²/(2n_i)`, at the
    /// replicate's models (SPEC §6), a by-product of the choices; `None` with fixed labels.
    pub loss: Option<f64>,
}

impl ReplicateSums {
    /// Models some contributing client chose.
    pub fn chosen(&self) -> Vec<bool> {
        self.counts.iter().map(|&c| c > 0).collect()
    }
}

/// Per-thread scratch of the client kernel: its contents never outlive one client (every
/// buffer is overwritten before it is read), so which thread's scratch serves which client
/// cannot change a result.
#[derive(Debug, Default)]
struct Scratch {
    /// Predictions of every stacked model for the chunk's samples (`height × S`, column-major).
    pred: Vec<f64>,
    /// Where the current client's columns start in `pred`.
    pred_off: usize,
    res: Vec<f64>,
    grad: Vec<f64>,
    th: Vec<f64>,
    tht: Vec<f64>,
    out: Vec<f64>,
    gradient_reps: Vec<usize>,
    fedavg_reps: Vec<usize>,
}

/// The replicates of one client grouped into one product.
#[derive(Clone, Copy, Debug)]
enum Group {
    /// [`Scratch::gradient_reps`].
    Gradient,
    /// [`Scratch::fedavg_reps`].
    Fedavg,
}

impl Scratch {
    /// Size `res` and `grad` for `group` on client `i` and fill `res`'s columns with the
    /// residuals of each member's chosen model (`layout` = stacked offsets, rows of `pred`);
    /// returns the group's product width (padded to [`GEMM_MIN_BATCH`]).
    fn start_group(
        &mut self,
        group: Group,
        fed: &Federation,
        i: usize,
        (offs, height): (&[usize], usize),
        labels: &[usize],
    ) -> usize {
        let Scratch {
            pred,
            pred_off,
            res,
            grad,
            gradient_reps,
            fedavg_reps,
            ..
        } = self;
        let members = match group {
            Group::Gradient => gradient_reps,
            Group::Fedavg => fedavg_reps,
        };
        let (n, d) = (fed.n(i), fed.d());
        let width = members.len().max(GEMM_MIN_BATCH);
        res.resize(n * width, 0.0);
        grad.resize(d * width, 0.0);
        let rows = members.iter().map(|&b| offs[b] + labels[b]);
        let pred = &pred[*pred_off..*pred_off + height * n];
        residuals_from_rows(pred, height, rows, &fed.y(i), &mut res[..n * width]);
        width
    }
}

thread_local! {
    /// Each worker thread's scratch, kept across rounds so that the per-client loop allocates
    /// nothing once the buffers have grown to the largest client (no client pass calls back
    /// into rayon, so a borrow never overlaps another on the same thread).
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Column offsets of the replicates in the stacked models, and the total.
fn offsets(reps: &[Replicate<'_>]) -> Vec<usize> {
    let mut offs = Vec::with_capacity(reps.len() + 1);
    offs.push(0);
    for r in reps {
        offs.push(offs[offs.len() - 1] + r.theta.ncols());
    }
    offs
}

/// One batched round's client pass: for every replicate, every client's choice and the sums of
/// the participating clients' contributions per model (see the [module docs](self)). The
/// parameter-server update is the caller's.
///
/// # Panics
/// When a replicate's models do not have `d` rows, or a fixed label / mask is shorter than `M`
/// (callers validate these; they are programming errors here).
pub fn batched_sums(fed: &Federation, reps: &[Replicate<'_>]) -> Vec<ReplicateSums> {
    let (d, m, nb) = (fed.d(), fed.num_clients(), reps.len());
    let offs = offsets(reps);
    let cols = offs[nb];
    let rows = if reps.iter().any(|r| !matches!(r.what, Contribution::Choice)) {
        d
    } else {
        0
    };
    // Θᵀ, one model per row, zero rows up to GEMM_MIN_BATCH.
    let mut stacked = DMatrix::zeros(cols.max(GEMM_MIN_BATCH), d);
    for (r, &o) in reps.iter().zip(&offs) {
        assert_eq!(r.theta.nrows(), d, "replicate models must have d rows");
        for j in 0..r.theta.ncols() {
            stacked.row_mut(o + j).tr_copy_from(&r.theta.column(j));
        }
    }
    let chunks = m.div_ceil(CLIENT_CHUNK);
    let parts: Vec<(DMatrix<f64>, Vec<usize>, Vec<f64>)> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let clients = c * CLIENT_CHUNK..((c + 1) * CLIENT_CHUNK).min(m);
            let mut acc = DMatrix::zeros(rows, cols);
            let mut labels = vec![0usize; clients.len() * nb];
            let mut losses = vec![0.0; nb];
            SCRATCH.with(|cell| {
                let s = &mut *cell.borrow_mut();
                let mut slots = labels.chunks_mut(nb.max(1));
                for group in prediction_groups(fed, clients) {
                    chunk_predictions(fed, group.clone(), reps, &stacked, s);
                    let first = fed.offsets()[group.start];
                    // `group` first: `Zip` pulls its left side first, and a slot must not be
                    // consumed when the group is exhausted.
                    for (i, slot) in group.zip(slots.by_ref()) {
                        s.pred_off = (fed.offsets()[i] - first) * stacked.nrows();
                        let mut out = ClientOut {
                            labels: slot,
                            losses: &mut losses,
                            acc: &mut acc,
                        };
                        client_pass(fed, i, reps, &stacked, &offs, s, &mut out);
                    }
                }
            });
            (acc, labels, losses)
        })
        .collect();
    let mut total = DMatrix::zeros(rows, cols);
    let mut labels: Vec<Vec<usize>> = vec![Vec::with_capacity(m); nb];
    let mut losses = vec![0.0; nb];
    for (acc, lab, loss) in parts {
        total += acc;
        for slot in lab.chunks(nb.max(1)) {
            for (b, &z) in slot.iter().enumerate() {
                labels[b].push(z);
            }
        }
        for (l, p) in losses.iter_mut().zip(loss) {
            *l += p;
        }
    }
    reps.iter()
        .zip(labels)
        .zip(losses)
        .enumerate()
        .map(|(b, ((r, labels), loss))| {
            let mut counts = vec![0usize; r.theta.ncols()];
            if !matches!(r.what, Contribution::Choice) {
                for (i, &z) in labels.iter().enumerate() {
                    if r.takes(i) {
                        counts[z] += 1;
                    }
                }
            }
            ReplicateSums {
                sums: total.columns(offs[b], r.theta.ncols()).clone_owned(),
                labels,
                counts,
                loss: r.fixed.is_none().then_some(loss),
            }
        })
        .collect()
}

/// `(argmin_j ‖P[off + j, :] − yᵀ‖², min)` over `k` rows of the predictions (`height` rows,
/// column-major; eq. 8, ties → lowest `j`; a NaN loss is never smaller).
fn choose(
    pred: &[f64],
    height: usize,
    off: usize,
    k: usize,
    y: &DVectorView<'_, f64>,
) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for j in 0..k {
        let loss: f64 = pred[off + j..]
            .iter()
            .step_by(height)
            .zip(y.iter())
            .map(|(a, b)| (a - b) * (a - b))
            .sum();
        if loss < best.1 {
            best = (j, loss);
        }
    }
    best
}

/// Whether a contribution needs the chosen model's residual on the client's data.
fn uses_residual(what: Contribution<'_>) -> bool {
    match what {
        Contribution::Choice => false,
        Contribution::Gradient => true,
        Contribution::Local(p, f) => !(p.local_solver == LocalSolver::Fedprox && f.is_some()),
    }
}

/// Features (floats) of consecutive clients whose predictions one product computes: small
/// clients are grouped up to this size (256 KiB, an L2-resident block) so that they do not pay
/// a product call each, while a large client's block stays in cache between its prediction and
/// gradient products. The grouping depends only on the data's shape, never on the replicates.
pub const PREDICTION_GROUP_FLOATS: usize = 1 << 15;

/// Consecutive runs of `clients` whose feature blocks together hold at most
/// [`PREDICTION_GROUP_FLOATS`] floats (at least one client each).
fn prediction_groups(
    fed: &Federation,
    clients: std::ops::Range<usize>,
) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let off = fed.offsets();
    let d = fed.d();
    let mut start = clients.start;
    std::iter::from_fn(move || {
        if start >= clients.end {
            return None;
        }
        let mut end = start + 1;
        while end < clients.end && d * (off[end + 1] - off[start]) <= PREDICTION_GROUP_FLOATS {
            end += 1;
        }
        let group = start..end;
        start = end;
        Some(group)
    })
}

/// The predictions `Θᵀφ_iᵀ` of every stacked model for all samples of the chunk's `clients` in
/// one product (their feature columns are contiguous), when some client of the chunk needs them;
/// each client's columns start at `s.pred_off`, set by the caller per client. An entry is the
/// same number whichever clients share the product ([`gemm_batched`] is entry-wise independent
/// along both outer dimensions), so chunking changes no result.
fn chunk_predictions(
    fed: &Federation,
    clients: std::ops::Range<usize>,
    reps: &[Replicate<'_>],
    stacked: &DMatrix<f64>,
    s: &mut Scratch,
) {
    let needed = clients.clone().any(|i| {
        reps.iter()
            .any(|r| r.fixed.is_none() || (r.takes(i) && uses_residual(r.what)))
    });
    if !needed || clients.is_empty() {
        return;
    }
    let start = fed.offsets()[clients.start];
    let samples = fed.offsets()[clients.end] - start;
    let height = stacked.nrows();
    s.pred.resize(height * samples, 0.0);
    let mut pred = DMatrixViewMut::from_slice(&mut s.pred[..height * samples], height, samples);
    let x = fed.features().columns(start, samples);
    gemm_batched(&mut pred, &stacked.as_view(), &x, Batched::Rows);
}

/// Where a client's results go: its choice per replicate, the chunk's loss partial sums and
/// contribution accumulator.
struct ClientOut<'o> {
    labels: &'o mut [usize],
    losses: &'o mut [f64],
    acc: &'o mut DMatrix<f64>,
}

/// Client `i`'s part of [`batched_sums`].
fn client_pass(
    fed: &Federation,
    i: usize,
    reps: &[Replicate<'_>],
    stacked: &DMatrix<f64>,
    offs: &[usize],
    s: &mut Scratch,
    out: &mut ClientOut<'_>,
) {
    let share = fed.n(i) as f64 / fed.total_samples() as f64;
    let acc = &mut *out.acc;
    let labels = &mut *out.labels;
    let n = fed.n(i);
    let y = fed.y(i);
    let height = stacked.nrows();
    s.gradient_reps.clear();
    s.fedavg_reps.clear();
    for (b, r) in reps.iter().enumerate() {
        let z = match r.fixed {
            Some(l) => l[i],
            None => {
                let pred = &s.pred[s.pred_off..s.pred_off + height * n];
                let (z, sq) = choose(pred, height, offs[b], r.theta.ncols(), &y);
                out.losses[b] += share * (sq / (2.0 * n as f64));
                z
            }
        };
        labels[b] = z;
        if !r.takes(i) {
            continue;
        }
        match r.what {
            Contribution::Choice => {}
            Contribution::Gradient => s.gradient_reps.push(b),
            Contribution::Local(p, Some(f)) if p.local_solver == LocalSolver::Fedprox => {
                let delta = client_update(fed, i, &r.theta.column(z).clone_owned(), p, Some(&f[i]));
                acc.column_mut(offs[b] + z)
                    .axpy(r.weight.of(fed, i), &delta, 1.0);
            }
            Contribution::Local(..) => s.fedavg_reps.push(b),
        }
    }
    if !s.gradient_reps.is_empty() {
        gradient_group(fed, i, reps, (offs, height), acc, s, labels);
    }
    if !s.fedavg_reps.is_empty() {
        fedavg_group(fed, i, reps, (offs, height), acc, s, labels);
    }
}

/// Residuals `out[rows[a], :]ᵀ − y` (`out` has `height` rows, column-major) into columns
/// `0..rows.len()` of `res` (`n` rows); the rest of `res` is zeroed.
fn residuals_from_rows(
    out: &[f64],
    height: usize,
    rows: impl Iterator<Item = usize>,
    y: &DVectorView<'_, f64>,
    res: &mut [f64],
) {
    let n = y.len();
    let mut filled = 0;
    for (a, row) in rows.enumerate() {
        for (r, (p, yv)) in res[a * n..(a + 1) * n]
            .iter_mut()
            .zip(out[row..].iter().step_by(height).zip(y.iter()))
        {
            *r = p - yv;
        }
        filled = a + 1;
    }
    res[filled * n..].fill(0.0);
}

/// Gradient replicates: `G = φ_iᵀ R` in one product, `acc_b[:, z_b] += w_b G[:, b]`.
/// `layout` = (column offsets of the replicates in the stacked models, rows of `s.pred`).
fn gradient_group(
    fed: &Federation,
    i: usize,
    reps: &[Replicate<'_>],
    (offs, height): (&[usize], usize),
    acc: &mut DMatrix<f64>,
    s: &mut Scratch,
    labels: &[usize],
) {
    let (n, d) = (fed.n(i), fed.d());
    let width = s.start_group(Group::Gradient, fed, i, (offs, height), labels);
    let group = &s.gradient_reps;
    let res = DMatrixView::from_slice(&s.res[..n * width], n, width);
    let mut grad = DMatrixViewMut::from_slice(&mut s.grad[..d * width], d, width);
    gemm_batched(&mut grad, &fed.x(i), &res, Batched::Cols);
    for (a, &b) in group.iter().enumerate() {
        let w = reps[b].weight.of(fed, i);
        acc.column_mut(offs[b] + labels[b])
            .axpy(w, &grad.column(a), 1.0);
    }
}

/// FedAvg replicates: `s_b` local steps in lock-step, then `acc_b[:, z_b] += w_b (θ̃_b − θ_{z_b})`.
fn fedavg_group(
    fed: &Federation,
    i: usize,
    reps: &[Replicate<'_>],
    (offs, height): (&[usize], usize),
    acc: &mut DMatrix<f64>,
    s: &mut Scratch,
    labels: &[usize],
) {
    let (n, d) = (fed.n(i), fed.d());
    let y = fed.y(i);
    let params = |b: usize| match reps[b].what {
        Contribution::Local(p, _) => (p.eta, p.local_steps),
        _ => unreachable!("only FedAvg replicates are grouped here"),
    };
    // Decreasing step counts (stable), so that the replicates still stepping form a prefix.
    s.fedavg_reps
        .sort_by_key(|&b| std::cmp::Reverse(params(b).1));
    let width = s.start_group(Group::Fedavg, fed, i, (offs, height), labels);
    let group = &s.fedavg_reps;
    s.th.resize(d * width, 0.0);
    s.tht.resize(width * d, 0.0);
    s.out.resize(width * n, 0.0);
    let mut th = DMatrixViewMut::from_slice(&mut s.th[..d * width], d, width);
    th.fill(0.0);
    for (a, &b) in group.iter().enumerate() {
        th.column_mut(a).copy_from(&reps[b].theta.column(labels[b]));
    }
    let steps = params(group[0]).1;
    for step in 0..steps {
        let active = group.iter().take_while(|&&b| params(b).1 > step).count();
        let cols = active.max(GEMM_MIN_BATCH);
        if step > 0 {
            // R = (T_activeᵀ φ_iᵀ)ᵀ − y: models as rows, as in the choice pass.
            let mut tht = DMatrixViewMut::from_slice(&mut s.tht[..cols * d], cols, d);
            tht.tr_copy_from(&th.columns(0, cols));
            let mut out = DMatrixViewMut::from_slice(&mut s.out[..cols * n], cols, n);
            gemm_batched(&mut out, &tht.as_view(), &fed.x(i), Batched::Rows);
            residuals_from_rows(
                &s.out[..cols * n],
                cols,
                0..active,
                &y,
                &mut s.res[..n * cols],
            );
        }
        let res = DMatrixView::from_slice(&s.res[..n * cols], n, cols);
        let mut grad = DMatrixViewMut::from_slice(&mut s.grad[..d * cols], d, cols);
        gemm_batched(&mut grad, &fed.x(i), &res, Batched::Cols);
        for (a, &b) in group.iter().enumerate().take(active) {
            let c = params(b).0 / n as f64;
            th.column_mut(a).axpy(-c, &grad.column(a), 1.0);
        }
    }
    for (a, &b) in group.iter().enumerate() {
        let z = labels[b];
        let mut delta = th.column_mut(a);
        delta -= reps[b].theta.column(z);
        acc.column_mut(offs[b] + z)
            .axpy(reps[b].weight.of(fed, i), &delta, 1.0);
    }
}

/// The choices-only pass ([`batched_sums`]) for several sets of models.
fn choices(fed: &Federation, thetas: &[&DMatrix<f64>]) -> Vec<ReplicateSums> {
    let reps: Vec<Replicate<'_>> = thetas.iter().map(|t| Replicate::choice(t)).collect();
    batched_sums(fed, &reps)
}

/// Training losses `Σ_i (n_i/N) min_j L_i(θ_j)` of several sets of models in one pass over the
/// data ([`batched_sums`] with choices only); the loss of one set equals
/// [`crate::metrics::training_loss`] bit for bit.
pub fn training_losses(fed: &Federation, thetas: &[&DMatrix<f64>]) -> Vec<f64> {
    choices(fed, thetas)
        .into_iter()
        .map(|r| {
            r.loss
                .expect("a choice replicate without fixed labels has a loss")
        })
        .collect()
}

/// Eq. 8 cluster choices of several sets of models in one pass over the data; the labels of one
/// set equal [`crate::algorithms::fedx_clustering::assign_clusters`] of it.
pub fn assign_clusters_batch(fed: &Federation, thetas: &[&DMatrix<f64>]) -> Vec<Vec<usize>> {
    choices(fed, thetas).into_iter().map(|r| r.labels).collect()
}
