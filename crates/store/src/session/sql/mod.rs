//! The SQL backends. Both compile the same statements (`ops/`); each module supplies its database type,
//! transactions, clock and full-text condition.

pub mod postgres;
pub mod sqlite;
