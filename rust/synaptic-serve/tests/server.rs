//! The CPU0 serving layer against hostile and well-formed requests, driven
//! by hand on one thread: the test plays CPU1, writing the exchange slot
//! and raw messages, and reads the replies from the ring CPU0→CPU1.

mod support;

use std::num::NonZeroU32;

use synaptic_abi::{
    Direction, Errno, Message, Priority, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_OFFSET,
    MODEL_NAME_SIZE, MSG_TYPE_INFER_REQ, MSG_TYPE_INFER_RESP, MSG_TYPE_MODEL_LOAD,
    MSG_TYPE_MODEL_UNLOAD, MSG_TYPE_STATUS_REQ, MSG_TYPE_STATUS_RESP,
};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::{Dispatcher, Inbox, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::arena::{DType, Shape, TensorMeta, TensorRef};
use synaptic_runtime::npu::{stub_output, NpuDevice, StubNpu};
use synaptic_runtime::pipeline::{PipelineError, PipelinePool, Stage};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::registry::{ModelDesc, ModelHandle, Registry};
use synaptic_runtime::sched::{JobRequest, Scheduler, StepOutcome};
use synaptic_runtime::time::{Clock, FakeClock};
use synaptic_serve::protocol::{
    infer_payload_len, LOOKUP_PAYLOAD_LEN, STATUS_SLOT_FREE, STATUS_SLOT_HELD,
};
use synaptic_serve::{Disposition, Runtime, ServeError, Server, SharedRegion};

use support::{Silent, Window, N};

const SEED: u32 = 0x5EED;
const NPU_US: u64 = 700;
const KWS_IN: usize = 49 * 10;
const KWS_OUT: usize = 12;
const FACE_IN: usize = 96 * 96 * 3;
const FACE_OUT: usize = 16;

type Npu<'c> = StubNpu<&'c FakeClock>;

struct H<'a, 'e> {
    region: SharedRegion<'a, N>,
    server: Server<'a>,
    rt: Runtime<'e, 'a, Npu<'e>, FakeClock, 4, 4, 32, 4>,
    sender: Sender<'a, N, Silent>,
    replies: Consumer<'a, N>,
    kws: ModelHandle,
    face: ModelHandle,
    hidden: ModelHandle,
}

fn desc<'n>(name: &'n str, input: &[u32], output: usize) -> ModelDesc<'n> {
    ModelDesc {
        name,
        version: 1,
        input: TensorMeta::new(DType::Int8, Shape::new(input).unwrap()),
        output: TensorMeta::vector(DType::Int8, output).unwrap(),
        flash_offset: 0,
        flash_size: 0,
        sram_needed: 0,
        crc32: 0,
    }
}

/// CPU0 with three registered models, two of them exported.
fn run(test: impl FnOnce(&mut H<'_, '_>)) {
    let window = Window::new();
    let region = window.region();
    let clock = FakeClock::new(0);
    let mut registry: Registry<4> = Registry::new();
    let kws = registry.register(&desc("kws", &[49, 10], KWS_OUT)).unwrap();
    let face = registry
        .register(&desc("face", &[96, 96, 3], FACE_OUT))
        .unwrap();
    let hidden = registry.register(&desc("hidden", &[8], 4)).unwrap();
    let mut npu: Npu<'_> = StubNpu::new(&clock, SEED);
    npu.init().unwrap();
    npu.set_latency_us(NPU_US);
    let mut pool: PipelinePool<4, 32> = PipelinePool::new();
    let mut server = Server::new(&region);
    server.export(&registry, &mut pool, kws).unwrap();
    server.export(&registry, &mut pool, face).unwrap();
    let mut work = vec![0u8; 8 * 1024];
    let mut scheduler: Scheduler<'_, 4> = Scheduler::new(&mut work);
    // SAFETY: the only producer of this ring (CPU0's side, played here).
    let sender = Sender::new(
        unsafe { Producer::attach(region.ring(Direction::Cpu0ToCpu1)) },
        Silent,
    );
    // SAFETY: the only consumer of this ring (CPU1's side, played here).
    let replies = unsafe { Consumer::attach(region.ring(Direction::Cpu0ToCpu1)) };
    let mut h = H {
        region,
        server,
        rt: Runtime {
            scheduler: &mut scheduler,
            registry: &mut registry,
            npu: &mut npu,
            pipelines: &mut pool,
            clock: &clock,
            profiler: None,
        },
        sender,
        replies,
        kws,
        face,
        hidden,
    };
    test(&mut h);
}

