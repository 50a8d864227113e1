//! What both images of the offload benchmark agree on: the models, the
//! phases and their sizes, the result rows, CPU1's requests to CPU0, and
//! how samples are summarised.
//!
//! CPU1 has no console: it writes result rows and raw samples into a
//! [`Board`] at the end of the shared region (past the exchange slots,
//! which nothing else uses), and asks CPU0 through the board's mailbox to
//! change the stub NPU's latency or to read its busy time. CPU0 prints.
//!
//! Every figure is in `k_cycle_get_32` ticks of the emulated part (QEMU
//! `-icount`, deterministic), unless its name says otherwise. The
//! placement phases are timed on the [`BoardClock`] instead: CPU1's
//! SysTick does not keep the board's time there (see its documentation).
//!
//! The build with the CPU interpreter (`CONFIG_SYNAPTIC_CPU_INTERPRETER`)
//! runs the placement phases instead ([`Kind::PLACEMENT`]): one real
//! network on both of CPU0's devices, a mixed-class Poisson workload from
//! CPU1 under every placement policy.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

mod board_clock;
pub use board_clock::BoardClock;

/// The small model: a 49x10 MFCC window in, 16 bytes out.
pub const SMALL: &str = "null_small";
/// Its input shape.
pub const SMALL_INPUT: [u32; 2] = [49, 10];
/// Its input bytes.
pub const SMALL_LEN: usize = 490;
/// Its output bytes.
pub const SMALL_OUTPUT: usize = 16;
/// The frame model: a 96x96x3 frame in, 4,096 bytes out.
pub const FRAME: &str = "null_frame";
/// Its input shape.
pub const FRAME_INPUT: [u32; 3] = [96, 96, 3];
/// Its input bytes.
pub const FRAME_LEN: usize = 96 * 96 * 3;
/// Its output bytes.
pub const FRAME_OUTPUT: usize = 4_096;

/// Status round trips per row.
pub const STATUS_ROUNDS: usize = 1_000;
/// Inference round trips per row.
pub const INFER_ROUNDS: usize = 200;
/// Stub NPU latency of the loaded and throughput phases, microseconds.
pub const LOAD_LATENCY_US: u32 = 1_500;
/// Requests in flight in the throughput phase.
pub const IN_FLIGHT: [u32; 3] = [1, 2, 4];
/// Length of one throughput window, milliseconds (Zephyr's time on CPU1).
pub const THROUGHPUT_MS: u32 = 1_000;
/// Stub NPU latencies of the poll/interrupt sweep, microseconds.
pub const SWEEP_US: [u32; 8] = [0, 100, 200, 400, 800, 1_600, 3_200, 6_400];
/// Requests per sweep point and completion mode.
pub const SWEEP_ROUNDS: usize = 50;

/// The placement phases' model: keyword spotting (TFLite Micro's
/// micro-speech), registered for the NPU and the CPU interpreter. The
/// person detector is left out: one inference is some 18 emulated
/// seconds on the interpreter.
pub const PLACEMENT_MODEL: &str = "micro_speech";
/// Its input shape and bytes.
pub const PLACEMENT_INPUT: [u32; 2] = [1, 49 * 40];
/// Its input bytes.
pub const PLACEMENT_LEN: usize = 49 * 40;
/// Its output bytes (four class scores).
pub const PLACEMENT_OUTPUT: usize = 4;
/// Placement policies, as indices into `synaptic_runtime::device::Policy::ALL`
/// (npu, cpu, busy, random, eft).
pub const PLACEMENT_POLICIES: usize = 5;
/// Offered load of each placement phase: arrival rate times the NPU's
/// time, per mille.
pub const PLACEMENT_LOADS_PERMILLE: [u32; 3] = [600, 1_200, 1_800];
/// Arrivals per placement phase (the same sequence in every phase, its
/// gaps scaled to the phase's mean gap by their own mean).
pub const PLACEMENT_ARRIVALS: usize = 240;
/// The stub NPU's time for the model as a fraction of the CPU
/// interpreter's measured time (the CPU 1.5x slower, as on the host).
pub const NPU_OF_CPU: (u32, u32) = (2, 3);
/// Share of the arrivals per class, per mille, by `Priority::index`
/// (BEST_EFFORT, NORMAL, REALTIME): the host placement benchmark's mix.
pub const CLASS_PERMILLE: [u32; 3] = [250, 550, 200];
/// Seed of the arrival sequence.
pub const ARRIVAL_SEED: u32 = 0x5EED_0001;

