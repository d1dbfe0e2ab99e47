mod conformance;
mod connection;
mod everything;
mod filesystem;
mod oauth;
mod sessions;
