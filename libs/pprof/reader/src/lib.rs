//! flamewatch.pprof._reader: pprof protobuf bytes (already decompressed) read into the columns of
//! flamewatch.pprof.model in one pass, without a Python object per sample.
//!
//! `read(data)` returns `(strings, header, sample_types, comments, samples, locations, functions,
//! mappings)`: the string table as a list of str (bytes that are not UTF-8 become U+FFFD, as Python's
//! "replace" makes them), the scalar fields as ints, and every column as a bytearray of native 64-bit
//! integers (booleans as bytes) for `numpy.frombuffer`; flamewatch/pprof/decode.py owns that layout.
//! Refusals raise NotProtobuf (the framing is not protobuf), Malformed (not pprof: the message says
//! why) or RuleBroken (a sample's value count); decode.py turns them into flamewatch.pprof errors.
//!
//! `stack_tree(offsets, items, width, run_first=None, run_length=None)` builds the stack tree of a flush's
//! stacks (`stacktree.rs`) for flamewatch/storage/frames.py, from int64 numpy arrays; it returns (parent,
//! frame, leaf) as bytearrays. `unique_rows(matrix)` finds the distinct rows of an int64 matrix for
//! frames.py's `unique_rows` (`rows.rs`).

mod envelope;
mod rows;
mod stacktree;
mod tables;
mod wire;

use std::os::raw::c_char;

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyList, PyTuple};

use envelope::{Envelope, Span};
use tables::Columns;

create_exception!(_reader, NotProtobuf, PyValueError, "The bytes are not a protobuf message.");
create_exception!(_reader, Malformed, PyValueError, "Protobuf, but not a pprof profile; the message says why.");
create_exception!(_reader, RuleBroken, PyValueError, "A pprof profile that breaks one of pprof's rules.");

/// Why a profile is refused.
#[derive(Debug)]
pub enum Refusal {
    NotProtobuf,
    Malformed(String),
    RuleBroken(String),
}

impl From<envelope::NotProtobuf> for Refusal {
    fn from(_: envelope::NotProtobuf) -> Self {
        Refusal::NotProtobuf
    }
}

impl From<Refusal> for PyErr {
    fn from(refusal: Refusal) -> PyErr {
        match refusal {
            Refusal::NotProtobuf => NotProtobuf::new_err("not a protobuf message"),
            Refusal::Malformed(message) => Malformed::new_err(message),
            Refusal::RuleBroken(message) => RuleBroken::new_err(message),
        }
    }
}

fn decode(data: &[u8]) -> Result<(Envelope, Columns), Refusal> {
    let env = envelope::read(data)?;
    env.check()?;
    let columns = Columns::read(data, &env).map_err(|refusal| *refusal)?;
    Ok((env, columns))
}

/// Read pprof bytes into columns (see the module docstring for what it returns).
#[pyfunction]
fn read<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
    let (env, cols) = py.allow_threads(|| decode(data))?;
    let s = &env.scalars;
    let header = (env.period_type[0] as i64, env.period_type[1] as i64, s[12] as i64, s[9] as i64,
                  s[10] as i64, s[7] as i64, s[8] as i64, s[14] as i64, s[15] as i64);
    let samples = [&cols.sample_offsets, &cols.sample_locations, &cols.sample_values, &cols.labels[0],
                   &cols.labels[1], &cols.labels[2], &cols.labels[3], &cols.labels[4]];
    let locations = [&cols.locations[0], &cols.locations[1], &cols.locations[2], &cols.line_offsets,
                     &cols.lines[0], &cols.lines[1], &cols.lines[2]];
    let items: Vec<Bound<'py, PyAny>> = vec![
        strings(py, data, &env.strings)?.into_any(),
        header.into_pyobject(py)?.into_any(),
        column(py, &env.sample_types),
        column(py, &env.comments),
        tuple(py, samples.iter().map(|c| column(py, c)))?,
        tuple(py, locations.iter().map(|c| column(py, c)).chain([flags(py, &cols.location_folded)]))?,
        tuple(py, cols.functions.iter().map(|c| column(py, c)))?,
        tuple(py, cols.mappings.iter().map(|c| column(py, c)).chain(cols.mapping_flags.iter().map(|f| flags(py, f))))?,
    ];
    PyTuple::new(py, items)
}