/// `-ln(u)` in Q16 (65,536 is 1.0) for `u = (x mod 2^24 + 1) / 2^24`:
/// an exponential sample of mean 1 from a uniform one, in integers (CPU1
/// has no FPU). `log2` of the mantissa by `f + 0.3466 f (1 - f)` (within
/// 0.008).
///
/// ```
/// use offload_bench_protocol::neg_ln_q16;
/// assert_eq!(neg_ln_q16(0x00FF_FFFF), 0); // u = 1
/// // u = 1/2: ln 2 = 0.6931 (45,426 in Q16)
/// assert!(neg_ln_q16(0x007F_FFFF).abs_diff(45_426) < 64);
/// ```
pub fn neg_ln_q16(x: u32) -> u32 {
    let v = (x & 0x00FF_FFFF) + 1;
    let k = 31 - v.leading_zeros();
    let f = ((u64::from(v) << 16) >> k) as u32 - 0x1_0000;
    let frac = f + ((u64::from(f) * u64::from(0x1_0000 - f) * 22_713) >> 32) as u32;
    let neg_log2 = (24 << 16) - ((k << 16) + frac);
    ((u64::from(neg_log2) * 45_426) >> 16) as u32
}

/// The placement phases' arrivals: exponential gaps (mean 1, Q16) and a
/// class drawn by [`CLASS_PERMILLE`], from a seeded xorshift32.
pub struct Arrivals(u32);

impl Arrivals {
    /// The sequence from its start.
    pub const fn new() -> Arrivals {
        Arrivals(ARRIVAL_SEED)
    }

    fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

impl Default for Arrivals {
    fn default() -> Self {
        Arrivals::new()
    }
}

impl Iterator for Arrivals {
    /// (gap before this arrival in Q16 units of the mean gap, class index).
    type Item = (u32, usize);

    fn next(&mut self) -> Option<(u32, usize)> {
        let gap = neg_ln_q16(self.next_u32() >> 8);
        let mut pick = self.next_u32() % 1000;
        let mut class = 0;
        while class + 1 < CLASS_PERMILLE.len() && pick >= CLASS_PERMILLE[class] {
            pick -= CLASS_PERMILLE[class];
            class += 1;
        }
        Some((gap, class))
    }
}

/// A placement phase's `param`: policy index and load index.
pub const fn phase_param(policy: usize, load: usize) -> u32 {
    (policy as u32) << 8 | load as u32
}

/// The policy index and load index of a placement row's `param`.
pub const fn phase_of(param: u32) -> (usize, usize) {
    ((param >> 8) as usize, (param & 0xFF) as usize)
}

/// What a result row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// `STATUS` round trip, polled, idle service.
    StatusPoll = 1,
    /// `STATUS` round trip, interrupt-driven, idle service.
    StatusIrq = 2,
    /// `STATUS` round trip, polled, while both models are being served.
    StatusPollLoaded = 3,
    /// `STATUS` round trip, interrupt-driven, while both models are served.
    StatusIrqLoaded = 4,
    /// 490 B in / 16 B out through the null executor, polled; `extra1` is
    /// the p50 of CPU1 writing and reading those bytes alone.
    InferSmall = 5,
    /// 27,648 B in / 4,096 B out through the null executor, polled;
    /// `extra1` as for [`Kind::InferSmall`].
    InferFrame = 6,
    /// Saturated throughput with `param` requests in flight: `extra1`
    /// inferences per emulated second, `extra2` NPU busy in permille.
    Throughput = 7,
    /// Sweep point, polled: `param` the stub latency (µs), `extra1` CPU1's
    /// busy ticks per request.
    SweepPoll = 8,
    /// Sweep point, interrupt-driven; fields as for [`Kind::SweepPoll`].
    SweepIrq = 9,
    /// Placement calibration (the placement kinds in [`BoardClock`] ticks):
    /// `summary` one CPU interpreter round trip
    /// (every figure the same), `extra1` one stub NPU round trip at the
    /// latency set, `extra2` that latency (µs).
    PlacementCalib = 10,
    /// One placement phase ([`phase_param`]): `summary.n` requests
    /// completed, `summary.min` the µs from the phase's start to its
    /// last arrival, the other summary figures the µs to its last answer
    /// (µs, not ticks: a phase can outlast the board clock's wrap); `extra1` NPU busy and `extra2` CPU interpreter busy over
    /// the whole phase, per mille.
    PlacementRun = 11,
    /// One class of a placement phase: `summary` its latencies from
    /// arrival on CPU1 to the answer read; `extra1` the class index in the
    /// low byte and the requests the NPU answered above it; `extra2` the
    /// mean latency.
    PlacementClass = 12,
}

