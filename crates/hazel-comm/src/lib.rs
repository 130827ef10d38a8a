//! Messages between the processes ("ranks") of a distributed hazel run.
//!
//! A distributed run is `R` processes started together (by `mpirun`), ranks `0..R`. Every
//! exchange hazel makes is built from point-to-point messages of bytes on a *tag*
//! ([`Comm::send`], [`Comm::recv`], [`Comm::recv_any`]): between two ranks, messages on one tag
//! arrive in the order they were sent (MPI's non-overtaking rule), and nothing else is promised.
//! There are no reductions here: where numbers from several ranks are combined, the caller
//! combines them in a fixed order (hazel-graph's sharded executor folds chunk results rank by
//! rank in chunk order), never in the order messages happen to arrive.
//!
//! Backends:
//! - [`fake::FakeWorld`]: the ranks are threads of one process, messages are queues. It
//!   is what the default build's tests run on, and it can make a rank die on cue
//!   ([`fake::FakeWorld::kill_after`]).
//! - `mpi_world::MpiWorld` (cargo feature `mpi`): MPI through rsmpi over the system's MPI
//!   library (Open MPI), with `MPI_THREAD_MULTIPLE` so chains on threads send and receive at
//!   once, each on its own tag.
//!
//! [`wire`] encodes the messages; [`broadcast`] and [`gather`] are the two collectives hazel
//! needs, written on the point-to-point calls so that every backend has them.

#![cfg_attr(not(feature = "mpi"), forbid(unsafe_code))]
#![cfg_attr(feature = "mpi", deny(unsafe_code))]

pub mod fake;
#[cfg(feature = "mpi")]
pub mod mpi_world;
pub mod wire;

use std::fmt;

/// Start-up agreement and the end-of-run status (`hazel sample` under mpirun).
pub const TAG_CONTROL: u32 = 1;
/// Draws, progress and chain reports sent to rank 0 (`--distribute chains`).
pub const TAG_FORWARD: u32 = 2;
/// Tags from here on belong to one chain each ([`chain_tag`]).
const TAG_CHAIN_BASE: u32 = 16;
/// MPI guarantees tags up to 32767.
const TAG_MAX: u32 = 32767;

/// The tag of chain `chain_id`'s exchanges (`--distribute data`), or `None` for ids too large
/// for MPI's guaranteed tag range.
pub fn chain_tag(chain_id: u64) -> Option<u32> {
    let tag = u64::from(TAG_CHAIN_BASE) + chain_id;
    (tag <= u64::from(TAG_MAX)).then_some(tag as u32)
}

/// The largest chain id [`chain_tag`] accepts.
pub const MAX_CHAIN_ID: u64 = (TAG_MAX - TAG_CHAIN_BASE) as u64;

/// Why a message could not be sent or received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommError {
    /// Rank `rank` is gone: its process died or the connection to it was lost.
    Lost { rank: usize, detail: String },
    /// Anything else (a malformed message, a local failure).
    Failed(String),
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommError::Lost { rank, detail } => {
                write!(
                    f,
                    "lost rank {rank}: its process died or the connection to it was lost"
                )?;
                if !detail.is_empty() {
                    write!(f, " ({detail})")?;
                }
                Ok(())
            }
            CommError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CommError {}

/// The ranks of one run, seen from one of them. Shared by the threads of a rank (chains send
/// and receive at the same time, on different tags).
pub trait Comm: Send + Sync {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Sends `msg` to rank `to` on `tag`.
    fn send(&self, to: usize, tag: u32, msg: &[u8]) -> Result<(), CommError>;
    /// Receives the next message from rank `from` on `tag` into `buf` (replacing its contents;
    /// its capacity is reused). Blocks until it arrives.
    fn recv(&self, from: usize, tag: u32, buf: &mut Vec<u8>) -> Result<(), CommError>;
    /// Receives the next message on `tag` from any rank into `buf`; returns the sender.
    fn recv_any(&self, tag: u32, buf: &mut Vec<u8>) -> Result<usize, CommError>;
}

/// Rank `root`'s `buf` on every rank: the root sends it to each other rank in turn.
pub fn broadcast(
    comm: &dyn Comm,
    root: usize,
    tag: u32,
    buf: &mut Vec<u8>,
) -> Result<(), CommError> {
    if comm.rank() == root {
        for to in (0..comm.size()).filter(|&r| r != root) {
            comm.send(to, tag, buf)?;
        }
        Ok(())
    } else {
        comm.recv(root, tag, buf)
    }
}

/// Every rank's `mine` at rank `root`, in rank order (`Some` there, `None` elsewhere). Each
/// rank sends to the root and the root receives rank by rank, so no two ranks ever wait on
/// each other's sends.
pub fn gather(
    comm: &dyn Comm,
    root: usize,
    tag: u32,
    mine: &[u8],
) -> Result<Option<Vec<Vec<u8>>>, CommError> {
    if comm.rank() != root {
        comm.send(root, tag, mine)?;
        return Ok(None);
    }
    let mut all = Vec::with_capacity(comm.size());
    for from in 0..comm.size() {
        if from == root {
            all.push(mine.to_vec());
        } else {
            let mut buf = Vec::new();
            comm.recv(from, tag, &mut buf)?;
            all.push(buf);
        }
    }
    Ok(Some(all))
}
