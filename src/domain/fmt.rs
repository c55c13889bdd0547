//! Times, durations and sizes written for people, in one place: every front end and every
//! sentence of the checks formats them through here.

/// A duration for people: `45 s`, `15 min`, `2 h 5 min`, `3 days`.
pub fn human_duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => {
            let minutes = (s % 3600) / 60;
            if minutes == 0 {
                format!("{} h", s / 3600)
            } else {
                format!("{} h {minutes} min", s / 3600)
            }
        }
        s => {
            let days = s / 86_400;
            if days == 1 {
                "1 day".to_string()
            } else {
                format!("{days} days")
            }
        }
    }
}

/// A size limit as configured, exactly: `10 MiB`, `64 KiB`, `1000 bytes`.
pub fn exact_size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// A byte count for people: `512 B`, `1.5 KiB`, `10.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / (KIB * KIB))
    }
}

/// `1st`, `2nd`, `3rd`, `11th`…
pub fn ordinal(n: usize) -> String {
    format!("{n}{}", ordinal_suffix(n))
}

pub fn ordinal_suffix(n: usize) -> &'static str {
    match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// Formats milliseconds since the epoch as RFC 3339 in UTC, with milliseconds.
pub fn rfc3339_ms(ms: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_keeps_milliseconds_in_utc() {
        assert_eq!(rfc3339_ms(1_614_265_330_123), "2021-02-25T15:02:10.123Z");
    }

    #[test]
    fn sizes_and_ordinals_read_as_people_write_them() {
        assert_eq!(exact_size(10 * 1024 * 1024), "10 MiB");
        assert_eq!(exact_size(1000), "1000 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
        assert_eq!(human_duration(7500), "2 h 5 min");
    }
}