impl Kind {
    /// The placement build's kinds, in the order CPU1 measures them.
    pub const PLACEMENT: [Kind; 3] = [
        Kind::PlacementCalib,
        Kind::PlacementRun,
        Kind::PlacementClass,
    ];

    /// The offload build's kinds, in the order CPU1 measures them.
    pub const ALL: [Kind; 9] = [
        Kind::StatusPoll,
        Kind::StatusIrq,
        Kind::StatusPollLoaded,
        Kind::StatusIrqLoaded,
        Kind::InferSmall,
        Kind::InferFrame,
        Kind::Throughput,
        Kind::SweepPoll,
        Kind::SweepIrq,
    ];

    /// The kind of a raw row word.
    pub fn from_raw(raw: u32) -> Option<Kind> {
        Kind::ALL
            .iter()
            .chain(&Kind::PLACEMENT)
            .copied()
            .find(|k| *k as u32 == raw)
    }

    /// A short name for tables and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Kind::StatusPoll => "status_poll",
            Kind::StatusIrq => "status_irq",
            Kind::StatusPollLoaded => "status_poll_loaded",
            Kind::StatusIrqLoaded => "status_irq_loaded",
            Kind::InferSmall => "infer_490_16",
            Kind::InferFrame => "infer_27648_4096",
            Kind::Throughput => "throughput",
            Kind::SweepPoll => "sweep_poll",
            Kind::SweepIrq => "sweep_irq",
            Kind::PlacementCalib => "placement_calib",
            Kind::PlacementRun => "placement_run",
            Kind::PlacementClass => "placement_class",
        }
    }

    /// How many rows of this kind a complete run has.
    pub fn rows(self) -> usize {
        match self {
            Kind::Throughput => IN_FLIGHT.len(),
            Kind::SweepPoll | Kind::SweepIrq => SWEEP_US.len(),
            Kind::PlacementRun => PHASES,
            Kind::PlacementClass => PHASES * CLASS_PERMILLE.len(),
            _ => 1,
        }
    }
}

/// Placement phases: every policy at every load.
pub const PHASES: usize = PLACEMENT_POLICIES * PLACEMENT_LOADS_PERMILLE.len();

/// Rows of a complete offload run.
pub const ROWS: usize = 6 + IN_FLIGHT.len() + 2 * SWEEP_US.len();

/// Rows of a complete placement run.
pub const PLACEMENT_ROWS: usize = 1 + PHASES * (1 + CLASS_PERMILLE.len());

/// Rows the board holds: the longer of the two runs.
pub const BOARD_ROWS: usize = if ROWS > PLACEMENT_ROWS {
    ROWS
} else {
    PLACEMENT_ROWS
};

/// Min, median, 99th percentile and max of a set of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Samples.
    pub n: u32,
    /// Smallest.
    pub min: u32,
    /// Median (nearest rank).
    pub p50: u32,
    /// 99th percentile (nearest rank).
    pub p99: u32,
    /// Largest.
    pub max: u32,
}

