//! The graph as a whole: [`Model::parse`] and [`Model::survey`], which
//! check every operator and the graph rules, and `Model::prepare`, the one
//! place an operator's code picks its preparation in `ops`.
//!
//! Above `ops` and `model` (it calls both), below the interpreter: the
//! layering keeps `model` (the flatbuffer's tensors and operators as read)
//! free of any operator.

use crate::flat::Vector;
use crate::model::{invalid_operator, ElementType, Model};
use crate::ops::{Kind, Prepared};
use crate::schema::{self, builtin};
use crate::Error;

/// One operator as [`Model::survey`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatorSurvey {
    /// Its index in the graph.
    pub index: usize,
    /// Its `BuiltinOperator` code (`CUSTOM`, 32, for a custom operator).
    pub code: i32,
    /// Its name in TFLite's schema.
    pub name: &'static str,
    /// The element types of its first four inputs (`None`: absent).
    pub inputs: [Option<ElementType>; 4],
    /// The element types of its first four outputs.
    pub outputs: [Option<ElementType>; 4],
    /// `Ok` when the interpreter runs it, else why not
    /// ([`Error::UnsupportedOperator`], [`Error::UnsupportedFeature`], or
    /// what is inconsistent).
    pub verdict: Result<(), Error>,
}

/// `error` with the operator's name when it says something is unsupported.
fn named(error: Error, code: i32) -> Error {
    match error {
        Error::Unsupported(what) => Error::UnsupportedFeature {
            operator: code,
            what,
        },
        e => e,
    }
}

