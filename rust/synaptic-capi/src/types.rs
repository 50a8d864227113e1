//! The C types of the frozen API: structs, enums, handles, callbacks and
//! constants, exactly as C applications see them in `include/synaptic/`.
//!
//! Layout rules:
//!
//! * Every struct is `#[repr(C)]` and its size is pinned below with `const`
//!   asserts, per target family; `tests/capi_c/capi_check.c` pins the same
//!   sizes from the C side with `_Static_assert`.
//! * C enums are as wide as the C compiler makes them: `int` on the host,
//!   one byte on bare-metal Arm (`arm-none-eabi-gcc` and rustc both use short
//!   enums there). Rust's `#[repr(C)]` enums follow the same rule.
//! * A C caller can put any integer into an enum-typed field or argument,
//!   and a Rust enum holding an undeclared value is undefined behaviour. So
//!   wherever a value *comes from C*, the Rust side declares it as a raw
//!   integer newtype ([`RawDtype`], [`RawLifetime`], [`RawPriority`],
//!   [`RawBool`]) with the enum's width, and decodes it with `TryFrom`;
//!   cbindgen prints those newtypes under the enum's C name (see
//!   `cbindgen.toml`), so the header reads exactly like the reference.
//! * Every field of a struct that C hands in is valid for any bit pattern
//!   (integers, raw newtypes, raw pointers, nullable function pointers), so
//!   reading a whole struct from a C pointer is always defined.

use core::ffi::{c_char, c_int, c_void};

use synaptic_abi::{Errno, Priority};
use synaptic_runtime::arena::DType;

/// Integer type with the width of a C enum on this target.
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub type CEnum = u8;
/// Integer type with the width of a C enum on this target.
#[cfg(not(all(target_arch = "arm", target_os = "none")))]
pub type CEnum = u32;

const _: () = assert!(
    core::mem::size_of::<CEnum>() == core::mem::size_of::<syn_npu_dtype_t>(),
    "CEnum must be as wide as a #[repr(C)] enum on this target"
);

// ------------------------------------------------------------------ NPU

/// Power and activity state of the NPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum syn_npu_state_t {
    /// Ready (also reported before `syn_hal_npu_init()` and after deinit).
    SYN_NPU_STATE_IDLE = 0,
    /// An inference is running.
    SYN_NPU_STATE_BUSY = 1,
    /// The last invoke failed; `syn_hal_npu_resume()` clears it.
    SYN_NPU_STATE_ERROR = 2,
    /// Clocks gated by `syn_hal_npu_suspend()`.
    SYN_NPU_STATE_SUSPENDED = 3,
}

/// Element type of a tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum syn_npu_dtype_t {
    /// Signed 8-bit integer.
    SYN_NPU_DTYPE_INT8 = 0,
    /// Unsigned 8-bit integer.
    SYN_NPU_DTYPE_UINT8 = 1,
    /// Signed 16-bit integer.
    SYN_NPU_DTYPE_INT16 = 2,
    /// IEEE 754 half precision.
    SYN_NPU_DTYPE_FLOAT16 = 3,
    /// IEEE 754 single precision.
    SYN_NPU_DTYPE_FLOAT32 = 4,
}

/// A `syn_npu_dtype_t` as C passed it (any value; decode with `DType::try_from`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDtype(pub CEnum);

impl RawDtype {
    /// The raw value of a runtime element type.
    pub const fn of(dtype: DType) -> RawDtype {
        RawDtype(match dtype {
            DType::Int8 => syn_npu_dtype_t::SYN_NPU_DTYPE_INT8 as CEnum,
            DType::UInt8 => syn_npu_dtype_t::SYN_NPU_DTYPE_UINT8 as CEnum,
            DType::Int16 => syn_npu_dtype_t::SYN_NPU_DTYPE_INT16 as CEnum,
            DType::Float16 => syn_npu_dtype_t::SYN_NPU_DTYPE_FLOAT16 as CEnum,
            DType::Float32 => syn_npu_dtype_t::SYN_NPU_DTYPE_FLOAT32 as CEnum,
        })
    }

