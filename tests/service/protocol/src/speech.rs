/// The model CPU1 updates: TFLite Micro's micro-speech keyword spotter
/// (`models/micro_speech.tflite`), served as version 1 (by the stub NPU)
/// before CPU1 streams the real network as version [`UPDATE_VERSION`].
pub const SPEECH: &str = "speech";
/// Its input shape (int8 `[1, 1960]`: 49 frames x 40 features).
pub const SPEECH_INPUT: [u32; 2] = [1, 1960];
/// Its output shape (int8 `[1, 4]`: silence, unknown, yes, no).
pub const SPEECH_OUTPUT_SHAPE: [u32; 2] = [1, 4];
