//! A fresh database for a test on the test run's Postgres (`TRUEFORGE_TEST_POSTGRES_URL`, which
//! `scripts/test.sh` provisions), made with `psql` so a test needs no database driver of its own.

/// Creates a database named `<prefix>_<random hex>` and returns its URL. Panics without
/// `TRUEFORGE_TEST_POSTGRES_URL` (the tests fail, never skip) or when `psql` fails.
pub fn fresh_database(prefix: &str) -> String {
    let base = std::env::var("TRUEFORGE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TRUEFORGE_TEST_POSTGRES_URL is not set: run the tests through scripts/test.sh, which provisions Postgres"
        )
    });
    let name = format!("{prefix}_{:032x}", rand::random::<u128>());
    let output = std::process::Command::new("psql")
        .args([
            base.as_str(),
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            &format!("CREATE DATABASE {name}"),
        ])
        .output()
        .unwrap_or_else(|error| panic!("psql (installed with Postgres) did not run: {error}"));
    assert!(
        output.status.success(),
        "CREATE DATABASE {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let server = base.rsplit_once('/').map_or(base.as_str(), |(server, _)| server);
    format!("{server}/{name}")
}
