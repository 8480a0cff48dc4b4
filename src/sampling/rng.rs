//! The random numbers of the reference, bit for bit: `std::mt19937` and the
//! libstdc++ (GCC 12, the compiler that built the reference library)
//! algorithms of the three distributions llama-sampler.cpp uses.
//!
//! # mt19937
//!
//! The 32-bit Mersenne Twister (Matsumoto & Nishimura 1998) with the standard
//! parameters: n = 624, m = 397, matrix a = 0x9908b0df, tempering
//! u = 11, s = 7 / b = 0x9d2c5680, t = 15 / c = 0xefc60000, l = 18, and the
//! seeding recurrence `x[i] = 1812433253 * (x[i-1] ^ (x[i-1] >> 30)) + i`.
//! `std::mt19937(seed)` and `.seed(seed)` both run that recurrence; the first
//! call after seeding regenerates the whole state block.
//!
//! # generate_canonical<T, digits(T)> (bits/random.tcc)
//!
//! Draws `k = max(1, ceil(digits / 32))` engine outputs and combines them in
//! the floating type T itself:
//!
//! ```text
//! sum = 0; tmp = 1
//! repeat k times: sum += T(urng()) * tmp; tmp *= 2^32
//! ret = sum / tmp;  if ret >= 1: ret = nextafter(T(1), T(0))
//! ```
//!
//! - float (24 digits): one draw; `T(u)` rounds the 32-bit value to nearest
//!   float, so a value near 2^32 rounds up to 1.0 and is clamped to
//!   `1 - 2^-24`.
//! - double (53 digits): two draws, `(u1 + u2 * 2^32) / 2^64`, the sum
//!   rounded to double.
//!
//! # uniform_real_distribution<T>(a, b)
//!
//! `generate_canonical<T>() * (b - a) + a`, in T. The samplers use (0, 1),
//! which is the canonical value itself. xtc uses `<float>`; dist uses
//! `<double>` (so it consumes two engine outputs per token).
//!
//! # discrete_distribution<int>(weights)
//!
//! Used by mirostat, mirostat v2 and adaptive-p (`llama_sample_dist`).
//! Construction copies the float weights into doubles; with fewer than two
//! weights the table is empty and sampling returns 0 **without drawing**.
//! Otherwise: `sum` = left-to-right double sum, each weight divided by `sum`,
//! the running (partial) sums of the quotients form the cumulative table,
//! whose last entry is then forced to 1.0. Sampling draws
//! `generate_canonical<double>` (two engine outputs) and returns the index of
//! the first cumulative entry `>= p` (`std::lower_bound`).

/// `std::mt19937`.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl std::fmt::Debug for Mt19937 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mt19937 {{ index: {} }}", self.index)
    }
}

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER: u32 = 0x8000_0000;
const LOWER: u32 = 0x7fff_ffff;

impl Mt19937 {
    pub fn new(seed: u32) -> Mt19937 {
        let mut rng = Mt19937 { state: [0; N], index: N };
        rng.seed(seed);
        rng
    }

