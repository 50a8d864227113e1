/*
 * Copyright (c) synaptic contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Rust's memory routines from the C library (CONFIG_SYNAPTIC_RUST_MEM_FROM_LIBC).
 *
 * Rust code on Arm calls the run-time ABI's __aeabi_memcpy, __aeabi_memmove,
 * __aeabi_memset and __aeabi_memclr (and their 4- and 8-byte aligned forms)
 * for copies and fills. The Rust toolchain defines them weakly in
 * compiler_builtins, word-at-a-time, at about 1.1 KB of flash; these strong
 * definitions forward them to the C library's memcpy, memmove and memset,
 * which the image links anyway. Note the ABI's argument order for memset
 * (destination, length, value) and memclr (no value).
 */

#include <stddef.h>
#include <string.h>

void __aeabi_memcpy(void *dest, const void *src, size_t n);
void __aeabi_memcpy4(void *dest, const void *src, size_t n);
void __aeabi_memcpy8(void *dest, const void *src, size_t n);
void __aeabi_memmove(void *dest, const void *src, size_t n);
void __aeabi_memmove4(void *dest, const void *src, size_t n);
void __aeabi_memmove8(void *dest, const void *src, size_t n);
void __aeabi_memset(void *dest, size_t n, int c);
void __aeabi_memset4(void *dest, size_t n, int c);
void __aeabi_memset8(void *dest, size_t n, int c);
void __aeabi_memclr(void *dest, size_t n);
void __aeabi_memclr4(void *dest, size_t n);
void __aeabi_memclr8(void *dest, size_t n);

#define SYN_FORWARD_COPY(name, to)                                             \
	void name(void *dest, const void *src, size_t n)                       \
	{                                                                      \
		(void)to(dest, src, n);                                        \
	}
#define SYN_FORWARD_SET(name)                                                  \
	void name(void *dest, size_t n, int c)                                 \
	{                                                                      \
		(void)memset(dest, c, n);                                      \
	}
#define SYN_FORWARD_CLEAR(name)                                                \
	void name(void *dest, size_t n)                                        \
	{                                                                      \
		(void)memset(dest, 0, n);                                      \
	}

SYN_FORWARD_COPY(__aeabi_memcpy, memcpy)
SYN_FORWARD_COPY(__aeabi_memcpy4, memcpy)
SYN_FORWARD_COPY(__aeabi_memcpy8, memcpy)
SYN_FORWARD_COPY(__aeabi_memmove, memmove)
SYN_FORWARD_COPY(__aeabi_memmove4, memmove)
SYN_FORWARD_COPY(__aeabi_memmove8, memmove)
SYN_FORWARD_SET(__aeabi_memset)
SYN_FORWARD_SET(__aeabi_memset4)
SYN_FORWARD_SET(__aeabi_memset8)
SYN_FORWARD_CLEAR(__aeabi_memclr)
SYN_FORWARD_CLEAR(__aeabi_memclr4)
SYN_FORWARD_CLEAR(__aeabi_memclr8)
