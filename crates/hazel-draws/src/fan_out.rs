//! One chain's output to several sinks at once (files and memory).

use crate::{AdaptationInfo, Columns, Draw, DrawSink, Timing};
use std::io;

/// Hands every call to each of its sinks in order. Every sink gets every call, also after one
/// of them failed (a memory sink keeps the draws a failing disk no longer takes); the first
/// error is returned.
pub struct FanOut(pub Vec<Box<dyn DrawSink>>);

impl FanOut {
    fn each(
        &mut self,
        mut call: impl FnMut(&mut dyn DrawSink) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut first_error = None;
        for sink in &mut self.0 {
            if let Err(e) = call(sink.as_mut()) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl DrawSink for FanOut {
    fn begin(&mut self, columns: &Columns<'_>) -> io::Result<()> {
        self.each(|s| s.begin(columns))
    }
    fn adaptation_done(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.each(|s| s.adaptation_done(adaptation))
    }
    fn adaptation_resumed(&mut self, adaptation: &AdaptationInfo<'_>) -> io::Result<()> {
        self.each(|s| s.adaptation_resumed(adaptation))
    }
    fn draw(&mut self, draw: &Draw<'_>) -> io::Result<()> {
        self.each(|s| s.draw(draw))
    }
    fn finish(&mut self, timing: &Timing) -> io::Result<()> {
        self.each(|s| s.finish(timing))
    }
    fn checkpoint(&mut self, state: &dyn erased_serde::Serialize) -> io::Result<()> {
        self.each(|s| s.checkpoint(state))
    }
}
