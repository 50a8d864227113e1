//! The CPU0 serving layer against hostile and well-formed requests, driven
//! by hand on one thread: the test plays CPU1, writing the exchange slot
//! and raw messages, and reads the replies from the ring CPU0→CPU1. CPU0 is
//! the host entry point's (`synaptic_serve::loopback`), lent piece by piece
//! ([`Loopback::by_hand`]): each test hands its server one request, runs
//! one scheduler step or one intake drain at a time.

use std::num::NonZeroU32;

use synaptic_abi::{
    Errno, Message, Priority, EXCHANGE_INPUT_SIZE, MODEL_NAME_SIZE, MSG_TYPE_INFER_REQ,
    MSG_TYPE_INFER_RESP, MSG_TYPE_MODEL_LOAD, MSG_TYPE_MODEL_UNLOAD, MSG_TYPE_STATUS_REQ,
    MSG_TYPE_STATUS_RESP, REQUEST_FLAG_POLLED,
};
use synaptic_ipc::Timeout;
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::arena::{DType, Shape, TensorMeta, TensorRef};
use synaptic_runtime::npu::{stub_output, NpuDevice};
use synaptic_runtime::pipeline::{PipelineError, Stage};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::registry::{ModelDesc, ModelHandle};
use synaptic_runtime::sched::{JobRequest, StepOutcome};
use synaptic_runtime::time::Clock;
use synaptic_serve::loopback::{
    Cpu0Inbox, Cpu0Port, Loopback, LoopbackOptions, LoopbackRuntime, RegionBuffer, RING as N, SEED,
    SLOTS,
};
use synaptic_serve::protocol::{infer_payload_len, LOOKUP_PAYLOAD_LEN};
use synaptic_serve::update::ModelUpdates;
use synaptic_serve::{Disposition, Intake, ServeError, Server, SharedRegion, SlotLedger};

const NPU_US: u64 = 700;
const KWS_IN: usize = 49 * 10;
const KWS_OUT: usize = 12;
const FACE_IN: usize = 96 * 96 * 3;
const FACE_OUT: usize = 16;

/// CPU0's pieces, lent by the loopback, and CPU1's end of the reply ring.
struct H<'a, 'r> {
    region: SharedRegion<'r, N>,
    server: &'a mut Server<'r, N>,
    rt: LoopbackRuntime<'a, 'r>,
    /// CPU0's reply port (counts doorbell interrupts and events).
    port: &'a Cpu0Port<'r>,
    ledger: &'a SlotLedger,
    replies: &'a mut Consumer<'r, N>,
    kws: ModelHandle,
    face: ModelHandle,
    hidden: ModelHandle,
}

fn desc<'n>(name: &'n str, input: &[u32], output: usize) -> ModelDesc<'n> {
    ModelDesc::int8(name, input, output).unwrap()
}

/// CPU0 of the loopback with three registered models, two of them
/// exported (its KWS and FACE), a 700 us stub NPU and work memory for a
/// local job; the test plays CPU1 with raw ring pushes.
fn run(test: impl FnOnce(&mut H<'_, '_>)) {
    run_with_intake(|h, _, _, _| test(h));
}

/// As [`run`], with CPU1's producer of ring CPU1→CPU0, CPU0's intake on
/// its other end, and the inbox between the intake and the serving layer.
fn run_with_intake(
    test: impl FnOnce(&mut H<'_, '_>, &mut Producer<'_, N>, &mut Intake<'_, N>, &Cpu0Inbox),
) {
    run_on(None, test);
}

/// As [`run_with_intake`], the serving layer driving `updates` for
/// `MODEL_UPDATE`.
fn run_on(
    updates: Option<&mut dyn ModelUpdates>,
    test: impl FnOnce(&mut H<'_, '_>, &mut Producer<'_, N>, &mut Intake<'_, N>, &Cpu0Inbox),
) {
    let mut buffer = RegionBuffer::new();
    let mut work = vec![0u8; 32 * 1024];
    let options = LoopbackOptions {
        npu_latency_us: NPU_US,
        work: &mut work,
        ..LoopbackOptions::default()
    };
    let mut cores = Loopback::with_options(buffer.bytes(), options).expect("loopback");
    let (region, kws, face) = (cores.region(), cores.kws(), cores.face());
    cores.by_hand(|cpu0, cpu1| {
        let mut rt = cpu0.rt;
        if let Some(updates) = updates {
            // A coercion site: the trait object's bound shortens to the region's.
            rt.updates = Some(updates);
        }
        let hidden = rt.registry.register(&desc("hidden", &[8], 4)).unwrap();
        let mut h = H {
            region,
            server: cpu0.server,
            rt,
            port: cpu0.port,
            ledger: cpu0.ledger,
            replies: cpu1.replies,
            kws,
            face,
            hidden,
        };
        test(&mut h, cpu1.requests, cpu0.intake, cpu0.inbox);
    });
}

fn input_byte(seq: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seq) as u8 >> 1
}

fn status_req(id: u32, flags: i32) -> Message {
    Message {
        msg_id: id,
        msg_type: MSG_TYPE_STATUS_REQ,
        priority: Priority::Normal as u8,
        timestamp_us: 1000 + id,
        status: flags,
        ..Message::default()
    }
}

impl<'r> H<'_, 'r> {
    fn handle(&mut self, raw: Message) -> Disposition {
        self.server
            .handle(raw, &mut self.rt, self.port, self.ledger)
    }

    fn reply(&mut self) -> Option<Message> {
        self.replies.pop().unwrap()
    }

    /// `turns` serving turns that do not wait, and every reply they gave:
    /// id, type, status.
    fn serve(&mut self, inbox: &Cpu0Inbox, turns: usize) -> Vec<(u32, u8, i32)> {
        let mut replies = Vec::new();
        for _ in 0..turns {
            self.server
                .poll(inbox, &mut self.rt, self.port, self.ledger, Timeout::NoWait);
            while let Some(r) = self.reply() {
                replies.push((r.msg_id, r.msg_type, r.status));
            }
        }
        replies
    }

    fn exchange(&self, slot: usize) -> synaptic_serve::Exchange<'r> {
        self.region.exchange(slot).expect("a slot of the geometry")
    }

    /// Stage an input of `input_len` bytes for `model` (raw) in the frame
    /// slot, as CPU1 would.
    fn stage(&self, model: u32, input_len: u32, seq: u32) {
        self.stage_in(0, model, input_len, seq);
    }

    /// Stage an input in slot `slot`.
    fn stage_in(&self, slot: usize, model: u32, input_len: u32, seq: u32) {
        let exchange = self.exchange(slot);
        exchange.set_request(model, input_len);
        // SAFETY: single-threaded test: nothing else holds a slice of the slot.
        let input = unsafe { exchange.input_mut() };
        let n = (input_len as usize).min(input.len());
        for (i, b) in input[..n].iter_mut().enumerate() {
            *b = input_byte(seq, i);
        }
    }

    fn expected(&self, model: ModelHandle, len: usize, out_len: usize) -> Vec<u8> {
        self.expected_in(0, model, len, out_len)
    }

    /// What the stub NPU answers for the input staged in `slot`.
    fn expected_in(&self, slot: usize, model: ModelHandle, len: usize, out_len: usize) -> Vec<u8> {
        // SAFETY: single-threaded test.
        let input = unsafe { self.exchange(slot).input() };
        let mut out = vec![0u8; out_len];
        stub_output(SEED, model.raw(), &input[..len], &mut out);
        out
    }

    fn output(&self, len: usize) -> Vec<u8> {
        self.output_in(0, len)
    }

    fn output_in(&self, slot: usize, len: usize) -> Vec<u8> {
        // SAFETY: single-threaded test.
        let output = unsafe { self.exchange(slot).output() };
        output[..len].to_vec()
    }

    /// Offset of the frame slot (what messages name).
    fn slot(&self) -> u32 {
        self.slot_at(0)
    }

    fn slot_at(&self, slot: usize) -> u32 {
        self.region.slot_offset(slot).unwrap() as u32
    }

    fn infer_msg(&self, id: u32, priority: Priority, input_len: usize) -> Message {
        self.infer_msg_in(0, id, priority, input_len)
    }

    fn infer_msg_in(&self, slot: usize, id: u32, priority: Priority, input_len: usize) -> Message {
        let capacity = SLOTS.input_capacity(slot).unwrap();
        Message {
            msg_id: id,
            msg_type: MSG_TYPE_INFER_REQ,
            priority: priority as u8,
            payload_offset: self.slot_at(slot),
            payload_len: infer_payload_len(input_len, capacity).unwrap_or(0),
            ..Message::default()
        }
    }

    fn lookup_msg(&self, id: u32, name: &[u8]) -> Message {
        self.lookup_msg_in(0, id, name)
    }

    fn lookup_msg_in(&self, slot: usize, id: u32, name: &[u8]) -> Message {
        let mut field = [0u8; MODEL_NAME_SIZE];
        field[..name.len()].copy_from_slice(name);
        self.exchange(slot).set_model_name(&field);
        Message {
            msg_id: id,
            msg_type: MSG_TYPE_MODEL_LOAD,
            priority: Priority::Normal as u8,
            payload_offset: self.slot_at(slot),
            payload_len: LOOKUP_PAYLOAD_LEN,
            ..Message::default()
        }
    }

    /// Step the scheduler until an inference in flight is answered.
    fn finish(&mut self) -> Message {
        for _ in 0..64 {
            if let Some(done) = self.server.complete(&mut self.rt, self.port, self.ledger) {
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
        h.exchange(0).set_model_name(&[b'k'; MODEL_NAME_SIZE]);
        h.refused(msg, Errno::Inval);
        // Not UTF-8.
        let msg = h.lookup_msg(2, &[0xFF, 0xFE, b'k']);
        h.refused(msg, Errno::Inval);
        // Empty.
        let msg = h.lookup_msg(3, b"");
        h.refused(msg, Errno::Inval);
        // Payload that does not describe the header.
        let msg = Message {
            payload_len: LOOKUP_PAYLOAD_LEN + 4,
            ..h.lookup_msg(4, b"kws")
        };
        h.refused(msg, Errno::BadMsg);
        // No payload at all names no slot.
        let msg = Message {
            payload_len: 0,
            ..h.lookup_msg(5, b"kws")
        };
        h.refused(msg, Errno::Fault);
        assert_eq!(h.server.stats().violations, 5);
    });
}