/// Sort `samples` in place and summarise them (all zero when empty).
///
/// ```
/// let mut s = [5, 1, 4, 2, 3];
/// let sum = offload_bench_protocol::summarize(&mut s);
/// assert_eq!((sum.min, sum.p50, sum.p99, sum.max), (1, 3, 5, 5));
/// ```
pub fn summarize(samples: &mut [u32]) -> Summary {
    let n = samples.len();
    if n == 0 {
        return Summary::default();
    }
    samples.sort_unstable();
    // Nearest rank: the smallest sample with at least q of them at or below.
    let rank = |q_permille: usize| samples[(n * q_permille).div_ceil(1000).clamp(1, n) - 1];
    Summary {
        n: n as u32,
        min: samples[0],
        p50: rank(500),
        p99: rank(990),
        max: samples[n - 1],
    }
}

/// One result row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// [`Kind`] as a raw word.
    pub kind: u32,
    /// The row's parameter (in flight, stub latency µs; 0 otherwise).
    pub param: u32,
    /// Round-trip figures.
    pub summary: Summary,
    /// Per kind, see [`Kind`].
    pub extra1: u32,
    /// Per kind, see [`Kind`].
    pub extra2: u32,
}

/// Words per row on the board.
pub const ROW_WORDS: usize = 9;

impl Row {
    fn words(&self) -> [u32; ROW_WORDS] {
        let s = self.summary;
        [
            self.kind,
            self.param,
            s.n,
            s.min,
            s.p50,
            s.p99,
            s.max,
            self.extra1,
            self.extra2,
        ]
    }

    fn from_words(w: [u32; ROW_WORDS]) -> Row {
        Row {
            kind: w[0],
            param: w[1],
            summary: Summary {
                n: w[2],
                min: w[3],
                p50: w[4],
                p99: w[5],
                max: w[6],
            },
            extra1: w[7],
            extra2: w[8],
        }
    }

    /// Whether the row is well formed: a known kind, as many samples as
    /// the phase takes, ordered figures, and the extras a kind needs.
    pub fn is_well_formed(&self) -> bool {
        let Some(kind) = Kind::from_raw(self.kind) else {
            return false;
        };
        let s = self.summary;
        let expected_n = match kind {
            Kind::StatusPoll | Kind::StatusIrq | Kind::StatusPollLoaded | Kind::StatusIrqLoaded => {
                STATUS_ROUNDS as u32
            }
            Kind::InferSmall | Kind::InferFrame => INFER_ROUNDS as u32,
            Kind::Throughput | Kind::PlacementClass => s.n,
            Kind::SweepPoll | Kind::SweepIrq => SWEEP_ROUNDS as u32,
            Kind::PlacementCalib => 1,
            Kind::PlacementRun => PLACEMENT_ARRIVALS as u32,
        };
        let ordered = s.min <= s.p50 && s.p50 <= s.p99 && s.p99 <= s.max && s.min > 0;
        let (policy, load) = phase_of(self.param);
        let phase = policy < PLACEMENT_POLICIES && load < PLACEMENT_LOADS_PERMILLE.len();
        let extras = match kind {
            Kind::InferSmall | Kind::InferFrame => self.extra1 > 0 && self.extra1 < s.p50,
            Kind::Throughput => self.extra1 > 0 && self.extra2 <= 1000,
            Kind::SweepPoll | Kind::SweepIrq => self.extra1 > 0,
            Kind::PlacementCalib => self.extra1 > 0 && self.extra2 > 0,
            Kind::PlacementRun => phase && self.extra1 <= 1000 && self.extra2 <= 1000,
            Kind::PlacementClass => {
                phase
                    && (self.extra1 & 0xFF) < CLASS_PERMILLE.len() as u32
                    && self.extra1 >> 8 <= s.n
                    && s.min <= self.extra2
                    && self.extra2 <= s.max
            }
            _ => true,
        };
        s.n == expected_n && s.n > 0 && ordered && extras
    }
}

/// Requests CPU1 makes of CPU0 through the mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Command {
    /// Set the stub NPU's latency to `arg` µs; the reply is the old one.
    SetLatency = 1,
    /// Reply with the NPU's busy time so far, µs (Zephyr's time on CPU0).
    NpuBusy = 2,
    /// Set the placement policy to `Policy::ALL[arg]`; the reply is 0.
    SetPolicy = 3,
    /// Reply with the CPU interpreter's busy time so far, µs.
    CpuBusy = 4,
}