    /// Decodes the raw value.
    ///
    /// # Errors
    ///
    /// [`Errno::Inval`] for a value that names no element type.
    pub fn dtype(self) -> Result<DType, Errno> {
        match self.0 {
            0 => Ok(DType::Int8),
            1 => Ok(DType::UInt8),
            2 => Ok(DType::Int16),
            3 => Ok(DType::Float16),
            4 => Ok(DType::Float32),
            _ => Err(Errno::Inval),
        }
    }
}

/// What an NPU can do (`syn_hal_npu_get_caps()`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct syn_npu_caps_t {
    /// NUL-terminated device name (static storage).
    pub name: *const c_char,
    /// Peak throughput, operations per second (0: not stated).
    pub max_ops_per_sec: u32,
    /// Device scratch memory in bytes.
    pub scratch_size: u32,
    /// One bit per `syn_npu_dtype_t` value the device accepts.
    pub supported_dtypes: u8,
    /// Whether `syn_hal_npu_invoke_async()` returns before the inference ends.
    pub supports_async: bool,
}

/// Completion callback of `syn_hal_npu_invoke_async()`: status (0 or
/// negative errno) and the caller's pointer.
pub type syn_npu_done_cb_t = Option<unsafe extern "C" fn(status: c_int, user_data: *mut c_void)>;

// ------------------------------------------------------------------ memory

/// Lifetime class of a tensor's memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum syn_mem_lifetime_t {
    /// Survives `syn_mem_reset_ephemeral()`.
    SYN_MEM_PERSISTENT = 0,
    /// Reclaimed, all at once, by `syn_mem_reset_ephemeral()`.
    SYN_MEM_EPHEMERAL = 1,
    /// In the shared inter-core region (allocated like `SYN_MEM_EPHEMERAL`).
    SYN_MEM_SHARED = 2,
}

/// A `syn_mem_lifetime_t` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawLifetime(pub CEnum);

impl RawLifetime {
    /// The raw value of a lifetime class.
    pub const fn of(lifetime: syn_mem_lifetime_t) -> RawLifetime {
        RawLifetime(lifetime as CEnum)
    }

    /// Decodes the raw value.
    ///
    /// # Errors
    ///
    /// [`Errno::Inval`] for a value that names no lifetime class.
    pub fn lifetime(self) -> Result<syn_mem_lifetime_t, Errno> {
        match self.0 {
            0 => Ok(syn_mem_lifetime_t::SYN_MEM_PERSISTENT),
            1 => Ok(syn_mem_lifetime_t::SYN_MEM_EPHEMERAL),
            2 => Ok(syn_mem_lifetime_t::SYN_MEM_SHARED),
            _ => Err(Errno::Inval),
        }
    }
}

/// A tensor descriptor: where the bytes are, how many, and what they hold.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct syn_tensor_t {
    /// First byte of the data.
    pub data: *mut c_void,
    /// Bytes of data (for a stage output: the capacity on entry).
    pub size: usize,
    /// Element type.
    pub dtype: RawDtype,
    /// Dimensions used in `shape` (1 to 4).
    pub ndim: u8,
    /// Dimensions, outermost first (`[batch, height, width, channels]`).
    pub shape: [u32; 4],
    /// Lifetime class of the memory.
    pub lifetime: RawLifetime,
}

impl syn_tensor_t {
    /// A descriptor with no data.
    pub const EMPTY: syn_tensor_t = syn_tensor_t {
        data: core::ptr::null_mut(),
        size: 0,
        dtype: RawDtype(0),
        ndim: 0,
        shape: [0; 4],
        lifetime: RawLifetime(0),
    };
}