#[test]
fn infer_runs_the_slot_input_and_answers_with_the_output_length() {
    run(|h| {
        for (seq, (slot, model, len, out_len)) in [
            (0, h.kws, KWS_IN, KWS_OUT),
            (0, h.face, FACE_IN, FACE_OUT),
            (3, h.kws, KWS_IN, KWS_OUT),
            (1, h.kws, KWS_IN, KWS_OUT),
        ]
        .into_iter()
        .enumerate()
        {
            let id = 10 + seq as u32;
            h.stage_in(slot, model.raw(), len as u32, id);
            let d = h.handle(h.infer_msg_in(slot, id, Priority::RealTime, len));
            assert!(matches!(d, Disposition::Accepted { .. }), "{d:?}");
            assert!(h.server.is_busy());
            assert_eq!(h.server.busy_mask(), 1 << slot);
            assert!(h.reply().is_none(), "no reply before the job finishes");
            let reply = h.finish();
            assert_eq!(reply.msg_type, MSG_TYPE_INFER_RESP);
            assert_eq!(reply.priority, Priority::RealTime as u8);
            assert_eq!(reply.status, out_len as i32);
            // The reply names the slot it hands back, and the output's length.
            assert_eq!(reply.payload_offset, h.slot_at(slot));
            assert_eq!(usize::from(reply.payload_len), out_len);
            assert_eq!(
                h.output_in(slot, out_len),
                h.expected_in(slot, model, len, out_len)
            );
            let header = h.exchange(slot).read_header();
            assert_eq!(
                (header.output_len, header.infer_status),
                (out_len as u32, 0)
            );
            assert!(!h.server.is_busy());
        }
        let s = h.server.stats();
        assert_eq!((s.requests, s.served, s.errors, s.timed), (4, 4, 0, 4));
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
            let header = h.exchange(0).read_header();
            assert_eq!(header.infer_status, Errno::TooBig.negative());
        }
        // A small slot's capacity is its own: 4,096 bytes, not the frame's.
        let small = SLOTS.small_input as usize;
        for (id, len) in [(4, small as u32 + 1), (5, FACE_IN as u32)] {
            h.stage_in(2, h.face.raw(), len, id);
            let msg = h.infer_msg_in(2, id, Priority::Normal, small);
            h.refused(msg, Errno::TooBig);
            let header = h.exchange(2).read_header();
            assert_eq!(header.infer_status, Errno::TooBig.negative());
        }
        let s = h.server.stats();
        assert_eq!((s.errors, s.violations, s.served), (5, 5, 0));
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
            timestamp_us: 1234,
            ..status_req(2, 0)
        };
        // The status is the mask of held slots: the frame slot.
        assert_eq!(h.handle(status), Disposition::Answered { status: 0b0001 });
        let pong = h.reply().unwrap();
        assert_eq!(
            (pong.msg_type, pong.msg_id, pong.timestamp_us, pong.status),
            (MSG_TYPE_STATUS_RESP, 2, 1234, 0b0001)
        );
        h.refused(h.infer_msg(3, Priority::RealTime, KWS_IN), Errno::Busy);
        h.refused(h.lookup_msg(4, b"kws"), Errno::Busy);
        // The refusals wrote nothing: the header and input are the first request's.
        let header = h.exchange(0).read_header();
        assert_eq!(
            (header.model, header.input_len),
            (h.face.raw(), FACE_IN as u32)
        );
        assert_eq!(header.infer_status, 0);
        // Another slot is free meanwhile.
        h.stage_in(2, h.kws.raw(), KWS_IN as u32, 5);
        assert!(matches!(
            h.handle(h.infer_msg_in(2, 5, Priority::Normal, KWS_IN)),
            Disposition::Accepted { .. }
        ));
        h.handle(Message {
            msg_id: 6,
            ..status
        });
        assert_eq!(h.reply().unwrap().status, 0b0101);
        let first = h.finish();
        let second = h.finish();
        let mut done = [(first.msg_id, first.status), (second.msg_id, second.status)];
        done.sort_unstable();
        assert_eq!(done, [(1, FACE_OUT as i32), (5, KWS_OUT as i32)]);
        assert_eq!(h.output(FACE_OUT), expected);
        assert_eq!(
            h.handle(Message {
                msg_id: 7,
                ..status
            }),
            Disposition::Answered { status: 0 }
        );
        let s = h.server.stats();
        assert_eq!((s.busy, s.status, s.served), (2, 3, 2));
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
        let header = h.exchange(0).read_header();
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
        // The scheduler borrows its inputs for its whole life: a static
        // outlives it (and is no leak that miri reports).
        static DATA: [u8; KWS_IN] = [5; KWS_IN];
        let data: &'static [u8] = &DATA;
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
        let done = h.server.complete(&mut h.rt, h.port, h.ledger).unwrap();
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
fn poll_serves_requests_the_intake_forwarded() {
    run_with_intake(|h, cpu1, intake, inbox| {
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        cpu1.push(h.infer_msg(1, Priority::Normal, KWS_IN)).unwrap();
        cpu1.push(status_req(2, 0)).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 2);
        // The status was answered at the front door, behind the request.
        let pong = h.reply().unwrap();
        assert_eq!(
            (pong.msg_id, pong.msg_type, pong.status),
            (2, MSG_TYPE_STATUS_RESP, 1)
        );
        assert_eq!(h.ledger.mask(), 1);
        let replies = h.serve(inbox, 8);
        assert_eq!(replies, [(1, MSG_TYPE_INFER_RESP, KWS_OUT as i32)]);
        assert_eq!(h.output(KWS_OUT), h.expected(h.kws, KWS_IN, KWS_OUT));
        assert_eq!(h.ledger.mask(), 0, "released after the reply");
        let i = intake.stats();
        assert_eq!((i.requests, i.status, i.forwarded), (2, 1, 1));
        let s = h.server.stats();
        assert_eq!((s.requests, s.served, s.status), (1, 1, 0));
        let all = i.merged(&s);
        assert_eq!(
            (all.requests, all.served, all.status, all.errors),
            (3, 1, 1, 0)
        );
        // Idle: waits `idle` for the inbox and does nothing.
        assert_eq!(
            h.server
                .poll(inbox, &mut h.rt, h.port, h.ledger, Timeout::Millis(1)),
            0
        );
    });
}

#[test]
fn a_lone_request_runs_at_once_and_is_answered_in_its_turn() {
    for latency_us in [0, NPU_US] {
        run_with_intake(|h, cpu1, intake, inbox| {
            // As CPU0's service runs it: the NPU asynchronous.
            h.rt.scheduler.set_overlap(true).unwrap();
            h.rt.npu.set_latency_us(latency_us);
            for seq in 1..=3 {
                h.stage(h.kws.raw(), KWS_IN as u32, seq);
                cpu1.push(h.infer_msg(seq, Priority::Normal, KWS_IN))
                    .unwrap();
                assert_eq!(intake.drain(h.ledger, inbox, h.port), 1);
                // One turn: run at once; a device done as it starts is
                // answered in it, a busy one in a later turn.
                let first = h.serve(inbox, 1);
                let replies = if latency_us == 0 {
                    assert!(h.rt.scheduler.is_idle(), "no job left behind");
                    first
                } else {
                    assert!(first.is_empty(), "the device is still busy");
                    assert_eq!(h.rt.scheduler.pending(), 1, "the job is on the device");
                    h.rt.clock.advance(latency_us);
                    h.serve(inbox, 4)
                };
                assert_eq!(replies, [(seq, MSG_TYPE_INFER_RESP, KWS_OUT as i32)]);
                assert_eq!(h.output(KWS_OUT), h.expected(h.kws, KWS_IN, KWS_OUT));
                assert_eq!(h.ledger.mask(), 0, "released after the reply");
            }
            let s = h.server.stats();
            assert_eq!((s.requests, s.served, s.errors), (3, 3, 0));
            assert!(h.rt.scheduler.is_idle());
            // The model's service time was learned from each run.
            assert!(h.server.estimate_us(h.kws).is_some());
        });
    }
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

#[test]
fn k_slots_are_served_concurrently_and_realtime_overtakes_normal() {
    run_with_intake(|h, cpu1, intake, inbox| {
        // Four requests, one per slot; the last one is REALTIME.
        let plan = [
            (0, h.face, FACE_IN, FACE_OUT, Priority::Normal),
            (1, h.kws, KWS_IN, KWS_OUT, Priority::Normal),
            (2, h.kws, KWS_IN, KWS_OUT, Priority::Normal),
            (3, h.kws, KWS_IN, KWS_OUT, Priority::RealTime),
        ];
        let mut expected = Vec::new();
        for (k, &(slot, model, len, out_len, priority)) in plan.iter().enumerate() {
            let id = k as u32 + 1;
            h.stage_in(slot, model.raw(), len as u32, 100 + id);
            expected.push(h.expected_in(slot, model, len, out_len));
            cpu1.push(h.infer_msg_in(slot, id, priority, len)).unwrap();
        }
        cpu1.push(status_req(5, 0)).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 5);
        // Every slot held, before the serving thread even looked.
        let pong = h.reply().unwrap();
        assert_eq!((pong.msg_id, pong.status), (5, 0b1111));
        assert_eq!(h.server.estimate_us(h.kws), None);
        let mut order = Vec::new();
        for _ in 0..16 {
            h.server
                .poll(inbox, &mut h.rt, h.port, h.ledger, Timeout::NoWait);
            if order.is_empty() {
                assert_eq!(h.server.busy_mask(), 0b0111, "K in flight at once");
            }
            while let Some(r) = h.reply() {
                order.push((r.msg_id, r.status));
            }
        }
        // REALTIME first, then the NORMAL ones in arrival order.
        assert_eq!(
            order,
            [
                (4, KWS_OUT as i32),
                (1, FACE_OUT as i32),
                (2, KWS_OUT as i32),
                (3, KWS_OUT as i32)
            ]
        );
        for (k, &(slot, _, _, out_len, _)) in plan.iter().enumerate() {
            assert_eq!(h.output_in(slot, out_len), expected[k], "slot {slot}");
        }
        assert_eq!(h.ledger.mask(), 0);
        // Accept-to-reply on the fake clock: all four accepted at 0, one
        // invoke each, in the order above. Estimates fold as est += (s - est) / 4.
        let kws = 700 + (2100 - 700) / 4;
        let kws = kws + (2800 - kws) / 4;
        assert_eq!(h.server.estimate_us(h.kws), Some(kws));
        assert_eq!(h.server.estimate_us(h.face), Some(1400));
        assert_eq!(h.region.service_time(h.kws.raw()), Some(kws));
        assert_eq!(h.region.service_time(h.face.raw()), Some(1400));
        assert_eq!(h.region.service_time(h.hidden.raw()), None);
        let s = h.server.stats();
        assert_eq!((s.served, s.errors, s.latency_max_us), (4, 0, 2800));
    });
}

