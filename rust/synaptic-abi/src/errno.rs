//! Errno values at the C and wire boundary.
//!
//! One `#[repr(i32)]` enum with explicit values: the numbers are Zephyr's
//! (`lib/libc/minimal/include/errno.h`, which matches newlib), so a status
//! read by C code on either core means what `errno.h` says. Layers keep their
//! own descriptive error enums and map into this one only at the boundary.

/// A positive errno value as Zephyr defines it. The wire carries `-(errno)`.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Errno {
    /// Not permitted.
    Perm = 1,
    /// No such entry (unknown model name, empty queue).
    NoEnt = 2,
    /// I/O error (device failure).
    Io = 5,
    /// Argument list too long / input larger than allowed.
    TooBig = 7,
    /// Image is not executable.
    NoExec = 8,
    /// Try again (ring full, resource momentarily busy).
    Again = 11,
    /// Out of memory (arena exhausted).
    NoMem = 12,
    /// Permission denied (a model container signed by a key the device
    /// does not trust).
    Acces = 13,
    /// Bad address (offset outside the region).
    Fault = 14,
    /// Device or resource busy.
    Busy = 16,
    /// Already exists (duplicate model name).
    Exist = 17,
    /// No such device.
    NoDev = 19,
    /// Invalid argument.
    Inval = 22,
    /// No space left (registry or pool full).
    NoSpc = 28,
    /// Result out of range (a model version below its security counter).
    Range = 34,
    /// No message of the desired type (an unsigned model container where
    /// signatures are required).
    NoMsg = 35,
    /// Protocol error (peer broke the handshake).
    Proto = 71,
    /// Malformed message from the peer.
    BadMsg = 77,
    /// No buffer space.
    NoBufs = 105,
    /// Timed out.
    TimedOut = 116,
    /// Already in progress.
    Already = 120,
    /// Message too long.
    MsgSize = 122,
    /// Link to the peer is down.
    NotConn = 128,
    /// Not supported.
    NotSup = 134,
    /// Value overflow.
    Overflow = 139,
    /// Cancelled.
    Canceled = 140,
}

impl Errno {
    /// Every variant, for table-driven tests and reverse lookup.
    pub const ALL: [Errno; 26] = [
        Errno::Perm,
        Errno::NoEnt,
        Errno::Io,
        Errno::TooBig,
        Errno::NoExec,
        Errno::Again,
        Errno::NoMem,
        Errno::Acces,
        Errno::Fault,
        Errno::Busy,
        Errno::Exist,
        Errno::NoDev,
        Errno::Inval,
        Errno::NoSpc,
        Errno::Range,
        Errno::NoMsg,
        Errno::Proto,
        Errno::BadMsg,
        Errno::NoBufs,
        Errno::TimedOut,
        Errno::Already,
        Errno::MsgSize,
        Errno::NotConn,
        Errno::NotSup,
        Errno::Overflow,
        Errno::Canceled,
    ];

    /// The positive errno number.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The negative value the C API and the wire return (`-EINVAL`, ...).
    pub const fn negative(self) -> i32 {
        -(self as i32)
    }

    /// Decode a positive or negative errno number; `None` for 0 and unknown values.
    pub fn from_code(code: i32) -> Option<Errno> {
        let positive = code.checked_abs()?;
        Errno::ALL.iter().copied().find(|e| e.code() == positive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_zephyr_errno_h() {
        assert_eq!(Errno::Inval.code(), 22);
        assert_eq!(Errno::Again.code(), 11);
        assert_eq!(Errno::BadMsg.code(), 77);
        assert_eq!(Errno::TimedOut.code(), 116);
        assert_eq!(Errno::Canceled.negative(), -140);
    }

    #[test]
    fn round_trips_every_variant() {
        for e in Errno::ALL {
            assert_eq!(Errno::from_code(e.code()), Some(e));
            assert_eq!(Errno::from_code(e.negative()), Some(e));
        }
        assert_eq!(Errno::from_code(0), None);
        assert_eq!(Errno::from_code(9999), None);
        assert_eq!(Errno::from_code(i32::MIN), None);
    }
}