/// Tensor arena statistics (`syn_mem_get_stats()`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_mem_stats_t {
    /// Bytes available to tensors (the scratch pool excluded).
    pub arena_total: usize,
    /// Bytes in use by tensors now.
    pub arena_used: usize,
    /// Highest `arena_used` since the arena was initialised.
    pub arena_peak: usize,
    /// Size of the scratch pool.
    pub scratch_total: usize,
    /// Scratch bytes acquired now.
    pub scratch_used: usize,
    /// Tensor allocations since the arena was initialised.
    pub alloc_count: u32,
    /// Ephemeral resets since the arena was initialised.
    pub reset_count: u32,
}

// ------------------------------------------------------------------ models

/// A registered model (0 is never one: `SYN_MODEL_INVALID`).
pub type syn_model_handle_t = u32;

/// The handle no registered model has.
pub const SYN_MODEL_INVALID: syn_model_handle_t = 0;

/// Model metadata as registered (`syn_model_register()`, `syn_model_get_info()`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct syn_model_info_t {
    /// Unique name, NUL-terminated.
    pub name: [c_char; 32],
    /// Version string, NUL-terminated (`"major.minor.patch"`).
    pub version: [c_char; 16],
    /// Input tensor bytes.
    pub input_size: u32,
    /// Output tensor bytes.
    pub output_size: u32,
    /// Offset of the model image in flash.
    pub flash_offset: u32,
    /// Size of the model image.
    pub flash_size: u32,
    /// Arena bytes the model needs at run time.
    pub sram_required: u32,
    /// CRC-32 (IEEE) of the model image.
    pub crc32: u32,
    /// Input element type.
    pub input_dtype: RawDtype,
    /// Output element type.
    pub output_dtype: RawDtype,
    /// Input dimensions; zero entries are unused.
    pub input_shape: [u8; 4],
    /// Output dimensions; zero entries are unused.
    pub output_shape: [u8; 4],
}

impl syn_model_info_t {
    /// All-zero metadata.
    pub const ZERO: syn_model_info_t = syn_model_info_t {
        name: [0; 32],
        version: [0; 16],
        input_size: 0,
        output_size: 0,
        flash_offset: 0,
        flash_size: 0,
        sram_required: 0,
        crc32: 0,
        input_dtype: RawDtype(0),
        output_dtype: RawDtype(0),
        input_shape: [0; 4],
        output_shape: [0; 4],
    };
}

// ------------------------------------------------------------------ inference

/// Scheduling class of a job (higher runs first).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum syn_priority_t {
    /// Shares with NORMAL by weighted round robin (by default one
    /// selection in five while both wait): never starved.
    SYN_PRIORITY_BEST_EFFORT = 0,
    /// The default class.
    SYN_PRIORITY_NORMAL = 1,
    /// Starts at the next stage boundary of a preemptible lower-class job.
    SYN_PRIORITY_REALTIME = 2,
}

/// A `syn_priority_t` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPriority(pub CEnum);

impl RawPriority {
    /// The raw value of a priority class.
    pub const fn of(priority: syn_priority_t) -> RawPriority {
        RawPriority(priority as CEnum)
    }

    /// Decodes the raw value.
    ///
    /// # Errors
    ///
    /// [`Errno::Inval`] for a value that names no class.
    pub fn priority(self) -> Result<Priority, Errno> {
        u8::try_from(self.0)
            .ok()
            .and_then(|b| Priority::try_from(b).ok())
            .ok_or(Errno::Inval)
    }
}

/// A C `bool` as C passed it (0 is false, anything else true).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawBool(pub u8);

impl RawBool {
    /// Whether the value is non-zero.
    pub const fn get(self) -> bool {
        self.0 != 0
    }
}

/// A submitted job (0 is never one: `SYN_JOB_INVALID`).
pub type syn_job_id_t = u32;

/// The id no job has; `syn_infer_submit()` returns it on failure.
pub const SYN_JOB_INVALID: syn_job_id_t = 0;

