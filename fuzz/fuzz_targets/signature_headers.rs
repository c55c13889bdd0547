//! Every preset's signature-header parser, on arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for scheme in hookscope::domain::scheme::presets() {
        if let Ok(parsed) = scheme.parse_header(data) {
            assert!(!parsed.signatures.is_empty());
        }
    }
});
