//! `hazel sample` under mpirun (feature `mpi`): MPI from start to end of the subcommand, and
//! what happens when mpirun stops this process.
//!
//! When one rank dies, mpirun stops the others (SIGTERM, then SIGKILL a moment later), and
//! Open MPI's default error handler ends the job on a lost connection the same way. So each
//! rank waits for SIGTERM, SIGINT and SIGHUP on a thread of its own: it takes the run's write
//! lock (every output call holds it, so no row is half written from then on) and exits with
//! status 1; rank 0 first says which rank it was waiting for and which ranks on this machine
//! have exited — the rank that died.

use crate::distribute::{run_ranks, Peer, RankContext};
use crate::sample::SampleArgs;
use crate::CliResult;
use hazel_comm::mpi_world::{MpiComm, MpiSession};
use hazel_comm::Comm;
use std::sync::{Arc, Mutex};

pub fn run(args: &SampleArgs) -> CliResult {
    let session = MpiSession::init()?;
    let comm = session.comm();
    let ctx = RankContext::new(comm.clone(), comm.processor_name());
    watch_for_stop(&ctx, comm)?;
    // Not `stdout().lock()`: the model's `print` statements write from the chains' threads.
    let result = run_ranks(args, &mut std::io::stdout(), &ctx);
    drop(ctx);
    // MPI_Finalize, on the thread that started MPI.
    drop(session);
    result
}

fn watch_for_stop(ctx: &RankContext, comm: Arc<MpiComm>) -> CliResult {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    let (lock, peers, host) = (ctx.write_lock.clone(), ctx.peers.clone(), ctx.host.clone());
    std::thread::Builder::new()
        .name("hazel-stop".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // From here on no output call starts or is half done.
                let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
                if comm.rank() == 0 {
                    eprintln!("error: {}", stop_message(signal, &comm, &peers, &host));
                }
                // SAFETY: `_exit` ends the process at once, without running atexit handlers
                // (MPI's would wait for the ranks that are gone).
                #[allow(unsafe_code)]
                unsafe {
                    libc::_exit(1)
                };
            }
        })?;
    Ok(())
}

/// Whether process `pid` on this machine is still running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses: `pid (comm) S …`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn list(ranks: &[usize]) -> String {
    let names: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
    match names.len() {
        1 => format!("rank {}", names[0]),
        _ => format!("ranks {}", names.join(", ")),
    }
}

fn stop_message(signal: i32, comm: &MpiComm, peers: &Mutex<Vec<Peer>>, host: &str) -> String {
    let name = match signal {
        signal_hook::consts::SIGTERM => "SIGTERM",
        signal_hook::consts::SIGINT => "SIGINT",
        _ => "SIGHUP",
    };
    let me = comm.rank();
    let peers = peers.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let exited: Vec<usize> = peers
        .iter()
        .enumerate()
        .filter(|&(r, p)| r != me && p.host == host && p.pid != 0 && !alive(p.pid))
        .map(|(r, _)| r)
        .collect();
    let (awaited, any) = comm.awaited_ranks();
    let mut what = format!("the run was stopped ({name}, sent by mpirun when a rank ends)");
    if !exited.is_empty() {
        let who: Vec<String> = exited
            .iter()
            .map(|&r| format!("{} (pid {} on {})", list(&[r]), peers[r].pid, peers[r].host))
            .collect();
        what += &format!(": {} has exited", who.join(", "));
    }
    if !awaited.is_empty() {
        what += &format!(
            "{} rank {me} was waiting for {} (a process that died or a connection that was \
             lost)",
            if exited.is_empty() { ":" } else { ";" },
            list(&awaited)
        );
    } else if any && exited.is_empty() {
        what += ": rank 0 was waiting for the other ranks' draws (mpirun names the rank that \
                 ended)";
    }
    what + ". Every draw written so far is in the files, each row whole"
}