/// Job completion callback: the job, its output (NULL when it failed; valid
/// during the call) and the caller's pointer.
pub type syn_infer_cb_t = Option<
    unsafe extern "C" fn(job: syn_job_id_t, output: *const syn_tensor_t, user_data: *mut c_void),
>;

/// Options of one submission (`syn_infer_submit()`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct syn_infer_params_t {
    /// Scheduling class.
    pub priority: RawPriority,
    /// Relative deadline in microseconds (0: none); a job still unfinished
    /// when it passes fails with `-ETIMEDOUT`.
    pub deadline_us: u32,
    /// Whether higher-priority jobs may run between this job's stages.
    pub preemptible: RawBool,
    /// Called when the job finishes (optional).
    pub callback: syn_infer_cb_t,
    /// Passed to `callback`.
    pub user_data: *mut c_void,
}

/// A pre-processing stage: reads `in`, writes `out` (whose `size` is the
/// capacity on entry and which the stage sets to the result's geometry),
/// returns 0 or a negative errno.
pub type syn_preprocess_fn_t = Option<
    unsafe extern "C" fn(
        r#in: *const syn_tensor_t,
        out: *mut syn_tensor_t,
        config: *const c_void,
    ) -> c_int,
>;

/// A post-processing stage, same contract as `syn_preprocess_fn_t`.
pub type syn_postprocess_fn_t = Option<
    unsafe extern "C" fn(
        r#in: *const syn_tensor_t,
        out: *mut syn_tensor_t,
        config: *const c_void,
    ) -> c_int,
>;

/// A pipeline (opaque to C; only ever used through a pointer).
#[derive(Debug)]
pub struct syn_pipeline {
    _slot: u8,
}

impl syn_pipeline {
    pub(crate) const fn new() -> syn_pipeline {
        syn_pipeline { _slot: 0 }
    }
}

/// The pipeline handle type of the C API.
pub type syn_pipeline_t = syn_pipeline;

/// Configuration of `syn_preprocess_image_resize`: the target size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_resize_config_t {
    /// Target width in pixels.
    pub w: u16,
    /// Target height in pixels.
    pub h: u16,
}

// ------------------------------------------------------------------ processors

/// Configuration of `syn_preprocess_image_normalize`: `(x - mean[c]) / std[c]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_normalize_config_t {
    /// Per-channel mean.
    pub mean: [f32; 4],
    /// Per-channel standard deviation (non-zero).
    pub std: [f32; 4],
    /// Channels (1 to 4; the input's last dimension).
    pub channels: u8,
}

/// Configuration of `syn_preprocess_quantize_int8`: `q = round(x / scale) + zero_point`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_quantize_config_t {
    /// Step size (positive).
    pub scale: f32,
    /// The quantised value of 0.0.
    pub zero_point: i32,
}

/// Configuration of `syn_postprocess_dequantize` (and, optionally, of
/// `syn_postprocess_softmax` for int8 logits): `x = (q - zero_point) * scale`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_dequantize_config_t {
    /// Step size (positive).
    pub scale: f32,
    /// The quantised value of 0.0.
    pub zero_point: i32,
}

/// Configuration of `syn_preprocess_audio_mfcc` (non-overlapping frames).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_mfcc_config_t {
    /// Sample rate of the input.
    pub sample_rate_hz: u32,
    /// Samples per frame (a power of two).
    pub frame_len: u16,
    /// Mel filterbank bands.
    pub num_mel: u8,
    /// Cepstral coefficients kept per frame (at most `num_mel`).
    pub num_coeffs: u8,
}

/// Configuration of `syn_postprocess_top_k`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_topk_config_t {
    /// Classes to emit (1 to 16).
    pub k: u8,
}

/// One class and its score, as `syn_postprocess_argmax` / `_top_k` emit them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_classification_t {
    /// Class index.
    pub index: u32,
    /// Score.
    pub score: f32,
}

