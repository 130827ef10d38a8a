//! Decoding fuzzer bytes into choices, so that every byte string is a valid generator input
//! and small mutations of the bytes make small changes to the generated program.

/// Reads choices from the bytes in order; past the end every choice is the first option.
pub struct Choices<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Choices<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Choices { bytes, pos: 0 }
    }

    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// A number in `0..n` (`n` ≥ 1).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 256 {
            self.byte() as usize % n
        } else {
            (self.byte() as usize | (self.byte() as usize) << 8) % n
        }
    }

    /// True with probability about `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0 && self.pos <= self.bytes.len()
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| acc << 8 | self.byte() as u64)
    }

    /// The bytes not yet read.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos.min(self.bytes.len())..]
    }

    pub fn exhausted(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}
