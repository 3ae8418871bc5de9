//! The non-interactive modes: print and JSON ([`print`]) and RPC ([`rpc`]).

pub mod print;
pub mod rpc;
pub(crate) mod stdout_lines;
