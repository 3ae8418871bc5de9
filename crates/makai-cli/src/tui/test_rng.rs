//! A pseudo-random sequence for the UI's property tests: the same at every
//! run, so a failure names an input that fails again; and [`Shared`], the
//! writer they hand the terminal's output to.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

/// A writer whose bytes the test takes after the code under test wrote them.
#[derive(Clone, Default)]
pub(crate) struct Shared(pub(crate) Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// xorshift64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A number below `below`.
    pub(crate) fn below(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }

    /// An index into a collection of `len` items.
    pub(crate) fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// Up to `max_pieces` of `pieces` joined, each picked at random.
    pub(crate) fn text(&mut self, pieces: &[&str], max_pieces: usize) -> String {
        let len = self.index(max_pieces);
        (0..len).map(|_| pieces[self.index(pieces.len())]).collect()
    }
}
