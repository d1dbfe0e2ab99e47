//! Built-in capabilities.