/// The stack tree of stacks `items[offsets[i]:offsets[i + 1]]` (leaf first): each item a frame in
/// [0, width), or, given `run_first` and `run_length`, a location standing for frames
/// `run_first[l]..run_first[l] + run_length[l]` (innermost first). (parent, frame, leaf) as bytearrays
/// of int64; ValueError for input out of range.
#[pyfunction]
#[pyo3(signature = (offsets, items, width, run_first=None, run_length=None))]
fn stack_tree<'py>(py: Python<'py>, offsets: PyBuffer<i64>, items: PyBuffer<i64>, width: i64,
                   run_first: Option<PyBuffer<i64>>, run_length: Option<PyBuffer<i64>>) -> PyResult<Bound<'py, PyTuple>> {
    let runs = match (&run_first, &run_length) {
        (Some(first), Some(length)) => Some((contiguous(first)?, contiguous(length)?)),
        (None, None) => None,
        _ => return Err(PyValueError::new_err("run_first and run_length come together")),
    };
    let (offsets, items) = (contiguous(&offsets)?, contiguous(&items)?);
    // SAFETY: every buffer stays held (and so its memory alive) until this function returns; the
    // addresses cross into the closure as integers because raw pointers are not Send.
    let tree = py.allow_threads(|| {
        let slice = |(address, len): (usize, usize)| unsafe { std::slice::from_raw_parts(address as *const i64, len) };
        let runs = runs.map(|(first, length)| stacktree::Runs { first: slice(first), length: slice(length) });
        stacktree::build(slice(offsets), slice(items), width, runs)
    }).map_err(PyValueError::new_err)?;
    let parts = [&tree.parent, &tree.frame, &tree.leaf].map(|c| column(py, c));
    PyTuple::new(py, parts)
}

/// The distinct rows of a 2-D int64 array (C-contiguous) in `rows.rs`'s order: (first row of each, each
/// row's index among them) as bytearrays of int64, or None when two different rows share a hash.
#[pyfunction]
fn unique_rows<'py>(py: Python<'py>, matrix: PyBuffer<i64>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let shape = matrix.shape().to_vec();
    if shape.len() != 2 {
        return Err(PyValueError::new_err(format!("the array has {} dimensions, not 2", shape.len())));
    }
    let values = contiguous(&matrix)?;
    // SAFETY: as in stack_tree.
    let found = py.allow_threads(|| {
        let values = unsafe { std::slice::from_raw_parts(values.0 as *const i64, values.1) };
        rows::unique(values, shape[0], shape[1])
    });
    found.map(|(first, inverse)| PyTuple::new(py, [column(py, &first), column(py, &inverse)])).transpose()
}

/// The address and length of a C-contiguous buffer's items.
fn contiguous(buffer: &PyBuffer<i64>) -> PyResult<(usize, usize)> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("the array is not C-contiguous"));
    }
    Ok((buffer.buf_ptr() as usize, buffer.item_count()))
}

fn tuple<'py>(py: Python<'py>, items: impl Iterator<Item = Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyTuple::new(py, items.collect::<Vec<_>>())?.into_any())
}

/// A column's values (u64 or i64) as bytes in native order, which numpy's uint64 and int64 read as they are.
fn column<'py, T: Copy>(py: Python<'py>, values: &[T]) -> Bound<'py, PyAny> {
    // SAFETY: plain integers, read as the bytes they are made of for as long as `values` lives.
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) };
    PyByteArray::new(py, bytes).into_any()
}

fn flags<'py>(py: Python<'py>, values: &[u8]) -> Bound<'py, PyAny> {
    PyByteArray::new(py, values).into_any()
}

/// The string table as str, decoded by Python's own UTF-8 decoder with "replace" (U+FFFD per bad sequence).
fn strings<'py>(py: Python<'py>, data: &[u8], spans: &[Span]) -> PyResult<Bound<'py, PyList>> {
    let mut out = Vec::with_capacity(spans.len());
    for &(start, end) in spans {
        let bytes = &data[start..end];
        let errors = b"replace\0".as_ptr() as *const c_char;
        // SAFETY: the pointer and length are a live slice of `data`; the result is a new reference or NULL
        // with an exception set, which from_owned_ptr_or_err turns into an error.
        let s = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyUnicode_DecodeUTF8(bytes.as_ptr() as *const c_char, bytes.len() as ffi::Py_ssize_t, errors),
            )?
        };
        out.push(s);
    }
    PyList::new(py, out)
}

#[pymodule]
fn _reader(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(stack_tree, m)?)?;
    m.add_function(wrap_pyfunction!(unique_rows, m)?)?;
    m.add("NotProtobuf", m.py().get_type::<NotProtobuf>())?;
    m.add("Malformed", m.py().get_type::<Malformed>())?;
    m.add("RuleBroken", m.py().get_type::<RuleBroken>())?;
    Ok(())
}