fn input_byte(seq: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seq) as u8 >> 1
}

impl<'a> H<'a, '_> {
    fn handle(&mut self, raw: Message) -> Disposition {
        self.server.handle(raw, &mut self.rt, &mut self.sender)
    }

    fn reply(&mut self) -> Option<Message> {
        self.replies.pop().unwrap()
    }

    /// Stage an input of `input_len` bytes for `model` (raw), as CPU1 would.
    fn stage(&self, model: u32, input_len: u32, seq: u32) {
        let exchange = self.region.exchange();
        exchange.set_request(model, input_len);
        // SAFETY: single-threaded test: nothing else holds a slice of the slot.
        let input = unsafe { exchange.input_mut() };
        let n = (input_len as usize).min(EXCHANGE_INPUT_SIZE);
        for (i, b) in input[..n].iter_mut().enumerate() {
            *b = input_byte(seq, i);
        }
    }

    fn expected(&self, model: ModelHandle, len: usize, out_len: usize) -> Vec<u8> {
        // SAFETY: single-threaded test.
        let input = unsafe { self.region.exchange().input() };
        let mut out = vec![0u8; out_len];
        stub_output(SEED, model.raw(), &input[..len], &mut out);
        out
    }

    fn output(&self, len: usize) -> Vec<u8> {
        // SAFETY: single-threaded test.
        let output = unsafe { self.region.exchange().output() };
        output[..len].to_vec()
    }

    fn slot(&self) -> u32 {
        self.region.exchange_offset() as u32
    }

    fn infer_msg(&self, id: u32, priority: Priority, input_len: usize) -> Message {
        Message {
            msg_id: id,
            msg_type: MSG_TYPE_INFER_REQ,
            priority: priority as u8,
            payload_offset: self.slot(),
            payload_len: infer_payload_len(input_len).unwrap_or(0),
            ..Message::default()
        }
    }

    fn lookup_msg(&self, id: u32, name: &[u8]) -> Message {
        let mut field = [0u8; MODEL_NAME_SIZE];
        field[..name.len()].copy_from_slice(name);
        self.region.exchange().set_model_name(&field);
        Message {
            msg_id: id,
            msg_type: MSG_TYPE_MODEL_LOAD,
            priority: Priority::Normal as u8,
            payload_offset: self.slot(),
            payload_len: LOOKUP_PAYLOAD_LEN,
            ..Message::default()
        }
    }

    /// Step the scheduler until the inference in flight is answered.
    fn finish(&mut self) -> Message {
        for _ in 0..64 {
            if let Some(done) = self.server.complete(&mut self.rt, &mut self.sender) {
                let reply = self.reply().expect("a reply for the completion");
                assert_eq!(reply.msg_id, done.msg_id);
                assert_eq!(reply.status, done.status);
                return reply;
            }
            self.rt.step();
        }
        panic!("inference never completed");
    }

    /// Send `raw`, expect an immediate refusal, return the reply.
    fn refused(&mut self, raw: Message, errno: Errno) -> Message {
        let pending = self.rt.scheduler.pending();
        let d = self.handle(raw);
        assert_eq!(
            d,
            Disposition::Answered {
                status: errno.negative()
            },
            "{raw:?}"
        );
        let reply = self.reply().expect("a reply to a refused request");
        assert_eq!(reply.msg_id, raw.msg_id);
        assert_eq!(reply.status, errno.negative());
        assert_eq!(
            self.rt.scheduler.pending(),
            pending,
            "nothing may be submitted"
        );
        reply
    }
}

#[test]
fn lookup_resolves_exported_models_only() {
    run(|h| {
        let msg = h.lookup_msg(1, b"kws");
        assert_eq!(
            h.handle(msg),
            Disposition::Answered {
                status: h.kws.raw() as i32
            }
        );
        let reply = h.reply().unwrap();
        assert_eq!(reply.msg_type, MSG_TYPE_MODEL_LOAD);
        assert_eq!(reply.msg_id, 1);
        assert_eq!(ModelHandle::from_raw(reply.status as u32), h.kws);
        let msg = h.lookup_msg(2, b"face");
        h.handle(msg);
        assert_eq!(h.reply().unwrap().status, h.face.raw() as i32);
        // Registered but not exported, and unknown: both look absent.
        let msg = h.lookup_msg(3, b"hidden");
        h.refused(msg, Errno::NoEnt);
        let msg = h.lookup_msg(4, b"nope");
        h.refused(msg, Errno::NoEnt);
        let s = h.server.stats();
        assert_eq!(
            (s.requests, s.lookups, s.errors, s.violations),
            (4, 2, 2, 2)
        );
        assert!(h.hidden.raw() != 0);
    });
}

