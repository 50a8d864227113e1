//! Offload benchmark, CPU1: time the service as a caller on the
//! application core sees it, in `k_cycle_get_32` ticks of the emulated
//! part, and leave the rows on the board for CPU0 to print.
//!
//! Phases (see `offload_bench_protocol` for the sizes): status round trips
//! polled and interrupt-driven, idle and while a load thread keeps both
//! models served; inference round trips through the null executor for
//! 490 B / 16 B and 27,648 B / 4,096 B, CPU1 writing every input byte and
//! reading every output byte, beside the time those bytes alone take;
//! throughput with 1, 2 and 4 requests in flight against a 1.5 ms stub
//! latency, with CPU0's NPU busy time; and the poll/interrupt sweep over
//! the stub latency, with CPU1's busy ticks per request (`offload`). The
//! build with the CPU interpreter runs the placement phases instead
//! (`placement`).
#![no_std]

use offload_bench_protocol::{Board, Command};
use synaptic_ipc::Timeout;
use synaptic_zephyr::client;
use zephyr::time::{sleep, Duration};

#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
mod offload;
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
mod placement;

#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
use offload::run;
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
use placement::run;

/// How long CPU1 waits for CPU0 to answer its attach.
const ATTACH_TIMEOUT: Timeout = Timeout::Millis(2_000);

/// CPU1's cycle counter (the offload phases; the placement phases time
/// themselves on the board clock).
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn ticks() -> u32 {
    // SAFETY: reading the cycle counter has no preconditions.
    unsafe { zephyr::raw::k_cycle_get_32() }
}

/// Ask CPU0 and wait for its answer.
fn ask(board: &Board, command: Command, arg: u32) -> u32 {
    let seq = board.post(command, arg);
    loop {
        if let Some(v) = board.reply(seq) {
            return v;
        }
        sleep(Duration::millis_at_least(1));
    }
}

#[no_mangle]
extern "C" fn rust_main() {
    let Some(shm) = synaptic_zephyr::platform::shared_memory() else {
        return;
    };
    // SAFETY: devicetree's shared region, mapped for the program's life;
    // its last words are the benchmark board's alone on both cores.
    let board = unsafe { Board::at_end(shm.base, shm.size as usize) };
    let Ok((client, _pong)) = client::attach(ATTACH_TIMEOUT) else {
        board.finish(1);
        return;
    };
    match run(&board, client) {
        Ok(()) => board.finish(0),
        Err(at) => board.finish(at),
    }
}