/// A detection box, as `syn_postprocess_nms` reads and writes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_bbox_t {
    /// Left edge.
    pub x1: f32,
    /// Top edge.
    pub y1: f32,
    /// Right edge.
    pub x2: f32,
    /// Bottom edge.
    pub y2: f32,
    /// Confidence.
    pub score: f32,
    /// Class index, as a float.
    pub class_id: f32,
}

/// Configuration of `syn_postprocess_nms` (greedy, per class).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct syn_nms_config_t {
    /// A box overlapping a kept box of its class by more than this IoU is dropped.
    pub iou_threshold: f32,
    /// Boxes scoring below this are dropped first.
    pub score_threshold: f32,
    /// Most boxes emitted.
    pub max_boxes: u8,
}

// ------------------------------------------------------------------ profiling

/// Timing of the last inference (`syn_prof_get_last()`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_prof_result_t {
    /// Submit to completion, microseconds.
    pub total_us: u32,
    /// Time in pre-processing stages.
    pub preprocess_us: u32,
    /// Time in the model stage (NPU).
    pub npu_us: u32,
    /// Time in post-processing stages.
    pub postprocess_us: u32,
    /// Inter-core transport overhead.
    pub ipc_overhead_us: u32,
    /// Peak working memory of the inference, bytes.
    pub mem_peak_bytes: u32,
    /// `npu_us` as a percentage of `total_us`.
    pub npu_utilization_pct: u32,
}

// ------------------------------------------------------------------ IPC types

/// Inter-core message types (the wire values of ABI v1).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum syn_ipc_type_t {
    /// Inference request.
    SYN_IPC_INFER_REQ = 0,
    /// Inference response.
    SYN_IPC_INFER_RESP = 1,
    /// Load a model.
    SYN_IPC_MODEL_LOAD = 2,
    /// Unload a model.
    SYN_IPC_MODEL_UNLOAD = 3,
    /// Status request.
    SYN_IPC_STATUS_REQ = 4,
    /// Status response.
    SYN_IPC_STATUS_RESP = 5,
}

/// One inter-core message slot in shared SRAM (20 bytes, ABI v1).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct syn_ipc_msg_t {
    /// Request id; a response carries its request's id.
    pub msg_id: u32,
    /// A `syn_ipc_type_t` value.
    pub r#type: u8,
    /// A `syn_priority_t` value.
    pub priority: u8,
    /// Payload bytes.
    pub payload_len: u16,
    /// Payload offset from the shared region's base.
    pub payload_offset: u32,
    /// Sender's timestamp, microseconds.
    pub timestamp_us: u32,
    /// 0 or a negative errno.
    pub status: i32,
}

/// Handler of one message type, called with the message and the context
/// pointer it was registered with.
pub type syn_ipc_handler_t =
    Option<unsafe extern "C" fn(msg: *const syn_ipc_msg_t, ctx: *mut c_void)>;

// ------------------------------------------------------------------ version

/// Major version of the C API level these headers reproduce.
pub const SYNAPTIC_VERSION_MAJOR: u32 = 0;
/// Minor version of the C API level.
pub const SYNAPTIC_VERSION_MINOR: u32 = 3;
/// Patch version of the C API level.
pub const SYNAPTIC_VERSION_PATCH: u32 = 0;

// ------------------------------------------------------------------ layout

/// Asserts a type's size per target family: 32-bit bare-metal Arm (short
/// enums) and 64-bit hosts (`int` enums).
macro_rules! pin_size {
    ($($t:ty => arm32 $arm:expr, host64 $host:expr;)*) => {
        $(
            #[cfg(all(target_arch = "arm", target_os = "none"))]
            const _: () = assert!(core::mem::size_of::<$t>() == $arm, stringify!($t));
            #[cfg(all(target_pointer_width = "64", not(target_os = "none")))]
            const _: () = assert!(core::mem::size_of::<$t>() == $host, stringify!($t));
        )*
    };
}

