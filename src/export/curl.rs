//! curl commands that send a capture again exactly: the headers as captured, the body from a
//! file beside the script.

use crate::export::har::url_of;
use crate::store::StoredDelivery;

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A curl command that sends the delivery again. Text bodies are inline (`--data-raw`); others
/// are referenced as `--data-binary @FILE`, with `body_file` the name the caller writes them to.
pub fn curl(stored: &StoredDelivery, body_file: &str) -> (String, bool) {
    let d = &stored.delivery;
    let mut parts = vec![
        "curl".to_string(),
        "-X".into(),
        d.method.clone(),
        shell_quote(&url_of(d)),
    ];
    for h in &d.headers {
        if ["host", "content-length", "connection", "accept-encoding"].contains(&h.name.as_str()) {
            continue;
        }
        parts.push("-H".into());
        parts.push(shell_quote(&format!("{}: {}", h.name, h.shown_lossy())));
    }
    let plain = std::str::from_utf8(&d.body).is_ok_and(|t| {
        !t.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    });
    if d.body.is_empty() {
        (parts.join(" "), false)
    } else if plain {
        parts.push("--data-raw".into());
        parts.push(shell_quote(&String::from_utf8_lossy(&d.body)));
        (parts.join(" "), false)
    } else {
        parts.push("--data-binary".into());
        parts.push(shell_quote(&format!("@{body_file}")));
        (parts.join(" "), true)
    }
}
