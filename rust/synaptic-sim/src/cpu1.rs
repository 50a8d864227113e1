//! The simulated CPU1: one *life* at a time. A life attaches to the live
//! indices of both rings (CPU1's `attach`: announce the layout version,
//! check the control block, set `cpu1_ready`), builds a fresh client and,
//! unless told otherwise, a dispatch thread that calls
//! [`Client::dispatch`] after each doorbell (and after 2 ms without one, a
//! lost doorbell's fallback); runs the application body on the calling thread,
//! which may start any number of CPU1 threads sharing the client; then
//! drops all of it. The next life is a CPU1 reset: it starts from the
//! shared buffer alone.
//!
//! Invariants: lives never overlap (each holds the only producer of
//! CPU1→CPU0 and the only consumer of CPU0→CPU1 while it runs); a life's
//! threads all end before the life does.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use synaptic_abi::{Direction, Priority, ValidMessage};
use synaptic_ipc::host::{HostSemaphore, SemaphoreDoorbell};
use synaptic_ipc::{IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::client::ClientConfig;
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::loopback::{ring_ends, MutexClient};
use synaptic_serve::park::ParkHold;
use synaptic_serve::{Client, ClientError, ClientStats, SharedRegion, Wait};

use crate::models::{expected_output, fill_input, SimModel};
use crate::{Cpu0Control, Sim, StopOnDrop, RING};

/// CPU1's sender: the producer of CPU1→CPU0 and the doorbell to CPU0.
pub type Cpu1Sender<'r> = Sender<'r, RING, SemaphoreDoorbell<'r>>;

/// The client as the simulated CPU1 builds it: host doorbell to CPU0, host
/// semaphores, monotonic clock, `std::sync::Mutex` as both local locks.
pub type SimClient<'r> = MutexClient<'r, SemaphoreDoorbell<'r>, HostSemaphore, MonotonicClock>;

/// How one CPU1 life is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu1Config {
    /// The client's poll threshold: [`Wait::Auto`] polls when CPU0's
    /// published estimate for the model is at most this (0: never).
    pub poll_threshold_us: u32,
    /// Whether the life runs a dispatch thread. Without one only polling
    /// callers drain the reply ring.
    pub dispatch_thread: bool,
    /// How long the dispatch thread sleeps without a doorbell before it
    /// drains the ring anyway (a lost doorbell's cost).
    pub dispatch_fallback: Duration,
}

impl Default for Cpu1Config {
    fn default() -> Self {
        Cpu1Config {
            poll_threshold_us: 0,
            dispatch_thread: true,
            dispatch_fallback: Duration::from_millis(2),
        }
    }
}

/// What one CPU1 life did.
#[derive(Clone, Debug, Default)]
pub struct Cpu1Report {
    /// The client's counters.
    pub client: ClientStats,
    /// The first message id this life used (from the live ring head).
    pub first_id: u32,
    /// Doorbells that woke the dispatch thread (its semaphore given).
    pub doorbell_wakes: u32,
    /// Messages the dispatch thread popped (the rest were popped by
    /// polling callers).
    pub dispatched: u32,
}

/// A checked inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Output bytes returned.
    pub len: usize,
    /// Whether they equal the stub NPU's output for the staged input.
    pub correct: bool,
    /// The exchange slot the request used.
    pub slot: usize,
}

/// Which exchange slot a request reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotChoice {
    /// The smallest free slot the input fits ([`Client::reserve`]).
    Smallest,
    /// The frame slot ([`Client::session`], the single-request API).
    Frame,
}

/// How a checked inference is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Its class.
    pub priority: Priority,
    /// How the caller waits.
    pub wait: Wait,
    /// Which slot it reserves.
    pub slot: SlotChoice,
    /// For the reservation and for the reply.
    pub timeout: Timeout,
}

impl Request {
    /// The smallest fitting slot, [`Wait::Auto`].
    pub fn new(priority: Priority, timeout: Timeout) -> Self {
        Request {
            priority,
            wait: Wait::Auto,
            slot: SlotChoice::Smallest,
            timeout,
        }
    }
}

/// A CPU1 life as the test body sees it.
pub struct Cpu1<'c, 'r> {
    client: &'c SimClient<'r>,
    control: &'c Cpu0Control,
    bell: &'c HostSemaphore,
}