pin_size! {
    syn_tensor_t => arm32 32, host64 48;
    syn_mem_stats_t => arm32 28, host64 48;
    syn_model_info_t => arm32 84, host64 88;
    syn_infer_params_t => arm32 20, host64 32;
    syn_npu_caps_t => arm32 16, host64 24;
    syn_prof_result_t => arm32 28, host64 28;
    syn_resize_config_t => arm32 4, host64 4;
    syn_normalize_config_t => arm32 36, host64 36;
    syn_quantize_config_t => arm32 8, host64 8;
    syn_dequantize_config_t => arm32 8, host64 8;
    syn_mfcc_config_t => arm32 8, host64 8;
    syn_topk_config_t => arm32 1, host64 1;
    syn_classification_t => arm32 8, host64 8;
    syn_bbox_t => arm32 24, host64 24;
    syn_nms_config_t => arm32 12, host64 12;
    syn_ipc_msg_t => arm32 20, host64 20;
}

const _: () = {
    assert!(core::mem::size_of::<RawDtype>() == core::mem::size_of::<syn_npu_dtype_t>());
    assert!(core::mem::size_of::<RawLifetime>() == core::mem::size_of::<syn_mem_lifetime_t>());
    assert!(core::mem::size_of::<RawPriority>() == core::mem::size_of::<syn_priority_t>());
    assert!(core::mem::size_of::<RawBool>() == core::mem::size_of::<bool>());
    // The IPC message is the ABI v1 message, field for field.
    assert!(core::mem::size_of::<syn_ipc_msg_t>() == synaptic_abi::MSG_SIZE);
    assert!(core::mem::offset_of!(syn_ipc_msg_t, r#type) == 4);
    assert!(core::mem::offset_of!(syn_ipc_msg_t, payload_len) == 6);
    assert!(core::mem::offset_of!(syn_ipc_msg_t, payload_offset) == 8);
    assert!(core::mem::offset_of!(syn_ipc_msg_t, status) == 16);
    assert!(core::mem::size_of::<syn_bbox_t>() == 6 * 4);
};

/// Asserts field offsets per target family, like [`pin_size!`].
macro_rules! pin_offset {
    ($($t:ty, $field:ident => arm32 $arm:expr, host64 $host:expr;)*) => {
        $(
            #[cfg(all(target_arch = "arm", target_os = "none"))]
            const _: () = assert!(core::mem::offset_of!($t, $field) == $arm);
            #[cfg(all(target_pointer_width = "64", not(target_os = "none")))]
            const _: () = assert!(core::mem::offset_of!($t, $field) == $host);
        )*
    };
}

pin_offset! {
    syn_tensor_t, dtype => arm32 8, host64 16;
    syn_tensor_t, ndim => arm32 9, host64 20;
    syn_tensor_t, shape => arm32 12, host64 24;
    syn_tensor_t, lifetime => arm32 28, host64 40;
    syn_model_info_t, input_size => arm32 48, host64 48;
    syn_model_info_t, input_dtype => arm32 72, host64 72;
    syn_model_info_t, output_dtype => arm32 73, host64 76;
    syn_model_info_t, input_shape => arm32 74, host64 80;
    syn_infer_params_t, deadline_us => arm32 4, host64 4;
    syn_infer_params_t, preemptible => arm32 8, host64 8;
    syn_infer_params_t, callback => arm32 12, host64 16;
    syn_infer_params_t, user_data => arm32 16, host64 24;
    syn_npu_caps_t, supported_dtypes => arm32 12, host64 16;
    syn_mem_stats_t, alloc_count => arm32 20, host64 40;
    syn_normalize_config_t, channels => arm32 32, host64 32;
    syn_nms_config_t, max_boxes => arm32 8, host64 8;
}
