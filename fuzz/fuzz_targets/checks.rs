//! The whole check pipeline (signature, timestamp, diagnosis, job extraction) on a delivery whose
//! headers and body come from the fuzzer: the first byte picks the scheme, then `name: value`
//! lines up to an empty line, then the body.
#![no_main]
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::scheme::{Secret, presets};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let headers: Vec<Header> = head
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let name = String::from_utf8_lossy(&line[..colon]).trim().to_string();
            Some(Header::new(&name, line[colon + 1..].to_vec()))
        })
        .collect();
    let delivery = Delivery {
        received_at_ms: 1_700_000_000_000,
        method: "POST".into(),
        path: "/fuzz".into(),
        query: String::new(),
        headers,
        body_size: body.len() as u64,
        body: body.to_vec(),
        body_complete: true,
        remote_addr: None,
    };
    let schemes = presets();
    let scheme = schemes[pick as usize % schemes.len()].clone();
    let endpoint = Endpoint {
        scheme: Some(scheme),
        secrets: vec![Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")],
        ..Endpoint::catch_all()
    };
    let _ = hookscope::domain::checks::evaluate(&delivery, &endpoint, 1_700_000_000);
    let _ = hookscope::domain::checks::evaluate(&delivery, &Endpoint::catch_all(), 1_700_000_000);
});