#[test]
fn a_command_queue_starts_each_request_as_the_one_before_ends() {
    run_with_intake(|h, cpu1, intake, inbox| {
        // As CPU0's service runs it: asynchronous, with the stub's queue.
        h.rt.scheduler.set_overlap(true).unwrap();
        h.rt.npu.set_latency_us(NPU_US);
        h.rt.npu.set_command_queue(true);
        let mut expected = Vec::new();
        for slot in 0..4 {
            let id = slot as u32 + 1;
            h.stage_in(slot, h.kws.raw(), KWS_IN as u32, 200 + id);
            expected.push(h.expected_in(slot, h.kws, KWS_IN, KWS_OUT));
            cpu1.push(h.infer_msg_in(slot, id, Priority::Normal, KWS_IN))
                .unwrap();
        }
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 4);
        let turns = |h: &mut H<'_, '_>, order: &mut Vec<u32>| {
            for _ in 0..8 {
                h.server
                    .poll(inbox, &mut h.rt, h.port, h.ledger, Timeout::NoWait);
                while let Some(r) = h.reply() {
                    assert_eq!(r.status, KWS_OUT as i32);
                    order.push(r.msg_id);
                }
            }
        };
        let mut order = Vec::new();
        turns(h, &mut order);
        assert_eq!(h.rt.npu.in_flight(), 2, "one running, one queued");
        // Collected late, half a run after the first ended: the second
        // started when the first ended, so it is done half a run later,
        // not a whole one (as it would be, started at the collection).
        h.rt.clock.advance(NPU_US + NPU_US / 2);
        turns(h, &mut order);
        assert_eq!(order, [1]);
        for k in 2..=4 {
            h.rt.clock.advance(if k == 2 { NPU_US / 2 } else { NPU_US });
            turns(h, &mut order);
            assert_eq!(
                order.len(),
                k,
                "request {k} done {NPU_US} us after the one before"
            );
        }
        assert_eq!(order, [1, 2, 3, 4]);
        for (slot, want) in expected.iter().enumerate() {
            assert_eq!(&h.output_in(slot, KWS_OUT), want, "slot {slot}");
        }
        assert_eq!((h.rt.npu.invoke_count(), h.rt.npu.in_flight()), (4, 0));
        assert_eq!(h.ledger.mask(), 0);
        assert!(h.rt.scheduler.is_idle());
    });
}

#[test]
fn the_intake_answers_status_and_refuses_bad_requests_without_the_serving_layer() {
    run_with_intake(|h, cpu1, intake, inbox| {
        let expect_reply = |h: &mut H<'_, '_>, id: u32, msg_type: u8, status: i32| {
            let r = h.reply().expect("an answer from the intake");
            assert_eq!((r.msg_id, r.msg_type, r.status), (id, msg_type, status));
            r
        };
        cpu1.push(status_req(1, 0)).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 1);
        let pong = expect_reply(h, 1, MSG_TYPE_STATUS_RESP, 0);
        assert_eq!(pong.timestamp_us, 1001, "the requester's timestamp echoed");

        // A request takes its slot; the status shows it held.
        h.stage(h.face.raw(), FACE_IN as u32, 2);
        let expected = h.expected(h.face, FACE_IN, FACE_OUT);
        cpu1.push(h.infer_msg(2, Priority::Normal, FACE_IN))
            .unwrap();
        cpu1.push(status_req(3, 0)).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 2);
        expect_reply(h, 3, MSG_TYPE_STATUS_RESP, 0b0001);

        // A second request naming the held slot: -EBUSY, slot untouched.
        cpu1.push(h.infer_msg(4, Priority::RealTime, FACE_IN))
            .unwrap();
        cpu1.push(h.lookup_msg_in(3, 5, b"kws")).unwrap();
        let busy_lookup = Message {
            payload_offset: h.slot(),
            ..h.lookup_msg_in(3, 6, b"kws")
        };
        cpu1.push(busy_lookup).unwrap();
        // Unknown flag bits: -EINVAL, on a slot request and on a status.
        let flagged = Message {
            status: 0x4 | REQUEST_FLAG_POLLED,
            ..h.infer_msg_in(1, 7, Priority::Normal, KWS_IN)
        };
        cpu1.push(flagged).unwrap();
        cpu1.push(status_req(8, 1 << 30)).unwrap();
        // Naming no slot, unsupported, a stray response, a bad priority.
        let off_slot = Message {
            payload_offset: h.slot_at(1) + 64,
            ..h.infer_msg_in(1, 9, Priority::Normal, KWS_IN)
        };
        cpu1.push(off_slot).unwrap();
        let unload = Message {
            msg_id: 10,
            msg_type: MSG_TYPE_MODEL_UNLOAD,
            ..Message::default()
        };
        cpu1.push(unload).unwrap();
        let stray = Message {
            msg_id: 11,
            msg_type: MSG_TYPE_INFER_RESP,
            ..Message::default()
        };
        cpu1.push(stray).unwrap();
        let bad_priority = Message {
            priority: 9,
            ..h.infer_msg_in(2, 12, Priority::Normal, KWS_IN)
        };
        cpu1.push(bad_priority).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 9);
        expect_reply(h, 4, MSG_TYPE_INFER_RESP, Errno::Busy.negative());
        // A lookup on a free small slot goes through to the serving layer.
        expect_reply(h, 6, MSG_TYPE_MODEL_LOAD, Errno::Busy.negative());
        let r = expect_reply(h, 7, MSG_TYPE_INFER_RESP, Errno::Inval.negative());
        assert_eq!(r.payload_len, 0, "a refusal hands no slot back");
        expect_reply(h, 8, MSG_TYPE_STATUS_RESP, Errno::Inval.negative());
        expect_reply(h, 9, MSG_TYPE_INFER_RESP, Errno::Fault.negative());
        expect_reply(h, 10, MSG_TYPE_MODEL_UNLOAD, Errno::NotSup.negative());
        expect_reply(h, 12, MSG_TYPE_INFER_RESP, Errno::BadMsg.negative());
        assert!(h.reply().is_none(), "the stray response is dropped");
        // Refused requests took no slot; the holder's slot is untouched.
        assert_eq!(h.ledger.mask(), 0b1001);
        let header = h.exchange(0).read_header();
        assert_eq!(
            (header.model, header.input_len),
            (h.face.raw(), FACE_IN as u32)
        );
        let i = intake.stats();
        // The flagged status is a refusal, not a status answered.
        assert_eq!(
            (i.requests, i.status, i.forwarded, i.ignored),
            (12, 2, 2, 1)
        );
        assert_eq!((i.busy, i.errors, i.violations), (2, 7, 7));
        assert_eq!(
            h.server.stats().requests,
            0,
            "the serving layer saw nothing yet"
        );

        // The serving layer answers the two it was handed, correctly.
        assert_eq!(
            h.serve(inbox, 8),
            [
                (5, MSG_TYPE_MODEL_LOAD, h.kws.raw() as i32),
                (2, MSG_TYPE_INFER_RESP, FACE_OUT as i32)
            ]
        );
        assert_eq!(h.output(FACE_OUT), expected);
        assert_eq!(h.ledger.mask(), 0);
        // Every reply rang the doorbell but the refusal of request 7,
        // which asked to poll (a known flag, honoured on the refusal).
        assert_eq!((h.port.rings(), h.port.events()), (10, 1));
    });
}

#[test]
fn unknown_flag_bits_are_refused_by_the_serving_layer_too() {
    run(|h| {
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        for (id, flags) in [(1, 2), (2, i32::MIN), (3, -1)] {
            let msg = Message {
                status: flags,
                ..h.infer_msg(id, Priority::Normal, KWS_IN)
            };
            h.refused(msg, Errno::Inval);
            h.refused(
                Message {
                    msg_id: 10 + id,
                    ..status_req(0, flags)
                },
                Errno::Inval,
            );
        }
        let s = h.server.stats();
        assert_eq!((s.errors, s.violations, s.served), (6, 6, 0));
        // The defined flag is accepted.
        let msg = Message {
            status: REQUEST_FLAG_POLLED,
            ..h.infer_msg(4, Priority::Normal, KWS_IN)
        };
        assert!(matches!(h.handle(msg), Disposition::Accepted { .. }));
        assert_eq!(h.finish().status, KWS_OUT as i32);
    });
}

