//! TRANSPOSE.

use super::Context;
use crate::model::Prepared;
use crate::Error;

/// A prepared operator of this module.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Transpose {}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    Err(c.unsupported("not implemented"))
}

impl Transpose {
    pub(crate) fn work(&self) -> Option<u64> {
        None
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        let _ = (inputs, o, y);
        Err(Error::Internal("not implemented"))
    }
}