impl Command {
    const ALL: [Command; 4] = [
        Command::SetLatency,
        Command::NpuBusy,
        Command::SetPolicy,
        Command::CpuBusy,
    ];
}

/// Raw samples kept for the plots: the four status rows.
pub const SAMPLE_SETS: usize = 4;

/// Board words before the rows.
mod layout {
    pub const DONE: usize = 0;
    pub const ROWS_WRITTEN: usize = 1;
    pub const CMD_SEQ: usize = 2;
    pub const CMD: usize = 3;
    pub const CMD_ARG: usize = 4;
    pub const ACK_SEQ: usize = 5;
    pub const ACK_VALUE: usize = 6;
    pub const FAILED: usize = 7;
    pub const HEADER: usize = 8;
}

/// Words of the board.
pub const BOARD_WORDS: usize =
    layout::HEADER + BOARD_ROWS * ROW_WORDS + SAMPLE_SETS * STATUS_ROUNDS;
/// The board's done word when CPU1 finished.
pub const DONE: u32 = 0x444F_4E45;

/// The benchmark's board at the end of the shared region.
pub struct Board {
    words: *mut u32,
}

// SAFETY: a `Board` is an address; every access is an atomic word access.
unsafe impl Send for Board {}
// SAFETY: as above.
unsafe impl Sync for Board {}

impl Board {
    /// The board at the end of the region at `base`, `size` bytes.
    ///
    /// # Safety
    ///
    /// `base..base + size` is the shared region, mapped for the program's
    /// life and 4-aligned; its last `4 * BOARD_WORDS` bytes lie past the
    /// exchange slots and are used by nothing but this board on both cores.
    pub unsafe fn at_end(base: usize, size: usize) -> Board {
        Board {
            words: (base + size - 4 * BOARD_WORDS) as *mut u32,
        }
    }

    fn word(&self, index: usize) -> &AtomicU32 {
        assert!(index < BOARD_WORDS);
        // SAFETY: `at_end`'s contract: the words exist, are aligned and are
        // only accessed atomically (by this type on both cores).
        unsafe { AtomicU32::from_ptr(self.words.add(index)) }
    }

    fn get(&self, index: usize) -> u32 {
        // Ordering: Acquire pairs with the Release in `set`.
        self.word(index).load(Ordering::Acquire)
    }

    fn set(&self, index: usize, value: u32) {
        // Ordering: Release, so a reader that sees a count or a sequence
        // number sees what was written before it.
        self.word(index).store(value, Ordering::Release);
    }

    /// Zero the board (CPU0, before releasing CPU1).
    pub fn clear(&self) {
        for i in 0..BOARD_WORDS {
            self.set(i, 0);
        }
    }

    /// Append a result row (CPU1); `false` when the board is full.
    pub fn push_row(&self, row: &Row) -> bool {
        let k = self.get(layout::ROWS_WRITTEN) as usize;
        if k >= BOARD_ROWS {
            return false;
        }
        for (i, w) in row.words().into_iter().enumerate() {
            self.set(layout::HEADER + k * ROW_WORDS + i, w);
        }
        self.set(layout::ROWS_WRITTEN, k as u32 + 1);
        true
    }

    /// Rows written so far.
    pub fn rows_written(&self) -> usize {
        (self.get(layout::ROWS_WRITTEN) as usize).min(BOARD_ROWS)
    }

    /// Row `k`.
    pub fn row(&self, k: usize) -> Row {
        let mut w = [0u32; ROW_WORDS];
        for (i, word) in w.iter_mut().enumerate() {
            *word = self.get(layout::HEADER + k * ROW_WORDS + i);
        }
        Row::from_words(w)
    }

    fn sample_index(set: usize, i: usize) -> usize {
        layout::HEADER + BOARD_ROWS * ROW_WORDS + set * STATUS_ROUNDS + i
    }

