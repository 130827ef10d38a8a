//! An in-process world: `R` ranks that are threads of one process, messages kept in queues.
//!
//! It keeps MPI's one ordering promise (per sender, receiver and tag, first in first out) and
//! nothing more, so logic that works here relies on nothing MPI does not give. A rank can be
//! made to die ([`FakeWorld::kill`], [`FakeWorld::kill_after`]): its later sends fail, and a
//! rank waiting for a message from it gets [`CommError::Lost`] naming it once the messages it
//! sent before dying have been read.

use crate::{Comm, CommError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a receive waits before it reports the world as stuck (a bug in the caller: every
/// receive hazel makes has a matching send).
const STUCK_AFTER: Duration = Duration::from_secs(120);

#[derive(Default)]
struct State {
    /// Messages in flight, by (sender, receiver, tag).
    queues: HashMap<(usize, usize, u32), VecDeque<Vec<u8>>>,
    dead: Vec<bool>,
    /// Sends left before the rank dies (`None`: it lives).
    sends_left: Vec<Option<u64>>,
}

impl State {
    /// Moves the oldest message from `from` to `to` on `tag` into `buf`; false if none waits.
    fn take(&mut self, from: usize, to: usize, tag: u32, buf: &mut Vec<u8>) -> bool {
        match self
            .queues
            .get_mut(&(from, to, tag))
            .and_then(|q| q.pop_front())
        {
            Some(msg) => {
                buf.clear();
                buf.extend_from_slice(&msg);
                true
            }
            None => false,
        }
    }
}

struct Office {
    size: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Office {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the other ranks' errors.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The world: hands out one [`FakeComm`] per rank and injects faults.
#[derive(Clone)]
pub struct FakeWorld {
    office: Arc<Office>,
}

impl FakeWorld {
    /// A world of `size` ranks (at least 1).
    pub fn new(size: usize) -> FakeWorld {
        let size = size.max(1);
        FakeWorld {
            office: Arc::new(Office {
                size,
                state: Mutex::new(State {
                    queues: HashMap::new(),
                    dead: vec![false; size],
                    sends_left: vec![None; size],
                }),
                changed: Condvar::new(),
            }),
        }
    }

    /// Rank `rank`'s view of the world.
    pub fn comm(&self, rank: usize) -> FakeComm {
        assert!(
            rank < self.office.size,
            "rank {rank} of {}",
            self.office.size
        );
        FakeComm {
            rank,
            office: self.office.clone(),
        }
    }

    /// Rank `rank` dies now.
    pub fn kill(&self, rank: usize) {
        let mut s = self.office.lock();
        s.dead[rank] = true;
        self.office.changed.notify_all();
    }

    /// Rank `rank` dies when it tries its `sends + 1`-th send from now (that send fails).
    pub fn kill_after(&self, rank: usize, sends: u64) {
        let mut s = self.office.lock();
        s.sends_left[rank] = Some(sends);
    }

    /// Whether rank `rank` has died.
    pub fn is_dead(&self, rank: usize) -> bool {
        self.office.lock().dead[rank]
    }
}

/// One rank of a [`FakeWorld`].
#[derive(Clone)]
pub struct FakeComm {
    rank: usize,
    office: Arc<Office>,
}

impl FakeComm {
    fn lost(rank: usize) -> CommError {
        CommError::Lost {
            rank,
            detail: "a fake rank that was made to die".into(),
        }
    }

    fn wait<'a>(&'a self, s: MutexGuard<'a, State>) -> Result<MutexGuard<'a, State>, CommError> {
        let (s, timeout) = self
            .office
            .changed
            .wait_timeout(s, STUCK_AFTER)
            .unwrap_or_else(|e| e.into_inner());
        if timeout.timed_out() {
            return Err(CommError::Failed(format!(
                "rank {}: no message for {} s (a receive without a matching send)",
                self.rank,
                STUCK_AFTER.as_secs()
            )));
        }
        Ok(s)
    }
}

impl Comm for FakeComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.office.size
    }

    fn send(&self, to: usize, tag: u32, msg: &[u8]) -> Result<(), CommError> {
        if to >= self.office.size {
            return Err(CommError::Failed(format!(
                "no rank {to} in a world of {}",
                self.office.size
            )));
        }
        let mut s = self.office.lock();
        if let Some(left) = &mut s.sends_left[self.rank] {
            if *left == 0 {
                s.dead[self.rank] = true;
            } else {
                *left -= 1;
            }
        }
        if s.dead[self.rank] {
            self.office.changed.notify_all();
            return Err(Self::lost(self.rank));
        }
        if s.dead[to] {
            return Err(Self::lost(to));
        }
        s.queues
            .entry((self.rank, to, tag))
            .or_default()
            .push_back(msg.to_vec());
        self.office.changed.notify_all();
        Ok(())
    }

    fn recv(&self, from: usize, tag: u32, buf: &mut Vec<u8>) -> Result<(), CommError> {
        let mut s = self.office.lock();
        loop {
            if s.dead[self.rank] {
                return Err(Self::lost(self.rank));
            }
            if s.take(from, self.rank, tag, buf) {
                return Ok(());
            }
            if s.dead[from] {
                return Err(Self::lost(from));
            }
            s = self.wait(s)?;
        }
    }

    fn recv_any(&self, tag: u32, buf: &mut Vec<u8>) -> Result<usize, CommError> {
        let mut s = self.office.lock();
        loop {
            if s.dead[self.rank] {
                return Err(Self::lost(self.rank));
            }
            for from in 0..self.office.size {
                if s.take(from, self.rank, tag, buf) {
                    return Ok(from);
                }
            }
            if let Some(from) = (0..self.office.size).find(|&r| r != self.rank && s.dead[r]) {
                return Err(Self::lost(from));
            }
            s = self.wait(s)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{broadcast, gather};
    use std::thread;

    #[test]
    fn messages_keep_their_order_per_sender_and_tag() {
        let world = FakeWorld::new(3);
        let handles: Vec<_> = (1..3)
            .map(|r| {
                let c = world.comm(r);
                thread::spawn(move || {
                    for i in 0..100u8 {
                        c.send(0, 5, &[r as u8, i]).unwrap();
                    }
                })
            })
            .collect();
        let c0 = world.comm(0);
        let mut next = [0u8; 3];
        let mut buf = Vec::new();
        for _ in 0..200 {
            let from = c0.recv_any(5, &mut buf).unwrap();
            assert_eq!(buf, [from as u8, next[from]]);
            next[from] += 1;
        }
        handles.into_iter().for_each(|h| h.join().unwrap());
    }

    #[test]
    fn broadcast_and_gather_reach_every_rank_in_rank_order() {
        let world = FakeWorld::new(4);
        let handles: Vec<_> = (0..4)
            .map(|r| {
                let c = world.comm(r);
                thread::spawn(move || {
                    let mut b = if r == 2 { b"from 2".to_vec() } else { vec![] };
                    broadcast(&c, 2, 9, &mut b).unwrap();
                    let g = gather(&c, 0, 9, &[r as u8; 3]).unwrap();
                    (b, g)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for (r, (b, g)) in results.iter().enumerate() {
            assert_eq!(b, b"from 2");
            match r {
                0 => assert_eq!(
                    g.as_ref().unwrap(),
                    &(0..4u8).map(|i| vec![i; 3]).collect::<Vec<_>>()
                ),
                _ => assert!(g.is_none()),
            }
        }
    }

    #[test]
    fn a_dead_rank_is_named_once_its_messages_are_read() {
        let world = FakeWorld::new(3);
        world.kill_after(2, 1);
        let c2 = world.comm(2);
        c2.send(0, 1, b"last words").unwrap();
        assert_eq!(c2.send(0, 1, b"never"), Err(FakeComm::lost(2)));
        let c0 = world.comm(0);
        let mut buf = Vec::new();
        c0.recv(2, 1, &mut buf).unwrap();
        assert_eq!(buf, b"last words");
        let err = c0.recv(2, 1, &mut buf).unwrap_err();
        assert!(matches!(err, CommError::Lost { rank: 2, .. }), "{err}");
        assert!(err.to_string().starts_with("lost rank 2:"), "{err}");
        // A rank waiting on anyone learns of the death too, and sending to the dead fails.
        assert!(matches!(
            c0.recv_any(1, &mut buf),
            Err(CommError::Lost { rank: 2, .. })
        ));
        assert!(matches!(
            world.comm(1).send(2, 1, b"x"),
            Err(CommError::Lost { rank: 2, .. })
        ));
        assert!(world.is_dead(2) && !world.is_dead(1));
    }

    #[test]
    fn a_waiting_rank_wakes_when_its_peer_dies() {
        let world = FakeWorld::new(2);
        let c0 = world.comm(0);
        let waiter = thread::spawn(move || c0.recv(1, 3, &mut Vec::new()));
        thread::sleep(Duration::from_millis(20));
        world.kill(1);
        assert!(matches!(
            waiter.join().unwrap(),
            Err(CommError::Lost { rank: 1, .. })
        ));
    }
}