#[test]
fn polled_requests_are_answered_without_a_doorbell_interrupt() {
    run_with_intake(|h, cpu1, intake, inbox| {
        cpu1.push(status_req(1, REQUEST_FLAG_POLLED)).unwrap();
        h.stage_in(3, h.kws.raw(), KWS_IN as u32, 2);
        let polled = Message {
            status: REQUEST_FLAG_POLLED,
            ..h.infer_msg_in(3, 2, Priority::Normal, KWS_IN)
        };
        cpu1.push(polled).unwrap();
        // A polled request refused (its slot is held) is answered polled too.
        cpu1.push(Message {
            msg_id: 3,
            ..polled
        })
        .unwrap();
        intake.drain(h.ledger, inbox, h.port);
        while h
            .server
            .poll(inbox, &mut h.rt, h.port, h.ledger, Timeout::NoWait)
            > 0
        {}
        let mut replies = Vec::new();
        while let Some(r) = h.reply() {
            replies.push((r.msg_id, r.status));
        }
        assert_eq!(
            replies,
            [(1, 0), (3, Errno::Busy.negative()), (2, KWS_OUT as i32)]
        );
        assert_eq!(
            (h.port.rings(), h.port.events()),
            (0, 3),
            "events, no interrupts"
        );
        // An interrupt-driven request rings.
        cpu1.push(status_req(4, 0)).unwrap();
        intake.drain(h.ledger, inbox, h.port);
        assert_eq!(h.reply().unwrap().msg_id, 4);
        assert_eq!((h.port.rings(), h.port.events()), (1, 3));
    });
}

#[test]
fn each_slot_checks_the_models_output_against_its_own_capacity() {
    run(|h| {
        let wide =
            h.rt.registry
                .register(&desc("wide", &[8], 2 * SLOTS.small_output as usize))
                .unwrap();
        h.server
            .export(&*h.rt.registry, &mut *h.rt.pipelines, wide)
            .unwrap();
        h.stage_in(1, wide.raw(), 8, 1);
        h.refused(h.infer_msg_in(1, 1, Priority::Normal, 8), Errno::TooBig);
        assert_eq!(
            h.exchange(1).read_header().infer_status,
            Errno::TooBig.negative()
        );
        // The frame slot's output holds it.
        h.stage(wide.raw(), 8, 2);
        assert!(matches!(
            h.handle(h.infer_msg(2, Priority::Normal, 8)),
            Disposition::Accepted { .. }
        ));
        let reply = h.finish();
        assert_eq!(reply.status, 2 * SLOTS.small_output as i32);
        assert_eq!(
            h.output(2048),
            h.expected(wide, 8, 2 * SLOTS.small_output as usize)
        );
    });
}

/// A reply port that runs a hook right after each push: what CPU0's
/// doorbell ISR does when it preempts the serving thread there.
struct Preempted<'p, P> {
    port: &'p P,
    hook: std::cell::RefCell<Box<dyn FnMut() + 'p>>,
}

impl<P: synaptic_serve::ReplyPort> synaptic_serve::ReplyPort for Preempted<'_, P> {
    fn reply(
        &self,
        reply: synaptic_abi::ValidMessage,
        polled: bool,
    ) -> Result<(), synaptic_ipc::IpcError> {
        let pushed = self.port.reply(reply, polled);
        (self.hook.borrow_mut())();
        pushed
    }

    fn restore_head(&self) -> bool {
        self.port.restore_head()
    }
}

#[test]
fn a_request_sent_the_moment_cpu1_has_the_reply_is_not_refused() {
    run_with_intake(|h, cpu1, intake, inbox| {
        let region = h.region;
        let kws = h.kws;
        h.stage(kws.raw(), KWS_IN as u32, 1);
        cpu1.push(h.infer_msg(1, Priority::Normal, KWS_IN)).unwrap();
        let next = h.infer_msg(2, Priority::Normal, KWS_IN);
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 1);
        let mut second_input = Vec::new();
        let mut seen = Vec::new();
        {
            let (replies, ledger, port) = (&mut h.replies, h.ledger, h.port);
            let (second_input, seen) = (&mut second_input, &mut seen);
            let (cpu1, intake_in_hook) = (&mut *cpu1, &mut *intake);
            let mut fired = false;
            let preempted = Preempted {
                port,
                hook: std::cell::RefCell::new(Box::new(move || {
                    if fired {
                        return;
                    }
                    fired = true;
                    // CPU1 pops the reply: the slot is its own again ...
                    let reply = replies.pop().unwrap().unwrap();
                    seen.push((reply.msg_id, reply.status));
                    // ... stages the next input and sends it, with a status.
                    let exchange = region.exchange(0).unwrap();
                    exchange.set_request(kws.raw(), KWS_IN as u32);
                    // SAFETY: CPU1 owns the slot between the reply and its request.
                    let input = unsafe { exchange.input_mut() };
                    for (i, b) in input[..KWS_IN].iter_mut().enumerate() {
                        *b = input_byte(2, i);
                    }
                    second_input.extend_from_slice(&input[..KWS_IN]);
                    cpu1.push(next).unwrap();
                    cpu1.push(status_req(3, 0)).unwrap();
                    // CPU0's ISR runs before the serving layer goes on.
                    assert_eq!(intake_in_hook.drain(ledger, inbox, port), 2);
                    while let Some(r) = replies.pop().unwrap() {
                        seen.push((r.msg_id, r.status));
                    }
                })),
            };
            // One turn: accept request 1, run it, answer it (the hook
            // runs inside that answer).
            h.server
                .poll(inbox, &mut h.rt, &preempted, h.ledger, Timeout::NoWait);
        }
        // Reply 1, then the status (slot 0 held: by request 2 now). No -EBUSY.
        // (The stub device finishes at once, so the same turn may already
        // have answered request 2 too: its reply is read below either way.)
        assert_eq!(seen, [(1, KWS_OUT as i32), (3, 0b0001)]);
        assert_eq!(
            h.serve(inbox, 4),
            [(2, MSG_TYPE_INFER_RESP, KWS_OUT as i32)]
        );
        let mut expected = vec![0u8; KWS_OUT];
        stub_output(SEED, kws.raw(), &second_input, &mut expected);
        assert_eq!(h.output(KWS_OUT), expected);
        assert_eq!(h.ledger.mask(), 0);
        let i = intake.stats();
        assert_eq!((i.busy, i.errors, i.forwarded), (0, 0, 2));
    });
}

#[test]
fn the_intake_restores_the_reply_rings_head_before_it_takes_a_request() {
    run_with_intake(|h, cpu1, intake, inbox| {
        // A previous life of CPU1 scribbled the reply ring's head (it
        // hid nothing: no reply was pushed yet).
        let head = h.region.ring(synaptic_abi::Direction::Cpu0ToCpu1);
        let offset = synaptic_abi::region::ring_offset::<N>(synaptic_abi::Direction::Cpu0ToCpu1)
            + synaptic_abi::region::RING_HEAD_OFFSET;
        let word = h.region.shared_word(offset).unwrap();
        word.store(7, std::sync::atomic::Ordering::Relaxed);
        // A slot request is forwarded, not answered: no push rewrites
        // the head. The drain restores it all the same, before it
        // publishes the tail past the request, so a CPU1 that sees the
        // tail pass reads CPU0's own head after it.
        h.stage(h.kws.raw(), KWS_IN as u32, 1);
        cpu1.push(h.infer_msg(1, Priority::Normal, KWS_IN)).unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 1);
        assert_eq!(intake.stats().forwarded, 1);
        assert_eq!(head.head_hint(), 0, "CPU0's own head again");
        assert_eq!(
            h.region
                .ring(synaptic_abi::Direction::Cpu1ToCpu0)
                .consumed(),
            1
        );
    });
}

/// `kws` again, version 2 (same name and shapes).
fn kws_v2() -> ModelDesc<'static> {
    ModelDesc {
        version: 2,
        ..desc("kws", &[49, 10], KWS_OUT)
    }
}

#[test]
fn a_hot_swap_lets_accepted_requests_finish_on_the_old_version_and_later_ones_run_the_new() {
    run_with_intake(|h, cpu1, intake, inbox| {
        let models = h.rt.registry.len();
        let old_pipeline = h.rt.pipelines.find("kws").unwrap();
        // Two requests accepted (one on the NPU, one queued) before the swap.
        let mut expected = Vec::new();
        for (id, slot) in [(1u32, 1usize), (2, 2)] {
            h.stage_in(slot, h.kws.raw(), KWS_IN as u32, 10 + id);
            expected.push((slot, h.expected_in(slot, h.kws, KWS_IN, KWS_OUT)));
            cpu1.push(h.infer_msg_in(slot, id, Priority::Normal, KWS_IN))
                .unwrap();
        }
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 2);
        while let Ok(msg) = inbox.receive(Timeout::NoWait) {
            let d = h.server.handle_valid(&msg, &mut h.rt, h.port, h.ledger);
            assert!(matches!(d, Disposition::Accepted { .. }));
        }
        // The first one runs (its result not yet taken); the second stays
        // queued.
        assert!(matches!(h.rt.step(), StepOutcome::Ran { .. }));
        assert_eq!(h.rt.scheduler.pending(), 1);
        assert_eq!(h.server.busy_mask(), 0b110);

        let v2 = h.server.replace(h.kws, &kws_v2(), &mut h.rt).unwrap();
        assert_ne!(v2, h.kws);
        assert!(
            h.server.is_retiring(),
            "two jobs still hold the old version"
        );
        assert_eq!(h.rt.registry.find("kws"), Ok(v2));
        // CPU1's handle stays: a lookup by name still answers with it.
        h.handle(h.lookup_msg_in(3, 3, b"kws"));
        assert_eq!(h.reply().unwrap().status, h.kws.raw() as i32);
        // A request after the swap, under the same handle, runs version 2.
        h.stage_in(3, h.kws.raw(), KWS_IN as u32, 13);
        let mut new_output = vec![0u8; KWS_OUT];
        // SAFETY: single-threaded test.
        let input = unsafe { h.exchange(3).input() }[..KWS_IN].to_vec();
        stub_output(SEED, v2.raw(), &input, &mut new_output);
        assert_ne!(new_output, h.expected_in(3, h.kws, KWS_IN, KWS_OUT));
        expected.push((3, new_output));
        cpu1.push(h.infer_msg_in(3, 4, Priority::Normal, KWS_IN))
            .unwrap();
        assert_eq!(intake.drain(h.ledger, inbox, h.port), 1);

        let mut replies = h.serve(inbox, 16);
        replies.sort_unstable();
        let ok = KWS_OUT as i32;
        let infer_resp = MSG_TYPE_INFER_RESP;
        assert_eq!(
            replies,
            [
                (1, infer_resp, ok),
                (2, infer_resp, ok),
                (4, infer_resp, ok)
            ]
        );
        for (slot, want) in expected {
            assert_eq!(h.output_in(slot, KWS_OUT), want, "slot {slot}");
        }
        // The old version is gone once its jobs are: unloaded, its
        // pipeline destroyed, unregistered.
        assert!(!h.server.is_retiring());
        assert!(h.rt.registry.info(h.kws).is_err());
        assert_eq!(h.rt.registry.len(), models);
        assert!(h.rt.pipelines.get(old_pipeline).is_err());
        let pipeline = h.rt.pipelines.find("kws").unwrap();
        assert_eq!(h.rt.pipelines.get(pipeline).unwrap().model(), Some(v2));
        assert_eq!(h.rt.registry.loaded(), Some(v2));
        // The estimate goes on under CPU1's handle.
        assert!(h.server.estimate_us(h.kws).is_some());
        assert_eq!(h.server.stats().errors, 0);
    });
}