#[test]
fn lookup_rejects_hostile_names() {
    run(|h| {
        // Unterminated: 32 name bytes, no NUL.
        let msg = h.lookup_msg(1, b"kws");
        h.region.exchange().set_model_name(&[b'k'; MODEL_NAME_SIZE]);
        h.refused(msg, Errno::Inval);
        // Not UTF-8.
        let msg = h.lookup_msg(2, &[0xFF, 0xFE, b'k']);
        h.refused(msg, Errno::Inval);
        // Empty.
        let msg = h.lookup_msg(3, b"");
        h.refused(msg, Errno::Inval);
        // Payload that does not describe the header.
        let msg = Message {
            payload_len: 0,
            ..h.lookup_msg(4, b"kws")
        };
        h.refused(msg, Errno::BadMsg);
        assert_eq!(h.server.stats().violations, 4);
    });
}

#[test]
fn infer_runs_the_slot_input_and_answers_with_the_output_length() {
    run(|h| {
        for (seq, (model, len, out_len)) in [
            (h.kws, KWS_IN, KWS_OUT),
            (h.face, FACE_IN, FACE_OUT),
            (h.kws, KWS_IN, KWS_OUT),
        ]
        .into_iter()
        .enumerate()
        {
            let id = 10 + seq as u32;
            h.stage(model.raw(), len as u32, id);
            let d = h.handle(h.infer_msg(id, Priority::RealTime, len));
            assert!(matches!(d, Disposition::Accepted { .. }), "{d:?}");
            assert!(h.server.is_busy());
            assert!(h.reply().is_none(), "no reply before the job finishes");
            let reply = h.finish();
            assert_eq!(reply.msg_type, MSG_TYPE_INFER_RESP);
            assert_eq!(reply.priority, Priority::RealTime as u8);
            assert_eq!(reply.status, out_len as i32);
            assert_eq!(
                reply.payload_offset,
                h.slot() + EXCHANGE_OUTPUT_OFFSET as u32
            );
            assert_eq!(h.output(out_len), h.expected(model, len, out_len));
            let header = h.region.exchange().read_header();
            assert_eq!(
                (header.output_len, header.infer_status),
                (out_len as u32, 0)
            );
            assert!(!h.server.is_busy());
        }
        let s = h.server.stats();
        assert_eq!((s.requests, s.served, s.errors, s.timed), (3, 3, 0, 3));
        // The fake clock moves only in the NPU: latency is exactly its delay.
        assert_eq!(s.latency_max_us, NPU_US);
        assert_eq!(s.latency_average_us(), NPU_US);
    });
}

#[test]
fn overlong_input_len_is_refused_before_anything_runs() {
    run(|h| {
        for (id, len) in [
            (1, EXCHANGE_INPUT_SIZE as u32 + 1),
            (2, u32::MAX),
            (3, 1 << 31),
        ] {
            h.stage(h.face.raw(), len, id);
            // The payload claims the whole slot input, so only the header lies.
            let msg = h.infer_msg(id, Priority::Normal, EXCHANGE_INPUT_SIZE);
            h.refused(msg, Errno::TooBig);
            let header = h.region.exchange().read_header();
            assert_eq!(header.infer_status, Errno::TooBig.negative());
        }
        let s = h.server.stats();
        assert_eq!((s.errors, s.violations, s.served), (3, 3, 0));
    });
}

