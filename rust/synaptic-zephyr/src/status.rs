//! What CPU0's service has done, for the shell and the applications: boot
//! figures, serving counters, and a snapshot of the runtime (models,
//! arena, NPU capabilities, last profile).
//!
//! Writers are the boot sequence (once) and the serving thread (after
//! every turn that did work); readers are any thread (the shell's).
//! Counters are separate atomic words, so a reader may see one turn's
//! counters mixed with the next turn's: each number is exact, the set is
//! not a transaction. The runtime snapshot is copied under a `k_mutex`.

use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

use heapless::{String, Vec};
use synaptic_runtime::arena::MemStats;
use synaptic_runtime::device::Policy;
use synaptic_runtime::npu::NpuCapabilities;
use synaptic_runtime::prof::InferenceProfile;
use synaptic_runtime::registry::ModelInfo;
use synaptic_serve::boot::{BootError, BootReport, Down, Link};
use synaptic_serve::{RttWords, ServeStats};

use crate::sync::KernelMutex;

/// Models the snapshot lists (the registry's capacity).
pub const MAX_MODELS: usize = zephyr::kconfig::CONFIG_SYNAPTIC_MAX_MODELS as usize;

const NONE: u32 = u32::MAX;

/// Link word values.
mod link {
    pub const BOOTING: u32 = 0;
    pub const UP: u32 = 1;
    pub const ABSENT: u32 = 2;
    pub const INVALID: u32 = 3;
    pub const PLATFORM: u32 = 4;
    pub const NOT_READY: u32 = 5;
    pub const NO_STATUS: u32 = 6;
    pub const NO_REGION: u32 = 7;
    pub const VERSION: u32 = 8;
}

/// Counters of CPU0's service.
pub struct ServiceStatus {
    link: AtomicU32,
    ready_us: AtomicU32,
    handshake_us: AtomicU32,
    requests: AtomicU32,
    served: AtomicU32,
    errors: AtomicU32,
    violations: AtomicU32,
    busy: AtomicU32,
    lookups: AtomicU32,
    status: AtomicU32,
    reply_failures: AtomicU32,
    /// Shared words CPU0 owns that it found altered and rewrote, and ring
    /// resynchronisations on corrupt peer indices.
    repairs: AtomicU32,
    corrupt: AtomicU32,
    latency_avg_us: AtomicU32,
    latency_max_us: AtomicU32,
    /// The layout version a refused CPU1 announced.
    cpu1_version: AtomicU32,
    /// Slots CPU0 holds now (the intake's ledger), and the slot count.
    held_mask: AtomicU32,
    slots: AtomicU32,
    /// NPU time of every profiled inference so far, microseconds.
    npu_busy_us: AtomicU32,
    /// CPU interpreter time of every profiled inference so far, microseconds.
    interpreter_busy_us: AtomicU32,
}

/// The service's counters (one per program).
pub static STATUS: ServiceStatus = ServiceStatus::new();

