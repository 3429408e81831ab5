//! The four tables of a profile (samples, locations, functions, mappings) decoded into columns.
//!
//! Their messages hold varints only: scalars, packed scalars and nested messages of scalars (labels,
//! lines), so a field of any other wire type is refused, as `go tool pprof` refuses it. Each table is
//! read whole before the next, in the order of `Columns::read`, so a corrupt profile's error names the
//! first bad table in that order. A known field of the wrong wire type is refused, not skipped: skipping
//! it would lose its value silently.

use crate::envelope::{Envelope, Span};
use crate::wire::{Cursor, VarintError, MAX_FIELD_NUMBER, WIRE_LEN, WIRE_VARINT};
use crate::Refusal;

/// A refusal, boxed so that a Result of a varint stays two registers wide on the hot path.
type Fail = Box<Refusal>;

/// Every column of the tables, 64-bit values (signed ones as their bits) and booleans as bytes.
#[derive(Debug, Default)]
pub struct Columns {
    /// Sample i's locations are `sample_locations[sample_offsets[i]..sample_offsets[i + 1]]`.
    pub sample_offsets: Vec<u64>,
    pub sample_locations: Vec<u64>,
    pub sample_values: Vec<u64>,
    /// Labels: owning sample, key, str, num, num_unit.
    pub labels: [Vec<u64>; 5],
    /// Locations: id, mapping_id, address.
    pub locations: [Vec<u64>; 3],
    pub location_folded: Vec<u8>,
    pub line_offsets: Vec<u64>,
    /// Lines: function_id, line, column.
    pub lines: [Vec<u64>; 3],
    /// Functions: id, name, system_name, filename, start_line.
    pub functions: [Vec<u64>; 5],
    /// Mappings: id, memory_start, memory_limit, file_offset, filename, build_id.
    pub mappings: [Vec<u64>; 6],
    /// has_functions, has_filenames, has_line_numbers, has_inline_frames.
    pub mapping_flags: [Vec<u8>; 4],
}

impl Columns {
    /// Decode the tables the envelope found, in the order their errors are reported.
    pub fn read(buf: &[u8], env: &Envelope) -> Result<Columns, Fail> {
        let mut cols = Columns::default();
        cols.read_samples(Table::new(buf, "sample", &env.samples), env)?;
        cols.read_locations(Table::new(buf, "location", &env.locations), &env.locations)?;
        cols.read_functions(Table::new(buf, "function", &env.functions), &env.functions)?;
        cols.read_mappings(Table::new(buf, "mapping", &env.mappings), &env.mappings)?;
        Ok(cols)
    }

    /// Samples, each with one value per sample type.
    fn read_samples(&mut self, table: Table, env: &Envelope) -> Result<(), Fail> {
        let k = env.sample_types.len() / 2;
        self.sample_offsets.reserve(env.samples.len() + 1);
        self.sample_values.reserve(env.samples.len() * k);
        self.sample_offsets.push(0);
        for (i, span) in env.samples.iter().enumerate() {
            table.sample(self, *span, i, k)?;
        }
        Ok(())
    }

    fn read_locations(&mut self, table: Table, spans: &[Span]) -> Result<(), Fail> {
        self.line_offsets.reserve(spans.len() + 1);
        self.line_offsets.push(0);
        for span in spans {
            table.location(self, *span)?;
        }
        Ok(())
    }

    fn read_functions(&mut self, table: Table, spans: &[Span]) -> Result<(), Fail> {
        for span in spans {
            let f: [u64; 5] = table.scalars(table.cursor(*span), "function")?;
            push_all(&mut self.functions, &f);
        }
        Ok(())
    }

    fn read_mappings(&mut self, table: Table, spans: &[Span]) -> Result<(), Fail> {
        for span in spans {
            let m: [u64; 10] = table.scalars(table.cursor(*span), "mapping")?;
            push_all(&mut self.mappings, &m[..6]);
            for (flag, value) in self.mapping_flags.iter_mut().zip(&m[6..]) {
                flag.push(u8::from(*value != 0));
            }
        }
        Ok(())
    }
}

/// Why the field just read cannot be read on; the checks in the order the earlier numpy decoder made them.
#[cold]
fn bad_field(c: &Cursor, what: &str, number: u64, wire: u64) -> Fail {
    malformed(if c.at_end() {
        format!("{what}: a field has no value (truncated message)")
    } else if number == 0 || number > MAX_FIELD_NUMBER {
        format!("{what}: field number {number} is outside 1..{MAX_FIELD_NUMBER}")
    } else {
        format!("{what}: field {number} has unsupported wire type {wire}")
    })
}

fn push_all(columns: &mut [Vec<u64>], values: &[u64]) {
    for (column, value) in columns.iter_mut().zip(values) {
        column.push(*value);
    }
}

fn malformed(message: String) -> Fail {
    Box::new(Refusal::Malformed(message))
}

fn mismatch(what: &str, number: u64, wire: u64, expected: u64) -> Fail {
    malformed(format!("{what}: field {number} has wire type {wire}, but pprof's field {number} has wire type {expected}"))
}

/// The messages of one table, named for errors. `last_end` is where the table's data ends (the end of its
/// last message), where a varint cut short is a truncated profile rather than a misplaced boundary.
struct Table<'a> {
    buf: &'a [u8],
    name: &'static str,
    last_end: usize,
}

impl<'a> Table<'a> {
    fn new(buf: &'a [u8], name: &'static str, spans: &[Span]) -> Self {
        Table { buf, name, last_end: spans.last().map_or(usize::MAX, |s| s.1) }
    }

