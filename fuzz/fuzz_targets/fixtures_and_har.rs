//! The importers (fixtures, HAR) and the body tools (pretty-printing, redaction) on arbitrary text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = hookscope::export::load_fixture(text);
    let _ = hookscope::export::read_har(text);
    let _ = hookscope::domain::pretty::pretty_json(text);
    let _ = hookscope::export::redact(data, &["/data/name".to_string(), "/0".to_string()]);
});
