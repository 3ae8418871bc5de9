#![allow(unused_imports)]
//! The stream contract checker of makai-ai (`makai_ai::testing`), used by
//! every test of this crate that reads a stream.

pub use makai_ai::testing::{assert_stream_contract, collect, finish};