fn saturate(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl ServiceStatus {
    const fn new() -> Self {
        ServiceStatus {
            link: AtomicU32::new(link::BOOTING),
            ready_us: AtomicU32::new(NONE),
            handshake_us: AtomicU32::new(NONE),
            requests: AtomicU32::new(0),
            served: AtomicU32::new(0),
            errors: AtomicU32::new(0),
            violations: AtomicU32::new(0),
            busy: AtomicU32::new(0),
            lookups: AtomicU32::new(0),
            status: AtomicU32::new(0),
            reply_failures: AtomicU32::new(0),
            repairs: AtomicU32::new(0),
            corrupt: AtomicU32::new(0),
            latency_avg_us: AtomicU32::new(0),
            latency_max_us: AtomicU32::new(0),
            cpu1_version: AtomicU32::new(0),
            held_mask: AtomicU32::new(0),
            slots: AtomicU32::new(0),
            npu_busy_us: AtomicU32::new(0),
            interpreter_busy_us: AtomicU32::new(0),
        }
    }

    // Ordering: every word is Relaxed: each is a statistic read on its own
    // (see the module comment); nothing else is published through them.

    /// Record the boot sequence's outcome.
    pub fn set_boot(&self, report: &BootReport) {
        let code = match report.link {
            Link::Up => link::UP,
            Link::Down(Down::ImageAbsent) => link::ABSENT,
            Link::Down(Down::ImageInvalid(_)) => link::INVALID,
            Link::Down(Down::Platform(_)) => link::PLATFORM,
            Link::Down(Down::NotReady) => link::NOT_READY,
            Link::Down(Down::NoStatus) => link::NO_STATUS,
            Link::Down(Down::Version(v)) => {
                self.cpu1_version.store(v, Ordering::Relaxed);
                link::VERSION
            }
        };
        let us = |v: Option<u64>| v.map_or(NONE, saturate);
        self.ready_us.store(us(report.ready_us), Ordering::Relaxed);
        self.handshake_us
            .store(us(report.handshake_us), Ordering::Relaxed);
        self.link.store(code, Ordering::Relaxed);
    }

    /// Record that there is no shared region (devicetree names none).
    pub fn set_no_region(&self) {
        self.link.store(link::NO_REGION, Ordering::Relaxed);
    }

    /// Record the slot count and the mask of slots CPU0 holds.
    pub fn set_slots(&self, count: usize, held_mask: u32) {
        self.slots.store(count as u32, Ordering::Relaxed);
        self.held_mask.store(held_mask, Ordering::Relaxed);
    }

    /// Record the NPU time of every profiled inference so far.
    pub fn set_npu_busy_us(&self, us: u64) {
        self.npu_busy_us.store(saturate(us), Ordering::Relaxed);
    }

    /// NPU time of every profiled inference so far, microseconds (the
    /// busy fraction over a window is its growth over the window's length).
    pub fn npu_busy_us(&self) -> u32 {
        self.npu_busy_us.load(Ordering::Relaxed)
    }

    /// Records the CPU interpreter's busy time so far (the profiler's summary).
    pub fn set_interpreter_busy_us(&self, us: u64) {
        self.interpreter_busy_us
            .store(saturate(us), Ordering::Relaxed);
    }

    /// CPU interpreter time of every profiled inference so far, microseconds.
    pub fn interpreter_busy_us(&self) -> u32 {
        self.interpreter_busy_us.load(Ordering::Relaxed)
    }

    /// Record the serving layer's counters (intake and server merged).
    pub fn set_serve(&self, s: &ServeStats) {
        let words = [
            (&self.requests, s.requests),
            (&self.served, s.served),
            (&self.errors, s.errors),
            (&self.violations, s.violations),
            (&self.busy, s.busy),
            (&self.lookups, s.lookups),
            (&self.status, s.status),
            (&self.reply_failures, s.reply_failures),
            (&self.repairs, s.repairs),
            (&self.corrupt, s.corrupt),
            (&self.latency_avg_us, saturate(s.latency_average_us())),
            (&self.latency_max_us, saturate(s.latency_max_us)),
        ];
        for (word, value) in words {
            word.store(value, Ordering::Relaxed);
        }
    }

    /// Shared words CPU0 owns that it found altered and rewrote so far.
    pub fn repairs(&self) -> u32 {
        self.repairs.load(Ordering::Relaxed)
    }

    /// Whether CPU1 attached and its first `STATUS_REQ` was answered.
    pub fn link_up(&self) -> bool {
        self.link.load(Ordering::Relaxed) == link::UP
    }

    /// Whether boot left CPU1 unstarted (no image, an image refused, or
    /// the release failed): then nothing executes from CPU1's flash bank.
    pub fn cpu1_never_started(&self) -> bool {
        matches!(
            self.link.load(Ordering::Relaxed),
            link::ABSENT | link::INVALID | link::PLATFORM
        )
    }

    /// `STATUS_REQ` requests answered so far.
    pub fn status_answered(&self) -> u32 {
        self.status.load(Ordering::Relaxed)
    }

    /// Inferences answered with an output so far.
    pub fn served(&self) -> u32 {
        self.served.load(Ordering::Relaxed)
    }

    /// Requests answered with a negative status so far.
    pub fn errors(&self) -> u32 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Requests that broke the contract so far.
    pub fn violations(&self) -> u32 {
        self.violations.load(Ordering::Relaxed)
    }

    fn link_text(&self) -> &'static str {
        match self.link.load(Ordering::Relaxed) {
            link::BOOTING => "DOWN (booting)",
            link::UP => "UP",
            link::ABSENT => "DOWN (CPU1 image absent: single-core mode)",
            link::INVALID => "DOWN (CPU1 image invalid)",
            link::PLATFORM => "DOWN (CPU1 could not be started)",
            link::NOT_READY => "DOWN (CPU1 did not attach within 100 ms)",
            link::NO_STATUS => "DOWN (no STATUS_REQ from CPU1 within 200 ms)",
            link::VERSION => "DOWN (CPU1 built for another layout version)",
            _ => "DOWN (no shared region in devicetree)",
        }
    }

    /// The `syn ipc status` view, one line per call of `line`. `rtt` is
    /// what CPU1 published in the control block, with both ready flags.
    pub fn write_view(
        &self,
        rtt: Option<(RttWords, bool, bool)>,
        mut line: impl FnMut(fmt::Arguments<'_>),
    ) {
        let r = |w: &AtomicU32| w.load(Ordering::Relaxed);
        line(format_args!("link: {}", self.link_text()));
        if r(&self.link) == link::VERSION {
            line(format_args!(
                "cpu1 layout version: {} (this image: {})",
                r(&self.cpu1_version),
                synaptic_abi::LAYOUT_VERSION
            ));
        }
        let us = |v: u32| -> Us { Us(v) };
        line(format_args!(
            "cpu1 boot: {} (release to cpu1_ready), handshake: {} (release to first STATUS_REQ)",
            us(r(&self.ready_us)),
            us(r(&self.handshake_us))
        ));
        line(format_args!(
            "STATUS_REQ answered: {}, model lookups: {}",
            r(&self.status),
            r(&self.lookups)
        ));
        line(format_args!(
            "inferences served: {}, errors {} (violations {}, busy {}), average {} us, max {} us",
            r(&self.served),
            r(&self.errors),
            r(&self.violations),
            r(&self.busy),
            r(&self.latency_avg_us),
            r(&self.latency_max_us)
        ));
        line(format_args!(
            "exchange slots: {}, held by CPU0 now: mask 0x{:02x}",
            r(&self.slots),
            r(&self.held_mask)
        ));
        if let Some((rtt, cpu0_ready, cpu1_ready)) = rtt {
            line(format_args!(
                "rtt (cpu1): last {} us, min {} us, max {} us over {} samples; ready flags cpu0 {}, cpu1 {}",
                rtt.last_us,
                rtt.min_us,
                rtt.max_us,
                rtt.count,
                u8::from(cpu0_ready),
                u8::from(cpu1_ready)
            ));
        }
        line(format_args!(
            "shared words repaired (written by CPU1, rewritten by CPU0): {}, ring resyncs: {}",
            r(&self.repairs),
            r(&self.corrupt)
        ));
        line(format_args!(
            "device busy (profiled): npu {} us, cpu interpreter {} us",
            r(&self.npu_busy_us),
            r(&self.interpreter_busy_us)
        ));
        if r(&self.reply_failures) > 0 {
            line(format_args!(
                "replies lost (ring to CPU1 full): {}",
                r(&self.reply_failures)
            ));
        }
    }
}

/// A microsecond figure that may be absent.
struct Us(u32);

impl fmt::Display for Us {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == NONE {
            f.write_str("n/a")
        } else {
            write!(f, "{} us", self.0)
        }
    }
}

