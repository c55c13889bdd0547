//! Captures out and back in: test fixtures, HAR 1.2 and curl, and HAR import.
//!
//! A fixture keeps the body exactly (text when it is UTF-8, base64 otherwise) and says how it
//! was signed: *as captured* (the original signature headers, no secret written) or re-signed
//! with a generated test secret that is written into the fixture, so it verifies in the
//! developer's own tests while the real secret never leaves hookscope. Redaction replaces JSON
//! values in place (the rest of the bytes untouched) before re-signing.

pub mod curl;
pub mod error;
pub mod fixture;
pub mod har;
pub mod import;
pub mod redact;
pub mod snippets;
pub mod write;

pub use curl::curl;
pub use error::{ExportError, FixtureOptions, Format};
pub use fixture::{LoadedFixture, bundle, fixture, load_fixture, load_fixtures, test_secret};
pub use har::{HarRequest, har, read_har};
pub use import::import_records;
pub use redact::redact;
pub use snippets::snippets;
pub use write::{curl_to_copy, write_export};
