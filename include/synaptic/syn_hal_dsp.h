/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * synaptic C API, DSP kernels: syn_hal_dsp_init, _normalize_int8,
 * _softmax_f32, _argmax, _fft_f32, _mat_mult_q15. They keep no state and
 * take no lock, so stage functions may call them.
 *
 * - syn_hal_dsp_fft_f32(in, out, len): forward complex FFT of len points
 *   stored as interleaved re, im floats (2 * len floats); len is a power of
 *   two from 2 to SYN_CAPI_MAX_FFT_POINTS; in == out works in place.
 * - syn_hal_dsp_mat_mult_q15(a, b, out, rows, cols): the rows x cols Q15
 *   matrix a times the Q15 vector b (cols entries) into out (rows entries),
 *   each sum rounded half up and saturated.
 * - syn_hal_dsp_normalize_int8() and syn_hal_dsp_softmax_f32() accept
 *   in == out; any other overlap of input and output gives -EINVAL, as do
 *   float and int16 pointers that are not naturally aligned.
 */
#ifndef SYNAPTIC_SYN_HAL_DSP_H_
#define SYNAPTIC_SYN_HAL_DSP_H_

#include <synaptic/syn_capi.h>

#endif /* SYNAPTIC_SYN_HAL_DSP_H_ */