/// One registered model as the shell lists it.
#[derive(Clone, Debug)]
pub struct ModelLine {
    /// Raw handle (index and generation).
    pub handle: u32,
    /// Registry name.
    pub name: String<32>,
    /// Version and CRC-32 of the version served now (a hot swap replaces
    /// them; `handle` stays the one CPU1 names the model by).
    pub version: u32,
    pub crc32: u32,
    /// Input bytes.
    pub input: usize,
    /// Output bytes.
    pub output: usize,
    /// The execution devices it may run on.
    pub devices: synaptic_runtime::device::DeviceMask,
    /// Whether CPU1 can reach it.
    pub exported: bool,
    /// Its predicted service time on each device, microseconds, by
    /// `Device::index` (`None` before its first run there), and the runs
    /// measured there: published by the serving thread when idle and every
    /// 64 answers.
    pub predicted_us: [Option<u32>; 2],
    /// Runs measured on each device (see `predicted_us`).
    pub samples: [u32; 2],
}

impl ModelLine {
    /// The line of the model `info` describes, registered as `handle`.
    pub fn new(handle: u32, info: &ModelInfo, exported: bool) -> Self {
        let mut name = String::new();
        let _ = name.push_str(info.name.as_str());
        let mut line = ModelLine {
            handle,
            name,
            version: 0,
            crc32: 0,
            input: 0,
            output: 0,
            devices: info.devices,
            exported,
            predicted_us: [None; 2],
            samples: [0; 2],
        };
        line.follow(info);
        line
    }

    /// Take the facts of the version `info` describes (the one the name
    /// serves now).
    pub fn follow(&mut self, info: &ModelInfo) {
        self.version = info.version;
        self.crc32 = info.crc32;
        self.input = info.input_size();
        self.output = info.output_size();
        self.devices = info.devices;
    }
}

/// Largest output a [`ResultLine`] keeps (scores beyond it are not shown).
pub const RESULT_SCORES: usize = 8;

