//! The round engine under every algorithm: the one client pass a round is made of
//! ([`client_pass`], batched over replicates), a client's local update ([`local_update`]),
//! partial participation ([`participation`]), starting models ([`init`]), randomness supplied
//! from files ([`randomness`]), the per-round trace and communication ledger ([`recorder`]),
//! the algorithm contract ([`contract`]), the one driver of every round loop ([`executor`])
//! and what each algorithm reports about its run ([`summary`]).

pub mod client_pass;
pub mod contract;
pub mod executor;
pub mod init;
pub mod live;
pub mod local_update;
pub mod participation;
pub mod randomness;
pub mod recorder;
pub mod summary;
