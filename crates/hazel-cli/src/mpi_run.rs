//! `hazel sample` under mpirun (feature `mpi`): MPI from start to end of the subcommand, and
//! how a run ends when a rank dies.
//!
//! When one rank dies, mpirun stops the others: SIGCONT, a second later SIGTERM, a second
//! after that SIGKILL (Open MPI's `odls_base_sigkill_timeout`, default 1 s), and Open MPI's
//! default error handler ends the job on a lost connection the same way. A report written only
//! when SIGTERM comes races that SIGKILL (and Open MPI's own teardown of the process), and lost
//! it now and then on a loaded machine. So:
//!
//! - Rank 0 watches the processes of the other ranks on its machine while the ranks sample
//!   (Linux: a pidfd per process, which becomes readable the moment the process ends). A rank
//!   ending then has died, so rank 0 names it at once — before mpirun has even started its
//!   teardown — and ends the run.
//! - Every rank also waits for SIGTERM, SIGINT and SIGHUP: rank 0 then names the ranks it was
//!   waiting for (what it knows of a rank on another machine, or of a lost connection).
//!
//! Whichever comes first stops the process ([`Stop::now`]): the message first (taking the
//! write lock can wait for a checkpoint's fsyncs, and the message must not wait for them),
//! then the run's write lock (every output call holds it, so no row is half written from then
//! on), then `_exit(1)`.

use crate::distribute::{run_ranks, Peer, RankContext};
use crate::sample::SampleArgs;
use crate::CliResult;
use hazel_comm::mpi_world::{MpiComm, MpiSession};
use hazel_comm::Comm;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub fn run(args: &SampleArgs) -> CliResult {
    let session = MpiSession::init()?;
    let comm = session.comm();
    let ctx = RankContext::new(comm.clone(), comm.processor_name());
    let stop = Arc::new(Stop {
        write_lock: ctx.write_lock.clone(),
        signalled: Arc::new(AtomicBool::new(false)),
        begun: AtomicBool::new(false),
    });
    watch_for_signals(&stop, &ctx, comm.clone())?;
    if comm.rank() == 0 {
        watch_peers(&stop, &ctx)?;
    }
    // Not `stdout().lock()`: the model's `print` statements write from the chains' threads.
    let result = run_ranks(args, &mut std::io::stdout(), &ctx);
    drop(ctx);
    // MPI_Finalize, on the thread that started MPI.
    drop(session);
    result
}

/// Ends this process from a thread of its own, once.
struct Stop {
    write_lock: Arc<Mutex<()>>,
    /// Set by the signal handler itself, so the peer watcher knows a signal came even before
    /// the signal thread has run (mpirun stopping every rank is not a rank dying).
    signalled: Arc<AtomicBool>,
    begun: AtomicBool,
}

impl Stop {
    /// Prints `error: {message}` (if any), waits for the row being written and ends the
    /// process with status 1. Returns only when another thread is already doing so.
    fn now(&self, message: Option<String>) {
        if self.begun.swap(true, Ordering::SeqCst) {
            return;
        }
        // The message before the lock: a sink may hold the lock through a checkpoint's fsyncs,
        // longer than mpirun waits before SIGKILL.
        if let Some(message) = message {
            eprintln!("error: {message}");
        }
        // From here on no output call starts or is half done.
        let _held = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `_exit` ends the process at once, without running atexit handlers (MPI's
        // would wait for the ranks that are gone).
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(1)
        };
    }
}

fn watch_for_signals(stop: &Arc<Stop>, ctx: &RankContext, comm: Arc<MpiComm>) -> CliResult {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let signals = [SIGTERM, SIGINT, SIGHUP];
    for signal in signals {
        signal_hook::flag::register(signal, stop.signalled.clone())?;
    }
    let mut signals = signal_hook::iterator::Signals::new(signals)?;
    let stop = stop.clone();
    let peers = ctx.peers.clone();
    std::thread::Builder::new()
        .name("hazel-stop".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let message = (comm.rank() == 0).then(|| signal_message(signal, &comm, &peers));
                stop.now(message);
            }
        })?;
    Ok(())
}

/// Rank 0: a thread that, while the ranks sample, waits for a process of another rank on this
/// machine to end and then stops the run naming it.
#[cfg(target_os = "linux")]
fn watch_peers(stop: &Arc<Stop>, ctx: &RankContext) -> CliResult {
    let (stop, phase, peers) = (stop.clone(), ctx.phase.clone(), ctx.peers.clone());
    std::thread::Builder::new()
        .name("hazel-peers".into())
        .spawn(move || {
            phase.wait_for_sampling();
            let peers = peers.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let ended = pidfd::first_to_end(&local_peers(&peers));
            // Ranks end after sampling (rank 0 has told them to); and a signal means mpirun is
            // stopping every rank, which the signal thread reports.
            if ended.is_empty() || !phase.is_sampling() || stop.signalled.load(Ordering::SeqCst) {
                return;
            }
            stop.now(Some(ended_message(&ended, &peers)));
        })?;
    Ok(())
}

