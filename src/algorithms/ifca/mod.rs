//! IFCA — Iterative Federated Clustering Algorithm (Ghosh, Chung, Yin, Ramchandran, NeurIPS
//! 2020, Algorithm 2), and the compatibility mode reproducing the authors' released synthetic
//! code (`ifca-official`).
//!
//! Each round the PS broadcasts `θ_1..θ_k` to the participants `M_t` (a random fraction of the
//! clients, Algorithm 2 line 4); client `i` picks `ĵ = argmin_j F_i(θ_j)` (line 6; ties → lowest
//! `j`), with `F_i(θ) = ‖y_i − φ_iθ‖²/(2n_i)`, and
//! - option I, gradient averaging (lines 9, 14): sends `∇F_i(θ_ĵ)`; the PS sets
//!   `θ_j ← θ_j − (γ/|M_t|) Σ_{i∈M_t} s_ij ∇F_i(θ_j)`. Decision: divide by the number of
//!   participants `|M_t|`, where line 14 divides by `m`, the number of all machines — the same
//!   under full participation (IFCA §6.1's experiments), and with partial participation the
//!   step does not shrink by the participation fraction;
//! - option II, model averaging (lines 11, 15, 18–21): runs `τ` local GD steps from `θ_ĵ` (the
//!   shared local solver [`local_update`](crate::engine::local_update::local_update), FedProx as an
//!   extension) and sends the model; the PS
//!   sets `θ_j ← Σ_i s_ij θ̃_i / Σ_i s_ij`.
//!
//! A model no participant chose keeps its value. `R` restarts from random initialisations run
//! independently; the reported run is the one with the lowest final **training loss**
//! `Σ_i (n_i/N) min_j F_i(θ_j)` (ties → lowest restart index) — a user cannot select by the
//! distance to `θ*`.
//!
//! Exact relations between the options (tested below). With `S_j ⊆ M_t` the participants that
//! chose `j`, one round of option II with `τ = 1` and step `γ'` gives
//! `θ_j − (γ'/|S_j|) Σ_{i∈S_j} ∇F_i(θ_j)`, i.e. option I with `γ = γ' |M_t|/|S_j|` on cluster
//! `j`; they coincide for `γ = γ'` when every participant chose `j` (e.g. `k = 1`). The official
//! mode's step with learning rate `lr` is option I with full participation and `γ = 2 lr`
//! (its loss is the mean squared error without the ½, and it divides by `m = M`).
//!
//! Decisions (the paper leaves these open):
//! - Decision: the default is option II with `τ = local_steps` and Phase 2's step, so that IFCA
//!   runs at the same `s` as the two-phase algorithm in SXY22 Fig. 1–3 ("FedAvg s = 5 for all");
//!   option I is `ifca_option = gradient` (IFCA §6.1's linear experiments).
//! - Decision: with partial participation the trace records every client's choice at
//!   `θ_{t−1}` (only the participants' choices enter the update).
//! - Decision: a restart whose iterate becomes non-finite counts as training loss `+∞` (never
//!   chosen); if every restart diverges, the first divergence error is returned.
//! - Decision: initial models given with `--init` are restart 0's start; restarts `1..R` stay
//!   random (so an oracle start can be compared with random restarts in one run).
//! - Decision: restart `r` draws its init from `stream(seed, Init, r)` and its participants from
//!   `stream(seed, Sampling, r·2²⁴ + t)` ([`participation`](crate::engine::participation)). Both can
//!   be supplied from files instead (`--init` with `restarts × k × d`, `--participation`;
//!   [`crate::engine::randomness`]).
//!
//! Public parameters: `ifca_option` (`gradient` | `model`, default `model`), `eta` (γ; default
//! as Phase 2, `eta_gamma / max_i ‖φ_i‖²/n_i`), `local_steps` (τ), `local_solver`, `rounds` (T),
//! `participation`, `restarts` (R), `ifca_init` (`gaussian` | `bernoulli`), `init_scale`, `k`;
//! for `ifca-official`: `ifca_official_inits`, `ifca_official_lrs`, `ifca_official_iterations`,
//! `ifca_official_sigma`, `ifca_official_offset`.
//!
//! Layout: [`algorithm`] (IFCA proper, one run: the starts, the round with options I and II on
//! the round's participants, one restart on the round executor), [`restarts`] (the `ifca`
//! algorithm: `R` restarts, in lock-step batches, selected by training loss) and [`official`]
//! (the official-code compatibility mode); everything is re-exported here.

pub mod algorithm;
pub mod official;
pub mod params;
pub mod restarts;

pub use algorithm::*;
pub use official::*;
pub use params::*;
pub use restarts::*;
