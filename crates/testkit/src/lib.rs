//! Test doubles for TrueForge (being written).
