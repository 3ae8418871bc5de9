//! Helpers shared by makai-ai's tests.
#![allow(dead_code)]

pub mod contract;
