//! The whole interpreter behind one C entry point, for measuring its flash
//! on a Cortex-M target (`scripts/tflite-size.sh` links it with
//! `--gc-sections` and prints the sizes). Built as a staticlib; on the host
//! it is only compiled.
#![cfg_attr(target_os = "none", no_std)]

use synaptic_tflite::{Interpreter, Model};

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// Parses `model`, plans it into `arena`, runs it on `input` and copies its
/// output to `output`; returns the arena used, or a negative step number.
///
/// # Safety
///
/// Each pointer must be valid for its length (`input` and `output` for the
/// model's input and output sizes).
#[no_mangle]
pub unsafe extern "C" fn tflite_probe(
    model: *const u8,
    model_len: usize,
    arena: *mut u8,
    arena_len: usize,
    input: *const u8,
    output: *mut u8,
) -> i32 {
    // SAFETY: the caller guarantees both buffers (see `# Safety`).
    let (bytes, arena) = unsafe {
        (
            core::slice::from_raw_parts(model, model_len),
            core::slice::from_raw_parts_mut(arena, arena_len),
        )
    };
    let Ok(model) = Model::parse(bytes) else {
        return -1;
    };
    let Ok(mut interpreter) = Interpreter::new(&model, arena) else {
        return -2;
    };
    let Ok(slot) = interpreter.input_mut(0) else {
        return -3;
    };
    // SAFETY: the caller guarantees `input` holds the input's bytes.
    slot.copy_from_slice(unsafe { core::slice::from_raw_parts(input, slot.len()) });
    if interpreter.invoke().is_err() {
        return -4;
    }
    let Ok(result) = interpreter.output(0) else {
        return -5;
    };
    // SAFETY: the caller guarantees `output` holds the output's bytes.
    unsafe { core::ptr::copy_nonoverlapping(result.as_ptr(), output, result.len()) };
    interpreter.arena_required() as i32
}