    /// Keep the raw samples of status set `set` (CPU1), at most
    /// [`STATUS_ROUNDS`].
    pub fn put_samples(&self, set: usize, samples: &[u32]) {
        if set >= SAMPLE_SETS {
            return;
        }
        for (i, &s) in samples.iter().take(STATUS_ROUNDS).enumerate() {
            self.set(Self::sample_index(set, i), s);
        }
    }

    /// Raw sample `i` of status set `set`.
    pub fn sample(&self, set: usize, i: usize) -> u32 {
        self.get(Self::sample_index(set, i))
    }

    /// CPU1 is done (or failed at `failed`, nonzero).
    pub fn finish(&self, failed: u32) {
        self.set(layout::FAILED, failed);
        self.set(layout::DONE, DONE);
    }

    /// Whether CPU1 finished.
    pub fn done(&self) -> bool {
        self.get(layout::DONE) == DONE
    }

    /// Where CPU1 failed (0: it did not).
    pub fn failed(&self) -> u32 {
        self.get(layout::FAILED)
    }

    /// CPU1: post a command and return its sequence number.
    pub fn post(&self, command: Command, arg: u32) -> u32 {
        let seq = self.get(layout::CMD_SEQ).wrapping_add(1);
        self.set(layout::CMD, command as u32);
        self.set(layout::CMD_ARG, arg);
        self.set(layout::CMD_SEQ, seq);
        seq
    }

    /// CPU1: the reply to command `seq`, once CPU0 has answered.
    pub fn reply(&self, seq: u32) -> Option<u32> {
        (self.get(layout::ACK_SEQ) == seq).then(|| self.get(layout::ACK_VALUE))
    }

    /// CPU0: the command waiting, if any: (sequence, command, argument).
    pub fn pending(&self) -> Option<(u32, Option<Command>, u32)> {
        let seq = self.get(layout::CMD_SEQ);
        if seq == self.get(layout::ACK_SEQ) {
            return None;
        }
        let raw = self.get(layout::CMD);
        let command = Command::ALL.into_iter().find(|c| *c as u32 == raw);
        Some((seq, command, self.get(layout::CMD_ARG)))
    }

