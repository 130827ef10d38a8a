//! MPI (feature `mpi`): rsmpi over the system's MPI library.
//!
//! [`MpiSession::init`] starts MPI with `MPI_THREAD_MULTIPLE` (chains are threads, and each
//! sends and receives on its own tag while the others do) and ends it when dropped, on the
//! thread that started it. [`MpiComm`] is the session's `MPI_COMM_WORLD` as a [`Comm`]:
//! blocking `MPI_Send`, and a matched probe then `MPI_Mrecv` so that a message of any length
//! lands in the caller's buffer.
//!
//! Faults: MPI reports a failed peer by ending the job (Open MPI's default error handler, and
//! `mpirun` stops every rank when one dies), so these calls do not return [`CommError::Lost`]
//! themselves. What they do is keep count of which ranks this process is waiting on
//! ([`MpiComm::awaited_ranks`]), so that the process being stopped can say whom it was
//! waiting for.

use crate::{Comm, CommError};
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{Destination, Source};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// MPI from `init` to the drop (`MPI_Finalize`). Not `Send`: MPI is finished by the thread
/// that started it.
pub struct MpiSession {
    // Dropped last: `MPI_Finalize`.
    _universe: mpi::environment::Universe,
    comm: Arc<MpiComm>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl MpiSession {
    /// Starts MPI. Fails if MPI was started already or cannot give `MPI_THREAD_MULTIPLE`.
    pub fn init() -> Result<MpiSession, String> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or("MPI was already initialised in this process")?;
        if threading != mpi::Threading::Multiple {
            return Err(format!(
                "the MPI library gives {threading:?} threading; hazel's chains need MPI_THREAD_MULTIPLE \
                 (Open MPI 4 has it; rebuild or choose an MPI library with thread support)"
            ));
        }
        let world = universe.world();
        let size = world.size() as usize;
        let comm = Arc::new(MpiComm {
            rank: world.rank() as usize,
            size,
            world,
            awaited: (0..size + 1).map(|_| AtomicUsize::new(0)).collect(),
        });
        Ok(MpiSession {
            _universe: universe,
            comm,
            _not_send: std::marker::PhantomData,
        })
    }

    /// The world communicator, to share with the threads of this rank.
    pub fn comm(&self) -> Arc<MpiComm> {
        self.comm.clone()
    }
}

/// `MPI_COMM_WORLD` as a [`Comm`].
pub struct MpiComm {
    rank: usize,
    size: usize,
    world: SimpleCommunicator,
    /// Receives in progress per source rank; the last entry counts receives from any rank.
    awaited: Vec<AtomicUsize>,
}

// SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (checked in `MpiSession::init`), under
// which any thread may call MPI on the world communicator at any time; `MpiComm` holds no
// other state than atomics.
#[allow(unsafe_code)]
unsafe impl Send for MpiComm {}
#[allow(unsafe_code)]
unsafe impl Sync for MpiComm {}

/// Counts a receive as in progress while it lives.
struct Awaiting<'a>(&'a AtomicUsize);

impl<'a> Awaiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Awaiting(counter)
    }
}

impl Drop for Awaiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl MpiComm {
    /// The ranks some thread of this process is waiting to hear from right now (`any` is
    /// true when a thread waits for a message from any rank).
    pub fn awaited_ranks(&self) -> (Vec<usize>, bool) {
        let ranks = (0..self.size)
            .filter(|&r| self.awaited[r].load(Ordering::SeqCst) > 0)
            .collect();
        (ranks, self.awaited[self.size].load(Ordering::SeqCst) > 0)
    }

    /// This machine's name as MPI reports it.
    pub fn processor_name(&self) -> String {
        mpi::environment::processor_name().unwrap_or_default()
    }

    fn check_rank(&self, rank: usize) -> Result<i32, CommError> {
        if rank < self.size {
            Ok(rank as i32)
        } else {
            Err(CommError::Failed(format!(
                "no rank {rank} among {} ranks",
                self.size
            )))
        }
    }

    fn tag(tag: u32) -> Result<i32, CommError> {
        i32::try_from(tag).map_err(|_| CommError::Failed(format!("tag {tag} out of range")))
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, to: usize, tag: u32, msg: &[u8]) -> Result<(), CommError> {
        let to = self.check_rank(to)?;
        self.world
            .process_at_rank(to)
            .send_with_tag(msg, Self::tag(tag)?);
        Ok(())
    }

    fn recv(&self, from: usize, tag: u32, buf: &mut Vec<u8>) -> Result<(), CommError> {
        let source = self.check_rank(from)?;
        let _waiting = Awaiting::new(&self.awaited[from]);
        let (msg, status) = self
            .world
            .process_at_rank(source)
            .matched_probe_with_tag(Self::tag(tag)?);
        let n = status.count(u8::equivalent_datatype()).max(0) as usize;
        buf.clear();
        buf.resize(n, 0);
        msg.matched_receive_into(&mut buf[..]);
        Ok(())
    }

    fn recv_any(&self, tag: u32, buf: &mut Vec<u8>) -> Result<usize, CommError> {
        let _waiting = Awaiting::new(&self.awaited[self.size]);
        let (msg, status) = self
            .world
            .any_process()
            .matched_probe_with_tag(Self::tag(tag)?);
        let n = status.count(u8::equivalent_datatype()).max(0) as usize;
        buf.clear();
        buf.resize(n, 0);
        msg.matched_receive_into(&mut buf[..]);
        Ok(status.source_rank() as usize)
    }
}
