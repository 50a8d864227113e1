//! Smoke suite: the shared-memory contract and the kernel, checked on the target.
//!
//! The host tests already pin the ABI at compile time; these cases check the
//! same facts in the image that runs on the core, against Zephyr's own
//! values where Zephyr has them (errno numbers), and prove that Rust cases
//! run as ztest units that can call the kernel.
#![no_std]

use core::mem::{offset_of, size_of};

use synaptic_abi::{Errno, Priority};
use synaptic_zephyr::ztest::Outcome;
use synaptic_zephyr::{zassert, zassert_eq, ztest_suite};
use zephyr::raw;

fn errno_values_match_zephyr() -> Outcome {
    zassert_eq!(Errno::Inval.code(), raw::EINVAL as i32);
    zassert_eq!(Errno::Again.code(), raw::EAGAIN as i32);
    zassert_eq!(Errno::BadMsg.code(), raw::EBADMSG as i32);
    zassert_eq!(Errno::TimedOut.code(), raw::ETIMEDOUT as i32);
    zassert_eq!(Errno::NoMem.code(), raw::ENOMEM as i32);
    zassert_eq!(Errno::Canceled.code(), raw::ECANCELED as i32);
    zassert_eq!(Errno::NotSup.code(), raw::ENOTSUP as i32);
    Ok(())
}

fn priority_wire_values() -> Outcome {
    zassert_eq!(Priority::BestEffort as u8, 0);
    zassert_eq!(Priority::Normal as u8, 1);
    zassert_eq!(Priority::RealTime as u8, 2);
    zassert!(
        Priority::try_from(3u8).is_err(),
        "priority 3 must be rejected"
    );
    Ok(())
}

fn message_layout() -> Outcome {
    use synaptic_abi::Message;
    zassert_eq!(size_of::<Message>(), 20);
    zassert_eq!(offset_of!(Message, msg_id), 0);
    zassert_eq!(offset_of!(Message, priority), 5);
    zassert_eq!(offset_of!(Message, payload_len), 6);
    zassert_eq!(offset_of!(Message, payload_offset), 8);
    zassert_eq!(offset_of!(Message, timestamp_us), 12);
    zassert_eq!(offset_of!(Message, status), 16);
    Ok(())
}

fn control_block_layout() -> Outcome {
    use synaptic_abi::ControlBlock;
    zassert_eq!(size_of::<ControlBlock>(), 64);
    zassert_eq!(offset_of!(ControlBlock, magic), 0);
    zassert_eq!(synaptic_abi::MAGIC, 0x5359_4E33);
    zassert_eq!(synaptic_abi::LAYOUT_VERSION, 6);
    zassert_eq!(offset_of!(ControlBlock, exchange_slots), 40);
    Ok(())
}

ztest_suite!(abi_smoke {
    errno_values_match_zephyr,
    priority_wire_values,
    message_layout,
    control_block_layout,
});

fn sleep_advances_uptime() -> Outcome {
    use zephyr::time::{now, sleep, Duration};

    let before = now();
    sleep(Duration::millis_at_least(20));
    let slept = (now() - before).to_millis();
    zassert!(slept >= 20, "sleep(20 ms) returned early");
    Ok(())
}

fn semaphore_give_take() -> Outcome {
    use zephyr::sys::sync::Semaphore;
    use zephyr::time::{Duration, NoWait};

    static SEM: Semaphore = Semaphore::new(0, 1);
    zassert!(
        SEM.take(NoWait).is_err(),
        "an empty semaphore must not be taken"
    );
    SEM.give();
    zassert!(
        SEM.take(Duration::millis_at_least(10)).is_ok(),
        "a given semaphore must be taken"
    );
    Ok(())
}

fn cycle_counter_advances() -> Outcome {
    // SAFETY: reading the cycle counter and busy-waiting have no preconditions.
    let (start, end) = unsafe {
        let start = raw::k_cycle_get_32();
        raw::k_busy_wait(100);
        (start, raw::k_cycle_get_32())
    };
    zassert!(end.wrapping_sub(start) > 0, "cycle counter did not move");
    Ok(())
}

ztest_suite!(kernel_smoke {
    sleep_advances_uptime,
    semaphore_give_take,
    cycle_counter_advances,
});
