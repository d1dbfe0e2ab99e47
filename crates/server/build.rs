//! Rebuilds the server when the web UI's build output changes.
//!
//! `rust-embed` expands to one `include_bytes!` per file, so cargo sees a changed file but not an added or
//! removed one (a new hashed chunk after a UI rebuild would be missing from the binary). A directory named
//! in `rerun-if-changed` is checked file by file, additions and removals included.

fn main() {
    println!("cargo:rerun-if-changed=../../ui/dist");
}