impl<'a> Model<'a> {
    /// Reads and validates a model.
    ///
    /// # Errors
    ///
    /// Any structural fault is [`Error::Malformed`]; a wrong identifier or
    /// schema version, [`Error::NotTflite`] or [`Error::SchemaVersion`];
    /// operators and features this interpreter does not implement,
    /// [`Error::UnsupportedOperator`] or [`Error::Unsupported`]; a model that
    /// is well formed but inconsistent, [`Error::InvalidTensor`],
    /// [`Error::InvalidOperator`] or [`Error::InvalidGraph`].
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_tflite::{Error, Model};
    /// assert_eq!(Model::parse(&[0; 4]).err(), Some(Error::Malformed));
    /// assert_eq!(Model::parse(b"\x08\0\0\0TFL2\0\0\0\0").err(), Some(Error::NotTflite));
    /// ```
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut model = Self::read(bytes)?;
        model.validate()?;
        Ok(model)
    }

    /// Everything [`parse`](Self::parse) checks past the structure: first
    /// that every operator is one this interpreter implements (so that a
    /// network is refused for its operator, not for a tensor only that
    /// operator would use), then every tensor, then the graph.
    fn validate(&mut self) -> Result<(), Error> {
        for k in 0..self.operator_count() {
            let code = self.opcode(k, &self.operators.table(k)?)?;
            if !crate::ops::implemented(code) {
                return Err(Error::UnsupportedOperator { code });
            }
        }
        for t in 0..self.tensors.len() {
            self.tensor(t)?;
        }
        self.check_graph()?;
        self.validated = true;
        Ok(())
    }

    /// Every operator of a model with what it needs and whether this
    /// interpreter runs it, without stopping at the first it refuses (as
    /// [`parse`](Self::parse) does): for a tool that tells a user, before
    /// flashing, everything a network lacks. `each` gets one
    /// [`OperatorSurvey`] per operator, in order; the result is then that
    /// of [`parse`](Self::parse), so `Ok` means the model runs.
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse); a structural fault ends the survey before
    /// any operator is reported.
    ///
    /// # Examples
    ///
    /// ```
    /// # let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/micro_speech.tflite")).unwrap();
    /// let mut names = Vec::new();
    /// synaptic_tflite::Model::survey(&bytes, |op| names.push(op.name))?;
    /// assert_eq!(names, ["RESHAPE", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX"]);
    /// # Ok::<(), synaptic_tflite::Error>(())
    /// ```
    pub fn survey(bytes: &'a [u8], mut each: impl FnMut(OperatorSurvey)) -> Result<(), Error> {
        let mut model = Self::read(bytes)?;
        for k in 0..model.operator_count() {
            each(model.operator_survey(k)?);
        }
        model.validate()
    }

    fn operator_survey(&self, index: usize) -> Result<OperatorSurvey, Error> {
        use schema::operator as f;
        let op = self.operators.table(index)?;
        let code = match self.opcode(index, &op) {
            Ok(code) => code,
            Err(Error::Unsupported(_)) => schema::builtin::CUSTOM,
            Err(e) => return Err(e),
        };
        let mut survey = OperatorSurvey {
            index,
            code,
            name: crate::ops::name(code),
            inputs: [None; 4],
            outputs: [None; 4],
            verdict: self.prepare(index).map(|_| ()),
        };
        for (slot, list) in [
            (&mut survey.inputs, op.vector(f::INPUTS, 4)?),
            (&mut survey.outputs, op.vector(f::OUTPUTS, 4)?),
        ] {
            let list = list.unwrap_or(Vector::EMPTY);
            for (i, s) in slot.iter_mut().enumerate() {
                if let Some(t) = self.operand(index, list, i)? {
                    // A tensor the interpreter refuses is named by the
                    // verdict; its type is then not shown.
                    *s = self.tensor(t).ok().map(|t| t.element_type);
                }
            }
        }
        Ok(survey)
    }

    /// Steps a sliced run of this model takes
    /// ([`crate::Interpreter::step`]): one per operator, a convolution one
    /// per [`crate::STEP_ROWS`] of its output rows.
    ///
    /// # Errors
    ///
    /// As planning the model would.
    pub fn step_count(&self) -> Result<usize, Error> {
        let mut steps = 0;
        for k in 0..self.operator_count() {
            steps += match self.prepare(k)?.kind {
                Kind::Conv { geometry, .. } => (geometry.batches * geometry.out_h)
                    .div_ceil(crate::STEP_ROWS)
                    .max(1),
                _ => 1,
            };
        }
        Ok(steps)
    }

    /// Multiply-accumulates of one inference in the CONV_2D,
    /// DEPTHWISE_CONV_2D and FULLY_CONNECTED operators (taps that fall in
    /// the padding included, as the shapes count them): the denominator of
    /// cycles per MAC.
    pub fn macs(&self) -> u64 {
        (0..self.operator_count())
            .filter_map(|k| self.prepare(k).ok())
            .filter(|p| matches!(p.kind, Kind::Conv { .. } | Kind::FullyConnected { .. }))
            .filter_map(|p| p.kind.work())
            .fold(0u64, u64::saturating_add)
    }

    /// Operator `index` with its tensors resolved and checked.
    pub(crate) fn prepare(&self, index: usize) -> Result<Prepared<'a>, Error> {
        use schema::operator as f;
        if index >= self.operators.len() {
            return Err(Error::IndexOutOfRange);
        }
        let op = self.operators.table(index)?;
        let code = self.opcode(index, &op)?;
        let inputs = op.vector(f::INPUTS, 4)?.unwrap_or(Vector::EMPTY);
        let options_type = op.u8(f::BUILTIN_OPTIONS_TYPE, 0)?;
        let options = op.table(f::BUILTIN_OPTIONS)?;
        // The operator first: an operator this interpreter lacks is
        // reported as such, whatever its operands.
        if !crate::ops::implemented(code) {
            return Err(Error::UnsupportedOperator { code });
        }
        let intermediates = op.vector(f::INTERMEDIATES, 4)?;
        if intermediates.is_some() && code != builtin::UNIDIRECTIONAL_SEQUENCE_LSTM {
            return Err(Error::UnsupportedFeature {
                operator: code,
                what: "intermediate tensors",
            });
        }
        if !crate::ops::classic(code) {
            let context = crate::ops::Context {
                model: self,
                index,
                code,
                inputs,
                outputs: self.operator_outputs(index)?,
                intermediates: intermediates.unwrap_or(Vector::EMPTY),
                options_type,
                options,
            };
            return crate::ops::prepare(&context).map_err(|e| named(e, code));
        }
        self.prepare_classic(index, code, inputs, options_type, options)
            .map_err(|e| named(e, code))
    }

    /// The graph rules of the module docs; also sums the work.
    fn check_graph(&mut self) -> Result<(), Error> {
        let is_graph_input = |t: usize| -> Result<bool, Error> {
            for i in 0..self.inputs.len() {
                if self.input_tensor(i)? == t {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        for i in 0..self.inputs.len() {
            let t = self.input_tensor(i)?;
            if self.tensor(t)?.is_constant() {
                return Err(Error::InvalidGraph("constant graph input"));
            }
            for j in 0..i {
                if self.input_tensor(j)? == t {
                    return Err(Error::InvalidGraph("graph input listed twice"));
                }
            }
        }
        let mut work: u64 = 0;
        for k in 0..self.operators.len() {
            let p = self.prepare(k)?;
            work = p
                .kind
                .work()
                .and_then(|w| work.checked_add(w))
                .ok_or(Error::TooLarge)?;
            for (position, o) in p.outputs.iter().enumerate() {
                if is_graph_input(o)? {
                    return Err(invalid_operator(k, "writes a graph input"));
                }
                let mut twice = p.outputs.iter().take(position).any(|e| e == o);
                for j in 0..k {
                    twice |= self.operator_outputs(j)?.contains(o);
                }
                if twice {
                    return Err(invalid_operator(k, "output written twice"));
                }
            }
            for t in p.inputs.iter() {
                if self.tensor(t)?.is_constant() {
                    continue;
                }
                let mut ready = is_graph_input(t)?;
                for j in 0..k {
                    ready |= self.operator_outputs(j)?.contains(t);
                }
                if !ready {
                    return Err(invalid_operator(k, "input not produced before it is read"));
                }
            }
        }
        for i in 0..self.outputs.len() {
            let t = self.output_tensor(i)?;
            let mut produced = is_graph_input(t)?;
            for k in 0..self.operators.len() {
                produced |= self.operator_outputs(k)?.contains(t);
            }
            if !produced {
                return Err(Error::InvalidGraph("graph output never written"));
            }
        }
        self.work = work;
        Ok(())
    }
}