    fn cursor(&self, span: Span) -> Cursor<'a> {
        Cursor::new(self.buf, span.0, span.1)
    }

    fn sample(&self, cols: &mut Columns, span: Span, index: usize, k: usize) -> Result<(), Fail> {
        let mut c = self.cursor(span);
        let values_before = cols.sample_values.len();
        while !c.at_end() {
            let (number, wire) = self.field(&mut c, "sample")?;
            match (number, wire) {
                (1, WIRE_VARINT) => cols.sample_locations.push(self.varint(&mut c)?),
                (2, WIRE_VARINT) => cols.sample_values.push(self.varint(&mut c)?),
                (1, _) => self.packed(&mut c, &mut cols.sample_locations)?,
                (2, _) => self.packed(&mut c, &mut cols.sample_values)?,
                (3, WIRE_LEN) => {
                    let label: [u64; 4] = self.scalars(self.payload(&mut c, "sample")?, "sample label")?;
                    cols.labels[0].push(index as u64);
                    push_all(&mut cols.labels[1..], &label);
                }
                _ => self.unknown(&mut c, "sample", number, wire, &[1, 2], &[3])?,
            }
        }
        let count = cols.sample_values.len() - values_before;
        if count != k {
            return Err(Box::new(Refusal::RuleBroken(format!(
                "sample {index} has {count} values, but the profile declares {k} sample types"
            ))));
        }
        cols.sample_offsets.push(cols.sample_locations.len() as u64);
        Ok(())
    }

    fn location(&self, cols: &mut Columns, span: Span) -> Result<(), Fail> {
        let mut c = self.cursor(span);
        let mut singular = [0u64; 5];
        while !c.at_end() {
            let (number, wire) = self.field(&mut c, "location")?;
            match (number, wire) {
                (1..=3 | 5, WIRE_VARINT) => singular[number as usize - 1] = self.varint(&mut c)?,
                (4, WIRE_LEN) => {
                    let line: [u64; 3] = self.scalars(self.payload(&mut c, "location")?, "location line")?;
                    push_all(&mut cols.lines, &line);
                }
                _ => self.unknown(&mut c, "location", number, wire, &[1, 2, 3, 5], &[4])?,
            }
        }
        push_all(&mut cols.locations, &singular[..3]);
        cols.location_folded.push(u8::from(singular[4] != 0));
        cols.line_offsets.push(cols.lines[0].len() as u64);
        Ok(())
    }

    /// A message of singular varint fields 1..=N (function, mapping, label, line); absent fields are 0.
    fn scalars<const N: usize>(&self, mut c: Cursor<'a>, what: &str) -> Result<[u64; N], Fail> {
        let mut out = [0u64; N];
        while !c.at_end() {
            let (number, wire) = self.field(&mut c, what)?;
            if wire == WIRE_VARINT {
                let value = self.varint(&mut c)?;
                if let Some(slot) = out.get_mut((number as usize).wrapping_sub(1)) {
                    *slot = value;
                }
            } else {
                self.payload(&mut c, what)?;
                if number as usize <= N {
                    return Err(mismatch(what, number, wire, WIRE_VARINT));
                }
            }
        }
        Ok(out)
    }

    /// A field this message does not read as it came: skipped when pprof has no such field, refused when
    /// pprof's has the other wire type (`varints` are numbers that must be varints, `messages` messages).
    fn unknown(&self, c: &mut Cursor<'a>, what: &str, number: u64, wire: u64, varints: &[u64], messages: &[u64])
               -> Result<(), Fail> {
        if wire == WIRE_VARINT {
            self.varint(c)?;
        } else {
            self.payload(c, what)?;
        }
        if wire == WIRE_LEN && varints.contains(&number) {
            return Err(mismatch(what, number, wire, WIRE_VARINT));
        }
        if wire == WIRE_VARINT && messages.contains(&number) {
            return Err(mismatch(what, number, wire, WIRE_LEN));
        }
        Ok(())
    }

    /// The next field's number and wire type (varint or length-delimited: nothing else is in pprof).
    #[inline]
    fn field(&self, c: &mut Cursor, what: &str) -> Result<(u64, u64), Fail> {
        let tag = self.varint(c)?;
        let (number, wire) = (tag >> 3, tag & 7);
        if c.at_end() || number == 0 || number > MAX_FIELD_NUMBER || (wire != WIRE_VARINT && wire != WIRE_LEN) {
            return Err(bad_field(c, what, number, wire));
        }
        Ok((number, wire))
    }

    #[inline]
    fn varint(&self, c: &mut Cursor) -> Result<u64, Fail> {
        c.varint().map_err(|e| self.varint_error(e, c.end))
    }

    #[cold]
    fn varint_error(&self, error: VarintError, range_end: usize) -> Fail {
        let message = match error {
            VarintError::TooLong => "varint longer than 10 bytes".to_string(),
            VarintError::Unterminated if range_end == self.last_end => {
                "truncated varint at the end of the data".to_string()
            }
            VarintError::Unterminated => {
                format!("{}: a field boundary falls inside a varint (truncated or corrupt data)", self.name)
            }
        };
        malformed(message)
    }

    #[inline]
    fn payload(&self, c: &mut Cursor<'a>, what: &str) -> Result<Cursor<'a>, Fail> {
        let len = self.varint(c)?;
        c.take(len)
            .ok_or_else(|| malformed(format!("{what}: a length-delimited field runs past the end of its message")))
    }

    fn packed(&self, c: &mut Cursor<'a>, out: &mut Vec<u64>) -> Result<(), Fail> {
        let mut p = self.payload(c, self.name)?;
        while !p.at_end() {
            out.push(self.varint(&mut p)?);
        }
        Ok(())
    }
}
