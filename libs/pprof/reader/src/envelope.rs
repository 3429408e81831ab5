//! The top-level Profile message: where the messages of each table are, the string table, and the
//! scalar fields.
//!
//! It is read as the protobuf runtime reads it, so every framing error here is "not protobuf". A known
//! field sent with another wire type than pprof's is, to protobuf, an unknown field: its framing is
//! checked as any unknown field's, and the first one is refused once the string table is known to be
//! there (`go tool pprof` refuses it too: "type mismatch"). Unknown fields may be of any wire type,
//! groups included, as protobuf allows; pprof's own messages below the top level never hold groups.

use crate::wire::{
    Cursor, MAX_FIELD_NUMBER, WIRE_END_GROUP, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_START_GROUP, WIRE_VARINT,
};
use crate::Refusal;

/// The bytes `[start, end)` of one message, as offsets in the profile.
pub type Span = (usize, usize);

/// Groups nested deeper than this are refused (protobuf refuses past 100; nothing in pprof has any).
const MAX_GROUP_DEPTH: usize = 32;

const NO_STRINGS: &str = "not a pprof profile: a valid protobuf message, but without the string table every \
                          pprof profile has (OTLP profiles and other protobuf messages are not pprof)";

/// pprof's Profile fields by number: name and wire type. Comment (13) is a repeated int64, so it may
/// also come packed.
const PROFILE_FIELDS: [(&str, u64); 16] = [
    ("", WIRE_VARINT),
    ("sample_type", WIRE_LEN),
    ("sample", WIRE_LEN),
    ("mapping", WIRE_LEN),
    ("location", WIRE_LEN),
    ("function", WIRE_LEN),
    ("string_table", WIRE_LEN),
    ("drop_frames", WIRE_VARINT),
    ("keep_frames", WIRE_VARINT),
    ("time_nanos", WIRE_VARINT),
    ("duration_nanos", WIRE_VARINT),
    ("period_type", WIRE_LEN),
    ("period", WIRE_VARINT),
    ("comment", WIRE_VARINT),
    ("default_sample_type", WIRE_VARINT),
    ("doc_url", WIRE_VARINT),
];
const VALUE_TYPE_FIELDS: [&str; 3] = ["", "type", "unit"];

/// The framing of the whole message is wrong: it is not protobuf.
#[derive(Debug, PartialEq, Eq)]
pub struct NotProtobuf;

#[derive(Debug, Default)]
pub struct Envelope {
    /// (type, unit) of each sample type, flattened.
    pub sample_types: Vec<u64>,
    pub samples: Vec<Span>,
    pub mappings: Vec<Span>,
    pub locations: Vec<Span>,
    pub functions: Vec<Span>,
    pub strings: Vec<Span>,
    pub comments: Vec<u64>,
    pub period_type: [u64; 2],
    /// The singular int64 fields, by field number (last occurrence wins, absent is 0).
    pub scalars: [u64; 16],
    /// The first field of the wrong wire type in the profile, in its period type and in its sample types.
    mismatches: [Option<String>; 3],
}

impl Envelope {
    /// Whether this is a pprof profile at all: it has a string table and no field of the wrong wire type.
    pub fn check(&self) -> Result<(), Refusal> {
        if self.strings.is_empty() {
            return Err(Refusal::Malformed(NO_STRINGS.to_string()));
        }
        match self.mismatches.iter().flatten().next() {
            Some(message) => Err(Refusal::Malformed(message.clone())),
            None => Ok(()),
        }
    }
}

/// Read the top-level message: the spans of the tables' messages are kept, not decoded.
pub fn read(buf: &[u8]) -> Result<Envelope, NotProtobuf> {
    let mut env = Envelope::default();
    let mut c = Cursor::new(buf, 0, buf.len());
    while !c.at_end() {
        let (number, wire) = tag(&mut c)?;
        let (name, expected) = match PROFILE_FIELDS.get(number as usize) {
            Some(&known) => known,
            None => {
                skip(&mut c, number, wire, 0)?;
                continue;
            }
        };
        if wire == expected {
            field(&mut env, &mut c, number)?;
        } else if number == 13 && wire == WIRE_LEN {
            packed(&mut c, &mut env.comments)?;
        } else {
            note(&mut env.mismatches[0], format!("profile: field {number} ({name}) has wire type {wire}, but pprof's has wire type {expected}"));
            skip(&mut c, number, wire, 0)?;
        }
    }
    Ok(env)
}