    /// CPU0: answer command `seq` with `value`.
    pub fn answer(&self, seq: u32, value: u32) {
        self.set(layout::ACK_VALUE, value);
        self.set(layout::ACK_SEQ, seq);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// A row of `kind` with its summary's n and [min, p50, p99, max] and
    /// its two extra words.
    fn row(
        kind: Kind,
        param: u32,
        n: u32,
        [min, p50, p99, max]: [u32; 4],
        [extra1, extra2]: [u32; 2],
    ) -> Row {
        Row {
            kind: kind as u32,
            param,
            summary: Summary {
                n,
                min,
                p50,
                p99,
                max,
            },
            extra1,
            extra2,
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v: std::vec::Vec<u32> = (1..=1000).rev().collect();
        let s = summarize(&mut v);
        assert_eq!((s.n, s.min, s.p50, s.p99, s.max), (1000, 1, 500, 990, 1000));
        let mut one = [7];
        assert_eq!(summarize(&mut one).p99, 7);
        assert_eq!(summarize(&mut []), Summary::default());
    }

    #[test]
    fn board_round_trips_rows_samples_and_commands() {
        let mut region = std::vec![0u32; BOARD_WORDS + 16];
        let base = region.as_mut_ptr() as usize;
        // SAFETY: the vector outlives the board and is used only through it.
        let board = unsafe { Board::at_end(base, 4 * region.len()) };
        board.clear();
        let row = row(
            Kind::InferSmall,
            0,
            INFER_ROUNDS as u32,
            [10, 20, 30, 40],
            [5, 0],
        );
        assert!(row.is_well_formed());
        assert!(board.push_row(&row));
        assert_eq!(board.rows_written(), 1);
        assert_eq!(board.row(0), row);
        board.put_samples(3, &[9, 8, 7]);
        assert_eq!(board.sample(3, 1), 8);
        assert_eq!(board.pending(), None);
        let seq = board.post(Command::SetLatency, 400);
        assert_eq!(board.reply(seq), None);
        assert_eq!(board.pending(), Some((seq, Some(Command::SetLatency), 400)));
        board.answer(seq, 0);
        assert_eq!(board.reply(seq), Some(0));
        assert_eq!(board.pending(), None);
        assert!(!board.done());
        board.finish(0);
        assert!(board.done());
        // The board and the default slots fit the 96 KiB window together.
        let slots = synaptic_abi::region_size::<16>(synaptic_abi::SlotGeometry::DEFAULT);
        assert!(slots + 4 * BOARD_WORDS <= 96 * 1024);
        // And the placement build's eight slots of 2,048 / 16 bytes.
        let placement = synaptic_abi::SlotGeometry {
            count: 8,
            small_input: 2048,
            small_output: 16,
        };
        assert!(synaptic_abi::region_size::<16>(placement) + 4 * BOARD_WORDS <= 96 * 1024);
    }

    #[test]
    fn malformed_rows_are_caught() {
        let good = row(
            Kind::StatusPoll,
            0,
            STATUS_ROUNDS as u32,
            [1, 2, 3, 4],
            [0, 0],
        );
        assert!(good.is_well_formed());
        let mut bad = good;
        bad.summary.p50 = 5;
        assert!(!bad.is_well_formed());
        bad = good;
        bad.summary.n = 3;
        assert!(!bad.is_well_formed());
        bad = good;
        bad.kind = 99;
        assert!(!bad.is_well_formed());
        assert_eq!(ROWS, Kind::ALL.iter().map(|k| k.rows()).sum::<usize>());
        assert_eq!(
            PLACEMENT_ROWS,
            Kind::PLACEMENT.iter().map(|k| k.rows()).sum::<usize>()
        );
    }

    #[test]
    fn exponential_gaps_have_mean_one_and_classes_their_shares() {
        let n = 200_000;
        let mut counts = [0u32; 3];
        let mut total = 0u64;
        for (gap, class) in Arrivals::new().take(n) {
            total += u64::from(gap);
            counts[class] += 1;
        }
        let mean = total as f64 / n as f64 / 65_536.0;
        assert!((mean - 1.0).abs() < 0.01, "mean gap {mean}");
        for (c, &permille) in counts.iter().zip(&CLASS_PERMILLE) {
            let share = f64::from(*c) / n as f64 * 1000.0;
            assert!(
                (share - f64::from(permille)).abs() < 5.0,
                "{share} vs {permille}"
            );
        }
        // -ln u against the float, over the whole range.
        for x in (0..1u32 << 24).step_by(4099) {
            let u = f64::from(x + 1) / f64::from(1u32 << 24);
            let exact = -u.ln();
            let ours = f64::from(neg_ln_q16(x)) / 65_536.0;
            assert!((ours - exact).abs() < 0.006, "x {x}: {ours} vs {exact}");
        }
        // Every class turns up in one phase's arrivals.
        let mut seen = [false; 3];
        for (_, class) in Arrivals::new().take(PLACEMENT_ARRIVALS) {
            seen[class] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn placement_rows_are_checked() {
        let class = row(
            Kind::PlacementClass,
            phase_param(4, 1),
            10,
            [5, 8, 12, 12],
            [2 | 6 << 8, 9],
        );
        assert!(class.is_well_formed());
        assert_eq!(phase_of(class.param), (4, 1));
        let mut bad = class;
        bad.param = phase_param(PLACEMENT_POLICIES, 0);
        assert!(!bad.is_well_formed());
        bad = class;
        bad.extra1 = 2 | 11 << 8; // more on the NPU than answered
        assert!(!bad.is_well_formed());
        bad = class;
        bad.extra2 = 13; // mean above the max
        assert!(!bad.is_well_formed());
        let run = row(
            Kind::PlacementRun,
            phase_param(0, 0),
            PLACEMENT_ARRIVALS as u32,
            [100, 100, 100, 100],
            [900, 0],
        );
        assert!(run.is_well_formed());
        let mut short = run;
        short.summary.n -= 1; // a request lost
        assert!(!short.is_well_formed());
    }
}