#[test]
fn stale_unknown_and_unexported_handles_are_refused() {
    run(|h| {
        // A handle kept across an unregister is stale even once its slot is reused.
        let old = h.hidden;
        h.rt.registry.unregister(old).unwrap();
        let reused = h.rt.registry.register(&desc("hidden2", &[8], 4)).unwrap();
        assert_eq!(reused.index(), old.index());
        h.server
            .export(&*h.rt.registry, &mut *h.rt.pipelines, reused)
            .unwrap();
        h.stage(old.raw(), 8, 1);
        h.refused(h.infer_msg(1, Priority::Normal, 8), Errno::NoEnt);
        // The fresh handle works.
        h.stage(reused.raw(), 8, 2);
        assert!(matches!(
            h.handle(h.infer_msg(2, Priority::Normal, 8)),
            Disposition::Accepted { .. }
        ));
        assert_eq!(h.finish().status, 4);
        // Never issued: raw 0, a slot out of range, a generation from the future.
        for (id, raw) in [(3, 0), (4, 0x0001_0007), (5, h.kws.raw() + (9 << 16))] {
            h.stage(raw, KWS_IN as u32, id);
            h.refused(h.infer_msg(id, Priority::Normal, KWS_IN), Errno::Inval);
        }
        // Registered, not exported.
        let private = h.rt.registry.register(&desc("private", &[8], 4)).unwrap();
        h.stage(private.raw(), 8, 6);
        h.refused(h.infer_msg(6, Priority::Normal, 8), Errno::NoEnt);
        assert_eq!(h.server.stats().violations, 5);
    });
}

#[test]
fn payloads_outside_the_pool_or_off_the_slot_are_refused() {
    run(|h| {
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        let good = h.infer_msg(1, Priority::Normal, KWS_IN);
        let pool_end = h.region.payload_pool().end as u32;
        let cases = [
            // Into the control block and the rings.
            (
                Message {
                    payload_offset: 0,
                    ..good
                },
                Errno::Fault,
            ),
            (
                Message {
                    payload_offset: 64,
                    ..good
                },
                Errno::Fault,
            ),
            // Past the end of the region, and wrapping the address space.
            (
                Message {
                    payload_offset: pool_end - 8,
                    ..good
                },
                Errno::Fault,
            ),
            (
                Message {
                    payload_offset: u32::MAX,
                    ..good
                },
                Errno::Fault,
            ),
            // Inside the pool but not at the exchange slot.
            (
                Message {
                    payload_offset: good.payload_offset + 4,
                    ..good
                },
                Errno::Fault,
            ),
            // Shorter than the header.
            (
                Message {
                    payload_len: 16,
                    ..good
                },
                Errno::Fault,
            ),
            // At the slot, but disagreeing with the header's input_len.
            (
                Message {
                    payload_len: good.payload_len - 1,
                    ..good
                },
                Errno::BadMsg,
            ),
            (
                Message {
                    payload_len: good.payload_len + 1,
                    ..good
                },
                Errno::BadMsg,
            ),
        ];
        for (k, (msg, errno)) in cases.into_iter().enumerate() {
            let msg = Message {
                msg_id: 100 + k as u32,
                ..msg
            };
            h.refused(msg, errno);
        }
        let s = h.server.stats();
        assert_eq!((s.violations, s.served), (8, 0));
        // The well-formed request still works afterwards.
        assert!(matches!(h.handle(good), Disposition::Accepted { .. }));
        assert_eq!(h.finish().status, KWS_OUT as i32);
    });
}

#[test]
fn bad_priority_and_type_bytes() {
    run(|h| {
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        for (id, priority) in [(1, 3u8), (2, 0xFF)] {
            let msg = Message {
                priority,
                ..h.infer_msg(id, Priority::Normal, KWS_IN)
            };
            let reply = h.refused(msg, Errno::BadMsg);
            assert_eq!(reply.msg_type, MSG_TYPE_INFER_RESP);
        }
        let status = Message {
            msg_id: 3,
            msg_type: MSG_TYPE_STATUS_REQ,
            priority: 7,
            ..Message::default()
        };
        assert_eq!(
            h.refused(status, Errno::BadMsg).msg_type,
            MSG_TYPE_STATUS_RESP
        );
        // A type byte that names nothing has no reply type: dropped, counted.
        let junk = Message {
            msg_id: 4,
            msg_type: 9,
            ..Message::default()
        };
        assert_eq!(h.handle(junk), Disposition::Ignored);
        assert!(h.reply().is_none());
        let s = h.server.stats();
        assert_eq!((s.requests, s.violations, s.ignored), (4, 3, 1));
    });
}

#[test]
fn input_len_must_match_the_model() {
    run(|h| {
        for (id, len) in [(1, KWS_IN - 1), (2, KWS_IN + 1), (3, FACE_IN)] {
            h.stage(h.kws.raw(), len as u32, id);
            h.refused(h.infer_msg(id, Priority::Normal, len), Errno::Inval);
        }
        // Zero bytes of input is a size mismatch too.
        h.stage(h.kws.raw(), 0, 4);
        h.refused(h.infer_msg(4, Priority::Normal, 0), Errno::Inval);
    });
}

