//! The config parser and resolver, and the filter parser, on arbitrary text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(file) = hookscope::config::parse(text) {
        let _ = hookscope::config::Settings::resolve(&file, &hookscope::config::Overrides::default());
    }
    if let Ok(filter) = hookscope::domain::filter::Filter::parse(text) {
        let _ = hookscope::store::query::condition(&filter);
    }
});