impl<'r> Cpu1<'_, 'r> {
    /// The client.
    pub fn client(&self) -> &SimClient<'r> {
        self.client
    }

    /// CPU0's controls (the test's view, not CPU1's).
    pub fn cpu0(&self) -> &Cpu0Control {
        self.control
    }

    /// CPU1's doorbell semaphore (given by CPU0's doorbell interrupt).
    pub fn doorbell(&self) -> &HostSemaphore {
        self.bell
    }

    /// Resolve `model` by name.
    ///
    /// # Errors
    ///
    /// As [`Client::model_lookup`].
    pub fn lookup(&self, model: &SimModel, timeout: Timeout) -> Result<ModelHandle, ClientError> {
        self.client.model_lookup(model.name, timeout)
    }

    /// Stage request `seq`'s tensor for `model` in the smallest free slot it
    /// fits, infer ([`Wait::Auto`]), and compare the output with the stub
    /// NPU's for that tensor.
    ///
    /// # Errors
    ///
    /// As [`Client::reserve`] and `Session::infer`.
    pub fn infer(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        seq: u32,
        priority: Priority,
        timeout: Timeout,
    ) -> Result<Checked, ClientError> {
        self.request(model, handle, Request::new(priority, timeout), |input| {
            fill_input(seq, input)
        })
    }

    /// As [`infer`](Self::infer) with the caller's fill.
    ///
    /// # Errors
    ///
    /// As [`Client::reserve`] and `Session::infer`.
    pub fn infer_with(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        priority: Priority,
        timeout: Timeout,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Checked, ClientError> {
        self.request(model, handle, Request::new(priority, timeout), fill)
    }

    /// A checked inference made as `request` says, with the caller's fill.
    ///
    /// # Errors
    ///
    /// As [`Client::reserve`] (or [`Client::session`]) and
    /// `Session::infer_with`.
    pub fn request(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        request: Request,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Checked, ClientError> {
        let (slot, input, out, n) = self.exchange(model, handle, request, fill)?;
        let expected = expected_output(handle, &input, model.output);
        Ok(Checked {
            len: n,
            correct: out[..n] == expected[..],
            slot,
        })
    }

    /// An inference of input number `seq` on a model CPU0 may hot-swap
    /// meanwhile: which of `versions()` (the registry handles of the
    /// model's versions, as CPU0 reports them once the reply is in) gave
    /// the output, `None` when none did.
    ///
    /// # Errors
    ///
    /// As [`infer`](Self::infer).
    pub fn infer_version(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        seq: u32,
        timeout: Timeout,
        versions: impl FnOnce() -> Vec<ModelHandle>,
    ) -> Result<Option<usize>, ClientError> {
        let request = Request::new(Priority::Normal, timeout);
        let (_, input, out, n) =
            self.exchange(model, handle, request, |input| fill_input(seq, input))?;
        Ok(versions()
            .iter()
            .position(|&v| out[..n] == expected_output(v, &input, model.output)[..]))
    }

    /// Reserve, fill, infer: the slot, a copy of the input, the output
    /// and its length.
    fn exchange(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        request: Request,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(usize, Vec<u8>, [u8; 64], usize), ClientError> {
        let len = model.input_len();
        let mut session = match request.slot {
            SlotChoice::Smallest => self.client.reserve(len, request.timeout)?,
            SlotChoice::Frame => self.client.session(request.timeout)?,
        };
        let slot = session.slot();
        let input = &mut session.infer_input()[..len];
        fill(input);
        let input = input.to_vec();
        let mut out = [0u8; 64];
        let n = session.infer_with(
            handle,
            len,
            &mut out,
            request.priority,
            request.wait,
            request.timeout,
        )?;
        Ok((slot, input, out, n))
    }
}

/// A CPU1 life without a client: its sender and the consumer of its
/// replies, for tests that play a buggy or hostile peer.
pub struct RawCpu1<'c, 'r> {
    region: SharedRegion<'r, RING>,
    sender: Cpu1Sender<'r>,
    replies: Consumer<'r, RING>,
    bell: &'c HostSemaphore,
}

impl<'r> RawCpu1<'_, 'r> {
    /// The shared region.
    pub fn region(&self) -> SharedRegion<'r, RING> {
        self.region
    }

    /// Send `msg` with the next id (and ring CPU0); returns the id.
    ///
    /// # Panics
    ///
    /// When the ring is full or corrupt.
    pub fn send(&mut self, msg: ValidMessage) -> u32 {
        self.sender.send(msg).expect("ring CPU1→CPU0")
    }

    /// Send `msg` with the next id (and ring CPU0), or say why not (a
    /// full ring, for a CPU1 that floods).
    ///
    /// # Errors
    ///
    /// The ring's refusal.
    pub fn try_send(&mut self, msg: ValidMessage) -> Result<u32, IpcError> {
        self.sender.send(msg)
    }

    /// The next reply, waiting up to `timeout` (on the doorbell, or polling
    /// every millisecond for one pushed without a doorbell).
    ///
    /// # Panics
    ///
    /// When the ring is corrupt or the reply does not decode.
    pub fn receive(&mut self, timeout: Duration) -> Option<ValidMessage> {
        let start = std::time::Instant::now();
        loop {
            if let Some(raw) = self.replies.pop().expect("ring CPU0→CPU1") {
                return Some(ValidMessage::try_from(raw).expect("a well-formed reply"));
            }
            if start.elapsed() >= timeout {
                return None;
            }
            let _ = self.bell.take(Timeout::Millis(1));
        }
    }
}