/// Without pidfds a rank that dies is reported when mpirun's SIGTERM comes.
#[cfg(not(target_os = "linux"))]
fn watch_peers(_: &Arc<Stop>, _: &RankContext) -> CliResult {
    Ok(())
}

/// The ranks other than 0 whose process ids rank 0 (`peers[0]`) can watch: `(rank, pid)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn local_peers(peers: &[Peer]) -> Vec<(usize, u32)> {
    let Some(here) = peers.first().map(|p| &p.process_space) else {
        return Vec::new();
    };
    peers
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, p)| !here.is_empty() && p.process_space == *here && p.pid != 0)
        .map(|(rank, p)| (rank, p.pid))
        .collect()
}

#[cfg(target_os = "linux")]
mod pidfd {
    use std::os::fd::{FromRawFd, OwnedFd, RawFd};

    /// Blocks until one of `processes` (`(rank, pid)`) ends and returns the ranks that have
    /// ended by then (a process already gone counts at once), or nothing when none can be
    /// watched.
    pub(super) fn first_to_end(processes: &[(usize, u32)]) -> Vec<usize> {
        let mut gone = Vec::new();
        let mut watched: Vec<(usize, OwnedFd)> = Vec::new();
        for &(rank, pid) in processes {
            match open(pid) {
                Ok(fd) => watched.push((rank, fd)),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => gone.push(rank),
                // Not watchable (a kernel before 5.3): mpirun's SIGTERM reports it.
                Err(_) => {}
            }
        }
        if !gone.is_empty() || watched.is_empty() {
            return gone;
        }
        use std::os::fd::AsRawFd;
        let mut polled: Vec<libc::pollfd> = watched
            .iter()
            .map(|(_, fd)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        loop {
            // SAFETY: `polled` is a valid array of `polled.len()` pollfds on open descriptors.
            #[allow(unsafe_code)]
            let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, -1) };
            if n > 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if n < 0 && e.kind() != std::io::ErrorKind::Interrupted {
                return Vec::new();
            }
        }
        watched
            .iter()
            .zip(&polled)
            .filter(|(_, p)| p.revents != 0)
            .map(|((rank, _), _)| *rank)
            .collect()
    }

    /// A pidfd for `pid`: readable once the process has ended.
    fn open(pid: u32) -> std::io::Result<OwnedFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just opened and is owned by nothing else.
        #[allow(unsafe_code)]
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
}

fn list(ranks: &[usize]) -> String {
    let names: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    match names.len() {
        1 => format!("rank {}", names[0]),
        _ => format!("ranks {}", names.join(", ")),
    }
}

const ROWS_WHOLE: &str = "Every draw written so far is in the files, each row whole";

/// Rank 0's message when the processes of `ranks` ended while the ranks were sampling.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn ended_message(ranks: &[usize], peers: &[Peer]) -> String {
    let who: Vec<String> = ranks
        .iter()
        .map(|&r| format!("{} (pid {} on {})", list(&[r]), peers[r].pid, peers[r].host))
        .collect();
    format!(
        "the run was stopped: {} ended while the ranks were sampling (the process died; mpirun \
         stops the other ranks). {ROWS_WHOLE}",
        who.join(", ")
    )
}

/// Rank 0's message when mpirun (or a user) stops it with `signal`: the ranks it was waiting
/// for. A rank on this machine that died was named already, by the peer watcher.
fn signal_message(signal: i32, comm: &MpiComm, peers: &Mutex<Vec<Peer>>) -> String {
    let name = match signal {
        signal_hook::consts::SIGTERM => "SIGTERM",
        signal_hook::consts::SIGINT => "SIGINT",
        _ => "SIGHUP",
    };
    let me = comm.rank();
    let peers = peers.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (awaited, any) = comm.awaited_ranks();
    let mut what = format!("the run was stopped ({name}, sent by mpirun when a rank ends)");
    if !awaited.is_empty() {
        let who: Vec<String> = awaited
            .iter()
            .map(|&r| match peers.get(r) {
                Some(p) if p.pid != 0 => format!("{} (pid {} on {})", list(&[r]), p.pid, p.host),
                _ => list(&[r]),
            })
            .collect();
        what += &format!(
            ": rank {me} was waiting for {} (a process that died or a connection that was lost)",
            who.join(", ")
        );
    } else if any {
        what += ": rank 0 was waiting for the other ranks' draws (mpirun names the rank that \
                 ended)";
    }
    format!("{what}. {ROWS_WHOLE}")
}