#[test]
fn a_hot_swap_refuses_what_it_cannot_do_and_changes_nothing() {
    run(|h| {
        let unchanged = |h: &H<'_, '_>| {
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws));
            let pipeline = h.rt.pipelines.find("kws").unwrap();
            assert_eq!(h.rt.pipelines.get(pipeline).unwrap().model(), Some(h.kws));
        };
        let refused = |h: &mut H<'_, '_>, model: ModelHandle, d: ModelDesc<'_>| {
            h.server.replace(model, &d, &mut h.rt).unwrap_err()
        };
        assert_eq!(refused(h, h.hidden, kws_v2()), ServeError::NotExported);
        let face = ModelDesc {
            version: 2,
            ..desc("face", &[96, 96, 3], FACE_OUT)
        };
        assert_eq!(refused(h, h.kws, face), ServeError::BadName);
        let huge = desc("kws", &[49, 10], 64 * 1024);
        assert_eq!(refused(h, h.kws, huge), ServeError::ModelTooLarge);
        unchanged(h);
        // A full registry: the old version keeps its name.
        let mut fillers = Vec::new();
        let names: Vec<String> = (0..64).map(|i| format!("filler{i}")).collect();
        for name in &names {
            match h.rt.registry.register(&desc(name, &[8], 4)) {
                Ok(f) => fillers.push(f),
                Err(_) => break,
            }
        }
        assert!(matches!(
            refused(h, h.kws, kws_v2()),
            ServeError::Registry(_)
        ));
        unchanged(h);
        for f in fillers {
            h.rt.registry.unregister(f).unwrap();
        }
        // Nothing in flight: the old version is retired at once, and a
        // second swap may follow.
        let v2 = h.server.replace(h.kws, &kws_v2(), &mut h.rt).unwrap();
        assert!(!h.server.is_retiring());
        assert!(h.rt.registry.info(h.kws).is_err());
        let v3 = h
            .server
            .replace(
                h.kws,
                &ModelDesc {
                    version: 3,
                    ..kws_v2()
                },
                &mut h.rt,
            )
            .unwrap();
        assert_eq!(h.rt.registry.find("kws"), Ok(v3));
        assert!(h.rt.registry.info(v2).is_err());
        // CPU1's handle runs version 3.
        h.stage(h.kws.raw(), KWS_IN as u32, 5);
        let mut want = vec![0u8; KWS_OUT];
        // SAFETY: single-threaded test.
        let input = unsafe { h.exchange(0).input() }[..KWS_IN].to_vec();
        stub_output(SEED, v3.raw(), &input, &mut want);
        h.handle(h.infer_msg(6, Priority::Normal, KWS_IN));
        assert_eq!(h.finish().status, KWS_OUT as i32);
        assert_eq!(h.output(KWS_OUT), want);
    });
}

#[test]
fn a_second_swap_waits_until_the_first_ones_old_version_is_retired() {
    run(|h| {
        h.stage(h.kws.raw(), KWS_IN as u32, 7);
        let want = h.expected(h.kws, KWS_IN, KWS_OUT);
        h.handle(h.infer_msg(1, Priority::Normal, KWS_IN));
        h.server.replace(h.kws, &kws_v2(), &mut h.rt).unwrap();
        let v3 = ModelDesc {
            version: 3,
            ..kws_v2()
        };
        assert_eq!(
            h.server.replace(h.kws, &v3, &mut h.rt),
            Err(ServeError::Busy)
        );
        assert_eq!(h.finish().status, KWS_OUT as i32);
        assert_eq!(h.output(KWS_OUT), want, "finished on version 1");
        assert!(!h.server.is_retiring());
        assert!(h.server.replace(h.kws, &v3, &mut h.rt).is_ok());
    });
}

#[test]
fn requests_keep_flowing_through_a_swap_tried_every_turn_and_each_runs_the_version_it_was_accepted_under(
) {
    run_with_intake(|h, cpu1, intake, inbox| {
        let models = h.rt.registry.len();
        let mut version = 1u32;
        // Per slot: the request's id and the output its version gives.
        let mut pending: [Option<(u32, Vec<u8>)>; 4] = Default::default();
        let (mut next_id, mut answered, mut swaps, mut waits) = (1u32, 0u32, 0u32, 0u32);
        // Fewer turns under the interpreter (miri), the same interleavings.
        let turns = if cfg!(miri) { 100 } else { 400 };
        for _ in 0..turns {
            {
                let d = ModelDesc {
                    version: version + 1,
                    ..kws_v2()
                };
                match h.server.replace(h.kws, &d, &mut h.rt) {
                    Ok(_) => {
                        version += 1;
                        swaps += 1;
                    }
                    // The previous swap's old version still runs.
                    Err(ServeError::Busy) => waits += 1,
                    Err(e) => panic!("swap refused: {e:?}"),
                }
            }
            // Every free KWS slot gets a request for CPU1's handle.
            let serving = h.rt.registry.find("kws").unwrap();
            for (slot, request) in pending.iter_mut().enumerate().skip(1) {
                if request.is_some() {
                    continue;
                }
                h.stage_in(slot, h.kws.raw(), KWS_IN as u32, next_id);
                let want = h.expected_in(slot, serving, KWS_IN, KWS_OUT);
                cpu1.push(h.infer_msg_in(slot, next_id, Priority::Normal, KWS_IN))
                    .unwrap();
                *request = Some((next_id, want));
                next_id += 1;
            }
            intake.drain(h.ledger, inbox, h.port);
            for (id, _, status) in h.serve(inbox, 1) {
                assert_eq!(status, KWS_OUT as i32, "request {id}");
                let slot = (1..4)
                    .find(|&s| pending[s].as_ref().is_some_and(|p| p.0 == id))
                    .expect("a reply for a request in flight");
                let (_, want) = pending[slot].take().unwrap();
                assert_eq!(h.output_in(slot, KWS_OUT), want, "request {id}");
                answered += 1;
            }
        }
        assert!(
            swaps >= turns / 10 && waits >= turns / 10 && answered >= turns * 3 / 4,
            "{swaps} swaps, {waits} refused while retiring, {answered} answers"
        );
        assert_eq!(h.server.stats().errors, 0);
        // Every old version retired but at most the last swap's.
        assert!(h.rt.registry.len() <= models + 1);
    });
}

mod update {
    //! `MODEL_UPDATE`: CPU1 streams a container through a slot into CPU0's
    //! model store (a host flash model), CPU0 verifies and activates it and
    //! hot-swaps the model it serves.

    use super::*;
    use synaptic_abi::{
        MSG_TYPE_MODEL_UPDATE, UPDATE_OP_ACTIVATE, UPDATE_OP_BEGIN, UPDATE_OP_DATA,
        UPDATE_OP_FINISH, UPDATE_OP_ROLLBACK,
    };
    use synaptic_serve::update::StoreUpdates;
    use synaptic_store::ota::Ota;
    use synaptic_store::{crc32, Header, Layout, MemFlash, Store, TensorShape};

    /// The small slot updates go through (4,096-byte chunks).
    const SLOT: usize = 1;

    /// A KWS-shaped container: header, then `payload`.
    fn container(version: u32, payload: &[u8]) -> Vec<u8> {
        let header = Header::new(
            "kws",
            version,
            payload,
            TensorShape::int8(&[49, 10]),
            TensorShape::int8(&[12]),
        )
        .unwrap();
        [header.encode().as_slice(), payload].concat()
    }

