//! The unit tests' random numbers: a xorshift generator, deterministic so
//! that a failure repeats, and needing no dependency.

pub struct XorShift(pub u64);

impl XorShift {
    /// The generator the tests have always seeded with.
    pub fn new() -> XorShift {
        XorShift(0x2545_f491_4f6c_dd1d)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
