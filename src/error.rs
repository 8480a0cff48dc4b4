//! The one error type of the crate. Everything below `ffi/` returns
//! `Result<_, Error>`; the boundary turns an `Err` into the function's
//! documented failure value and logs the message.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A GGUF file broke a rule of the format. `offset` is the byte offset of
    /// the offending field in the file.
    Gguf { offset: u64, field: String, reason: String },
    /// The file could not be opened, read or mapped.
    Io { path: String, reason: String },
    /// A caller passed an argument outside its documented range.
    InvalidArgument(String),
    /// The file is a valid GGUF but not a model we can use (unknown
    /// architecture, missing hyperparameter, ...).
    Model(String),
    /// The caller's progress callback asked to stop.
    Cancelled,
    /// A saved state (buffer or session file) is malformed or does not fit
    /// the context it is restored into.
    State(String),
    /// The named function is not implemented yet.
    NotImplemented(&'static str),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn gguf(offset: u64, field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Gguf { offset, field: field.into(), reason: reason.into() }
    }
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }
    pub fn model(msg: impl Into<String>) -> Error {
        Error::Model(msg.into())
    }
    pub fn state(msg: impl Into<String>) -> Error {
        Error::State(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Gguf { offset, field, reason } => {
                write!(f, "invalid GGUF file: {field} at byte offset {offset}: {reason}")
            }
            Error::Io { path, reason } => write!(f, "cannot read '{path}': {reason}"),
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::Model(msg) => write!(f, "{msg}"),
            Error::Cancelled => write!(f, "cancelled by the progress callback"),
            Error::State(msg) => write!(f, "{msg}"),
            Error::NotImplemented(name) => write!(f, "not implemented yet: {name}"),
        }
    }
}

impl std::error::Error for Error {}
