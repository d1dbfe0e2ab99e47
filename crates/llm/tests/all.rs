//! The model layer's integration tests, built as one binary (one link instead of one per file): each wire
//! format's request bodies, stream decoding and errors, and the model client over HTTP.

mod client_support;
mod suite;
mod wire_support;