fn field(env: &mut Envelope, c: &mut Cursor, number: u64) -> Result<(), NotProtobuf> {
    let table = match number {
        2 => &mut env.samples,
        3 => &mut env.mappings,
        4 => &mut env.locations,
        5 => &mut env.functions,
        6 => &mut env.strings,
        1 => {
            let mut pair = [0; 2];
            value_type(&mut payload(c)?, &mut pair, &mut env.mismatches[2], "sample_type")?;
            env.sample_types.extend_from_slice(&pair);
            return Ok(());
        }
        11 => return value_type(&mut payload(c)?, &mut env.period_type, &mut env.mismatches[1], "period_type"),
        13 => {
            env.comments.push(varint(c)?);
            return Ok(());
        }
        _ => {
            env.scalars[number as usize] = varint(c)?;
            return Ok(());
        }
    };
    let p = payload(c)?;
    table.push((p.pos, p.end));
    Ok(())
}

/// A ValueType (sample_type, period_type); a second period_type merges into the first, as protobuf merges.
fn value_type(c: &mut Cursor, pair: &mut [u64; 2], mismatch: &mut Option<String>, what: &str) -> Result<(), NotProtobuf> {
    while !c.at_end() {
        let (number, wire) = tag(c)?;
        if number > 2 {
            skip(c, number, wire, 1)?;
        } else if wire == WIRE_VARINT {
            pair[number as usize - 1] = varint(c)?;
        } else {
            let name = VALUE_TYPE_FIELDS[number as usize];
            note(mismatch, format!("{what}: field {number} ({name}) has wire type {wire}, but pprof's has wire type 0"));
            skip(c, number, wire, 1)?;
        }
    }
    Ok(())
}

fn note(first: &mut Option<String>, message: String) {
    if first.is_none() {
        *first = Some(message);
    }
}

/// A tag as protobuf accepts it: at most 32 bits, a field number from 1, a wire type from 0 to 5.
fn tag(c: &mut Cursor) -> Result<(u64, u64), NotProtobuf> {
    let tag = varint(c)?;
    let (number, wire) = (tag >> 3, tag & 7);
    if tag > u64::from(u32::MAX) || number == 0 || number > MAX_FIELD_NUMBER || wire > WIRE_I32 {
        return Err(NotProtobuf);
    }
    Ok((number, wire))
}

fn varint(c: &mut Cursor) -> Result<u64, NotProtobuf> {
    c.varint().map_err(|_| NotProtobuf)
}

fn payload<'a>(c: &mut Cursor<'a>) -> Result<Cursor<'a>, NotProtobuf> {
    let len = varint(c)?;
    c.take(len).ok_or(NotProtobuf)
}

fn packed(c: &mut Cursor, out: &mut Vec<u64>) -> Result<(), NotProtobuf> {
    let mut p = payload(c)?;
    while !p.at_end() {
        out.push(varint(&mut p)?);
    }
    Ok(())
}

/// Step over an unknown field (a group up to its matching end).
fn skip(c: &mut Cursor, number: u64, wire: u64, depth: usize) -> Result<(), NotProtobuf> {
    let ok = match wire {
        WIRE_VARINT => varint(c).is_ok(),
        WIRE_I64 => c.skip(8),
        WIRE_I32 => c.skip(4),
        WIRE_LEN => payload(c).is_ok(),
        WIRE_START_GROUP => return skip_group(c, number, depth + 1),
        _ => false, // an end-group tag with no group open
    };
    if ok {
        Ok(())
    } else {
        Err(NotProtobuf)
    }
}

fn skip_group(c: &mut Cursor, number: u64, depth: usize) -> Result<(), NotProtobuf> {
    if depth > MAX_GROUP_DEPTH {
        return Err(NotProtobuf);
    }
    loop {
        if c.at_end() {
            return Err(NotProtobuf);
        }
        let (inner, wire) = tag(c)?;
        if wire == WIRE_END_GROUP {
            return if inner == number { Ok(()) } else { Err(NotProtobuf) };
        }
        skip(c, inner, wire, depth)?;
    }
}