    /// `rng.seed(seed)`.
    pub fn seed(&mut self, seed: u32) {
        self.state[0] = seed;
        for i in 1..N {
            let prev = self.state[i - 1];
            self.state[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn generate(&mut self) {
        for k in 0..N {
            let y = (self.state[k] & UPPER) | (self.state[(k + 1) % N] & LOWER);
            let mag = if y & 1 != 0 { MATRIX_A } else { 0 };
            self.state[k] = self.state[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// `rng()`: the next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.generate();
        }
        let mut z = self.state[self.index];
        self.index += 1;
        z ^= z >> 11;
        z ^= (z << 7) & 0x9d2c_5680;
        z ^= (z << 15) & 0xefc6_0000;
        z ^= z >> 18;
        z
    }

    /// `std::generate_canonical<float, 24>(rng)`: one draw.
    pub fn canonical_f32(&mut self) -> f32 {
        let sum = self.next_u32() as f32; // rounds to nearest, as float(u) does
        let ret = sum / 4_294_967_296.0f32;
        if ret >= 1.0 {
            f32::from_bits(1.0f32.to_bits() - 1) // nextafter(1.0f, 0.0f)
        } else {
            ret
        }
    }

    /// `std::generate_canonical<double, 53>(rng)`: two draws.
    pub fn canonical_f64(&mut self) -> f64 {
        let mut sum = self.next_u32() as f64;
        sum += self.next_u32() as f64 * 4_294_967_296.0f64;
        let ret = sum / 18_446_744_073_709_551_616.0f64;
        if ret >= 1.0 {
            f64::from_bits(1.0f64.to_bits() - 1) // nextafter(1.0, 0.0)
        } else {
            ret
        }
    }

    /// `std::uniform_real_distribution<float>(0.0f, 1.0f)(rng)`.
    pub fn uniform_f32(&mut self) -> f32 {
        self.canonical_f32() * (1.0f32 - 0.0f32) + 0.0f32
    }

    /// `std::uniform_real_distribution<double>(0.0, 1.0)(rng)`.
    pub fn uniform_f64(&mut self) -> f64 {
        self.canonical_f64() * (1.0f64 - 0.0f64) + 0.0f64
    }
}

/// `std::discrete_distribution<int>(weights)(rng)`, libstdc++'s algorithm
/// (see the module documentation).
pub fn discrete(weights: impl Iterator<Item = f32>, rng: &mut Mt19937) -> usize {
    let prob: Vec<f64> = weights.map(f64::from).collect();
    if prob.len() < 2 {
        return 0;
    }
    let sum: f64 = prob.iter().fold(0.0f64, |acc, &p| acc + p);
    let mut cp = Vec::with_capacity(prob.len());
    let mut run = 0.0f64;
    for (i, &p) in prob.iter().enumerate() {
        let q = p / sum;
        run = if i == 0 { q } else { run + q };
        cp.push(run);
    }
    let last = cp.len() - 1;
    cp[last] = 1.0;
    let p = rng.canonical_f64();
    // lower_bound: the first entry not less than p
    cp.partition_point(|&c| c < p)
}

/// A seed for `LLAMA_DEFAULT_SEED`: the reference takes one from
/// `std::random_device` (getrandom on Linux); so do we.
pub fn random_seed() -> u32 {
    let mut buf = [0u8; 4];
    // SAFETY: getrandom writes at most buf.len() bytes into buf.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n == 4 {
        u32::from_ne_bytes(buf)
    } else {
        // As the reference does when random_device has no entropy: the clock.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u32)
            .unwrap_or(0x5eed)
    }
}

/// `get_rng_seed`: the seed itself, or a random one for LLAMA_DEFAULT_SEED.
pub fn resolve_seed(seed: u32) -> u32 {
    if seed == u32::MAX {
        random_seed()
    } else {
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_standard() {
        // C++11 [rand.predef]: the 10000th output of a default-constructed
        // std::mt19937 (seed 5489) is 4123659995.
        let mut rng = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
        let mut rng = Mt19937::new(5489);
        assert_eq!(rng.next_u32(), 3_499_211_612);
    }

    #[test]
    fn reseeding_restarts_the_sequence() {
        let mut a = Mt19937::new(42);
        let first: Vec<u32> = (0..5).map(|_| a.next_u32()).collect();
        a.seed(42);
        let again: Vec<u32> = (0..5).map(|_| a.next_u32()).collect();
        assert_eq!(first, again);
    }

    #[test]
    fn canonical_values_are_in_range_and_use_the_right_number_of_draws() {
        let mut a = Mt19937::new(1);
        let mut b = Mt19937::new(1);
        let x = a.canonical_f64();
        let u1 = b.next_u32() as f64;
        let u2 = b.next_u32() as f64;
        assert_eq!(x, (u1 + u2 * 4294967296.0) / 18446744073709551616.0);
        assert_eq!(a.next_u32(), b.next_u32());
        let f = a.canonical_f32();
        assert_eq!(f, b.next_u32() as f32 / 4294967296.0);
        for _ in 0..10000 {
            let v = a.canonical_f32();
            assert!((0.0..1.0).contains(&v));
        }
    }

    #[test]
    fn discrete_edge_cases() {
        let mut rng = Mt19937::new(3);
        let before = rng.clone().next_u32();
        // fewer than two weights: 0, no draw
        assert_eq!(discrete([0.7f32].into_iter(), &mut rng), 0);
        assert_eq!(rng.clone().next_u32(), before);
        // a zero-weight entry is never chosen
        for _ in 0..1000 {
            let i = discrete([0.0f32, 1.0, 0.0, 1.0].into_iter(), &mut rng);
            assert!(i == 1 || i == 3);
        }
    }
}
