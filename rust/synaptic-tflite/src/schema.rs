//! The part of TFLite's flatbuffer schema (`schema.fbs`, file identifier
//! `TFL3`, schema version 3) that this interpreter reads: field slots of the
//! tables, and the enum values it understands.
//!
//! Slots are the fields' declaration order in `schema.fbs`; the vtable entry
//! of slot `n` is at byte `4 + 2n`.

/// The file identifier at bytes 4..8 of every TFLite model.
pub const FILE_IDENTIFIER: &[u8; 4] = b"TFL3";
/// `Model.version` of the schema this reader implements.
pub const SCHEMA_VERSION: u32 = 3;

pub(crate) mod model {
    pub const VERSION: usize = 0;
    pub const OPERATOR_CODES: usize = 1;
    pub const SUBGRAPHS: usize = 2;
    pub const BUFFERS: usize = 4;
}

pub(crate) mod operator_code {
    pub const DEPRECATED_BUILTIN_CODE: usize = 0;
    pub const CUSTOM_CODE: usize = 1;
    pub const BUILTIN_CODE: usize = 3;
}

pub(crate) mod subgraph {
    pub const TENSORS: usize = 0;
    pub const INPUTS: usize = 1;
    pub const OUTPUTS: usize = 2;
    pub const OPERATORS: usize = 3;
}

pub(crate) mod tensor {
    pub const SHAPE: usize = 0;
    pub const TYPE: usize = 1;
    pub const BUFFER: usize = 2;
    pub const QUANTIZATION: usize = 4;
    pub const IS_VARIABLE: usize = 5;
    pub const SPARSITY: usize = 6;
}

pub(crate) mod quantization {
    pub const SCALE: usize = 2;
    pub const ZERO_POINT: usize = 3;
    pub const DETAILS_TYPE: usize = 4;
    pub const QUANTIZED_DIMENSION: usize = 6;
}

pub(crate) mod buffer {
    pub const DATA: usize = 0;
    pub const OFFSET: usize = 1;
}

pub(crate) mod operator {
    pub const OPCODE_INDEX: usize = 0;
    pub const INPUTS: usize = 1;
    pub const OUTPUTS: usize = 2;
    pub const BUILTIN_OPTIONS_TYPE: usize = 3;
    pub const BUILTIN_OPTIONS: usize = 4;
    pub const INTERMEDIATES: usize = 8;
}

/// `BuiltinOperator` values.
pub(crate) mod builtin {
    pub const ADD: i32 = 0;
    pub const AVERAGE_POOL_2D: i32 = 1;
    pub const CONCATENATION: i32 = 2;
    pub const CONV_2D: i32 = 3;
    pub const DEPTHWISE_CONV_2D: i32 = 4;
    pub const DEQUANTIZE: i32 = 6;
    pub const FULLY_CONNECTED: i32 = 9;
    pub const LOGISTIC: i32 = 14;
    pub const MAX_POOL_2D: i32 = 17;
    pub const MUL: i32 = 18;
    pub const RELU: i32 = 19;
    pub const RELU_N1_TO_1: i32 = 20;
    pub const RELU6: i32 = 21;
    pub const RESHAPE: i32 = 22;
    pub const SOFTMAX: i32 = 25;
    pub const TANH: i32 = 28;
    pub const CUSTOM: i32 = 32;
    pub const PAD: i32 = 34;
    pub const TRANSPOSE: i32 = 39;
    pub const MEAN: i32 = 40;
    pub const SUB: i32 = 41;
    pub const SQUEEZE: i32 = 43;
    pub const UNIDIRECTIONAL_SEQUENCE_LSTM: i32 = 44;
    pub const STRIDED_SLICE: i32 = 45;
    pub const SPLIT: i32 = 49;
    pub const PRELU: i32 = 54;
    pub const MAXIMUM: i32 = 55;
    pub const MINIMUM: i32 = 57;
    pub const PADV2: i32 = 60;
    pub const TRANSPOSE_CONV: i32 = 67;
    pub const EXPAND_DIMS: i32 = 70;
    pub const LEAKY_RELU: i32 = 98;
    pub const SPLIT_V: i32 = 102;
    pub const QUANTIZE: i32 = 114;
    pub const HARD_SWISH: i32 = 117;
}