    fn payload(version: u32, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u32 * 31 + version) as u8).collect()
    }

    /// `test` with CPU0's store given to its serving layer: 128 KiB of
    /// host flash, 4 KiB sectors, 4 models of up to 8 KiB.
    fn with_store(test: impl FnOnce(&mut H<'_, '_>)) {
        let mut bytes = vec![0xFFu8; 128 * 1024];
        let flash = MemFlash::new(&mut bytes, 4096, 4);
        let layout = Layout::new(&flash, 4, 8192).unwrap();
        let (mut store, _) = Store::<_, 4>::open(flash, layout).unwrap();
        let mut ota = Ota::new();
        let mut updates = StoreUpdates::new(&mut store, &mut ota);
        run_on(Some(&mut updates), |h, _, _, _| test(h));
    }

    impl H<'_, '_> {
        /// One update step through slot `SLOT`, as CPU1 sends it; its status.
        fn step(&mut self, id: u32, op: u32, arg: u32, data: &[u8], name: Option<&[u8]>) -> i32 {
            let exchange = self.exchange(SLOT);
            if let Some(name) = name {
                let mut field = [0u8; MODEL_NAME_SIZE];
                field[..name.len()].copy_from_slice(name);
                exchange.set_model_name(&field);
            }
            // SAFETY: single-threaded test: nothing else holds the slot.
            unsafe { exchange.input_mut()[..data.len()].copy_from_slice(data) };
            exchange.set_update(op, arg, data.len() as u32);
            let capacity = SLOTS.input_capacity(SLOT).unwrap();
            let msg = Message {
                msg_id: id,
                msg_type: MSG_TYPE_MODEL_UPDATE,
                priority: Priority::Normal as u8,
                payload_offset: self.slot_at(SLOT),
                payload_len: if data.is_empty() {
                    LOOKUP_PAYLOAD_LEN
                } else {
                    infer_payload_len(data.len(), capacity).unwrap()
                },
                ..Message::default()
            };
            let Disposition::Answered { status } = self.handle(msg) else {
                panic!("an update step is answered at once");
            };
            let reply = self.reply().expect("a reply");
            assert_eq!(
                (reply.msg_id, reply.msg_type, reply.status),
                (id, MSG_TYPE_MODEL_UPDATE, status)
            );
            status
        }

        /// Stream `bytes` as an update of KWS, up to `finish`; the
        /// statuses of begin, each chunk and finish.
        fn stream(&mut self, bytes: &[u8]) -> Vec<i32> {
            let mut statuses =
                vec![self.step(1, UPDATE_OP_BEGIN, bytes.len() as u32, &[], Some(b"kws"))];
            for (k, chunk) in bytes.chunks(4096).enumerate() {
                statuses.push(self.step(2, UPDATE_OP_DATA, (k * 4096) as u32, chunk, None));
            }
            statuses.push(self.step(3, UPDATE_OP_FINISH, 0, &[], None));
            statuses
        }

        /// Infer on KWS through CPU1's handle: the output.
        fn infer_kws(&mut self, seq: u32) -> Vec<u8> {
            self.stage(self.kws.raw(), KWS_IN as u32, seq);
            assert!(matches!(
                self.handle(self.infer_msg(50 + seq, Priority::Normal, KWS_IN)),
                Disposition::Accepted { .. }
            ));
            assert_eq!(self.finish().status, KWS_OUT as i32);
            self.output(KWS_OUT)
        }

        /// What the version registered as `handle` answers for input `seq`.
        fn kws_output(&self, handle: ModelHandle, seq: u32) -> Vec<u8> {
            self.stage(self.kws.raw(), KWS_IN as u32, seq);
            self.expected(handle, KWS_IN, KWS_OUT)
        }
    }

    #[test]
    fn cpu1_streams_an_update_that_cpu0_verifies_activates_and_hot_swaps() {
        with_store(|h| {
            let v2 = payload(2, 5000);
            assert_eq!(h.stream(&container(2, &v2)), [0, 4096, 1000, 0]);
            assert_eq!(h.step(4, UPDATE_OP_ACTIVATE, 0, &[], None), 2);
            let served = h.rt.registry.find("kws").unwrap();
            assert_ne!(served, h.kws, "a new version under the same name");
            let info = h.rt.registry.info(served).unwrap();
            assert_eq!(
                (info.version, info.flash_size, info.crc32),
                (2, 5000, crc32(&v2))
            );
            // CPU1 keeps its handle: a lookup still gives it, an inference
            // on it runs version 2.
            h.handle(h.lookup_msg(5, b"kws"));
            assert_eq!(h.reply().unwrap().status, h.kws.raw() as i32);
            let want = h.kws_output(served, 7);
            assert_eq!(h.infer_kws(7), want);

            // Version 3, then back to 2.
            assert_eq!(h.stream(&container(3, &payload(3, 300))), [0, 396, 0]);
            assert_eq!(h.step(6, UPDATE_OP_ACTIVATE, 0, &[], None), 3);
            assert_eq!(
                h.rt.registry
                    .info(h.rt.registry.find("kws").unwrap())
                    .unwrap()
                    .version,
                3
            );
            assert_eq!(h.step(7, UPDATE_OP_ROLLBACK, 0, &[], None), 2);
            let back = h.rt.registry.find("kws").unwrap();
            assert_eq!(h.rt.registry.info(back).unwrap().crc32, crc32(&v2));
            let want = h.kws_output(back, 8);
            assert_eq!(h.infer_kws(8), want);
            let s = h.server.stats();
            assert_eq!((s.updates, s.errors), (10, 0));
        });
    }

    #[test]
    fn update_steps_out_of_turn_or_malformed_are_refused_with_the_stores_errno() {
        with_store(|h| {
            // No store on this CPU0.
            let store = h.rt.updates.take();
            let no = Errno::NotSup.negative();
            assert_eq!(h.step(1, UPDATE_OP_BEGIN, 100, &[], Some(b"kws")), no);
            h.rt.updates = store;
            // Nothing verified to activate, nothing activated to roll back.
            assert_eq!(
                h.step(2, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::Perm.negative()
            );
            assert_eq!(
                h.step(3, UPDATE_OP_ROLLBACK, 0, &[], None),
                Errno::NoEnt.negative()
            );
            // No name; a step that names nothing.
            assert_eq!(
                h.step(4, UPDATE_OP_BEGIN, 100, &[], Some(b"")),
                Errno::Inval.negative()
            );
            assert_eq!(h.step(5, 99, 0, &[], None), Errno::Inval.negative());
            // A chunk sent again, or skipping ahead.
            let bytes = container(2, &payload(2, 5000));
            assert_eq!(
                h.step(6, UPDATE_OP_BEGIN, bytes.len() as u32, &[], Some(b"kws")),
                0
            );
            assert_eq!(h.step(7, UPDATE_OP_DATA, 0, &bytes[..4096], None), 4096);
            assert_eq!(
                h.step(8, UPDATE_OP_DATA, 0, &bytes[..4096], None),
                Errno::Proto.negative()
            );
            // Finish before every byte is in.
            assert_eq!(
                h.step(9, UPDATE_OP_FINISH, 0, &[], None),
                Errno::Proto.negative()
            );
            // A payload that fails its CRC is caught at finish, from flash.
            let mut bad = container(2, &payload(2, 300));
            *bad.last_mut().unwrap() ^= 1;
            assert_eq!(h.stream(&bad)[2], Errno::BadMsg.negative());
            assert_eq!(
                h.step(10, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::Perm.negative()
            );
            // Nothing changed for the model served.
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws));
            let want = h.kws_output(h.kws, 3);
            assert_eq!(h.infer_kws(3), want);
            // The request this CPU0 does not serve and the unknown step
            // broke the protocol; the store's refusals did not.
            assert_eq!(h.server.stats().violations, 2);
        });
    }

    #[test]
    fn an_update_waits_while_the_previous_swaps_old_version_still_runs() {
        with_store(|h| {
            // A request on version 1, accepted and not yet run.
            h.stage(h.kws.raw(), KWS_IN as u32, 4);
            let want = h.expected(h.kws, KWS_IN, KWS_OUT);
            h.handle(h.infer_msg(40, Priority::Normal, KWS_IN));
            h.stream(&container(2, &payload(2, 100)));
            assert_eq!(h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None), 2);
            assert!(h.server.is_retiring());
            // The next update would write the slot version 1 runs from.
            let v3 = container(3, &payload(3, 100));
            assert_eq!(h.stream(&v3)[0], Errno::Busy.negative());
            // Version 3 staged outside MODEL_UPDATE (the shell) waits too.
            stage_outside(h, &v3);
            assert_eq!(
                h.step(42, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::Busy.negative()
            );
            assert_eq!(h.finish().status, KWS_OUT as i32);
            assert_eq!(h.output(KWS_OUT), want, "finished on version 1");
            // The store kept version 3 verified: activated now.
            assert_eq!(h.step(43, UPDATE_OP_ACTIVATE, 0, &[], None), 3);
        });
    }

    /// A version no device serving the model can run (float tensors for a
    /// model the stub NPU serves as int8) is refused before the store
    /// changes, with its own errno, and the served version keeps serving.
    #[test]
    fn an_update_no_serving_device_can_run_is_refused_before_the_store_changes() {
        with_store(|h| {
            let v2 = float_container(2);
            assert_eq!(h.stream(&v2).last(), Some(&0), "the container is sound");
            let store = h.rt.updates.as_deref_mut().expect("a store");
            let before = store.active("kws");
            assert_eq!(
                h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            let store = h.rt.updates.as_deref_mut().expect("a store");
            assert_eq!(store.active("kws"), before, "the store changed");
            assert_eq!(store.next(false).map(|v| v.version), Ok(2), "still staged");
            assert!(!h.server.is_retiring());
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws));
            let want = h.kws_output(h.kws, 5);
            assert_eq!(h.infer_kws(5), want);
            // A sound version after it is taken.
            h.stream(&container(3, &payload(3, 300)));
            assert_eq!(h.step(42, UPDATE_OP_ACTIVATE, 0, &[], None), 3);
            assert_eq!(h.server.stats().violations, 0);
        });
    }

    /// The shell's and the C API's activations go through the serving
    /// thread's `switch_store`: the same checks as `MODEL_UPDATE`.
    #[test]
    fn an_activation_outside_model_update_is_checked_the_same_way() {
        with_store(|h| {
            let v2 = float_container(2);
            stage_outside(h, &v2);
            let refused = h.server.switch_store(false, &mut h.rt);
            assert!(
                matches!(refused, Err(ServeError::Unrunnable(_))),
                "{refused:?}"
            );
            assert_eq!(refused.unwrap_err().to_errno(), Errno::NoExec);
            let store = h.rt.updates.as_deref_mut().expect("a store");
            assert!(store.active("kws").is_err(), "the store activated it");
            stage_outside(h, &container(3, &payload(3, 300)));
            assert_eq!(h.server.switch_store(false, &mut h.rt), Ok(3));
            assert_ne!(h.rt.registry.find("kws"), Ok(h.kws), "swapped");
        });
    }

    /// A swap needs a pipeline next to the old one until it retires: with
    /// the pool full the activation is refused before the store changes.
    #[test]
    fn an_update_without_room_for_its_pipeline_is_refused_before_the_store_changes() {
        with_store(|h| {
            let mut taken = Vec::new();
            while let Ok(id) = h.rt.pipelines.create(&format!("filler{}", taken.len())) {
                taken.push(id);
            }
            assert_eq!(h.stream(&container(2, &payload(2, 300))).last(), Some(&0));
            assert_eq!(
                h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoSpc.negative()
            );
            let store = h.rt.updates.as_deref_mut().expect("a store");
            assert!(store.active("kws").is_err(), "the store activated it");
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws));
            // With room again it goes through.
            h.rt.pipelines.destroy(taken[0]).unwrap();
            assert_eq!(h.step(42, UPDATE_OP_ACTIVATE, 0, &[], None), 2);
        });
    }

    /// A KWS container with a float input (the stub NPU takes int8 only).
    fn float_container(version: u32) -> Vec<u8> {
        let float = TensorShape {
            dtype: 0,
            ..TensorShape::int8(&[49, 10])
        };
        let bytes = payload(version, 300);
        let header = Header::new("kws", version, &bytes, float, TensorShape::int8(&[12])).unwrap();
        [header.encode().as_slice(), &bytes].concat()
    }

    /// `bytes` verified into the store as the shell or the C API puts
    /// them there (no `MODEL_UPDATE`), not activated.
    fn stage_outside(h: &mut H<'_, '_>, bytes: &[u8]) {
        let store = h.rt.updates.as_deref_mut().expect("a store");
        store.begin("kws", bytes.len()).unwrap();
        store.write(0, bytes).unwrap();
        store.finish().unwrap();
    }

    /// Version `version` straight into the store, as the shell or the C
    /// API puts it there (no `MODEL_UPDATE`).
    fn activate_outside(h: &mut H<'_, '_>, version: u32) {
        stage_outside(h, &container(version, &payload(version, 300)));
        let store = h.rt.updates.as_deref_mut().expect("a store");
        assert_eq!(store.activate().unwrap().version, version);
    }

    #[test]
    fn an_activation_outside_model_update_is_served_once_the_server_follows_the_store() {
        with_store(|h| {
            activate_outside(h, 2);
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws), "not served yet");
            assert_eq!(h.server.follow_store(&mut h.rt), Ok(1));
            let v2 = h.rt.registry.find("kws").unwrap();
            assert_eq!(h.rt.registry.info(v2).unwrap().version, 2);
            assert_eq!(h.server.follow_store(&mut h.rt), Ok(0), "nothing new");
            // Version 3 while a request runs on version 2, then version 4
            // while version 2 still runs: that one waits.
            h.stage(h.kws.raw(), KWS_IN as u32, 9);
            let want = h.expected(v2, KWS_IN, KWS_OUT);
            h.handle(h.infer_msg(60, Priority::Normal, KWS_IN));
            activate_outside(h, 3);
            assert_eq!(h.server.follow_store(&mut h.rt), Ok(1));
            activate_outside(h, 4);
            assert_eq!(h.server.follow_store(&mut h.rt), Err(ServeError::Busy));
            assert_eq!(h.finish().status, KWS_OUT as i32);
            assert_eq!(h.output(KWS_OUT), want, "finished on version 2");
            assert_eq!(h.server.follow_store(&mut h.rt), Ok(1));
            let served = h.rt.registry.find("kws").unwrap();
            assert_eq!(h.rt.registry.info(served).unwrap().version, 4);
        });
    }

    // Issue #37, item 3: an activation never reduces what is served. A
    // sound container (it passes every store check) whose version no
    // device serving the model can run is refused, by every path that
    // activates (MODEL_UPDATE's activate and rollback, the serving
    // thread's `switch_store` the shell and the C API go through), with
    // -ENOEXEC, before the store changes: the store's active version stays
    // and the next inference runs on the served version.

    /// The store's active version of `name` (`None`: none).
    fn active_version(h: &mut H<'_, '_>, name: &str) -> Option<u32> {
        let store = h.rt.updates.as_deref_mut().expect("a store");
        store.active(name).ok().map(|v| v.version)
    }

    /// The version the registry serves under `name`.
    fn served_version(h: &H<'_, '_>, name: &str) -> u32 {
        let served = h.rt.registry.find(name).expect("served");
        h.rt.registry.info(served).unwrap().version
    }

    /// `bytes` verified into the store and made active there directly (no
    /// check: the store as it is before the inference service runs).
    fn activate_in_store(h: &mut H<'_, '_>, bytes: &[u8]) -> u32 {
        stage_outside_as(h, name_of(bytes), bytes);
        let store = h.rt.updates.as_deref_mut().expect("a store");
        store.activate().expect("activated in the store").version
    }

    /// The model a container names.
    fn name_of(bytes: &[u8]) -> &str {
        let field = &bytes[8..40];
        let len = field.iter().position(|&c| c == 0).unwrap();
        std::str::from_utf8(&field[..len]).unwrap()
    }

    /// `bytes` verified into the store as a model called `name`.
    fn stage_outside_as(h: &mut H<'_, '_>, name: &str, bytes: &[u8]) {
        let store = h.rt.updates.as_deref_mut().expect("a store");
        store.begin(name, bytes.len()).unwrap();
        store.write(0, bytes).unwrap();
        store.finish().unwrap();
    }

    /// A float32 version of KWS back in the store's history: rolling back
    /// to it, through MODEL_UPDATE or the shell's path, is refused with
    /// -ENOEXEC; version 2 stays active and keeps serving.
    #[test]
    fn a_rollback_to_a_version_no_serving_device_can_run_is_refused_by_every_path() {
        with_store(|h| {
            assert_eq!(activate_in_store(h, &float_container(1)), 1);
            assert_eq!(h.stream(&container(2, &payload(2, 300))).last(), Some(&0));
            assert_eq!(h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None), 2);
            let v2 = h.rt.registry.find("kws").unwrap();
            let want = h.kws_output(v2, 3);
            assert_eq!(h.infer_kws(3), want);

            // CPU1's rollback.
            assert_eq!(
                h.step(42, UPDATE_OP_ROLLBACK, 0, &[], None),
                Errno::NoExec.negative()
            );
            assert_eq!(active_version(h, "kws"), Some(2), "the store rolled back");
            assert_eq!(h.rt.registry.find("kws"), Ok(v2));
            let want = h.kws_output(v2, 4);
            assert_eq!(h.infer_kws(4), want, "served by version 2");

            // The shell's and the C API's rollback.
            let refused = h.server.switch_store(true, &mut h.rt);
            assert!(
                matches!(refused, Err(ServeError::Unrunnable(_))),
                "{refused:?}"
            );
            assert_eq!(refused.unwrap_err().to_errno(), Errno::NoExec);
            assert_eq!(active_version(h, "kws"), Some(2), "the store rolled back");
            assert_eq!(h.rt.registry.find("kws"), Ok(v2));
            let want = h.kws_output(v2, 5);
            assert_eq!(h.infer_kws(5), want, "served by version 2");
            assert!(!h.server.is_retiring());
            assert_eq!(h.server.stats().violations, 0);
        });
    }

    /// A container whose tensors the runtime has no type for (int32, code
    /// 2) is as unrunnable as a float one: the same -ENOEXEC, not the
    /// -ENOTSUP of a CPU0 without a store.
    #[test]
    fn a_version_with_tensor_types_no_device_takes_is_refused_with_the_same_errno() {
        with_store(|h| {
            let int32 = TensorShape {
                dtype: 2,
                ..TensorShape::int8(&[49, 10])
            };
            let bytes = payload(2, 300);
            let header = Header::new("kws", 2, &bytes, int32, TensorShape::int8(&[12])).unwrap();
            let v2 = [header.encode().as_slice(), &bytes].concat();
            assert_eq!(h.stream(&v2).last(), Some(&0), "the container is sound");
            assert_eq!(
                h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            let refused = h.server.switch_store(false, &mut h.rt);
            assert_eq!(refused.map_err(|e| e.to_errno()), Err(Errno::NoExec));
            assert_eq!(active_version(h, "kws"), None, "the store activated it");
            assert_eq!(h.rt.registry.find("kws"), Ok(h.kws));
            let want = h.kws_output(h.kws, 6);
            assert_eq!(h.infer_kws(6), want);
        });
    }

    /// What no device can run is refused as such (-ENOEXEC, for good),
    /// even when the service has no room for a second version either
    /// (-ENOSPC, for now).
    #[test]
    fn an_unrunnable_version_is_refused_as_such_even_without_room_for_a_swap() {
        with_store(|h| {
            let mut fillers = 0;
            while h
                .rt
                .registry
                .register(&desc(&format!("filler{fillers}"), &[4], 4))
                .is_ok()
            {
                fillers += 1;
            }
            h.stream(&float_container(2));
            assert_eq!(
                h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            assert_eq!(active_version(h, "kws"), None, "the store activated it");
            let want = h.kws_output(h.kws, 7);
            assert_eq!(h.infer_kws(7), want);
        });
    }

    /// A flash the CPU reads in place (`Flash::mapped`: a copy of the
    /// range as it is at the call, leaked; the store asks only for
    /// verified payloads, which it does not write again while named).
    struct Mapped<'a>(MemFlash<'a>);

    impl synaptic_store::Flash for Mapped<'_> {
        fn size(&self) -> usize {
            self.0.size()
        }
        fn sector_size(&self) -> usize {
            self.0.sector_size()
        }
        fn write_block(&self) -> usize {
            self.0.write_block()
        }
        fn read(
            &mut self,
            offset: usize,
            buf: &mut [u8],
        ) -> Result<(), synaptic_store::StoreError> {
            self.0.read(offset, buf)
        }
        fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), synaptic_store::StoreError> {
            self.0.write(offset, data)
        }
        fn erase_sector(&mut self, offset: usize) -> Result<(), synaptic_store::StoreError> {
            self.0.erase_sector(offset)
        }
        fn mapped(&self, offset: usize, len: usize) -> Option<&'static [u8]> {
            let bytes = self.0.bytes().get(offset..offset.checked_add(len)?)?;
            Some(Vec::leak(bytes.to_vec()))
        }
    }

    /// The micro-speech network, TFLite Micro's int8 keyword spotter.
    fn micro_speech() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/micro_speech.tflite"
        );
        std::fs::read(path).expect("models/micro_speech.tflite")
    }

    const SPEECH_IN: usize = 1960;
    const SPEECH_OUT: usize = 4;

    /// A `speech` container: `tflite` as version `version`.
    fn speech_container(version: u32, tflite: &[u8]) -> Vec<u8> {
        let header = Header::new(
            "speech",
            version,
            tflite,
            TensorShape::int8(&[1, SPEECH_IN as u32]),
            TensorShape::int8(&[1, SPEECH_OUT as u32]),
        )
        .unwrap();
        [header.encode().as_slice(), tflite].concat()
    }

    /// `bytes` with its first operator code made `code` (the deprecated
    /// byte and the 32-bit field): a well-formed network with an operator
    /// the interpreter lacks (as synaptic-pack's tests make one).
    fn with_first_operator(mut bytes: Vec<u8>, code: u8) -> Vec<u8> {
        let u32_at =
            |b: &[u8], p: usize| u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize;
        let field = |b: &[u8], table: usize, slot: usize| {
            let vtable = (table as i64
                - i64::from(i32::from_le_bytes(b[table..table + 4].try_into().unwrap())))
                as usize;
            let vtable_len = u16::from_le_bytes(b[vtable..vtable + 2].try_into().unwrap()) as usize;
            let at = vtable + 4 + 2 * slot;
            if at + 2 > vtable + vtable_len {
                return None;
            }
            let offset = u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize;
            (offset != 0).then_some(table + offset)
        };
        let root = u32_at(&bytes, 0);
        let codes = field(&bytes, root, 1).expect("operator_codes");
        let vector = codes + u32_at(&bytes, codes);
        let first = vector + 4;
        let table = first + u32_at(&bytes, first);
        if let Some(p) = field(&bytes, table, 0) {
            bytes[p] = code;
        }
        if let Some(p) = field(&bytes, table, 3) {
            bytes[p..p + 4].copy_from_slice(&u32::from(code).to_le_bytes());
        }
        bytes
    }

    /// `test` with a mapped store given to the serving layer, a CPU
    /// interpreter beside the stub NPU, and `speech` (micro-speech, version
    /// 1, from CPU0's image) registered for the interpreter only and
    /// exported; its handle. The registry is then full (a swap needs
    /// `hidden`'s slot: `make_room`).
    fn with_cpu_model(test: impl FnOnce(&mut H<'_, '_>, ModelHandle)) {
        use synaptic_runtime::device::{DeviceMask, TfliteDevice};
        let mut bytes = vec![0xFFu8; 256 * 1024];
        let flash = Mapped(MemFlash::new(&mut bytes, 4096, 4));
        let layout = Layout::new(&flash, 4, 24 * 1024).unwrap();
        let (mut store, _) = Store::<_, 4>::open(flash, layout).unwrap();
        let mut ota = Ota::new();
        let mut updates = StoreUpdates::new(&mut store, &mut ota);
        run_on(Some(&mut updates), |h, _, _, _| {
            let arena: &'static mut [u8] = Vec::leak(vec![0u8; 64 * 1024]);
            let cpu: &'static mut TfliteDevice<'static> =
                Box::leak(Box::new(TfliteDevice::new(arena)));
            cpu.init().unwrap();
            h.rt.cpu = Some(cpu);
            let image: &'static [u8] = Vec::leak(micro_speech());
            let v1 = ModelDesc {
                name: "speech",
                version: 1,
                input: TensorMeta::new(DType::Int8, Shape::new(&[1, SPEECH_IN as u32]).unwrap()),
                output: TensorMeta::new(DType::Int8, Shape::new(&[1, SPEECH_OUT as u32]).unwrap()),
                flash_offset: 0,
                flash_size: image.len() as u32,
                sram_needed: 0,
                crc32: synaptic_runtime::registry::crc32(image),
                devices: DeviceMask::CPU_INTERPRETER,
                image,
            };
            let speech = h.rt.registry.register(&v1).unwrap();
            h.server
                .export(h.rt.registry, h.rt.pipelines, speech)
                .unwrap();
            test(h, speech)
        });
    }

    impl H<'_, '_> {
        /// Infer on `speech` (CPU1's handle `model`) with input `seq`: the
        /// output.
        fn infer_speech(&mut self, model: ModelHandle, seq: u32) -> Vec<u8> {
            self.stage(model.raw(), SPEECH_IN as u32, seq);
            assert!(matches!(
                self.handle(self.infer_msg(70 + seq, Priority::Normal, SPEECH_IN)),
                Disposition::Accepted { .. }
            ));
            let mut done = None;
            for _ in 0..10_000 {
                done = self.server.complete(&mut self.rt, self.port, self.ledger);
                if done.is_some() {
                    break;
                }
                self.rt.step();
            }
            let done = done.expect("the inference completes");
            let reply = self.reply().expect("a reply");
            assert_eq!(reply.status, done.status);
            assert_eq!(done.status, SPEECH_OUT as i32, "the inference failed");
            self.output(SPEECH_OUT)
        }

        /// Free `hidden`'s registry slot: room for a second version.
        fn make_room(&mut self) {
            self.rt.registry.unregister(self.hidden).unwrap();
        }
    }

    /// A version of a model only the CPU interpreter serves whose network
    /// uses an operator the interpreter lacks (EXP) is refused by every
    /// path with -ENOEXEC (also while there is no room for a swap: what it
    /// lacks is said first); the served version keeps serving, the store
    /// keeps its active version.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "reads models/ and runs the interpreter: cargo test covers it"
    )]
    fn a_version_whose_operator_the_cpu_interpreter_lacks_is_refused_by_every_path() {
        with_cpu_model(|h, speech| {
            let before = h.infer_speech(speech, 1);
            let exp = with_first_operator(micro_speech(), 47);
            let bad = speech_container(2, &exp);
            stage_outside_as(h, "speech", &bad);
            // CPU1's activation, the registry full (no room for a swap).
            assert_eq!(
                h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            h.make_room();
            assert_eq!(
                h.step(42, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            assert_eq!(active_version(h, "speech"), None, "the store activated it");
            // The shell's and the C API's activation.
            let refused = h.server.switch_store(false, &mut h.rt);
            assert_eq!(refused.map_err(|e| e.to_errno()), Err(Errno::NoExec));
            assert_eq!(active_version(h, "speech"), None, "the store activated it");
            assert_eq!(h.rt.registry.find("speech"), Ok(speech));
            assert_eq!(h.infer_speech(speech, 1), before, "version 1 serves");

            // A sound version 3 is taken (in place, from the store), then
            // the bad one again as version 4: refused, version 3 serves.
            let good = speech_container(3, &micro_speech());
            stage_outside_as(h, "speech", &good);
            assert_eq!(h.step(43, UPDATE_OP_ACTIVATE, 0, &[], None), 3);
            assert_eq!(served_version(h, "speech"), 3);
            assert_eq!(h.infer_speech(speech, 1), before, "the same network");
            let bad = speech_container(4, &exp);
            stage_outside_as(h, "speech", &bad);
            assert_eq!(
                h.step(44, UPDATE_OP_ACTIVATE, 0, &[], None),
                Errno::NoExec.negative()
            );
            assert_eq!(active_version(h, "speech"), Some(3));
            assert_eq!(served_version(h, "speech"), 3);
            assert_eq!(h.infer_speech(speech, 2).len(), SPEECH_OUT);
            assert_eq!(h.server.stats().violations, 0);
        });
    }

    /// The interpreter's model rolled back to a version in the store's
    /// history it cannot run (activated in the store before the service
    /// ran): refused by CPU1's rollback and by the shell's, version 2
    /// keeps serving and stays active.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "reads models/ and runs the interpreter: cargo test covers it"
    )]
    fn a_rollback_to_a_network_the_cpu_interpreter_cannot_run_is_refused_by_every_path() {
        with_cpu_model(|h, speech| {
            h.make_room();
            let exp = with_first_operator(micro_speech(), 47);
            assert_eq!(activate_in_store(h, &speech_container(1, &exp)), 1);
            stage_outside_as(h, "speech", &speech_container(2, &micro_speech()));
            assert_eq!(h.step(41, UPDATE_OP_ACTIVATE, 0, &[], None), 2);
            let v2 = h.rt.registry.find("speech").unwrap();
            assert_ne!(v2, speech, "a new version under the same name");
            let before = h.infer_speech(speech, 3);
            assert_eq!(
                h.step(42, UPDATE_OP_ROLLBACK, 0, &[], None),
                Errno::NoExec.negative()
            );
            let refused = h.server.switch_store(true, &mut h.rt);
            assert_eq!(refused.map_err(|e| e.to_errno()), Err(Errno::NoExec));
            assert_eq!(
                active_version(h, "speech"),
                Some(2),
                "the store rolled back"
            );
            assert_eq!(h.rt.registry.find("speech"), Ok(v2));
            assert_eq!(h.infer_speech(speech, 3), before, "version 2 serves");
        });
    }
}
