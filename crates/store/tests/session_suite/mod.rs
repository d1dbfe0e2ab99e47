//! The session-store contract cases, grouped by area. Each module ends with `contract_group!(…)` listing
//! its cases, which runs them on every backend.

pub mod fixtures;

pub mod freeze;
pub mod leases;
pub mod pagination;
pub mod parallel;
pub mod recall;
pub mod segments;
pub mod sequence;
pub mod sessions;
pub mod steps;
pub mod tenancy;
pub mod threads;
pub mod turns;