/// `BuiltinOptions` union tags.
pub(crate) mod options {
    pub const CONV_2D: u8 = 1;
    pub const DEPTHWISE_CONV_2D: u8 = 2;
    pub const POOL_2D: u8 = 5;
    pub const FULLY_CONNECTED: u8 = 8;
    pub const SOFTMAX: u8 = 9;
    pub const CONCATENATION: u8 = 10;
    pub const ADD: u8 = 11;
    pub const RESHAPE: u8 = 17;
    pub const MUL: u8 = 21;
    pub const PAD: u8 = 22;
    pub const TRANSPOSE: u8 = 26;
    pub const REDUCER: u8 = 27;
    pub const SUB: u8 = 28;
    pub const SQUEEZE: u8 = 30;
    pub const STRIDED_SLICE: u8 = 32;
    pub const SPLIT: u8 = 35;
    pub const DEQUANTIZE: u8 = 38;
    pub const MAXIMUM_MINIMUM: u8 = 39;
    pub const PADV2: u8 = 43;
    pub const TRANSPOSE_CONV: u8 = 49;
    pub const EXPAND_DIMS: u8 = 52;
    pub const UNIDIRECTIONAL_SEQUENCE_LSTM: u8 = 71;
    pub const SPLIT_V: u8 = 79;
    pub const LEAKY_RELU: u8 = 75;
    pub const QUANTIZE: u8 = 89;
    pub const HARD_SWISH: u8 = 91;

    pub mod conv {
        pub const PADDING: usize = 0;
        pub const STRIDE_W: usize = 1;
        pub const STRIDE_H: usize = 2;
        pub const FUSED_ACTIVATION: usize = 3;
        pub const DILATION_W: usize = 4;
        pub const DILATION_H: usize = 5;
    }
    pub mod depthwise {
        pub const PADDING: usize = 0;
        pub const STRIDE_W: usize = 1;
        pub const STRIDE_H: usize = 2;
        pub const DEPTH_MULTIPLIER: usize = 3;
        pub const FUSED_ACTIVATION: usize = 4;
        pub const DILATION_W: usize = 5;
        pub const DILATION_H: usize = 6;
    }
    pub mod pool {
        pub const PADDING: usize = 0;
        pub const STRIDE_W: usize = 1;
        pub const STRIDE_H: usize = 2;
        pub const FILTER_W: usize = 3;
        pub const FILTER_H: usize = 4;
        pub const FUSED_ACTIVATION: usize = 5;
    }
    pub mod fully_connected {
        pub const FUSED_ACTIVATION: usize = 0;
        pub const WEIGHTS_FORMAT: usize = 1;
    }
    pub mod softmax {
        pub const BETA: usize = 0;
    }
    /// `AddOptions`, `SubOptions`, `MulOptions`.
    pub mod arithmetic {
        pub const FUSED_ACTIVATION: usize = 0;
    }
    pub mod concatenation {
        pub const AXIS: usize = 0;
        pub const FUSED_ACTIVATION: usize = 1;
    }
    pub mod reducer {
        pub const KEEP_DIMS: usize = 0;
    }
    pub mod split {
        pub const NUM_SPLITS: usize = 0;
    }
    /// `SplitVOptions`.
    pub mod split_v {
        pub const NUM_SPLITS: usize = 0;
    }
    /// `TransposeConvOptions`.
    pub mod transpose_conv {
        pub const PADDING: usize = 0;
        pub const STRIDE_W: usize = 1;
        pub const STRIDE_H: usize = 2;
        pub const FUSED_ACTIVATION: usize = 3;
    }
    pub mod strided_slice {
        pub const BEGIN_MASK: usize = 0;
        pub const END_MASK: usize = 1;
        pub const ELLIPSIS_MASK: usize = 2;
        pub const NEW_AXIS_MASK: usize = 3;
        pub const SHRINK_AXIS_MASK: usize = 4;
        pub const OFFSET: usize = 5;
    }
    pub mod leaky_relu {
        pub const ALPHA: usize = 0;
    }
    pub mod unidirectional_sequence_lstm {
        pub const CELL_CLIP: usize = 1;
        pub const PROJ_CLIP: usize = 2;
        pub const TIME_MAJOR: usize = 3;
        pub const DIAGONAL_RECURRENT_TENSORS: usize = 5;
    }
}

/// `TensorType` values.
pub(crate) mod tensor_type {
    pub const FLOAT32: i8 = 0;
    pub const INT32: i8 = 2;
    pub const UINT8: i8 = 3;
    pub const INT64: i8 = 4;
    pub const BOOL: i8 = 6;
    pub const INT16: i8 = 7;
    pub const INT8: i8 = 9;
}
