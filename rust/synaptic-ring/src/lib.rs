//! (being written)
#![no_std]
