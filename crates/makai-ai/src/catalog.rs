//! Built-in model catalog (placeholder, being written).
