//! The byte layout of hazel's messages: little-endian fixed-width numbers, `f64`s by their bit
//! patterns (so every value crosses exactly), strings and byte runs with a `u64` length.
//! Every rank runs the same binary (checked at start), so the layout needs no versioning.

use crate::CommError;

/// Appends values to a message. Reuses the buffer it is given.
pub struct Writer<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// Clears `buf` and writes into it.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        buf.clear();
        Writer { buf }
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }
    pub fn f64s(&mut self, v: &[f64]) -> &mut Self {
        self.u64(v.len() as u64);
        for x in v {
            self.buf.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
}

/// Reads values back in the order they were written; a short or malformed message is an error,
/// never a panic.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(msg: &'a [u8]) -> Self {
        Reader { rest: msg }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], CommError> {
        if self.rest.len() < n {
            return Err(CommError::Failed(format!(
                "malformed message: {} bytes left, {n} expected",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, CommError> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, CommError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Result<u64, CommError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    pub fn f64(&mut self) -> Result<f64, CommError> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn len(&mut self, width: usize) -> Result<usize, CommError> {
        let n = self.u64()?;
        match usize::try_from(n) {
            Ok(n) if n.checked_mul(width).is_some_and(|b| b <= self.rest.len()) => Ok(n),
            _ => Err(CommError::Failed(format!(
                "malformed message: a run of {n} items does not fit in {} bytes",
                self.rest.len()
            ))),
        }
    }
    /// A run of `f64`s written by [`Writer::f64s`], into `out` (cleared first).
    pub fn f64s_into(&mut self, out: &mut Vec<f64>) -> Result<(), CommError> {
        let n = self.len(8)?;
        out.clear();
        out.extend(
            self.take(n * 8)?
                .chunks_exact(8)
                .map(|b| f64::from_bits(u64::from_le_bytes(b.try_into().expect("8")))),
        );
        Ok(())
    }
    /// A run of `f64`s that must have exactly `out.len()` values.
    pub fn f64s_exact(&mut self, out: &mut [f64]) -> Result<(), CommError> {
        let n = self.len(8)?;
        if n != out.len() {
            return Err(CommError::Failed(format!(
                "malformed message: {n} numbers where {} were expected",
                out.len()
            )));
        }
        for (o, b) in out.iter_mut().zip(self.take(n * 8)?.chunks_exact(8)) {
            *o = f64::from_bits(u64::from_le_bytes(b.try_into().expect("8")));
        }
        Ok(())
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], CommError> {
        let n = self.len(1)?;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<&'a str, CommError> {
        std::str::from_utf8(self.bytes()?)
            .map_err(|_| CommError::Failed("malformed message: text is not UTF-8".into()))
    }
    /// Whether everything was read.
    pub fn is_done(&self) -> bool {
        self.rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_exactly_and_short_messages_are_errors() {
        let mut buf = Vec::new();
        let values = [0.1, -0.0, f64::NAN, f64::INFINITY, 1e-310];
        Writer::new(&mut buf)
            .u8(7)
            .u32(70_000)
            .f64s(&values)
            .str("rank 2 ✓")
            .f64(-1.5);
        let mut r = Reader::new(&buf);
        assert_eq!(r.u8().unwrap(), 7);
        assert_eq!(r.u32().unwrap(), 70_000);
        let mut back = Vec::new();
        r.f64s_into(&mut back).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
        assert_eq!(r.str().unwrap(), "rank 2 ✓");
        assert_eq!(r.f64().unwrap(), -1.5);
        assert!(r.is_done());
        for cut in 0..buf.len() {
            let mut r = Reader::new(&buf[..cut]);
            let all = (|| -> Result<(), CommError> {
                r.u8()?;
                r.u32()?;
                r.f64s_into(&mut Vec::new())?;
                r.str()?;
                r.f64()?;
                Ok(())
            })();
            assert!(all.is_err(), "a message cut at {cut} bytes must not read");
        }
        // A length field claiming more than the message holds.
        let mut buf = Vec::new();
        Writer::new(&mut buf).u64(u64::MAX);
        assert!(Reader::new(&buf).f64s_into(&mut Vec::new()).is_err());
    }
}