#[test]
fn a_second_slot_request_while_busy_is_refused_without_touching_the_slot() {
    run(|h| {
        h.stage(h.face.raw(), FACE_IN as u32, 1);
        let expected = h.expected(h.face, FACE_IN, FACE_OUT);
        assert!(matches!(
            h.handle(h.infer_msg(1, Priority::Normal, FACE_IN)),
            Disposition::Accepted { .. }
        ));
        let status = Message {
            msg_id: 2,
            msg_type: MSG_TYPE_STATUS_REQ,
            timestamp_us: 1234,
            ..Message::default()
        };
        assert_eq!(
            h.handle(status),
            Disposition::Answered {
                status: STATUS_SLOT_HELD
            }
        );
        let pong = h.reply().unwrap();
        assert_eq!(
            (pong.msg_type, pong.msg_id, pong.timestamp_us),
            (MSG_TYPE_STATUS_RESP, 2, 1234)
        );
        h.refused(h.infer_msg(3, Priority::RealTime, KWS_IN), Errno::Busy);
        h.refused(h.lookup_msg(4, b"kws"), Errno::Busy);
        // The refusals wrote nothing: the header and input are the first request's.
        let header = h.region.exchange().read_header();
        assert_eq!(header.infer_status, 0);
        let reply = h.finish();
        assert_eq!((reply.msg_id, reply.status), (1, FACE_OUT as i32));
        assert_eq!(h.output(FACE_OUT), expected);
        assert_eq!(
            h.handle(Message {
                msg_id: 5,
                ..status
            }),
            Disposition::Answered {
                status: STATUS_SLOT_FREE
            }
        );
        let s = h.server.stats();
        assert_eq!((s.busy, s.status, s.served), (2, 2, 1));
    });
}

#[test]
fn npu_failures_propagate_as_the_runtimes_errno() {
    run(|h| {
        h.rt.npu.fail_every(NonZeroU32::new(2));
        let mut statuses = Vec::new();
        for id in 1..=6 {
            h.stage(h.kws.raw(), KWS_IN as u32, id);
            h.handle(h.infer_msg(id, Priority::Normal, KWS_IN));
            statuses.push(h.finish().status);
        }
        let io = Errno::Io.negative();
        let ok = KWS_OUT as i32;
        assert_eq!(statuses, [ok, io, ok, io, ok, io]);
        let header = h.region.exchange().read_header();
        assert_eq!((header.output_len, header.infer_status), (0, io));
        let s = h.server.stats();
        assert_eq!((s.served, s.errors, s.violations), (3, 3, 0));
    });
}

#[test]
fn unsupported_and_unexpected_types() {
    run(|h| {
        let unload = Message {
            msg_id: 1,
            msg_type: MSG_TYPE_MODEL_UNLOAD,
            ..Message::default()
        };
        h.refused(unload, Errno::NotSup);
        for (id, t) in [(2, MSG_TYPE_INFER_RESP), (3, MSG_TYPE_STATUS_RESP)] {
            let stray = Message {
                msg_id: id,
                msg_type: t,
                ..Message::default()
            };
            assert_eq!(h.handle(stray), Disposition::Ignored);
        }
        assert!(h.reply().is_none());
        assert_eq!(h.server.stats().ignored, 2);
    });
}

fn pass(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    let n = input.data().len();
    if out.len() < n {
        return Err(ProcessError::OutputTooSmall {
            needed: n,
            actual: out.len(),
        });
    }
    out[..n].copy_from_slice(input.data());
    Ok(input.meta())
}

