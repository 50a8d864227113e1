//! The simulated CPU1: one *life* at a time. A life attaches to the live
//! indices of both rings, builds a fresh client and dispatch thread, runs
//! the application body on the calling thread, then drops all of it. The
//! next life is a CPU1 reset: it starts from the shared buffer alone.
//!
//! Invariants: lives never overlap (each holds the only producer of
//! CPU1→CPU0 and the only consumer of CPU0→CPU1 while it runs); every reply
//! a life's dispatcher pops is recorded before the client sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use synaptic_abi::{Core, Direction, MessageType, Priority, ValidMessage};
use synaptic_ipc::host::{HostSemaphore, SemaphoreDoorbell};
use synaptic_ipc::{DispatchStats, Dispatcher, Handler, Inbox, Semaphore, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::{Caller, Client, ClientError, ClientStats};

use crate::models::{expected_output, fill_input, SimModel};
use crate::{Cpu0Control, Sim, StopOnDrop, RING};

/// The client as the simulated CPU1 builds it: host doorbell to CPU0, host
/// semaphore, monotonic clock, `std::sync::Mutex` as the local lock.
pub type SimClient<'r> = Client<
    'r,
    RING,
    SemaphoreDoorbell<'r>,
    HostSemaphore,
    MonotonicClock,
    Mutex<Caller<'r, RING, SemaphoreDoorbell<'r>>>,
>;

/// What one CPU1 life did.
#[derive(Clone, Debug, Default)]
pub struct Cpu1Report {
    /// The client's counters.
    pub client: ClientStats,
    /// CPU1's dispatcher counters.
    pub dispatch: DispatchStats,
    /// Every reply popped, in order: type, id, status.
    pub replies: Vec<(MessageType, u32, i32)>,
    /// The first message id this life used (from the live ring head).
    pub first_id: u32,
}

/// A checked inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Output bytes returned.
    pub len: usize,
    /// Whether they equal the stub NPU's output for the staged input.
    pub correct: bool,
}

/// A CPU1 life as the test body sees it.
pub struct Cpu1<'c, 'r> {
    client: &'c SimClient<'r>,
    control: &'c Cpu0Control,
}

/// Records each reply, then hands it to the client (the dispatch thread's
/// view of a life).
struct Recorder<'c, 'r> {
    client: &'c SimClient<'r>,
    replies: Mutex<Vec<(MessageType, u32, i32)>>,
}

impl Handler for Recorder<'_, '_> {
    fn handle(&self, msg: &ValidMessage) {
        self.replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((msg.msg_type, msg.msg_id, msg.status));
        self.client.handle(msg);
    }
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

    /// Resolve `model` by name.
    ///
    /// # Errors
    ///
    /// As [`Client::model_lookup`].
    pub fn lookup(&self, model: &SimModel, timeout: Timeout) -> Result<ModelHandle, ClientError> {
        self.client.model_lookup(model.name, timeout)
    }

    /// Stage request `seq`'s tensor for `model` in the slot, infer, and
    /// compare the output with the stub NPU's for that tensor.
    ///
    /// # Errors
    ///
    /// As [`Client::session`] and `Session::infer`.
    pub fn infer(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        seq: u32,
        priority: Priority,
        timeout: Timeout,
    ) -> Result<Checked, ClientError> {
        self.infer_with(model, handle, priority, timeout, |input| {
            fill_input(seq, input)
        })
    }

    /// As [`infer`](Self::infer) with the caller's fill.
    ///
    /// # Errors
    ///
    /// As [`Client::session`] and `Session::infer`.
    pub fn infer_with(
        &self,
        model: &SimModel,
        handle: ModelHandle,
        priority: Priority,
        timeout: Timeout,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Checked, ClientError> {
        let len = model.input_len();
        let mut session = self.client.session(timeout)?;
        let input = &mut session.infer_input()[..len];
        fill(input);
        let expected = expected_output(handle, input, model.output);
        let mut out = [0u8; 64];
        let n = session.infer(handle, len, &mut out, priority, timeout)?;
        Ok(Checked {
            len: n,
            correct: out[..n] == expected[..],
        })
    }
}

impl<'s> Sim<'s> {
    /// Run one CPU1 life: attach to the live rings, start a dispatch thread,
    /// run `body`, then stop and drop everything CPU1 had.
    ///
    /// # Panics
    ///
    /// When called while another life runs (from its body or another
    /// thread), and when `body` or the dispatch thread panics.
    pub fn cpu1<T>(&self, body: impl FnOnce(&Cpu1<'_, 's>) -> T) -> (T, Cpu1Report) {
        let overlapping = self.cpu1_alive.swap(true, Ordering::SeqCst);
        assert!(!overlapping, "CPU1 lives must not overlap");
        let _alive = StopOnDrop(|| self.cpu1_alive.store(false, Ordering::SeqCst));
        let region = self.region;
        // SAFETY: `cpu1_alive` makes lives exclusive, and every handle of a
        // life is dropped before it ends, so these are the only producer of
        // CPU1→CPU0 and the only consumer of CPU0→CPU1 while they live.
        let (producer, consumer) = unsafe {
            (
                Producer::attach(region.ring(Direction::Cpu1ToCpu0)),
                Consumer::attach(region.ring(Direction::Cpu0ToCpu1)),
            )
        };
        let first_id = synaptic_serve::protocol::first_id_after_restart(producer.head());
        let client: SimClient<'s> = Client::attach(
            &region,
            producer,
            SemaphoreDoorbell::new(self.cpu0_bell),
            HostSemaphore::new(),
            MonotonicClock::new(),
        );
        let recorder = Recorder {
            client: &client,
            replies: Mutex::new(Vec::new()),
        };
        let inbox: Inbox<HostSemaphore, 4> = Inbox::new(HostSemaphore::new());
        let stop = AtomicBool::new(false);
        region.set_ready(Core::Cpu1);
        let (value, dispatch) = thread::scope(|s| {
            let halt = || {
                stop.store(true, Ordering::SeqCst);
                self.cpu1_bell.give();
            };
            let guard = StopOnDrop(halt);
            let dispatch = thread::Builder::new()
                .name("cpu1-dispatch".into())
                .spawn_scoped(s, || {
                    let mut dispatcher = Dispatcher::new(consumer, &inbox);
                    for t in [
                        MessageType::InferResp,
                        MessageType::ModelLoad,
                        MessageType::StatusResp,
                    ] {
                        dispatcher.register(t, &recorder).expect("register");
                    }
                    while !stop.load(Ordering::SeqCst) {
                        dispatcher.wait_and_dispatch(self.cpu1_bell, Timeout::Millis(2));
                    }
                    dispatcher.stats()
                })
                .expect("spawn CPU1 dispatch thread");
            let cpu1 = Cpu1 {
                client: &client,
                control: self.control,
            };
            let value = body(&cpu1);
            drop(guard);
            (value, dispatch.join().expect("CPU1 dispatch thread"))
        });
        let report = Cpu1Report {
            client: client.stats(),
            dispatch,
            replies: recorder
                .replies
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
            first_id,
        };
        (value, report)
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