/// The last output of a model run on the CPU interpreter, with its
/// predicted label.
#[derive(Clone, Debug)]
pub struct ResultLine {
    /// Registry name.
    pub model: String<32>,
    /// The device that produced it (`Device::name`).
    pub device: &'static str,
    /// The output as int8 scores (the first [`RESULT_SCORES`]).
    pub scores: Vec<i8, RESULT_SCORES>,
    /// Class names in output order (empty: not named).
    pub classes: &'static [&'static str],
    /// Outputs of this model so far.
    pub count: u32,
}

impl ResultLine {
    /// A line for `output` (int8 bytes) of `model` on `device`; `classes`
    /// names the output's entries.
    pub fn new(
        model: String<32>,
        device: &'static str,
        output: &[u8],
        classes: &'static [&'static str],
    ) -> Self {
        let scores = output
            .iter()
            .take(RESULT_SCORES)
            .map(|&b| b as i8)
            .collect();
        ResultLine {
            model,
            device,
            scores,
            classes,
            count: 1,
        }
    }

    /// Index of the highest score (the first on a tie).
    pub fn predicted(&self) -> Option<usize> {
        let mut best: Option<(usize, i8)> = None;
        for (i, &s) in self.scores.iter().enumerate() {
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        best.map(|(i, _)| i)
    }
}

impl fmt::Display for ResultLine {
    /// `<model> (<device>): <label> (scores: <class> <score>, ...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): ", self.model, self.device)?;
        match self.predicted() {
            Some(i) => match self.classes.get(i) {
                Some(label) => write!(f, "{label}")?,
                None => write!(f, "class {i}")?,
            },
            None => f.write_str("no output")?,
        }
        f.write_str(" (scores:")?;
        for (i, s) in self.scores.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            match self.classes.get(i) {
                Some(label) => write!(f, "{sep}{label} {s}")?,
                None => write!(f, "{sep}{s}")?,
            }
        }
        f.write_str(")")
    }
}

/// The runtime as the serving thread last published it.
#[derive(Debug)]
pub struct Snapshot {
    /// Registered models.
    pub models: Vec<ModelLine, MAX_MODELS>,
    /// Arena statistics.
    pub mem: Option<MemStats>,
    /// NPU capabilities.
    pub caps: Published<NpuCapabilities>,
    /// The last profiled inference.
    pub prof: Option<InferenceProfile>,
    /// The last output of each model the CPU interpreter ran.
    pub results: Vec<ResultLine, MAX_MODELS>,
    /// Why the service did not start, if it did not.
    pub setup_error: Option<&'static str>,
    /// The scheduler's placement policy in effect.
    pub policy: Published<Policy>,
    /// The scheduler's WRR weights.
    pub weights: Option<synaptic_runtime::arbiter::Weights>,
}

/// A value the serving thread publishes once it has it. `Option` would do,
/// but its `None` for a type with a niche (a `bool`, an enum) is a nonzero
/// byte, which would move the whole snapshot (1.3 KB) from `.bss` into
/// `.data` and so into flash; this is all zeros until published.
#[derive(Clone, Copy, Debug)]
pub struct Published<T> {
    known: bool,
    value: T,
}

impl<T: Copy> Published<T> {
    /// Not published yet; `zero` (all-zero bytes) is never shown.
    const fn unknown(zero: T) -> Self {
        Published {
            known: false,
            value: zero,
        }
    }

    /// The value, once published.
    pub fn get(&self) -> Option<T> {
        self.known.then_some(self.value)
    }

    /// Publish `value` (`None`: not known).
    pub fn set(&mut self, value: Option<T>) {
        if let Some(v) = value {
            self.value = v;
        }
        self.known = value.is_some();
    }
}

/// The snapshot (one per program).
pub static SNAPSHOT: KernelMutex<Snapshot> = KernelMutex::new(Snapshot {
    models: Vec::new(),
    mem: None,
    caps: Published::unknown(NpuCapabilities {
        max_input_bytes: 0,
        max_output_bytes: 0,
        dtype_mask: 0,
        async_invoke: false,
        sliced: false,
        max_resident_models: 0,
        queue_depth: 0,
    }),
    prof: None,
    results: Vec::new(),
    setup_error: None,
    policy: Published::unknown(Policy::NpuOnly),
    weights: None,
});

/// Why the boot sequence ended as it did, as a short phrase.
pub fn describe_boot_error(e: BootError) -> &'static str {
    match e {
        BootError::ImageAbsent => "image absent",
        BootError::NotThumb { .. } => "reset vector without the Thumb bit",
        BootError::StackOutsideRam { .. } => "initial SP outside CPU1's RAM",
        BootError::ResetOutsideImage { .. } => "reset vector outside CPU1's image",
        BootError::Platform(_) => "platform error",
        _ => "unknown",
    }
}