/// Reads of the park request a simulated CPU1 holds for at most (a few
/// milliseconds of `yield`s).
const HOLD_READS: u32 = 20_000;

/// How long a CPU1 life retries its attach before the simulation fails.
const ATTACH_PATIENCE: Duration = Duration::from_secs(2);

impl<'s> Sim<'s> {
    /// Run one CPU1 life with a dispatch thread and no poll threshold:
    /// attach to the live rings, run `body`, then stop and drop everything
    /// CPU1 had.
    ///
    /// # Panics
    ///
    /// As [`cpu1_with`](Self::cpu1_with).
    pub fn cpu1<T>(&self, body: impl FnOnce(&Cpu1<'_, 's>) -> T) -> (T, Cpu1Report) {
        self.cpu1_with(Cpu1Config::default(), body)
    }

    /// Run one CPU1 life built as `config` says.
    ///
    /// # Panics
    ///
    /// When called while another life runs (from its body or another
    /// thread), when CPU1's attach refuses the region, and when `body` or
    /// the dispatch thread panics.
    pub fn cpu1_with<T>(
        &self,
        config: Cpu1Config,
        body: impl FnOnce(&Cpu1<'_, 's>) -> T,
    ) -> (T, Cpu1Report) {
        let (_alive, producer, consumer, first_id, restart) = self.begin_life();
        let region = self.region;
        // The first life's region was just published by this simulation;
        // every later one trusts nothing a previous life left.
        let attach = if restart {
            Client::attach
        } else {
            Client::attach_fresh
        };
        let client: SimClient<'s> = attach(
            &region,
            producer,
            consumer,
            SemaphoreDoorbell::new(self.cpu0_bell),
            HostSemaphore::new,
            MonotonicClock::new(),
            ClientConfig {
                poll_threshold_us: config.poll_threshold_us,
                relax: thread::yield_now,
                swept: false,
            },
        );
        // What the firmware's doorbell interrupt answers park requests
        // with, made at the attach (a request already there is ignored).
        let park = ParkHold::new(region.park_words(), HOLD_READS);
        let stop = AtomicBool::new(false);
        let fallback = u32::try_from(config.dispatch_fallback.as_millis())
            .unwrap_or(u32::MAX)
            .max(1);
        let wakes = AtomicU32::new(0);
        let dispatched = AtomicU32::new(0);
        let value = thread::scope(|s| {
            let halt = || {
                stop.store(true, Ordering::SeqCst);
                self.cpu1_bell.give();
            };
            let guard = StopOnDrop(halt);
            let dispatch = config.dispatch_thread.then(|| {
                thread::Builder::new()
                    .name("cpu1-dispatch".into())
                    .spawn_scoped(s, || {
                        while !stop.load(Ordering::SeqCst) {
                            if self.cpu1_bell.take(Timeout::Millis(fallback)) {
                                wakes.fetch_add(1, Ordering::Relaxed);
                                // CPU1's doorbell interrupt: the park hold first.
                                if park.asked() {
                                    park.hold(thread::yield_now);
                                }
                            }
                            if stop.load(Ordering::SeqCst) {
                                break;
                            }
                            let n = client.dispatch() as u32;
                            dispatched.fetch_add(n, Ordering::Relaxed);
                            // CPU1's maintenance (the firmware's sweep).
                            client.maintain();
                        }
                    })
                    .expect("spawn CPU1 dispatch thread")
            });
            let cpu1 = Cpu1 {
                client: &client,
                control: self.control,
                bell: self.cpu1_bell,
            };
            let value = body(&cpu1);
            drop(guard);
            if let Some(dispatch) = dispatch {
                dispatch.join().expect("CPU1 dispatch thread");
            }
            value
        });
        let report = Cpu1Report {
            client: client.stats(),
            first_id,
            doorbell_wakes: wakes.into_inner(),
            dispatched: dispatched.into_inner(),
        };
        (value, report)
    }

    /// Start a CPU1 life: mark it alive (lives must not overlap), attach to
    /// the region, take the ring handles at their live indices and the
    /// life's first message id, and say whether a life ran before. The
    /// guard ends the life when dropped.
    ///
    /// # Panics
    ///
    /// When another life runs, or CPU1's attach refuses the region.
    #[allow(clippy::type_complexity)]
    fn begin_life(
        &self,
    ) -> (
        StopOnDrop<impl Fn() + '_>,
        Producer<'s, RING>,
        Consumer<'s, RING>,
        u32,
        bool,
    ) {
        let overlapping = self.cpu1_alive.swap(true, Ordering::SeqCst);
        assert!(!overlapping, "CPU1 lives must not overlap");
        let restart = self.cpu1_lived.swap(true, Ordering::SeqCst);
        let alive = StopOnDrop(|| self.cpu1_alive.store(false, Ordering::SeqCst));
        let region = self.region;
        // A booting CPU1 retries its attach for a while: CPU0's maintenance
        // restores control words a previous life may have scribbled.
        let start = std::time::Instant::now();
        while let Err(e) = synaptic_serve::boot::attach(&region) {
            assert!(
                start.elapsed() < ATTACH_PATIENCE,
                "CPU1 attaches to the region: {e:?}"
            );
            thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: `cpu1_alive` makes lives exclusive, and every handle of a
        // life is dropped before it ends (the caller drops them before the
        // guard), so these are the only producer of CPU1→CPU0 and the only
        // consumer of CPU0→CPU1 while they live.
        let (consumer, producer) = unsafe { ring_ends(&region, Direction::Cpu0ToCpu1) };
        let first_id = synaptic_serve::protocol::first_id_after_restart(producer.head());
        (alive, producer, consumer, first_id, restart)
    }

    /// Run one CPU1 life without a client: the body plays a CPU1 that
    /// writes raw messages (a buggy or hostile peer), through [`RawCpu1`].
    ///
    /// # Panics
    ///
    /// As [`cpu1_with`](Self::cpu1_with).
    pub fn cpu1_raw<T>(&self, body: impl FnOnce(&mut RawCpu1<'_, 's>) -> T) -> T {
        let (_alive, producer, consumer, first_id, _) = self.begin_life();
        let region = self.region;
        let mut raw = RawCpu1 {
            region,
            sender: Sender::with_next_id(
                producer,
                SemaphoreDoorbell::new(self.cpu0_bell),
                first_id,
            ),
            replies: consumer,
            bell: self.cpu1_bell,
        };
        body(&mut raw)
    }

    /// Wait (polling the CPU0 counters) until `done` holds.
    ///
    /// # Panics
    ///
    /// After 20 s without `done` (the simulation is stuck).
    pub fn wait_for(&self, done: impl Fn(&Cpu0Control) -> bool) {
        let start = std::time::Instant::now();
        while !done(self.control) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "simulation stuck"
            );
            thread::sleep(Duration::from_micros(200));
        }
    }
}