#[test]
fn a_remote_realtime_request_runs_at_the_next_stage_boundary_of_a_local_job() {
    run(|h| {
        let stage = Stage {
            name: "pass",
            func: pass,
            config: StageConfig::None,
        };
        let local = h.rt.pipelines.create("local").unwrap();
        for _ in 0..6 {
            h.rt.pipelines.add_preprocess(local, stage).unwrap();
        }
        h.rt.pipelines.add_model(local, h.kws).unwrap();
        for _ in 0..6 {
            h.rt.pipelines.add_postprocess(local, stage).unwrap();
        }
        h.rt.pipelines.build(local).unwrap();
        let data = vec![5u8; KWS_IN];
        // The scheduler borrows its inputs for its whole life: leak this one.
        let data: &'static [u8] = Box::leak(data.into_boxed_slice());
        let meta = TensorMeta::new(DType::Int8, Shape::new(&[49, 10]).unwrap());
        let job =
            h.rt.scheduler
                .submit(
                    JobRequest::new(local, TensorRef::wrap(meta, data).unwrap()),
                    &*h.rt.pipelines,
                    h.rt.clock,
                )
                .unwrap();
        for _ in 0..3 {
            assert!(matches!(h.rt.step(), StepOutcome::Ran { job: j, .. } if j == job));
        }
        h.stage(h.face.raw(), FACE_IN as u32, 1);
        let accepted_at = h.rt.clock.now_us();
        let Disposition::Accepted { job: remote } =
            h.handle(h.infer_msg(1, Priority::RealTime, FACE_IN))
        else {
            panic!("not accepted")
        };
        // The very next step is the remote job's only one.
        assert_eq!(
            h.rt.step(),
            StepOutcome::Ran {
                job: remote,
                step: 0,
                finished: true
            }
        );
        let done = h.server.complete(&mut h.rt, &mut h.sender).unwrap();
        assert_eq!(done.status, FACE_OUT as i32);
        assert_eq!(done.latency_us, NPU_US, "no local stage ran in between");
        assert_eq!(h.rt.clock.now_us() - accepted_at, NPU_US);
        // The local job resumes where it stopped: 13 steps, 3 before.
        let mut local_steps = 3;
        while let StepOutcome::Ran { job: j, .. } = h.rt.step() {
            assert_eq!(j, job);
            local_steps += 1;
        }
        assert_eq!(local_steps, 13);
    });
}

#[test]
fn poll_serves_requests_from_the_dispatch_inbox() {
    run(|h| {
        // CPU1's producer and CPU0's dispatcher on the ring CPU1→CPU0.
        let ring = h.region.ring(Direction::Cpu1ToCpu0);
        // SAFETY: the only producer and consumer of this ring.
        let (mut cpu1, consumer) = unsafe { (Producer::attach(ring), Consumer::attach(ring)) };
        let inbox: Inbox<HostSemaphore, 16> = Inbox::new(HostSemaphore::new());
        let mut dispatcher = Dispatcher::new(consumer, &inbox);
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        cpu1.push(h.infer_msg(1, Priority::Normal, KWS_IN)).unwrap();
        cpu1.push(Message {
            msg_id: 2,
            msg_type: MSG_TYPE_STATUS_REQ,
            ..Message::default()
        })
        .unwrap();
        assert_eq!(dispatcher.dispatch_all(), 2);
        let mut replies = Vec::new();
        for _ in 0..8 {
            h.server
                .poll(&inbox, &mut h.rt, &mut h.sender, Timeout::NoWait);
            while let Some(r) = h.reply() {
                replies.push((r.msg_id, r.msg_type, r.status));
            }
        }
        assert_eq!(
            replies,
            [
                (2, MSG_TYPE_STATUS_RESP, STATUS_SLOT_HELD),
                (1, MSG_TYPE_INFER_RESP, KWS_OUT as i32)
            ]
        );
        assert_eq!(h.output(KWS_OUT), h.expected(h.kws, KWS_IN, KWS_OUT));
        // Idle: waits `idle` for the inbox and does nothing.
        assert_eq!(
            h.server
                .poll(&inbox, &mut h.rt, &mut h.sender, Timeout::Millis(1)),
            0
        );
    });
}

#[test]
fn export_checks_sizes_names_and_capacity() {
    run(|h| {
        let big_in =
            h.rt.registry
                .register(&desc("big-in", &[EXCHANGE_INPUT_SIZE as u32 + 1], 4))
                .unwrap();
        assert_eq!(
            h.server
                .export(&*h.rt.registry, &mut *h.rt.pipelines, big_in),
            Err(ServeError::ModelTooLarge)
        );
        h.rt.registry.unregister(big_in).unwrap();
        // A different pipeline already has the model's name.
        let clash = h.rt.pipelines.create("hidden").unwrap();
        h.rt.pipelines.add_model(clash, h.kws).unwrap();
        h.rt.pipelines.build(clash).unwrap();
        assert_eq!(
            h.server
                .export(&*h.rt.registry, &mut *h.rt.pipelines, h.hidden),
            Err(ServeError::Pipeline(PipelineError::DuplicateName))
        );
        // Exporting twice is a no-op.
        assert_eq!(
            h.server
                .export(&*h.rt.registry, &mut *h.rt.pipelines, h.kws),
            Ok(())
        );
        assert_eq!(ServeError::ModelTooLarge.to_errno(), Errno::TooBig);
    });
}
